package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// `restart apiserver` stops the API server and starts it again on the same
// port with the same data: clients reconnect and work goes on.
func TestRestartAPIServer(t *testing.T) {
	ns := namespace(t)
	if err := devcluster("restart", "--dir", dir, "apiserver").Run(); err != nil {
		t.Fatalf("restart apiserver: %v", err)
	}
	if err := devcluster("restart", "--dir", dir, "--kill", "apiserver").Run(); err != nil {
		t.Fatalf("restart --kill apiserver: %v", err)
	}
	// The namespace made before the restarts is still there, and the
	// controllers and node still run Jobs.
	if _, err := client.BatchV1().Jobs(ns).Create(context.Background(), shJob("after", "echo back"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobCondition(t, ns, "after", batchv1.JobComplete)
	if out, err := kubectl(t, "-n", ns, "logs", "job/after"); err != nil || strings.TrimSpace(out) != "back" {
		t.Fatalf("logs after restart: %q %v", out, err)
	}
}
