package cnode

import (
	"net"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestInUseSeesAddressesAndRoutesInTheBlock(t *testing.T) {
	block := Net{Block: 150, Nodes: 1}.ClusterCIDR()
	cidr := func(s string) *net.IPNet {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	addr := func(s string) netlink.Addr {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return netlink.Addr{IPNet: n}
	}
	for _, c := range []struct {
		name   string
		addrs  []netlink.Addr
		routes []netlink.Route
		want   bool
	}{
		{"nothing", nil, nil, false},
		{"an address elsewhere", []netlink.Addr{addr("192.0.2.2/24")}, nil, false},
		{"the default route", nil, []netlink.Route{{Dst: cidr("0.0.0.0/0")}}, false},
		{"an address inside", []netlink.Addr{addr("10.150.3.4/24")}, nil, true},
		{"a route inside", nil, []netlink.Route{{Dst: cidr("10.150.7.0/24")}}, true},
		{"a route around it", nil, []netlink.Route{{Dst: cidr("10.0.0.0/8")}}, true},
		{"a neighbour block", nil, []netlink.Route{{Dst: cidr("10.151.0.0/16")}}, false},
	} {
		if got := inUse(block, c.addrs, c.routes); got != c.want {
			t.Errorf("%s: inUse = %v, want %v", c.name, got, c.want)
		}
	}
}
