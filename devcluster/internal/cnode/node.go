package cnode

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Main is `devcluster cnode`: node i's supervisor. `up` starts it in a new
// mount and network namespace and moves it into the node's cgroup; it waits
// for its eth0, makes the node's mounts and network, then runs containerd,
// the kubelet and kube-proxy until SIGTERM (or until one of them exits), and
// then kills everything left in the node's cgroup: agents, shims, pods.
func Main(args []string) error {
	fs := flag.NewFlagSet("cnode", flag.ContinueOnError)
	dir := fs.String("dir", "", "cluster directory")
	index := fs.Int("index", 0, "this node's index")
	var n Net
	fs.IntVar(&n.Block, "block", 0, "the cluster's address block (10.B.0.0/16)")
	fs.IntVar(&n.Nodes, "nodes", 1, "number of nodes in the cluster")
	rt := fs.String("runtime-bin", "", "directory of containerd, its shim and ctr")
	runc := fs.String("runc", "/usr/sbin/runc", "the OCI runtime")
	var tune Tuning
	fs.StringVar(&tune.SystemReservedMemory, "system-reserved-memory", "", "the kubelet's systemReserved memory")
	fs.Func("eviction-hard", "SIGNAL=QUANTITY: a hard eviction threshold of the kubelet (repeatable)", tune.SetEvictionHard)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := n.Validate(); err != nil {
		return err
	}
	if *dir == "" || *rt == "" || *index < 0 || *index >= n.Nodes {
		return errors.New("want --dir, --runtime-bin and --index below --nodes")
	}
	l := LayoutOf(*dir, *index)
	log.SetPrefix(fmt.Sprintf("cnode %d: ", *index))
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become subreaper: %w", err)
	}
	if err := mounts(l); err != nil {
		return err
	}
	if err := network(n, *index); err != nil {
		return err
	}
	if err := writeConfigs(l, n, *runc, tune); err != nil {
		return err
	}
	s := newSupervisor(l, n)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	reaped := make(chan struct{})
	defer close(reaped)
	go s.reap(reaped)
	err := s.start(ctx, *rt)
	if err == nil {
		log.Printf("node %s ready to register", NodeName(*index))
		select {
		case <-ctx.Done():
			log.Print("stopping: signal received")
		case what := <-s.exited:
			err = fmt.Errorf("%s exited; see %s", what, l.Log(what))
			log.Printf("stopping: %v", err)
		}
	}
	s.shutdown()
	return err
}

