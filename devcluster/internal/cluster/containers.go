package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"longtask.dev/devcluster/internal/cnode"
	"longtask.dev/devcluster/internal/pki"
)

// Runtimes a cluster's nodes can use.
const (
	RuntimeProcess    = "process"
	RuntimeContainerd = "containerd"
)

// runtimeBinEnv names the directory of containerd, its shim, ctr and the
// pause program; the devcluster wrapper script builds them and sets it.
const runtimeBinEnv = "DEVCLUSTER_RUNTIME_BIN"

// hostNeeds are the host programs container nodes use, with the Debian
// package that has each.
var hostNeeds = [][2]string{
	{"/usr/sbin/runc", "runc"},
	{cnode.CNIBin + "/bridge", "containernetworking-plugins"},
	{cnode.CNIBin + "/host-local", "containernetworking-plugins"},
	{cnode.CNIBin + "/loopback", "containernetworking-plugins"},
}

// runtimeDir is the directory of the runtime programs, which the wrapper
// script names.
func runtimeDir() (string, error) {
	rt := os.Getenv(runtimeBinEnv)
	if rt == "" {
		return "", fmt.Errorf("%s is not set: run devcluster through devcluster/devcluster, which builds devcluster/runtime", runtimeBinEnv)
	}
	return rt, nil
}

// runtimeBin checks that container nodes can run here and returns the
// directory of the runtime programs.
func runtimeBin() (string, error) {
	rt, err := runtimeDir()
	if err != nil {
		return "", err
	}
	for _, p := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "pause"} {
		if _, err := os.Stat(filepath.Join(rt, p)); err != nil {
			return "", fmt.Errorf("container nodes need %s (build it with devcluster/runtime/build): %w", p, err)
		}
	}
	var missing []string
	for _, need := range hostNeeds {
		if _, err := os.Stat(need[0]); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", need[0], need[1]))
		}
	}
	if _, err := exec.LookPath("iptables-restore"); err != nil {
		missing = append(missing, "iptables-restore (Debian package iptables)")
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("container nodes need: %v", missing)
	}
	return rt, nil
}

// prepareContainers picks the cluster's addresses, makes its bridge and
// the certificates the nodes and the API server use to reach each other.
func prepareContainers(st *State, nodes int) (*containerFlags, error) {
	n, err := cnode.PickNet(st.Dir, nodes)
	if err != nil {
		return nil, err
	}
	st.Runtime, st.Net = RuntimeContainerd, &n
	if err := st.save(); err != nil {
		return nil, err
	}
	if err := cnode.SetUpBridge(n); err != nil {
		return nil, err
	}
	return &containerFlags{address: n.Gateway().String()}, nil
}

// issueContainerCerts writes the API server's kubelet client certificate
// and, per node, the kubelet's and kube-proxy's kubeconfigs and the
// kubelet's serving certificate.
func issueContainerCerts(st *State, c *containerFlags) error {
	dir := filepath.Join(st.Dir, "pki")
	var err error
	// Older kubeadm gave this certificate system:masters; it only calls kubelets.
	c.kubeletClientCert, c.kubeletClientKey, err = pki.Issue(dir, pki.Cert{
		Name: "apiserver-kubelet-client", CommonName: "kube-apiserver-kubelet-client",
		Organizations: []string{"system:masters"},
	})
	if err != nil {
		return err
	}
	ca := pki.In(dir).CA
	for i := range st.Net.Nodes {
		l := cnode.LayoutOf(st.Dir, i)
		if err := os.MkdirAll(l.Root, 0o755); err != nil {
			return err
		}
		name := cnode.NodeName(i)
		if _, _, err := pki.Issue(dir, pki.Cert{
			Name: filepath.Base(l.PKI("serving")), CommonName: name,
			IPs: []net.IP{st.Net.NodeIP(i)}, Server: true,
		}); err != nil {
			return err
		}
		for _, who := range []struct {
			kubeconfig, stem, user string
			groups                 []string
		}{
			{l.KubeletKubeconfig(), "kubelet", "system:node:" + name, []string{"system:nodes"}},
			{l.ProxyKubeconfig(), "kube-proxy", "system:kube-proxy", nil},
		} {
			cert, key, err := pki.Issue(dir, pki.Cert{Name: filepath.Base(l.PKI(who.stem)), CommonName: who.user, Organizations: who.groups})
			if err != nil {
				return err
			}
			if err := writeKubeconfigFiles(who.kubeconfig, st.APIServer, ca, cert, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// startContainerNodes starts every node of the cluster.
func startContainerNodes(st *State, rt string) ([]*running, error) {
	if err := cnode.WritePauseArchive(filepath.Join(rt, "pause"), cnode.PauseArchive(st.Dir)); err != nil {
		return nil, err
	}
	var started []*running
	for i := range st.Net.Nodes {
		r, err := startContainerNode(st, rt, i, cnode.Tuning{})
		if r != nil {
			started = append(started, r)
		}
		if err != nil {
			return started, err
		}
	}
	return started, nil
}

// startContainerNode starts node i's supervisor in new mount and network
// namespaces, moves it into the node's cgroup, and then gives it its eth0
// (the supervisor waits for that before it runs anything).
func startContainerNode(st *State, rt string, i int, tune cnode.Tuning) (*running, error) {
	n := *st.Net
	if err := cnode.MakeCgroup(n.CgroupRoot(i)); err != nil {
		return nil, err
	}
	args := []string{
		"--dir=" + st.Dir, "--index=" + strconv.Itoa(i),
		"--block=" + strconv.Itoa(n.Block), "--nodes=" + strconv.Itoa(n.Nodes),
		"--runtime-bin=" + rt,
	}
	args = append(args, tune.Flags()...)
	r, err := spawnIn(st, nodeProc(i), "cnode", args, syscall.CLONE_NEWNS|syscall.CLONE_NEWNET)
	if err != nil {
		return nil, err
	}
	if err := cnode.JoinCgroup(n.CgroupRoot(i), r.proc.Pid); err != nil {
		return r, err
	}
	if err := cnode.Attach(n, i, r.proc.Pid); err != nil {
		return r, err
	}
	return r, nil
}

// tearDownContainers kills whatever is left in the cluster's cgroups (pod
// processes outlive a killed shim), removes the cgroups and the bridge.
func tearDownContainers(st *State) error {
	if st.Net == nil {
		return nil
	}
	root := st.Net.ClusterCgroup()
	var errs []error
	if left := cnode.KillCgroup(root, 20*time.Second); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes left in cgroup %s: %v", root, left))
	} else if err := cnode.RemoveCgroup(root); err != nil {
		errs = append(errs, err)
	}
	if err := cnode.TearDown(*st.Net); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Load imports image archives into every container node of the cluster in
// dir and returns the image names.
func Load(dir string, archives []string) ([]string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := containerCluster(dir, "runs pods as processes (--image REF=PATH maps images there); load needs `up --runtime containerd`")
	if err != nil {
		return nil, err
	}
	rt, err := runtimeDir()
	if err != nil {
		return nil, err
	}
	return cnode.Load(dir, st.Net.Nodes, rt, archives)
}
