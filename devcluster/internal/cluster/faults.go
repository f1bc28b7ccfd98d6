package cluster

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"longtask.dev/devcluster/internal/cnode"
)

// needContainers is what a node fault says to a cluster of process nodes.
const needContainers = "has process nodes; node faults need container nodes (`up --runtime containerd`)"

// containerCluster loads the state of the container cluster in dir; a
// cluster of process nodes is refused with "the devcluster in DIR " and
// refusal.
func containerCluster(dir, refusal string) (*State, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := loadState(dir)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("no devcluster in %s", dir)
	}
	if st.Runtime != RuntimeContainerd || st.Net == nil {
		return nil, fmt.Errorf("the devcluster in %s %s", dir, refusal)
	}
	return st, nil
}

// nodeIndex maps a Node name (devcluster-node-I) to I.
func nodeIndex(st *State, name string) (int, error) {
	for i := range st.Net.Nodes {
		if cnode.NodeName(i) == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no node %q: the nodes are %s .. %s", name, cnode.NodeName(0), cnode.NodeName(st.Net.Nodes-1))
}

func nodeProc(i int) string { return fmt.Sprintf("node-%d", i) }

// containerNode is the state of the container cluster in dir and the index
// of its node name: what every node verb starts from.
func containerNode(dir, name string) (*State, int, error) {
	st, err := containerCluster(dir, needContainers)
	if err != nil {
		return nil, 0, err
	}
	i, err := nodeIndex(st, name)
	if err != nil {
		return nil, 0, err
	}
	return st, i, nil
}

// NodeStop kills container node name abruptly, as a crashed machine: the
// kubelet, kube-proxy, containerd, its shims and every container are
// SIGKILLed at once (see cnode.Crash) and nothing tells the API server. The
// Node object stays; the node-lifecycle controller marks it NotReady once
// its lease runs out.
func NodeStop(dir, name string) error {
	st, i, err := containerNode(dir, name)
	if err != nil {
		return err
	}
	if !cnode.Running(*st.Net, i) {
		return fmt.Errorf("node %s is not running", name)
	}
	return cnode.Crash(*st.Net, i, 15*time.Second)
}

// NodeStart boots a stopped container node again: its namespaces and
// network anew, /run empty, its disk (images, the kubelet's directory) kept,
// no container running, its kubelet configured with tune for this boot. It
// returns once the node's new kubelet reports the Node Ready, or after
// timeout.
func NodeStart(dir, name string, tune cnode.Tuning, timeout time.Duration) error {
	st, i, err := containerNode(dir, name)
	if err != nil {
		return err
	}
	if cnode.Running(*st.Net, i) {
		return fmt.Errorf("node %s is running; stop it first (`devcluster node stop`)", name)
	}
	rt, err := runtimeBin()
	if err != nil {
		return err
	}
	if err := cnode.PrepareBoot(*st.Net, cnode.LayoutOf(st.Dir, i)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	booted := time.Now()
	r, err := startContainerNode(st, rt, i, tune)
	if err != nil {
		return err
	}
	return waitNodeBooted(ctx, st, name, booted, r)
}

// waitNodeBooted waits until Node name is Ready and its Lease was renewed
// after booted (to the microsecond): by its new kubelet, not the Node's
// last status from before a crash.
func waitNodeBooted(ctx context.Context, st *State, name string, booted time.Time, r *running) error {
	cs, err := adminClient(st.Dir)
	if err != nil {
		return err
	}
	last := "not seen yet"
	for {
		select {
		case err := <-r.exited:
			return fmt.Errorf("node %s exited while booting (%v); end of %s:\n%s", name, err, r.proc.Log, tail(r.proc.Log, 25))
		default:
		}
		if lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{}); err != nil {
			last = err.Error()
		} else if lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.After(booted) {
			last = "no lease renewal by the new kubelet yet"
		} else if node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			last = err.Error()
		} else {
			last = "no Ready condition"
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					last = fmt.Sprintf("Ready=%s (%s)", c.Status, c.Reason)
					if c.Status == corev1.ConditionTrue {
						return nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for node %s to be Ready again: %s; see %s", name, last, r.proc.Log)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func adminClient(dir string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// A NetTarget is what `net cut` cuts off: a node (Node name) or a pod
// (NAMESPACE/NAME) on a container node.
type NetTarget struct {
	Node string
	Pod  string
}

func (t NetTarget) String() string {
	if t.Pod != "" {
		return "pod " + t.Pod
	}
	return "node " + t.Node
}

// resolved is a target found on the machine: the network namespace (of
// process pid) and link whose state cuts it off.
type resolved struct {
	pid  int
	link string
	// node is the index of the node the target is or runs on.
	node int
}

func resolve(ctx context.Context, st *State, t NetTarget) (resolved, error) {
	if t.Pod == "" {
		i, err := nodeIndex(st, t.Node)
		if err != nil {
			return resolved{}, err
		}
		// The host end of the node's link, in the host's namespace.
		return resolved{pid: 0, link: st.Net.Veth(i), node: i}, nil
	}
	ns, name, ok := strings.Cut(t.Pod, "/")
	if !ok || ns == "" || name == "" {
		return resolved{}, fmt.Errorf("--pod %q: want NAMESPACE/NAME", t.Pod)
	}
	cs, err := adminClient(st.Dir)
	if err != nil {
		return resolved{}, err
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return resolved{}, err
	}
	if pod.Spec.HostNetwork {
		return resolved{}, fmt.Errorf("pod %s uses the node's network: cut the node instead", t.Pod)
	}
	pid, node, err := cnode.PodProcess(*st.Net, string(pod.UID))
	if err != nil {
		return resolved{}, fmt.Errorf("pod %s: %w", t.Pod, err)
	}
	var nodePid int
	for _, p := range st.Procs {
		if p.Name == nodeProc(node) && alive(p.Pid, st.Dir) {
			nodePid = p.Pid
		}
	}
	if nodePid == 0 {
		return resolved{}, fmt.Errorf("pod %s: its node %s is not running", t.Pod, cnode.NodeName(node))
	}
	link, err := cnode.PodLink(pid, nodePid)
	if err != nil {
		return resolved{}, fmt.Errorf("pod %s: %w", t.Pod, err)
	}
	return resolved{pid: nodePid, link: link, node: node}, nil
}

func (r resolved) set(st *State, up bool) error {
	if r.pid == 0 {
		return cnode.SetNodeLink(*st.Net, r.node, up)
	}
	return cnode.SetLinkIn(r.pid, r.link, up)
}

// NetCut cuts target off the cluster's network: for a node, the host end of
// its link goes down (API server, other nodes and their pods unreachable
// both ways; the node's own pods still reach each other); for a pod, the
// node's end of the pod's link (the pod reaches nothing, nothing reaches
// it; its node and containers run on). Packets are dropped, not refused, as
// in a partition. With heal > 0 a detached helper, stopped by `down`, heals
// the cut after that long; otherwise NetHeal does.
func NetCut(dir string, t NetTarget, heal time.Duration) error {
	st, r, err := netTarget(dir, t)
	if err != nil {
		return err
	}
	if err := r.set(st, false); err != nil {
		return err
	}
	if heal <= 0 {
		return nil
	}
	args := []string{"--dir=" + st.Dir, "--after=" + heal.String(), "--link=" + r.link,
		"--netns-pid=" + strconv.Itoa(r.pid), "--node-index=" + strconv.Itoa(r.node)}
	name := "net-healer-" + t.Node
	if t.Pod != "" {
		name = "net-healer-pod-" + strings.ReplaceAll(t.Pod, "/", "-")
	}
	if _, err := spawnIn(st, name, NetHealerProc, args, 0); err != nil {
		_ = r.set(st, true)
		return fmt.Errorf("start the healer (the cut is undone): %w", err)
	}
	return nil
}

// NetHeal undoes NetCut at once.
func NetHeal(dir string, t NetTarget) error {
	st, r, err := netTarget(dir, t)
	if err != nil {
		return err
	}
	return r.set(st, true)
}

// netTarget is the state of the container cluster in dir and the link
// that t names: what both network verbs start from.
func netTarget(dir string, t NetTarget) (*State, resolved, error) {
	st, err := containerCluster(dir, needContainers)
	if err != nil {
		return nil, resolved{}, err
	}
	r, err := resolve(context.Background(), st, t)
	if err != nil {
		return nil, resolved{}, err
	}
	return st, r, nil
}

// NetHealerProc is the internal command of the detached helper that
// `net cut --seconds N` starts (NetHealerMain).
const NetHealerProc = "net-healer"

// NetHealerMain waits, then brings up again the link NetCut took down (as
// it resolved it then: a node restarted meanwhile has a new link, up, and
// a pod's node namespace gone meanwhile took the link with it).
func NetHealerMain(args []string) error {
	fs := flag.NewFlagSet(NetHealerProc, flag.ContinueOnError)
	dir := fs.String("dir", "", "cluster directory")
	after := fs.Duration("after", 0, "how long to wait")
	var r resolved
	fs.StringVar(&r.link, "link", "", "the link to bring up")
	fs.IntVar(&r.pid, "netns-pid", 0, "a process in the link's network namespace (0: the host's)")
	fs.IntVar(&r.node, "node-index", 0, "the node's index")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := containerCluster(*dir, needContainers)
	if err != nil {
		return err
	}
	time.Sleep(*after)
	if r.pid != 0 && syscall.Kill(r.pid, 0) != nil {
		return nil
	}
	return r.set(st, true)
}
