package node

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"longtask.dev/devcluster/internal/node/kubelet"
)

func TestPatchStatusClearsAndKeepsMetadata(t *testing.T) {
	stored := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "7"},
		Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [c]"},
			},
		},
	}
	client := fake.NewClientset(stored.DeepCopy())
	pods := client.CoreV1().Pods("ns")

	// Meanwhile the Job controller drops its finalizer; our copy is older.
	ours := stored.DeepCopy()
	ours.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	want := corev1.PodStatus{
		Phase: corev1.PodSucceeded,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: kubelet.ReasonPodCompleted},
		},
	}
	got, err := patchStatus(context.Background(), pods, stored, &want)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodSucceeded || len(got.Finalizers) != 0 {
		t.Errorf("phase %s finalizers %v", got.Status.Phase, got.Finalizers)
	}
	var ready, scheduled *corev1.PodCondition
	for i := range got.Status.Conditions {
		switch got.Status.Conditions[i].Type {
		case corev1.PodReady:
			ready = &got.Status.Conditions[i]
		case corev1.PodScheduled:
			scheduled = &got.Status.Conditions[i]
		}
	}
	if ready == nil || ready.Message != "" || ready.Reason != kubelet.ReasonPodCompleted {
		t.Errorf("Ready should have its old message cleared: %+v", ready)
	}
	if scheduled == nil {
		t.Error("a condition we do not own must be kept")
	}

	// A terminal phase is final: a late write is dropped.
	late := corev1.PodStatus{Phase: corev1.PodRunning}
	if res, err := patchStatus(context.Background(), pods, got, &late); err != nil || res.Status.Phase != corev1.PodSucceeded {
		t.Errorf("late write changed a terminal pod: %v %v", res.Status.Phase, err)
	}
}

// Three writes in quick succession while the informer still shows the first
// version: each must patch from the previous write's result, not from the
// informer's copy (which would conflict with our own second write).
func TestQuickWritesChainFromOurOwnResults(t *testing.T) {
	pod := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: rv}}
	}
	informer := pod("1")
	var lw lastWrite
	from := lw.base(informer)
	if from != informer {
		t.Fatal("no write yet: the informer's copy")
	}
	r2 := pod("2")
	lw = lw.next(from, r2)
	if got := lw.base(informer); got != r2 {
		t.Fatalf("second write from %s, want 2", got.ResourceVersion)
	}
	r3 := pod("3")
	lw = lw.next(r2, r3)
	for _, seen := range []string{"1", "2"} {
		if got := lw.base(pod(seen)); got != r3 {
			t.Errorf("informer at %s: third write from %s, want 3", seen, got.ResourceVersion)
		}
	}
	// The informer caught up, or another writer moved the pod on: its copy.
	for _, seen := range []string{"3", "9"} {
		in := pod(seen)
		if got := lw.base(in); got != in {
			t.Errorf("informer at %s: want the informer's copy, got %s", seen, got.ResourceVersion)
		}
	}
	// A write from the informer's copy starts a new chain.
	in := pod("9")
	lw = lw.next(in, pod("10"))
	if got := lw.base(pod("2")); got.ResourceVersion != "2" {
		t.Errorf("an old chain's version must not pick the new result")
	}
	if got := lw.base(in); got.ResourceVersion != "10" {
		t.Errorf("informer at 9: want 10, got %s", got.ResourceVersion)
	}
}
