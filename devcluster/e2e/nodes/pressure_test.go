package nodes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"longtask.dev/devcluster/e2e/harness"
)

// A node rebooted with most of its memory reserved for the system and a
// higher eviction threshold (node start --system-reserved-memory
// --eviction-hard) leaves its pods 700 MiB, of which 200 MiB must stay
// free: a pod that fills 620 MiB crosses the threshold before the pods'
// cgroup limit could OOM-kill it, the node reports MemoryPressure, and the
// kubelet evicts the pod (phase Failed, reason Evicted). Rebooted without
// the options, the node is as before.
func TestMemoryPressureEvicts(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	const node = "devcluster-node-2"
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capMiB := n.Status.Capacity.Memory().Value() >> 20
	devcluster(t, "node", "stop", node)
	t.Cleanup(func() {
		_ = harness.Command("node", "stop", node, "--dir", dc.Dir).Run()
		if err := harness.Command("node", "start", node, "--dir", dc.Dir).Run(); err != nil {
			t.Errorf("node start without tuning: %v", err)
		}
	})
	devcluster(t, "node", "start", node, fmt.Sprintf("--system-reserved-memory=%dMi", capMiB-700), "--eviction-hard=memory.available=200Mi")
	// The new kubelet reports its allocatable with its first status update.
	var allocMiB int64
	waitUntil(t, 30*time.Second, "allocatable memory of 500 MiB", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		allocMiB = n.Status.Allocatable.Memory().Value() >> 20
		return allocMiB == 500, fmt.Errorf("allocatable %d MiB", allocMiB)
	})
	createPod(t, ns, probePod("filler", node, "fill", "450", "620"))
	start := time.Now()
	var pressure bool
	// Notes whether the node reports MemoryPressure=True now.
	look := func() {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeMemoryPressure && c.Status == corev1.ConditionTrue {
				pressure = true
			}
		}
	}
	var pod *corev1.Pod
	waitUntil(t, 3*time.Minute, "pod filler evicted", func() (bool, error) {
		look()
		p, err := client.CoreV1().Pods(ns).Get(ctx, "filler", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return p.Status.Phase == corev1.PodFailed, nil
	})
	t.Logf("filler Failed after %.1fs: reason %q, %s", time.Since(start).Seconds(), pod.Status.Reason, pod.Status.Message)
	if pod.Status.Reason != "Evicted" || !strings.Contains(pod.Status.Message, "memory") {
		t.Errorf("filler ended with reason %q (%s), want Evicted for memory", pod.Status.Reason, pod.Status.Message)
	}
	// The eviction manager can evict before the kubelet's next node
	// status update carries the condition (it stays True for the pressure
	// transition period afterwards): look for it a while longer.
	deadline := time.Now().Add(30 * time.Second)
	for !pressure && time.Now().Before(deadline) {
		look()
		if !pressure {
			time.Sleep(500 * time.Millisecond)
		}
	}
	if !pressure {
		t.Errorf("the node never reported MemoryPressure")
	}
}
