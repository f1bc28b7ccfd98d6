package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"longtask.dev/devcluster/internal/cluster"
)

func leftovers(dir string) []int { return cluster.Strays(dir) }

func shJob(name, script string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: "busybox", Command: []string{"sh", "-c", script},
				}},
			}},
		},
	}
}

func TestJobCompletesAndLogs(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, shJob("hello", "echo hi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobCondition(t, ns, "hello", batchv1.JobComplete)
	out, err := kubectl(t, "-n", ns, "logs", "job/hello")
	if err != nil || strings.TrimSpace(out) != "hi" {
		t.Fatalf("kubectl logs job/hello = %q, %v; want hi", out, err)
	}
}

func TestExitCodeFailsJob(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, shJob("three", "exit 3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobCondition(t, ns, "three", batchv1.JobFailed)
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=three"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of job three: %v, %v", pods, err)
	}
	p := pods.Items[0]
	if p.Status.Phase != corev1.PodFailed {
		t.Errorf("pod phase %s, want Failed", p.Status.Phase)
	}
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Terminated == nil ||
		p.Status.ContainerStatuses[0].State.Terminated.ExitCode != 3 {
		t.Fatalf("container status %+v, want terminated with exit code 3", p.Status.ContainerStatuses)
	}
}

func TestGarbageCollectsOwned(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	job, err := client.BatchV1().Jobs(ns).Create(ctx, shJob("owner", "true"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "owned",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
		}},
	}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.BatchV1().Jobs(ns).Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 90*time.Second, "owned ConfigMap to be collected", func() (bool, error) {
		_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "owned", metav1.GetOptions{})
		return err != nil && strings.Contains(err.Error(), "not found"), err
	})
}

// Three 1-CPU pods on a 2-CPU node: the scheduler may run two at a time only.
func TestCapacityLimitsConcurrency(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	running := map[string]bool{}
	peak := 0
	done := map[string]bool{}
	for i := 0; i < 3; i++ {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "cpu-" + string(rune('a'+i))},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: "busybox", Command: []string{"sh", "-c", "sleep 2"},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1"),
					}},
				}},
			},
		}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for len(done) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed early")
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Error {
				continue
			}
			mu.Lock()
			switch p.Status.Phase {
			case corev1.PodRunning:
				running[p.Name] = true
			case corev1.PodSucceeded:
				delete(running, p.Name)
				done[p.Name] = true
			case corev1.PodFailed:
				t.Fatalf("pod %s failed: %+v", p.Name, p.Status)
			}
			if len(running) > peak {
				peak = len(running)
			}
			mu.Unlock()
		case <-ctx.Done():
			t.Fatalf("timed out: %d of 3 pods done", len(done))
		}
	}
	if peak > 2 {
		t.Fatalf("%d pods ran at once on a 2-CPU node; want at most 2", peak)
	}
	if peak < 1 {
		t.Fatalf("never saw a pod running")
	}
}

// A pod's program gets its service account's rights, not the admin's.
func TestServiceAccountRBAC(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Allowed: list configmaps. Refused: list secrets (403 Forbidden).
	job := shJob("rbac", `kubectl get configmaps -o name >/dev/null && echo cm-ok; kubectl get secrets 2>&1; true`)
	job.Spec.Template.Spec.ServiceAccountName = "reader"
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobCondition(t, ns, "rbac", batchv1.JobComplete)
	out, err := kubectl(t, "-n", ns, "logs", "job/rbac")
	if err != nil {
		t.Fatalf("logs: %v %s", err, out)
	}
	if !strings.Contains(out, "cm-ok") {
		t.Errorf("the permitted call failed; logs:\n%s", out)
	}
	if !strings.Contains(out, "Forbidden") || !strings.Contains(out, "system:serviceaccount:"+ns+":reader") {
		t.Errorf("want a 403 Forbidden for system:serviceaccount:%s:reader; logs:\n%s", ns, out)
	}
}

// An image the node has no program for fails like an image pull does.
func TestUnknownImageIsErrImagePull(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nope"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "example.invalid/nope:1"}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "ErrImagePull", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "nope", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
				return p.Status.Phase == corev1.PodPending, nil
			}
		}
		return false, nil
	})
}