// mounts makes the namespace's mounts private, gives it a sysfs of its own
// network namespace (keeping the cgroup hierarchies), and binds the node's
// directories over the paths the kubelet, containerd and CNI fix.
func mounts(l Layout) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	keep := filepath.Join(l.Root, "cgroup-hold")
	if err := os.MkdirAll(keep, 0o755); err != nil {
		return err
	}
	steps := []struct {
		what         string
		src, dst, fs string
		flags        uintptr
	}{
		{"hold the cgroup mounts", "/sys/fs/cgroup", keep, "", unix.MS_BIND | unix.MS_REC},
		{"mount this namespace's sysfs", "sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{"put the cgroup mounts back", keep, "/sys/fs/cgroup", "", unix.MS_MOVE},
	}
	for _, s := range steps {
		if err := unix.Mount(s.src, s.dst, s.fs, s.flags, ""); err != nil {
			return fmt.Errorf("%s (%s on %s): %w", s.what, s.src, s.dst, err)
		}
	}
	for _, b := range l.Binds() {
		for _, d := range b {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := unix.Mount(b[0], b[1], "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", b[0], b[1], err)
		}
	}
	for _, d := range []string{l.CNIConfDir(), l.ContainerdRoot(), l.VolumePluginDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// network waits for the eth0 `up` moves in, then addresses it and routes
// the other nodes' pod subnets to them; the node forwards for its pods.
func network(n Net, i int) error {
	var eth0 netlink.Link
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		if eth0, err = netlink.LinkByName("eth0"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("eth0 never appeared: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: n.NodeIP(i), Mask: n.BridgeNet().Mask}}
	for _, step := range []struct {
		what string
		do   func() error
	}{
		{"bring lo up", func() error { return netlink.LinkSetUp(lo) }},
		{"address eth0", func() error { return netlink.AddrAdd(eth0, addr) }},
		{"bring eth0 up", func() error { return netlink.LinkSetUp(eth0) }},
		{"route via the host", func() error {
			return netlink.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: n.Gateway()})
		}},
		{"forward for pods", func() error {
			return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
		}},
	} {
		if err := step.do(); err != nil {
			return fmt.Errorf("%s: %w", step.what, err)
		}
	}
	for j := range n.Nodes {
		if j == i {
			continue
		}
		r := &netlink.Route{LinkIndex: eth0.Attrs().Index, Dst: n.PodCIDR(j), Gw: n.NodeIP(j)}
		if err := netlink.RouteAdd(r); err != nil {
			return fmt.Errorf("route %s via %s: %w", n.PodCIDR(j), n.NodeIP(j), err)
		}
	}
	return nil
}

func writeConfigs(l Layout, n Net, runc string, tune Tuning) error {
	cni, err := cniConfig(n, l.Index)
	if err != nil {
		return err
	}
	ca := filepath.Join(l.Cluster, "pki", "ca.crt")
	for path, body := range map[string][]byte{
		l.ContainerdConfig(): []byte(containerdConfig(l, runc, CNIBin)),
		cniConfPath(l):       cni,
		l.KubeletConfig():    []byte(kubeletConfig(l, n, ca, tune)),
		l.ProxyConfig():      []byte(proxyConfig(l, n)),
	} {
		if err := os.WriteFile(path, body, 0o600); err != nil {
			return err
		}
	}
	return nil
}

type supervisor struct {
	layout Layout
	net    Net
	// agents are stopped with SIGTERM first (the kubelet, kube-proxy);
	// the rest of the node is killed with its cgroup.
	agents []*exec.Cmd
	exited chan string
	// managed holds the pids of the programs this supervisor started and
	// waits for through their exec.Cmd; reap leaves them alone. The lock
	// is held from a program's start until its pid is recorded and while
	// reap looks at a zombie and waits for it, so a program that exits at
	// once is never reaped behind its exec.Cmd's back (which then failed
	// with "waitid: no child processes").
	mu      sync.Mutex
	managed map[int]bool
}

func newSupervisor(l Layout, n Net) *supervisor {
	return &supervisor{layout: l, net: n, exited: make(chan string, 3), managed: map[int]bool{}}
}

// startManaged starts cmd and records its pid before reap can see it.
func (s *supervisor) startManaged(cmd *exec.Cmd) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	s.managed[cmd.Process.Pid] = true
	return nil
}

// waitManaged waits for a program startManaged started, then forgets its
// pid (pids are reused).
func (s *supervisor) waitManaged(cmd *exec.Cmd) error {
	err := cmd.Wait()
	s.mu.Lock()
	delete(s.managed, cmd.Process.Pid)
	s.mu.Unlock()
	return err
}

// output runs a short program to its end, as exec.Cmd.CombinedOutput does.
func (s *supervisor) output(cmd *exec.Cmd) ([]byte, error) {
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := s.startManaged(cmd); err != nil {
		return nil, err
	}
	err := s.waitManaged(cmd)
	return b.Bytes(), err
}

// run starts one of the node's programs, its output in DIR/logs.
func (s *supervisor) run(what, path string, env []string, args ...string) (*exec.Cmd, error) {
	logf, err := os.OpenFile(s.layout.Log(what), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	if err := s.startManaged(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	go func() {
		_ = s.waitManaged(cmd)
		s.exited <- what
	}()
	return cmd, nil
}

func (s *supervisor) start(ctx context.Context, rt string) error {
	l := s.layout
	self, err := os.Executable()
	if err != nil {
		return err
	}
	path := "PATH=" + rt + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if _, err := s.run("containerd", filepath.Join(rt, "containerd"), []string{path}, "--config", l.ContainerdConfig()); err != nil {
		return err
	}
	if err := waitSocket(ctx, "/run/containerd/containerd.sock", s.exited); err != nil {
		return fmt.Errorf("containerd: %w; see %s", err, l.Log("containerd"))
	}
	imp := exec.CommandContext(ctx, filepath.Join(rt, "ctr"), "--address", "/run/containerd/containerd.sock",
		"-n", "k8s.io", "images", "import", PauseArchive(l.Cluster))
	if out, err := s.output(imp); err != nil {
		return fmt.Errorf("import the pause image: %v: %s", err, out)
	}
	name := NodeName(l.Index)
	kubelet, err := s.run("kubelet", self, []string{path}, "kubelet",
		"--config="+l.KubeletConfig(), "--kubeconfig="+l.KubeletKubeconfig(),
		"--hostname-override="+name, "--node-ip="+s.net.NodeIP(l.Index).String(),
		"--node-labels=devcluster.longtask.dev/runtime=containerd", "--v=1")
	if err != nil {
		return err
	}
	s.agents = append(s.agents, kubelet)
	proxy, err := s.run("kube-proxy", self, []string{path}, "kube-proxy", "--config="+l.ProxyConfig(), "--v=1")
	if err != nil {
		return err
	}
	s.agents = append(s.agents, proxy)
	return nil
}

func waitSocket(ctx context.Context, path string, exited <-chan string) error {
	for {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case what := <-exited:
			return fmt.Errorf("%s exited before serving %s", what, path)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// shutdown stops the kubelet and kube-proxy, then kills every other process
// in the node's cgroup (containerd, its shims, the pods' processes).
func (s *supervisor) shutdown() {
	for _, c := range s.agents {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, c := range s.agents {
		for time.Now().Before(deadline) && syscall.Kill(c.Process.Pid, 0) == nil && !zombie(c.Process.Pid) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if left := KillCgroup(s.net.CgroupRoot(s.layout.Index), 15*time.Second, os.Getpid()); len(left) > 0 {
		log.Printf("processes left in the node's cgroup: %v", left)
	}
}

// reap waits for the orphans a subreaper inherits (containerd's shims, pod
// processes whose shim died); the programs it started itself are waited for
// by their exec.Cmd.
func (s *supervisor) reap(done <-chan struct{}) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	self := os.Getpid()
	for {
		for _, pid := range children(self) {
			s.reapOrphan(pid)
		}
		select {
		case <-done:
			return
		case <-sigs:
		case <-tick.C:
		}
	}
}

// reapOrphan waits for pid if it is a zombie this supervisor did not start.
func (s *supervisor) reapOrphan(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.managed[pid] && zombie(pid) {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(p); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

func zombie(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && f[0] == "Z"
}

// statFields returns /proc/PID/stat's fields after the command name: state,
// parent pid, ...
func statFields(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}
