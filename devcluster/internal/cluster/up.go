// Package cluster starts and stops a devcluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and the node agent, each its own
// process, all on loopback and on free ports.
package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"longtask.dev/devcluster/internal/pki"
)

// envMarker is set in every process `up` starts (and so inherited by pod
// processes), so that `down` can find strays.
const envMarker = "DEVCLUSTER_DIR"

// Options are the flags of `up`.
type Options struct {
	Dir        string
	Nodes      int
	NodeCPU    string
	NodeMemory string
	Images     []string
	Audit      bool
	// Profiling serves the API server's /debug/pprof (CPU, heap) to
	// cluster-admin; off by default, as on most clusters.
	Profiling bool
	Timeout   time.Duration
	// Runtime is RuntimeProcess (pods are host processes) or
	// RuntimeContainerd (real kubelets, containerd and kube-proxy).
	Runtime string
}

// Up starts a fresh cluster in o.Dir and returns once the API server is
// ready and every node is Ready. On failure it stops whatever it started.
func Up(o Options) error {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	if old, err := loadState(dir); err != nil {
		return err
	} else if old != nil {
		for _, p := range old.Procs {
			if alive(p.Pid, dir) {
				return fmt.Errorf("a devcluster is already running in %s (%s pid %d): run `devcluster down --dir %s` first", dir, p.Name, p.Pid, dir)
			}
		}
	}
	// Every up is a fresh cluster: old data would hold old certificates.
	for _, sub := range []string{"etcd", "pki", "logs", "node", "nodes", "kubeconfig", "kueue", "state.json", "audit-policy.yaml"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return err
	}
	st := &State{Dir: dir}
	if err := start(st, o); err != nil {
		Down(dir)
		return err
	}
	return nil
}

