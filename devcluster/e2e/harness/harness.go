// Package harness is what the devcluster's end-to-end test packages share:
// a real cluster started with the devcluster command for the whole package
// and stopped again, throwaway namespaces, and waits on conditions.
package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"longtask.dev/devcluster/internal/cluster"
)

// Command is the devcluster wrapper script (which builds what it runs)
// with args, its output on stderr.
func Command(args ...string) *exec.Cmd {
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.Command(filepath.Join(filepath.Dir(self), "..", "..", "devcluster"), args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd
}

// Cluster is the devcluster of one test package.
type Cluster struct {
	Dir, Kubeconfig string
	Config          *rest.Config
	Client          *kubernetes.Clientset
}

// Main starts a cluster with `up --dir DIR upArgs...` in a fresh temporary
// directory, hands it to setup (which may start more on it), runs the
// tests, stops the cluster and fails if any of its processes is left. It
// returns the exit code for os.Exit.
func Main(m *testing.M, upArgs []string, setup func(*Cluster) error) int {
	dir, err := os.MkdirTemp("", "devcluster-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	code := func() int {
		defer func() {
			if err := Command("down", "--dir", dir).Run(); err != nil {
				fmt.Fprintln(os.Stderr, "devcluster down:", err)
			}
		}()
		if err := Command(append([]string{"up", "--dir", dir}, upArgs...)...).Run(); err != nil {
			fmt.Fprintln(os.Stderr, "devcluster up:", err)
			return 1
		}
		c := &Cluster{Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig")}
		if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := setup(c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	if left := cluster.Strays(dir); code == 0 && len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes left after down: %v\n", left)
		return 1
	}
	return code
}

// Namespace makes a throwaway namespace for one test; on failure it logs
// the objects of kinds (as `kubectl get` names them) in it, and what dump
// returns, before deleting it.
func (c *Cluster) Namespace(t *testing.T, kinds string, dump func() string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dc-test-", Labels: map[string]string{"devcluster-test": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := c.Kubectl(t, "-n", ns.Name, "get", kinds, "-o", "yaml")
			t.Logf("objects in %s:\n%s", ns.Name, out)
			if dump != nil {
				t.Log(dump())
			}
		}
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	// Pods are refused until the namespace's default service account exists.
	WaitUntil(t, 30*time.Second, "default service account", func() (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return ns.Name
}

// JobCondition waits until Job ns/name has condition want, and returns it.
func (c *Cluster) JobCondition(t *testing.T, ns, name string, want batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	WaitUntil(t, 60*time.Second, "job "+name+" "+string(want), func() (bool, error) {
		j, err := c.Client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == want && cond.Status == corev1.ConditionTrue {
				job = j
				return true, nil
			}
		}
		return false, nil
	})
	return job
}

// Kubectl runs kubectl against the cluster and returns its combined output.
func (c *Cluster) Kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// WaitUntil polls cond (a level check, never a sleep-and-hope) until it
// holds or the timeout passes.
func WaitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
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
