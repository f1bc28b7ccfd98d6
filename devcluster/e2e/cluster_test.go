package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A second cluster runs beside the first (free ports, its own state), a
// second `up` on a running directory is refused with a clear reason, and
// `down` leaves none of its processes behind.
func TestSecondClusterSideBySide(t *testing.T) {
	other, err := os.MkdirTemp("", "devcluster-e2e-2-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(other)
	if err := devcluster("up", "--dir", other).Run(); err != nil {
		t.Fatalf("second up: %v", err)
	}
	downed := false
	defer func() {
		if !downed {
			_ = devcluster("down", "--dir", other).Run()
		}
	}()
	out, err := exec.Command("kubectl", "--kubeconfig", filepath.Join(other, "kubeconfig"), "get", "nodes", "--no-headers").CombinedOutput()
	if err != nil || !strings.Contains(string(out), " Ready ") {
		t.Fatalf("second cluster's nodes: %v\n%s", err, out)
	}
	// The first cluster still answers.
	if out, err := kubectl(t, "get", "nodes", "--no-headers"); err != nil || !strings.Contains(out, " Ready ") {
		t.Fatalf("first cluster's nodes: %v\n%s", err, out)
	}

	again := exec.Command(filepath.Join("..", "devcluster"), "up", "--dir", other)
	var stderr bytes.Buffer
	again.Stderr = &stderr
	if err := again.Run(); err == nil {
		t.Fatal("a second up on a running directory succeeded; want it refused")
	}
	if !strings.Contains(stderr.String(), "already running") {
		t.Fatalf("refusal does not say why:\n%s", stderr.String())
	}

	if err := devcluster("down", "--dir", other).Run(); err != nil {
		t.Fatalf("down: %v", err)
	}
	downed = true
	if left := leftovers(other); len(left) > 0 {
		t.Fatalf("processes left after down: %v", left)
	}
}
