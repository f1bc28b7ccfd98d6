// Package node is devcluster's node agent: one process that registers N
// Nodes through virtual-kubelet and runs the pods bound to them as local
// processes, reporting status, exit codes and logs the way a kubelet does.
//
// What a kubelet would decide (pod status, restarts, environments, image
// references) is in node/kubelet, free of side effects; starting, killing
// and logging host processes is in node/supervise. This package runs the
// pods with them (pod.go, container.go) and wires them to virtual-kubelet
// and the API server (provider, status patches, Node registration, the
// kubelet HTTPS API).
package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vkslog "github.com/virtual-kubelet/virtual-kubelet/log/slog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"longtask.dev/devcluster/internal/node/kubelet"
)

// shutdownGrace is how long pod processes get between SIGTERM and SIGKILL
// when the agent itself stops.
const shutdownGrace = 5 * time.Second

var everything = labels.Everything()

// agent is what all nodes of this process share.
type agent struct {
	ctx       context.Context // ends at shutdown
	client    kubernetes.Interface
	images    *kubelet.ImageMap
	stateDir  string
	apiServer string // URL for pods' kubeconfigs
	apiHost   string // KUBERNETES_SERVICE_HOST
	apiPort   string // KUBERNETES_SERVICE_PORT
	caData    []byte
	hostEnv   [][2]string // the part of our environment pods inherit
	providers []*provider
	wg        sync.WaitGroup // one per pod runner
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
		hostEnv:   kubelet.HostEnv(os.Environ()),
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
