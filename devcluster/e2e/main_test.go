// Package e2e tests the devcluster itself: one real cluster for the whole
// package, started by TestMain with the devcluster command and stopped again,
// with checks on what a kubelet-backed cluster must do for longtask.
package e2e

import (
	"os"
	"os/exec"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/kubernetes"

	"longtask.dev/devcluster/e2e/harness"
)

var (
	dc         *harness.Cluster
	dir        string
	kubeconfig string
	client     *kubernetes.Clientset
)

func devcluster(args ...string) *exec.Cmd { return harness.Command(args...) }

func TestMain(m *testing.M) {
	// One 2-CPU node, so the capacity test can see the scheduler hold a pod back.
	os.Exit(harness.Main(m, []string{"--nodes", "1", "--node-cpu", "2", "--node-memory", "4Gi"}, func(c *harness.Cluster) error {
		dc, dir, kubeconfig, client = c, c.Dir, c.Kubeconfig, c.Client
		return nil
	}))
}

// namespace makes a throwaway namespace for one test; on failure it prints
// the pods and Jobs in it before deleting it.
func namespace(t *testing.T) string { return dc.Namespace(t, "pods,jobs", nil) }

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	harness.WaitUntil(t, timeout, what, cond)
}

func jobCondition(t *testing.T, ns, name string, want batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	return dc.JobCondition(t, ns, name, want)
}

func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return dc.Kubectl(t, args...)
}
