// Package nodes tests what container nodes do when they fail, and their
// cluster DNS: three real nodes (kubelet, containerd, kube-proxy) for the
// whole package, the fault verbs of the devcluster command (node stop and
// start, net cut), kubectl drain, and the controllers that act on them
// (node-lifecycle, taint-eviction, disruption). Needs root, as container
// nodes do. Tests run one after another: a node's fault is seen by every
// pod, and the node-lifecycle controller stops tainting once most of a
// zone's nodes are down.
package nodes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"longtask.dev/devcluster/e2e/harness"
	"longtask.dev/devcluster/internal/cnode"
)

var (
	dc     *harness.Cluster
	client *kubernetes.Clientset
)

// probeImage is the tests' image: the static probe program as /probe.
const probeImage = "localhost/devcluster/probe:1"

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "devcluster/e2e/nodes: container nodes need root; skipped")
		os.Exit(0)
	}
	os.Exit(harness.Main(m, []string{"--runtime", "containerd", "--nodes", "3"}, func(c *harness.Cluster) error {
		dc, client = c, c.Client
		return loadProbe(c.Dir)
	}))
}

// loadProbe builds the probe program, makes an image of it and loads it
// into every node.
func loadProbe(dir string) error {
	bin := filepath.Join(dir, "probe")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build probe: %v\n%s", err, out)
	}
	archive := filepath.Join(dir, "probe.tar")
	if err := cnode.WriteProgramImage(bin, archive, probeImage, "probe"); err != nil {
		return err
	}
	var out strings.Builder
	load := harness.Command("load", "--dir", dir, archive)
	load.Stdout = &out
	if err := load.Run(); err != nil {
		return fmt.Errorf("load the probe image: %w", err)
	}
	if got := strings.TrimSpace(out.String()); got != probeImage {
		return fmt.Errorf("load printed %q, want %q", got, probeImage)
	}
	return nil
}

func namespace(t *testing.T) string {
	return dc.Namespace(t, "pods,deployments,poddisruptionbudgets,services", nodesDump)
}

// nodesDump shows the nodes' conditions and taints when a test fails.
func nodesDump() string {
	out, _ := exec.Command("kubectl", "--kubeconfig", dc.Kubeconfig, "get", "nodes", "-o",
		`custom-columns=NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,TAINTS:.spec.taints[*].key,UNSCHEDULABLE:.spec.unschedulable`).CombinedOutput()
	return "nodes:\n" + string(out)
}

func devcluster(t *testing.T, args ...string) {
	t.Helper()
	// Flags may follow the positional arguments: `node stop NODE --dir DIR`.
	if err := harness.Command(append(args, "--dir", dc.Dir)...).Run(); err != nil {
		t.Fatalf("devcluster %s: %v", strings.Join(args, " "), err)
	}
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	harness.WaitUntil(t, timeout, what, cond)
}
