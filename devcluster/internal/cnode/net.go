// Package cnode runs container nodes: each node is a real kubelet, containerd
// (with runc and the CNI plugins) and kube-proxy, together in a mount and
// network namespace of their own, the way kind gives each node a container.
//
// The host side (this file, host.go, cgroup.go) makes the cluster's bridge,
// wires each node's namespace to it and tracks the node's processes in a
// cgroup; the node side (node.go) runs inside the namespaces.
package cnode

import (
	"fmt"
	"net"
)

// Net is a container cluster's addressing, all inside 10.B.0.0/16 with B
// picked per cluster so that two clusters on one machine never overlap:
//
//	10.B.0.1       the host's end of the bridge: the API server listens here
//	10.B.0.10+i    node i (its eth0, in its own network namespace)
//	10.B.(i+1).0/24 node i's pods (a CNI bridge inside node i's namespace)
//
// Nothing is routed off the machine: the bridge has no uplink and no NAT.
type Net struct {
	Block int `json:"block"`
	Nodes int `json:"nodes"`
}

// MaxNodes is how many nodes one block can address.
const MaxNodes = 200

func (n Net) ip(c, d int) net.IP { return net.IPv4(10, byte(n.Block), byte(c), byte(d)).To4() }

// Bridge is the host bridge's interface name.
func (n Net) Bridge() string { return fmt.Sprintf("ltdc%d", n.Block) }

// Gateway is the host's address on the bridge.
func (n Net) Gateway() net.IP { return n.ip(0, 1) }

// BridgeNet is the bridge's subnet, gateway included.
func (n Net) BridgeNet() *net.IPNet {
	return &net.IPNet{IP: n.ip(0, 0), Mask: net.CIDRMask(24, 32)}
}

// NodeIP is node i's address on the bridge.
func (n Net) NodeIP(i int) net.IP { return n.ip(0, 10+i) }

// PodCIDR is the subnet node i gives its pods.
func (n Net) PodCIDR(i int) *net.IPNet {
	return &net.IPNet{IP: n.ip(i+1, 0), Mask: net.CIDRMask(24, 32)}
}

// ClusterCIDR holds every address of the cluster.
func (n Net) ClusterCIDR() *net.IPNet {
	return &net.IPNet{IP: n.ip(0, 0), Mask: net.CIDRMask(16, 32)}
}

// Veth is the host end of node i's link (interface names stop at 15 bytes).
func (n Net) Veth(i int) string { return fmt.Sprintf("ltdc%dn%d", n.Block, i) }

// NodeName is node i's Node name.
func NodeName(i int) string { return fmt.Sprintf("devcluster-node-%d", i) }

// CgroupRoot is the cgroup (same path in every v1 hierarchy) that holds
// everything node i runs: the node's agents, containerd's shims and, under
// it, the kubelet's pod cgroups.
func (n Net) CgroupRoot(i int) string { return fmt.Sprintf("/devcluster-%d/node-%d", n.Block, i) }

// ClusterCgroup holds every node's cgroup.
func (n Net) ClusterCgroup() string { return fmt.Sprintf("/devcluster-%d", n.Block) }

// Validate refuses addressing that does not fit.
func (n Net) Validate() error {
	if n.Block < 1 || n.Block > 254 {
		return fmt.Errorf("address block %d: want 1..254", n.Block)
	}
	if n.Nodes < 1 || n.Nodes > MaxNodes {
		return fmt.Errorf("%d container nodes: want 1..%d", n.Nodes, MaxNodes)
	}
	return nil
}
