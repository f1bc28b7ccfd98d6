package cnode

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// containerdConfig is containerd's configuration for node l: its own root,
// CNI config and sandbox image; runc with cgroupfs; oom_score_adj never
// lowered (this machine grants no CAP_SYS_RESOURCE, so runc cannot set a
// negative one); the CRI streaming server on the node's loopback only.
func containerdConfig(l Layout, runc, cniBin string) string {
	return fmt.Sprintf(`version = 3
root = %q
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %q

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%q]
    conf_dir = %q
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = %q
        SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`, l.ContainerdRoot(), PauseImage, cniBin, l.CNIConfDir(), runc)
}

// cniConfig is node i's pod network: a bridge inside the node's namespace,
// its pods in the node's /24, routed (no NAT) to the host and other nodes.
func cniConfig(n Net, i int) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "devcluster",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      "cni0",
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": [][]map[string]string{{{"subnet": n.PodCIDR(i).String()}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "loopback"},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// NodeLeaseSeconds is the kubelet's nodeLeaseDurationSeconds (default 40):
// it renews its Lease every quarter of that, 5 s, and the controller-manager
// takes a node for dead after 25 s without a renewal (cluster's
// nodeMonitorGracePeriod).
const NodeLeaseSeconds = 20

// ClusterDNS is the kube-dns Service's address, the pods' nameserver: the
// tenth of the Service range, as kubeadm picks it.
const ClusterDNS = "10.0.0.10"

// kubeletConfig is the kubelet's configuration for node i. What differs
// from a kubeadm node, and why: cgroup v1 with the cgroupfs driver (this
// machine has no systemd and no cgroup v2 controllers), a cgroup root of the
// node's own, no swap check, no host resolv.conf for pods (nothing outside
// the cluster resolves here; cluster DNS does), oomScoreAdj 0 (see
// containerdConfig), image garbage collection only when the disk is full
// (nothing can pull a collected image back here), and a 20 s node lease
// (NodeLeaseSeconds).
func kubeletConfig(l Layout, n Net, ca string, tune Tuning) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: %s
failCgroupV1: false
failSwapOn: false
resolvConf: ""
oomScoreAdj: 0
volumePluginDir: %s
clusterDomain: cluster.local
clusterDNS:
- %s
nodeLeaseDurationSeconds: %d
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
%s`, n.NodeIP(l.Index), l.PKI("serving.crt"), l.PKI("serving.key"), ca,
		n.CgroupRoot(l.Index), l.VolumePluginDir(), ClusterDNS, NodeLeaseSeconds, tune.yaml())
}

// proxyConfig is kube-proxy's configuration: iptables mode inside the
// node's namespace; it leaves the conntrack sysctls alone (they are the
// host's, not the namespace's).
func proxyConfig(l Layout, n Net) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: iptables
clusterCIDR: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, l.ProxyKubeconfig(), NodeName(l.Index), n.ClusterCIDR())
}

// CNIBin is where Debian's containernetworking-plugins puts the plugins.
const CNIBin = "/usr/lib/cni"

func cniConfPath(l Layout) string { return filepath.Join(l.CNIConfDir(), "10-devcluster.conflist") }

// Tuning is what `node start` may change in a node's kubelet configuration
// for one boot, to bring on the kubelet's own eviction: SystemReserved
// memory (a quantity; the node's allocatable memory, and the limit of its
// pods' cgroup, shrink by it) and hard eviction thresholds (signal to
// quantity or percentage), which replace the defaults signal by signal.
type Tuning struct {
	SystemReservedMemory string
	EvictionHard         map[string]string
}

// defaultEvictionHard are the kubelet's hard eviction thresholds here:
// Kubernetes' defaults for memory, and for the disk only at 1% (the disk
// is the machine's, shared by every node and more than this cluster).
var defaultEvictionHard = map[string]string{
	"memory.available":  "100Mi",
	"nodefs.available":  "1%",
	"imagefs.available": "1%",
	"nodefs.inodesFree": "1%",
}

func (t Tuning) yaml() string {
	hard := maps.Clone(defaultEvictionHard)
	maps.Copy(hard, t.EvictionHard)
	var b strings.Builder
	b.WriteString("evictionHard:\n")
	for _, k := range slices.Sorted(maps.Keys(hard)) {
		fmt.Fprintf(&b, "  %s: %q\n", k, hard[k])
	}
	if t.SystemReservedMemory != "" {
		fmt.Fprintf(&b, "systemReserved:\n  memory: %q\n", t.SystemReservedMemory)
	}
	return b.String()
}

// Flags are the cnode flags that carry t.
func (t Tuning) Flags() []string {
	var out []string
	if t.SystemReservedMemory != "" {
		out = append(out, "--system-reserved-memory="+t.SystemReservedMemory)
	}
	for _, k := range slices.Sorted(maps.Keys(t.EvictionHard)) {
		out = append(out, "--eviction-hard="+k+"="+t.EvictionHard[k])
	}
	return out
}

// SetEvictionHard adds one SIGNAL=QUANTITY threshold (a flag's value).
func (t *Tuning) SetEvictionHard(v string) error {
	k, q, ok := strings.Cut(v, "=")
	if !ok || k == "" || q == "" {
		return fmt.Errorf("eviction threshold %q: want SIGNAL=QUANTITY, as memory.available=500Mi", v)
	}
	if t.EvictionHard == nil {
		t.EvictionHard = map[string]string{}
	}
	t.EvictionHard[k] = q
	return nil
}
