package cnode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Crash kills node i the way a machine dies: its cgroup is frozen first, so
// that no process of the node (kubelet, kube-proxy, containerd, shims, the
// pods' processes, the node's supervisor) runs another instruction, then
// every process in it gets SIGKILL and the cgroup is thawed. The node's
// namespaces die with its last process; the Node object is left as it was.
// It returns once the cgroup is empty.
func Crash(n Net, i int, timeout time.Duration) error {
	rel := n.CgroupRoot(i)
	frozen, err := freeze(rel, true)
	if err != nil {
		return err
	}
	for _, pid := range cgroupPids(rel) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if frozen != "" {
		if _, err := freeze(rel, false); err != nil {
			return err
		}
	}
	if left := KillCgroup(rel, timeout); len(left) > 0 {
		return fmt.Errorf("node %d: processes still running after %s: %v", i, timeout, left)
	}
	return nil
}

// Running reports whether any process runs in node i's cgroup.
func Running(n Net, i int) bool { return len(cgroupPids(n.CgroupRoot(i))) > 0 }

// freeze sets the v1 freezer of cgroup rel to FROZEN (or THAWED) and waits
// until it is; it returns the freezer.state file, or "" if this machine has
// no freezer hierarchy (the kill is then merely quick, not atomic).
func freeze(rel string, on bool) (string, error) {
	hs, err := hierarchies()
	if err != nil {
		return "", err
	}
	want := "THAWED"
	if on {
		want = "FROZEN"
	}
	for _, h := range hs {
		state := filepath.Join(h, rel, "freezer.state")
		if _, err := os.Stat(state); err != nil {
			continue
		}
		if err := os.WriteFile(state, []byte(want), 0o644); err != nil {
			return "", fmt.Errorf("set %s to %s: %w", state, want, err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; {
			b, err := os.ReadFile(state)
			if err == nil && strings.TrimSpace(string(b)) == want {
				return state, nil
			}
			if time.Now().After(deadline) {
				return "", fmt.Errorf("%s never became %s (last %q, %v)", state, want, b, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return "", nil
}

// PrepareBoot readies node i's files for a fresh start after Crash, as a
// reboot finds them: no cgroups, /run (containerd's state, shim sockets, the pods'
// network namespaces) starts empty; the disk (containerd's images and
// snapshots, the kubelet's directory, logs) is kept. The host end of the
// node's old link is removed if its namespace's death has not yet taken it.
func PrepareBoot(n Net, l Layout) error {
	if old, err := netlink.LinkByName(n.Veth(l.Index)); err == nil {
		if err := netlink.LinkDel(old); err != nil {
			return fmt.Errorf("delete the old %s: %w", n.Veth(l.Index), err)
		}
	}
	// A reboot starts with no cgroups: the kubelet's pod and container
	// cgroups left empty by the crash would each hold its start up
	// (cAdvisor retries them for about 25 s).
	if err := RemoveCgroup(n.CgroupRoot(l.Index)); err != nil {
		return fmt.Errorf("remove the node's old cgroups: %w", err)
	}
	run := l.path("run")
	if err := os.RemoveAll(run); err != nil {
		return fmt.Errorf("empty the node's /run (%s): %w", run, err)
	}
	return nil
}

// SetNodeLink brings the host end of node i's link down (up false) or up.
// Down, the node keeps its address and routes but every packet between it
// and the rest of the cluster (API server, other nodes and their pods) is
// dropped, as in a network partition; its own pods still reach each other.
func SetNodeLink(n Net, i int, up bool) error {
	link, err := netlink.LinkByName(n.Veth(i))
	if err != nil {
		return fmt.Errorf("node %d's link %s: %w", i, n.Veth(i), err)
	}
	if up {
		err = netlink.LinkSetUp(link)
	} else {
		err = netlink.LinkSetDown(link)
	}
	if err != nil {
		return fmt.Errorf("set %s up=%t: %w", n.Veth(i), up, err)
	}
	return nil
}

// ErrNoPod is returned when no process of a pod runs on any node.
var ErrNoPod = errors.New("no process of the pod runs on a node of this cluster")

// PodProcess returns a process of the pod with the given UID (its sandbox or
// a container: they share the pod's network namespace) and the index of the
// node it runs on, from the kubelet's pod cgroups (pod<UID>, cgroupfs driver).
func PodProcess(n Net, uid string) (pid, node int, err error) {
	hs, err := hierarchies()
	if err != nil {
		return 0, 0, err
	}
	want := "pod" + uid
	for i := range n.Nodes {
		for _, h := range hs {
			var found string
			root := filepath.Join(h, n.CgroupRoot(i))
			_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					// SkipDir on a file would skip the rest of its directory.
					return nil
				}
				if d.Name() == want {
					found = path
					return filepath.SkipAll
				}
				return nil
			})
			if found == "" {
				continue
			}
			rel := strings.TrimPrefix(found, h)
			if pids := cgroupPids(rel); len(pids) > 0 {
				return pids[0], i, nil
			}
		}
	}
	return 0, 0, ErrNoPod
}

// PodLink returns the name, in its node's network namespace, of the node's
// end of the link of the pod whose process is podPid (the CNI bridge
// plugin's veth on cni0); nodePid is a process in that node's namespace.
func PodLink(podPid, nodePid int) (string, error) {
	var peer int
	err := inNetns(podPid, func(h *netlink.Handle) error {
		eth0, err := h.LinkByName("eth0")
		if err != nil {
			return fmt.Errorf("the pod's eth0: %w", err)
		}
		// IFLA_LINK of a veth is its peer's index in the peer's namespace.
		if peer = eth0.Attrs().ParentIndex; peer == 0 {
			return errors.New("the pod's eth0 names no peer")
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	var name string
	err = inNetns(nodePid, func(h *netlink.Handle) error {
		l, err := h.LinkByIndex(peer)
		if err != nil {
			return fmt.Errorf("link %d on the node: %w", peer, err)
		}
		name = l.Attrs().Name
		return nil
	})
	return name, err
}

// SetLinkIn brings link name in the network namespace of process pid down
// (up false) or up.
func SetLinkIn(pid int, name string, up bool) error {
	return inNetns(pid, func(h *netlink.Handle) error {
		l, err := h.LinkByName(name)
		if err != nil {
			return err
		}
		if up {
			return h.LinkSetUp(l)
		}
		return h.LinkSetDown(l)
	})
}

// inNetns runs do with a netlink handle in the network namespace of pid;
// the calling thread stays where it is.
func inNetns(pid int, do func(*netlink.Handle) error) error {
	ns, err := netns.GetFromPid(pid)
	if err != nil {
		return fmt.Errorf("network namespace of %d: %w", pid, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in the namespace of %d: %w", pid, err)
	}
	defer h.Close()
	return do(h)
}
