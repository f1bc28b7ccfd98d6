package cnode

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNetAddressesDoNotOverlap(t *testing.T) {
	n := Net{Block: 150, Nodes: 3}
	if err := n.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := n.Gateway().String(); got != "10.150.0.1" {
		t.Errorf("gateway %s", got)
	}
	for i := range n.Nodes {
		if !n.BridgeNet().Contains(n.NodeIP(i)) {
			t.Errorf("node %d address %s is off the bridge", i, n.NodeIP(i))
		}
		if n.PodCIDR(i).Contains(n.Gateway()) || n.BridgeNet().Contains(n.PodCIDR(i).IP) {
			t.Errorf("pod subnet %s overlaps the bridge", n.PodCIDR(i))
		}
		if !n.ClusterCIDR().Contains(n.PodCIDR(i).IP) {
			t.Errorf("pod subnet %s outside %s", n.PodCIDR(i), n.ClusterCIDR())
		}
		if len(n.Veth(i)) > 15 {
			t.Errorf("interface name %q too long", n.Veth(i))
		}
	}
	if (Net{Block: 150, Nodes: MaxNodes + 1}).Validate() == nil {
		t.Error("too many nodes accepted")
	}
}

func TestFullName(t *testing.T) {
	for in, want := range map[string]string{
		"longtask-worker:0.1.0":         "docker.io/library/longtask-worker:0.1.0",
		"me/app:1":                      "docker.io/me/app:1",
		"localhost/devcluster/pause:1":  "localhost/devcluster/pause:1",
		"registry.example:5000/x/y:tag": "registry.example:5000/x/y:tag",
	} {
		if got := fullName(in); got != want {
			t.Errorf("fullName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPauseArchiveNamesItself(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "pause")
	if err := os.WriteFile(prog, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "pause.tar")
	if err := WritePauseArchive(prog, archive); err != nil {
		t.Fatal(err)
	}
	names, err := archiveNames(archive)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != PauseImage {
		t.Errorf("names %v, want [%s]", names, PauseImage)
	}
}

func TestConfigsNameTheNodesOwnPaths(t *testing.T) {
	n := Net{Block: 120, Nodes: 2}
	l := LayoutOf("/d", 1)
	kc := kubeletConfig(l, n, "/d/pki/ca.crt", Tuning{})
	for _, want := range []string{"address: 10.120.0.11", "cgroupRoot: /devcluster-120/node-1", "/d/pki/node-1-serving.crt", "oomScoreAdj: 0", `memory.available: "100Mi"`} {
		if !strings.Contains(kc, want) {
			t.Errorf("kubelet config lacks %q:\n%s", want, kc)
		}
	}
	cc := containerdConfig(l, "/usr/sbin/runc", CNIBin)
	for _, want := range []string{`root = "/d/nodes/node-1/containerd"`, "restrict_oom_score_adj = true", PauseImage} {
		if !strings.Contains(cc, want) {
			t.Errorf("containerd config lacks %q", want)
		}
	}
	cni, err := cniConfig(n, 1)
	if err != nil || !strings.Contains(string(cni), "10.120.2.0/24") {
		t.Errorf("cni config %s (%v) lacks node 1's subnet", cni, err)
	}
}

func TestTuningReplacesThresholdsOneByOne(t *testing.T) {
	var tune Tuning
	if err := tune.SetEvictionHard("memory.available=300Mi"); err != nil {
		t.Fatal(err)
	}
	if err := tune.SetEvictionHard("memory.available"); err == nil {
		t.Error("a threshold without a quantity was accepted")
	}
	tune.SystemReservedMemory = "20Gi"
	kc := kubeletConfig(LayoutOf("/d", 0), Net{Block: 120, Nodes: 1}, "/d/pki/ca.crt", tune)
	for _, want := range []string{`memory.available: "300Mi"`, `nodefs.available: "1%"`, "systemReserved:\n  memory: \"20Gi\""} {
		if !strings.Contains(kc, want) {
			t.Errorf("kubelet config lacks %q:\n%s", want, kc)
		}
	}
	if strings.Contains(kc, "100Mi") {
		t.Errorf("the default memory threshold is still there:\n%s", kc)
	}
	if got := tune.Flags(); !slices.Equal(got, []string{"--system-reserved-memory=20Gi", "--eviction-hard=memory.available=300Mi"}) {
		t.Errorf("flags %v", got)
	}
}
