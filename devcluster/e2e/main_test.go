// Package e2e tests the devcluster itself: one real cluster for the whole
// package, started by TestMain with the devcluster command and stopped again,
// with checks on what a kubelet-backed cluster must do for longtask.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	dir        string
	kubeconfig string
	client     *kubernetes.Clientset
)

func devcluster(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join("..", "devcluster"), args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	dir, err = os.MkdirTemp("", "devcluster-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// One 2-CPU node, so the capacity test can see the scheduler hold a pod back.
	if err := devcluster("up", "--dir", dir, "--nodes", "1", "--node-cpu", "2", "--node-memory", "4Gi").Run(); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster up:", err)
		_ = devcluster("down", "--dir", dir).Run()
		return 1
	}
	code := func() int {
		defer func() {
			if err := devcluster("down", "--dir", dir).Run(); err != nil {
				fmt.Fprintln(os.Stderr, "devcluster down:", err)
			}
		}()
		kubeconfig = filepath.Join(dir, "kubeconfig")
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if client, err = kubernetes.NewForConfig(cfg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	if left := leftovers(dir); code == 0 && len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes left after down: %v\n", left)
		return 1
	}
	return code
}

// namespace makes a throwaway namespace for one test; on failure it prints
// the pods in it before deleting it.
func namespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dc-test-", Labels: map[string]string{"devcluster-test": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("kubectl", "--kubeconfig", kubeconfig, "-n", ns.Name, "get", "pods,jobs", "-o", "yaml").CombinedOutput()
			t.Logf("objects in %s:\n%s", ns.Name, out)
		}
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	// Pods are refused until the namespace's default service account exists.
	waitUntil(t, 30*time.Second, "default service account", func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return ns.Name
}

// waitUntil polls cond (a level check, never a sleep-and-hope) until it
// holds or the timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
}

func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}
