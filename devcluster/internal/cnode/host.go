package cnode

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"

	"github.com/vishvananda/netlink"
)

// PickNet chooses an address block no interface or route of this machine
// uses, starting from one derived from the cluster's directory.
func PickNet(dir string, nodes int) (Net, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return Net{}, fmt.Errorf("list addresses: %w", err)
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return Net{}, fmt.Errorf("list routes: %w", err)
	}
	h := fnv.New32a()
	h.Write([]byte(dir))
	start := int(h.Sum32() % 100)
	for t := range 100 {
		n := Net{Block: 100 + (start+t)%100, Nodes: nodes}
		if err := n.Validate(); err != nil {
			return Net{}, err
		}
		if _, err := netlink.LinkByName(n.Bridge()); err == nil {
			continue
		}
		if !inUse(n.ClusterCIDR(), addrs, routes) {
			return n, nil
		}
	}
	return Net{}, errors.New("every address block 10.100-199.0.0/16 is in use on this machine")
}

func inUse(block *net.IPNet, addrs []netlink.Addr, routes []netlink.Route) bool {
	for _, a := range addrs {
		if block.Contains(a.IP) {
			return true
		}
	}
	for _, r := range routes {
		if r.Dst != nil && (block.Contains(r.Dst.IP) || r.Dst.Contains(block.IP)) && !isDefault(r.Dst) {
			return true
		}
	}
	return false
}

func isDefault(n *net.IPNet) bool { ones, _ := n.Mask.Size(); return ones == 0 }

// SetUpBridge makes the cluster's bridge with the host's address on it. The
// bridge has no uplink: it reaches only the node namespaces attached to it.
func SetUpBridge(n Net) error {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: n.Bridge()}}
	if err := netlink.LinkAdd(br); err != nil {
		return fmt.Errorf("add bridge %s: %w", n.Bridge(), err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: n.Gateway(), Mask: n.BridgeNet().Mask}}
	if err := netlink.AddrAdd(br, addr); err != nil {
		return fmt.Errorf("address %s on %s: %w", addr, n.Bridge(), err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return fmt.Errorf("bring %s up: %w", n.Bridge(), err)
	}
	return nil
}

// Attach links node i, whose namespaces process pid holds, to the bridge:
// a veth pair with eth0 inside, and a host route to the node's pod subnet
// (the API server's pod proxy and kubelet calls go that way).
func Attach(n Net, i, pid int) error {
	br, err := netlink.LinkByName(n.Bridge())
	if err != nil {
		return fmt.Errorf("bridge %s: %w", n.Bridge(), err)
	}
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: n.Veth(i), MasterIndex: br.Attrs().Index},
		PeerName:      "eth0",
		PeerNamespace: netlink.NsPid(pid),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth %s for node %d: %w", n.Veth(i), i, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return fmt.Errorf("bring %s up: %w", n.Veth(i), err)
	}
	route := &netlink.Route{Dst: n.PodCIDR(i), Gw: n.NodeIP(i), LinkIndex: br.Attrs().Index}
	if err := netlink.RouteReplace(route); err != nil {
		return fmt.Errorf("route %s via %s: %w", n.PodCIDR(i), n.NodeIP(i), err)
	}
	return nil
}

// TearDown deletes the bridge and any veth left (routes go with them).
func TearDown(n Net) error {
	var errs []error
	for i := range n.Nodes {
		if l, err := netlink.LinkByName(n.Veth(i)); err == nil {
			if err := netlink.LinkDel(l); err != nil {
				errs = append(errs, fmt.Errorf("delete %s: %w", n.Veth(i), err))
			}
		}
	}
	if l, err := netlink.LinkByName(n.Bridge()); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", n.Bridge(), err))
		}
	}
	return errors.Join(errs...)
}
