package nodes

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"longtask.dev/devcluster/e2e/harness"
)

const unreachable = "node.kubernetes.io/unreachable"

// probePod is a pod of the probe image running args on node (any node if "").
func probePod(name, node string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name: "probe", Image: probeImage, ImagePullPolicy: corev1.PullNever, Args: args,
			}},
		},
	}
}

func createPod(t *testing.T, ns string, p *corev1.Pod) {
	t.Helper()
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitRunning(t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		waitUntil(t, 60*time.Second, "pod "+name+" Running", func() (bool, error) {
			p, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, err
		})
	}
}

func nodeReady(t *testing.T, name string) corev1.ConditionStatus {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func hasTaint(t *testing.T, node, key string, effect corev1.TaintEffect) bool {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == key && taint.Effect == effect {
			return true
		}
	}
	return false
}

// A stopped node goes NotReady and gets the unreachable NoExecute taint;
// the taint-eviction controller then evicts a pod that tolerates the taint
// for 5 s (the admission plugin gives every other pod 300 s) and leaves a
// pod that tolerates it forever. Started again, the node rejoins Ready, its
// taint is lifted, and its kubelet finishes the evicted pod's deletion.
func TestNodeStopEvictsAndStartRejoins(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	const node = "devcluster-node-1"
	short := probePod("short", node, "sleep")
	short.Spec.Tolerations = []corev1.Toleration{{Key: unreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}}
	forever := probePod("forever", node, "sleep")
	forever.Spec.Tolerations = []corev1.Toleration{{Key: unreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	createPod(t, ns, short)
	createPod(t, ns, forever)
	waitRunning(t, ns, "short", "forever")

	stopped := time.Now()
	devcluster(t, "node", "stop", node)
	t.Cleanup(func() {
		// Whatever failed, the next tests get the node back.
		_ = harness.Command("node", "start", node, "--dir", dc.Dir).Run()
	})
	waitUntil(t, 90*time.Second, node+" NotReady", func() (bool, error) {
		return nodeReady(t, node) != corev1.ConditionTrue, nil
	})
	notReady := time.Since(stopped)
	waitUntil(t, 30*time.Second, node+" tainted "+unreachable+":NoExecute", func() (bool, error) {
		return hasTaint(t, node, unreachable, corev1.TaintEffectNoExecute), nil
	})
	tainted := time.Since(stopped)
	var evicted *corev1.Pod
	waitUntil(t, 60*time.Second, "pod short evicted", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "short", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		evicted = p
		return p.DeletionTimestamp != nil, nil
	})
	evictedAfter := time.Since(stopped)
	t.Logf("node stop -> NotReady %.1fs, -> NoExecute taint %.1fs, -> eviction %.1fs (toleration 5 s)",
		notReady.Seconds(), tainted.Seconds(), evictedAfter.Seconds())
	var disruption *corev1.PodCondition
	for i, c := range evicted.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			disruption = &evicted.Status.Conditions[i]
		}
	}
	if disruption == nil || disruption.Reason != "DeletionByTaintManager" {
		t.Errorf("evicted pod's DisruptionTarget condition = %+v, want reason DeletionByTaintManager", disruption)
	}
	if evictedAfter-tainted < 4*time.Second {
		t.Errorf("evicted %.1fs after the taint, before its 5 s toleration ran out", (evictedAfter - tainted).Seconds())
	}
	p, err := client.CoreV1().Pods(ns).Get(ctx, "forever", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("the pod that tolerates the taint forever: %v, deleted at %v", err, p.DeletionTimestamp)
	}

	booted := time.Now()
	devcluster(t, "node", "start", node)
	t.Logf("node start -> Ready %.1fs", time.Since(booted).Seconds())
	if nodeReady(t, node) != corev1.ConditionTrue {
		t.Fatalf("%s not Ready after node start", node)
	}
	waitUntil(t, 30*time.Second, "the unreachable taint lifted", func() (bool, error) {
		return !hasTaint(t, node, unreachable, corev1.TaintEffectNoExecute), nil
	})
	waitUntil(t, 60*time.Second, "the evicted pod deleted by the node's kubelet", func() (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "short", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// The node came back empty: the pod that stayed bound to it ran no
	// container through the crash; restartPolicy Never makes it Failed.
	waitUntil(t, 60*time.Second, "pod forever ended by the reboot", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "forever", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodFailed, err
	})
}

