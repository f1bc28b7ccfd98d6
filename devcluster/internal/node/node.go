// Package node is devcluster's node agent: one process that registers N
// Nodes through virtual-kubelet and runs the pods bound to them as local
// processes, reporting status, exit codes and logs the way a kubelet does.
package node

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vkslog "github.com/virtual-kubelet/virtual-kubelet/log/slog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
)

// shutdownGrace is how long pod processes get between SIGTERM and SIGKILL
// when the agent itself stops.
const shutdownGrace = 5 * time.Second

var everything = labels.Everything()

// agent is what all nodes of this process share.
type agent struct {
	ctx       context.Context // ends at shutdown
	client    kubernetes.Interface
	images    *imageMap
	stateDir  string
	apiServer string // URL for pods' kubeconfigs
	apiHost   string // KUBERNETES_SERVICE_HOST
	apiPort   string // KUBERNETES_SERVICE_PORT
	caData    []byte
	hostEnv   [][2]string // the part of our environment pods inherit
	providers []*provider
	wg        sync.WaitGroup // one per pod runner
}

type options struct {
	kubeconfig, cpu, memory, stateDir, listenAddress string
	nodes, pods, port                                int
	images                                           *imageMap
}

type imageFlag struct{ m *imageMap }

func (f imageFlag) String() string     { return "" }
func (f imageFlag) Set(s string) error { return f.m.add(s) }

func parseFlags(args []string) (options, error) {
	o := options{images: newImageMap()}
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "admin kubeconfig (required)")
	fs.IntVar(&o.nodes, "nodes", 1, "number of Nodes to register: devcluster-node-0..N-1")
	fs.StringVar(&o.cpu, "cpu", "4", "CPU capacity of each node")
	fs.StringVar(&o.memory, "memory", "8Gi", "memory capacity of each node")
	fs.IntVar(&o.pods, "pods", 110, "maximum pods per node")
	fs.Var(imageFlag{o.images}, "image", "REF=PATH: containers of image REF without a command run the program PATH (repeatable)")
	fs.StringVar(&o.stateDir, "state-dir", filepath.Join(os.TempDir(), "devcluster-node"), "per-pod working files: logs, tokens, kubeconfigs")
	fs.StringVar(&o.listenAddress, "listen-address", "127.0.0.1", "loopback address of the kubelet HTTPS API (logs)")
	fs.IntVar(&o.port, "port", 0, "port of the kubelet HTTPS API, shared by all nodes (0: pick a free one)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	case o.kubeconfig == "":
		return o, errors.New("--kubeconfig is required")
	case o.nodes < 1:
		return o, errors.New("--nodes must be at least 1")
	case o.pods < 1:
		return o, errors.New("--pods must be at least 1")
	}
	return o, nil
}

// Main runs the node agent until SIGTERM or SIGINT, then stops every pod
// process and returns.
func Main(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	capacity, err := nodeCapacity(o.cpu, o.memory, o.pods)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	slog.SetDefault(logger)
	vklog.L = vkslog.FromSlog(logger)

	sigCtx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stopSignals()
	ctx, cancel := context.WithCancel(sigCtx)
	defer cancel()

	a, err := newAgent(ctx, o)
	if err != nil {
		return err
	}
	names := make([]string, o.nodes)
	for i := range names {
		names[i] = fmt.Sprintf("devcluster-node-%d", i)
	}
	ln, err := listenKubelet(o.listenAddress, o.port, names)
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: a.kubeletHandler(), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	events := record.NewBroadcaster()
	events.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: a.client.CoreV1().Events("")})
	defer events.Shutdown()

	fatal := make(chan error, 2*len(names))
	var running []*vkNode
	for _, name := range names {
		recorder := events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: name})
		n, err := a.startNode(name, port, capacity, recorder, fatal)
		if err != nil {
			cancel()
			a.shutdown(running)
			return err
		}
		running = append(running, n)
	}
	logf("node agent ready: %d node(s), kubelet API on %s", len(names), ln.Addr())

	select {
	case <-ctx.Done():
		logf("stopping: signal received")
	case err = <-fatal:
		logf("stopping: %v", err)
	}
	cancel()
	a.shutdown(running)
	return err
}

func newAgent(ctx context.Context, o options) (*agent, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load --kubeconfig: %w", err)
	}
	// Pod status writes come in bursts (benchmarks start many pods at once).
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "devcluster-node"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("kubeconfig server %q: not a URL", cfg.Host)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("read CA of kubeconfig: %w", err)
		}
	}
	stateDir, err := filepath.Abs(o.stateDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(stateDir, "pods"), 0o755); err != nil {
		return nil, err
	}
	return &agent{
		ctx:       ctx,
		client:    client,
		images:    o.images,
		stateDir:  stateDir,
		apiServer: u.Scheme + "://" + u.Host,
		apiHost:   u.Hostname(),
		apiPort:   port,
		caData:    ca,
		hostEnv:   hostEnv(os.Environ()),
	}, nil
}

// hostEnv picks the few variables a host program needs to work at all.
// Everything else, KUBECONFIG above all, stays out: a pod must get its own
// service account's rights, never the agent's. DEVCLUSTER_DIR lets
// `devcluster down` find strays.
func hostEnv(environ []string) [][2]string {
	keep := map[string]bool{
		"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "LANG": true, "LC_ALL": true,
		"TZ": true, "TMPDIR": true, "SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "DEVCLUSTER_DIR": true,
	}
	var out [][2]string
	hasPath := false
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if keep[k] {
			out = append(out, [2]string{k, v})
			hasPath = hasPath || k == "PATH"
		}
	}
	if !hasPath {
		out = append(out, [2]string{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})
	}
	return out
}

func nodeCapacity(cpu, memory string, pods int) (corev1.ResourceList, error) {
	c, err := resource.ParseQuantity(cpu)
	if err != nil {
		return nil, fmt.Errorf("--cpu %q: %w", cpu, err)
	}
	m, err := resource.ParseQuantity(memory)
	if err != nil {
		return nil, fmt.Errorf("--memory %q: %w", memory, err)
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:              c,
		corev1.ResourceMemory:           m,
		corev1.ResourcePods:             *resource.NewQuantity(int64(pods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}, nil
}

// shutdown runs once a.ctx is cancelled: no pod can start any more (see
// provider.start), so it stops every pod process, waits until all are
// reaped, then gives the VK controllers a moment to wind down.
func (a *agent) shutdown(nodes []*vkNode) {
	for _, p := range a.providers {
		p.stopAll(shutdownGrace)
	}
	done := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(shutdownGrace + 10*time.Second):
		logf("some pod processes did not exit in time")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, n := range nodes {
		n.wait(ctx)
	}
}

func logf(format string, args ...any) {
	slog.Info(fmt.Sprintf(format, args...))
}
