// Package kueue tests `devcluster kueue`: real Kueue, built from its module,
// on a real devcluster, admitting batch/v1 Jobs within a ClusterQueue's
// quota. One cluster for the package, started by TestMain and stopped again.
package kueue

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"longtask.dev/devcluster/e2e/harness"
	"longtask.dev/devcluster/internal/cluster"
)

var (
	dc  *harness.Cluster
	dyn dynamic.Interface
)

const queueLabel = "kueue.x-k8s.io/queue-name"

func kueueGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}
}

// The default node (4 CPUs) fits all three Jobs: only Kueue holds one back.
func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, nil, func(c *harness.Cluster) error {
		dc = c
		var err error
		if dyn, err = dynamic.NewForConfig(c.Config); err != nil {
			return err
		}
		if err := harness.Command("kueue", "--dir", c.Dir).Run(); err != nil {
			return fmt.Errorf("devcluster kueue: %w", err)
		}
		return nil
	}))
}

// Running `kueue` again changes nothing: same manager, still ready.
func TestKueueTwice(t *testing.T) {
	before := managerPid(t)
	if err := harness.Command("kueue", "--dir", dc.Dir).Run(); err != nil {
		t.Fatalf("second devcluster kueue: %v", err)
	}
	if after := managerPid(t); after != before {
		t.Fatalf("kueue manager pid %d became %d: a second run must leave it alone", before, after)
	}
}

func managerPid(t *testing.T) int {
	t.Helper()
	var pid int
	for _, p := range cluster.Strays(dc.Dir) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if strings.Contains(string(b), "kueue/bin/kueue\x00") {
			if pid != 0 {
				t.Fatalf("two Kueue managers run: %d and %d", pid, p)
			}
			pid = p
		}
	}
	if pid == 0 {
		t.Fatal("no Kueue manager runs")
	}
	return pid
}

// A ClusterQueue with 2 CPUs of quota admits two of three 1-CPU Jobs; the
// third stays suspended, its Workload pending, until one of the two
// finishes; then it runs too, and all three complete.
func TestQuotaAdmitsTwoOfThree(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	release := t.TempDir()
	create(t, kueueGVR("resourceflavors"), "", map[string]any{
		"metadata": map[string]any{"name": "default-flavor"},
	})
	create(t, kueueGVR("clusterqueues"), "", map[string]any{
		"metadata": map[string]any{"name": "cq-" + ns},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu"},
				"flavors": []any{map[string]any{
					"name":      "default-flavor",
					"resources": []any{map[string]any{"name": "cpu", "nominalQuota": "2"}},
				}},
			}},
		},
	})
	create(t, kueueGVR("localqueues"), ns, map[string]any{
		"metadata": map[string]any{"name": "lq"},
		"spec":     map[string]any{"clusterQueue": "cq-" + ns},
	})
	names := []string{"a", "b", "c"}
	for _, name := range names {
		if _, err := dc.Client.BatchV1().Jobs(ns).Create(ctx, queuedJob(name, release), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create job %s: %v", name, err)
		}
	}

	var running, waiting []string
	harness.WaitUntil(t, 60*time.Second, "Kueue to admit two Jobs and hold the third", func() (bool, error) {
		running, waiting = nil, nil
		for _, name := range names {
			j, err := dc.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if ptr.Deref(j.Spec.Suspend, false) {
				waiting = append(waiting, name)
			} else {
				running = append(running, name)
			}
		}
		if len(running) != 2 {
			return false, fmt.Errorf("unsuspended: %v", running)
		}
		// The held Job's Workload says why: no quota left.
		admitted, pending, err := workloads(ctx, ns)
		if err != nil {
			return false, err
		}
		if len(admitted) != 2 || len(pending) != 1 || pending[0] != waiting[0] {
			return false, fmt.Errorf("workloads admitted %v, pending %v", admitted, pending)
		}
		return true, nil
	})
	if len(running) > 2 {
		t.Fatalf("more than the quota runs: %v", running)
	}

	// Let one admitted Job finish: its quota goes to the held one.
	finish(t, release, running[0])
	dc.JobCondition(t, ns, running[0], batchv1.JobComplete)
	harness.WaitUntil(t, 60*time.Second, "the third Job to be admitted", func() (bool, error) {
		j, err := dc.Client.BatchV1().Jobs(ns).Get(ctx, waiting[0], metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !ptr.Deref(j.Spec.Suspend, true), nil
	})
	for _, name := range []string{running[1], waiting[0]} {
		finish(t, release, name)
	}
	for _, name := range names {
		dc.JobCondition(t, ns, name, batchv1.JobComplete)
	}
}

// queuedJob is a suspended 1-CPU Job for LocalQueue lq whose one pod runs
// until the file release/NAME exists.
func queuedJob(name, release string) *batchv1.Job {
	script := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.1; done", filepath.Join(release, name))
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{queueLabel: "lq"}},
		Spec: batchv1.JobSpec{
			Suspend:      ptr.To(true),
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: "busybox", Command: []string{"sh", "-c", script},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1"),
					}},
				}},
			}},
		},
	}
}

func finish(t *testing.T, release, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(release, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// workloads returns the names of the Jobs whose Workloads in ns are
// Admitted, and of those whose quota reservation is pending.
func workloads(ctx context.Context, ns string) (admitted, pending []string, err error) {
	list, err := dyn.Resource(kueueGVR("workloads")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	for _, w := range list.Items {
		owner := ""
		for _, ref := range w.GetOwnerReferences() {
			if ref.Kind == "Job" {
				owner = ref.Name
			}
		}
		switch {
		case condition(&w, "Admitted") == "True":
			admitted = append(admitted, owner)
		case condition(&w, "QuotaReserved") == "False":
			pending = append(pending, owner)
		}
	}
	return admitted, pending, nil
}

func condition(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

func create(t *testing.T, gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	t.Helper()
	obj["apiVersion"] = gvr.GroupVersion().String()
	obj["kind"] = map[string]string{"resourceflavors": "ResourceFlavor", "clusterqueues": "ClusterQueue", "localqueues": "LocalQueue"}[gvr.Resource]
	u := &unstructured.Unstructured{Object: obj}
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if ns != "" {
		ri = dyn.Resource(gvr).Namespace(ns)
	}
	if _, err := ri.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	if ns == "" {
		t.Cleanup(func() { _ = ri.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}
}

// namespace makes a throwaway namespace; on failure it prints the Jobs,
// pods and Workloads in it and the end of Kueue's log.
func namespace(t *testing.T) string {
	return dc.Namespace(t, "jobs,pods,workloads.kueue.x-k8s.io", func() string {
		log, _ := exec.Command("tail", "-n", "40", filepath.Join(dc.Dir, "logs", cluster.KueueProc+".log")).CombinedOutput()
		return "end of Kueue's log:\n" + string(log)
	})
}