func start(st *State, o Options) error {
	dir := st.Dir
	deadline := time.Now().Add(o.Timeout)
	var rt string
	var cf *containerFlags
	var serverIPs []net.IP
	host := "127.0.0.1"
	if o.Runtime == RuntimeContainerd {
		var err error
		if rt, err = runtimeBin(); err != nil {
			return err
		}
		if cf, err = prepareContainers(st, o.Nodes); err != nil {
			return err
		}
		host = cf.address
		serverIPs = append(serverIPs, st.Net.Gateway())
	}
	f, err := pki.Generate(filepath.Join(dir, "pki"), serverIPs...)
	if err != nil {
		return fmt.Errorf("generate certificates: %w", err)
	}
	p, err := freePorts()
	if err != nil {
		return fmt.Errorf("find free loopback ports: %w", err)
	}
	if o.Audit {
		if err := os.WriteFile(filepath.Join(dir, "audit-policy.yaml"), []byte(auditPolicy), 0o644); err != nil {
			return err
		}
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	st.APIServer = fmt.Sprintf("https://%s:%d", host, p.APIServer)
	if cf != nil {
		if err := issueContainerCerts(st, cf); err != nil {
			return fmt.Errorf("container node certificates: %w", err)
		}
	}

	etcd, err := spawn(st, "etcd", etcdArgs(dir, p))
	if err != nil {
		return err
	}
	if err := waitFor(deadline, etcd, "etcd to serve", func() error {
		return httpOK(http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/health", p.EtcdClient))
	}); err != nil {
		return err
	}
	api, err := spawn(st, "apiserver", apiServerArgs(dir, p, f, o.Audit, o.Profiling, cf))
	if err != nil {
		return err
	}
	admin, err := adminHTTP(f)
	if err != nil {
		return err
	}
	if err := waitFor(deadline, api, "kube-apiserver to be ready", func() error {
		return httpOK(admin, st.APIServer+"/readyz")
	}); err != nil {
		return err
	}
	if err := writeKubeconfig(kubeconfig, st.APIServer, f); err != nil {
		return err
	}
	cm, err := spawn(st, "controller-manager", controllerManagerArgs(kubeconfig, p, f, cf != nil))
	if err != nil {
		return err
	}
	sched, err := spawn(st, "scheduler", schedulerArgs(kubeconfig, p))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if cf != nil {
		cs, err := adminClient(dir)
		if err != nil {
			return err
		}
		caPEM, err := os.ReadFile(f.CA)
		if err != nil {
			return err
		}
		dns, dnsReady, err := startDNS(ctx, st, cs, caPEM)
		if err != nil {
			return fmt.Errorf("cluster DNS: %w", err)
		}
		nodes, err := startContainerNodes(st, rt)
		if err != nil {
			return err
		}
		if err := waitReady(ctx, kubeconfig, o.Nodes, append([]*running{etcd, api, cm, sched, dns}, nodes...)); err != nil {
			return err
		}
		return waitDNSReady(deadline, dns, dnsReady)
	}
	nodeArgs := []string{
		"--kubeconfig=" + kubeconfig,
		fmt.Sprintf("--nodes=%d", o.Nodes),
		"--cpu=" + o.NodeCPU,
		"--memory=" + o.NodeMemory,
		"--state-dir=" + filepath.Join(dir, "node"),
	}
	for _, img := range o.Images {
		nodeArgs = append(nodeArgs, "--image="+img)
	}
	node, err := spawn(st, "node", nodeArgs)
	if err != nil {
		return err
	}
	return waitReady(ctx, kubeconfig, o.Nodes, []*running{etcd, api, cm, sched, node})
}

// running is a started component whose early exit `up` notices.
type running struct {
	proc   Proc
	exited chan error
}

func spawn(st *State, name string, args []string) (*running, error) {
	return spawnIn(st, name, name, args, 0)
}

// spawnIn starts component name as `devcluster command args...`, in new
// namespaces (clone flags, 0 for none).
func spawnIn(st *State, name, command string, args []string, namespaces uintptr) (*running, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(st.Dir, "logs", name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(self, append([]string{command}, args...)...)
	cmd.Dir = st.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), envMarker+"="+st.Dir)
	// Its own session: the components outlive `up` and ignore the
	// terminal's signals; `down` stops them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: namespaces}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	r := &running{proc: Proc{Name: name, Pid: cmd.Process.Pid, Log: logPath, Args: args}, exited: make(chan error, 1)}
	go func() { r.exited <- cmd.Wait() }()
	replaced := false
	for i := range st.Procs {
		if st.Procs[i].Name == name {
			st.Procs[i], replaced = r.proc, true
		}
	}
	if !replaced {
		st.Procs = append(st.Procs, r.proc)
	}
	if err := st.save(); err != nil {
		return nil, err
	}
	return r, nil
}

// waitFor polls check until it succeeds, the component exits, or the
// deadline passes; errors quote the end of the component's log.
func waitFor(deadline time.Time, r *running, what string, check func() error) error {
	var last error
	for time.Now().Before(deadline) {
		if last = check(); last == nil {
			return nil
		}
		select {
		case err := <-r.exited:
			return fmt.Errorf("%s exited while waiting for %s (%v); end of %s:\n%s", r.proc.Name, what, err, r.proc.Log, tail(r.proc.Log, 25))
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("timed out waiting for %s (last error: %v); end of %s:\n%s", what, last, r.proc.Log, tail(r.proc.Log, 25))
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func httpOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func adminHTTP(f pki.Files) (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(f.AdminCert, f.AdminKey)
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("bad CA file")
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
	}}, nil
}

func freePorts() (ports, error) {
	got, err := pickPorts(5)
	if err != nil {
		return ports{}, err
	}
	return ports{EtcdClient: got[0], EtcdPeer: got[1], APIServer: got[2], ControllerManager: got[3], Scheduler: got[4]}, nil
}

// pickPorts finds n free loopback ports below the kernel's ephemeral range:
// a port from that range can be taken, while its server is down for a
// restart, as the local end of some outgoing connection, and the server
// could not bind it again.
func pickPorts(n int) ([]int, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	const base = 10000
	if low-base < 1000 {
		return nil, fmt.Errorf("the ephemeral port range starts at %d: no room below it", low)
	}
	var got []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for tries := 0; len(got) < n && tries < 1000; tries++ {
		port := base + rand.IntN(low-base)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		got = append(got, port)
	}
	if len(got) < n {
		return nil, fmt.Errorf("found only %d free ports in 127.0.0.1:%d-%d", len(got), base, low-1)
	}
	return got, nil
}