// kubectl drain evicts a node's pods through the eviction API, which checks
// a PodDisruptionBudget (so the disruption controller must have computed
// its status), and the Deployment's replacement runs on another node.
func TestDrainEvicts(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	const node = "devcluster-node-2"
	labels := map[string]string{"app": "web"}
	pod := probePod("", "", "sleep").Spec
	pod.RestartPolicy = corev1.RestartPolicyAlways
	pod.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 100,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
			}}},
		}},
	}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	onNode := func() ([]string, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names, nil
	}
	waitUntil(t, 90*time.Second, "two web pods running, on "+node, func() (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || d.Status.AvailableReplicas != 2 {
			return false, err
		}
		names, err := onNode()
		return len(names) > 0, err
	})
	start := time.Now()
	out, err := dc.Kubectl(t, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s")
	t.Cleanup(func() { _, _ = dc.Kubectl(t, "uncordon", node) })
	if err != nil {
		t.Fatalf("kubectl drain: %v\n%s", err, out)
	}
	t.Logf("kubectl drain %.1fs:\n%s", time.Since(start).Seconds(), out)
	if !strings.Contains(out, "evicted") {
		t.Errorf("kubectl drain evicted nothing")
	}
	if names, err := onNode(); err != nil || len(names) > 0 {
		t.Fatalf("web pods still on %s after drain: %v %v", node, names, err)
	}
	waitUntil(t, 60*time.Second, "two web pods available elsewhere", func() (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 2, err
	})
}

// net cut makes a node unreachable (NotReady after the monitor grace
// period, as a stopped node) and the node recovers on its own when the cut
// heals, with nothing restarted.
func TestNetCutNode(t *testing.T) {
	dc.Namespace(t, "pods", nodesDump) // for the dump on failure
	const node = "devcluster-node-0"
	start := time.Now()
	devcluster(t, "net", "cut", node, "--seconds", "40")
	waitUntil(t, 60*time.Second, node+" NotReady", func() (bool, error) {
		return nodeReady(t, node) != corev1.ConditionTrue, nil
	})
	notReady := time.Since(start)
	if notReady > 40*time.Second {
		t.Fatalf("NotReady only after %.1fs, after the cut healed", notReady.Seconds())
	}
	waitUntil(t, 60*time.Second, node+" Ready again", func() (bool, error) {
		return nodeReady(t, node) == corev1.ConditionTrue, nil
	})
	t.Logf("net cut -> NotReady %.1fs; healed at 40 s -> Ready %.1fs", notReady.Seconds(), time.Since(start).Seconds())
}

// net cut --pod cuts one pod off while its node stays Ready: the pod's
// connections to the API server's Service fail until the cut heals.
func TestNetCutPod(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	createPod(t, ns, probePod("dialer", "", "dial", "10.0.0.1:443"))
	waitRunning(t, ns, "dialer")
	logs := func() string {
		b, _ := client.CoreV1().Pods(ns).GetLogs("dialer", &corev1.PodLogOptions{}).DoRaw(ctx)
		return string(b)
	}
	waitUntil(t, 30*time.Second, "dialer reaches the API server", func() (bool, error) {
		return strings.Count(logs(), " up") == 1, nil
	})
	p, err := client.CoreV1().Pods(ns).Get(ctx, "dialer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	devcluster(t, "net", "cut", "--pod", ns+"/dialer", "--seconds", "10")
	waitUntil(t, 20*time.Second, "dialer cut off", func() (bool, error) {
		return strings.Contains(logs(), " down"), nil
	})
	if nodeReady(t, p.Spec.NodeName) != corev1.ConditionTrue {
		t.Errorf("node %s not Ready while only a pod of it is cut off", p.Spec.NodeName)
	}
	waitUntil(t, 30*time.Second, "dialer reaches the API server again", func() (bool, error) {
		return strings.Count(logs(), " up") == 2, nil
	})
	t.Logf("dialer's log:\n%s", logs())
}
