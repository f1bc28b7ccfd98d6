package node

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"longtask.dev/devcluster/internal/node/kubelet"
)

// harness runs pods through a real provider and real processes, with a
// fake API server; reports sent to VK land in a channel.
type harness struct {
	t       *testing.T
	p       *provider
	client  *fake.Clientset
	indexer cache.Indexer
	reports chan *corev1.Pod
}

func newHarness(t *testing.T) *harness {
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset()
	a := &agent{
		ctx:      ctx,
		client:   client,
		images:   kubelet.NewImageMap(),
		stateDir: t.TempDir(),
		apiHost:  "127.0.0.1",
		apiPort:  "6443",
		hostEnv:  [][2]string{{"PATH", os.Getenv("PATH")}},
	}
	p := newProvider(a, "devcluster-node-0", nil, &record.FakeRecorder{})
	a.providers = []*provider{p}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	p.lister = corev1listers.NewPodLister(indexer)
	h := &harness{t: t, p: p, client: client, indexer: indexer, reports: make(chan *corev1.Pod, 1000)}
	p.NotifyPods(ctx, func(pod *corev1.Pod) { h.reports <- pod })
	t.Cleanup(func() {
		cancel()
		p.stopAll(time.Second)
		a.wg.Wait()
	})
	return h
}

// pod creates a pod in the fake API server and the informer cache.
func (h *harness) pod(name string, policy corev1.RestartPolicy, containers ...corev1.Container) *corev1.Pod {
	no := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName:                     "devcluster-node-0",
			RestartPolicy:                policy,
			AutomountServiceAccountToken: &no,
			Containers:                   containers,
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if _, err := h.client.CoreV1().Pods("ns").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	_ = h.indexer.Add(pod)
	return pod
}

func sh(name, script string) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox", Command: []string{"sh", "-c", script}}
}

// await returns the first report that satisfies ok.
func (h *harness) await(what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	h.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case pod := <-h.reports:
			if ok(pod) {
				return pod
			}
		case <-timeout:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func phase(want corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == want }
}

func (h *harness) logs(pod *corev1.Pod, container string) string {
	h.t.Helper()
	req, err := h.p.a.findLog(pod.Namespace, pod.Name, container, false)
	if err != nil {
		h.t.Fatal(err)
	}
	b, err := os.ReadFile(req.Path)
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

func TestRunnerExitCodeFailsPod(t *testing.T) {
	h := newHarness(t)
	pod := h.pod("fail", corev1.RestartPolicyNever, sh("main", "echo $(HOSTNAME) $HOSTNAME; exit 3"))
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	// One report may carry the start and the end at once (a burst of
	// changes is reported together): wait for the end, then check both.
	done := h.await("Failed", phase(corev1.PodFailed))
	if done.Status.StartTime == nil {
		t.Fatalf("failed pod without startTime: %+v", done.Status)
	}
	term := done.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != kubelet.ReasonError {
		t.Fatalf("container state %+v", done.Status.ContainerStatuses[0].State)
	}
	if got := h.logs(pod, "main"); got != "fail fail\n" {
		t.Errorf("log %q", got)
	}
}

func TestRunnerInitContainersInOrder(t *testing.T) {
	h := newHarness(t)
	pod := h.pod("init", corev1.RestartPolicyNever, sh("main", "cat order"))
	pod.Spec.InitContainers = []corev1.Container{sh("first", "echo 1 > order"), sh("second", "echo 2 >> order")}
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	done := h.await("Succeeded", phase(corev1.PodSucceeded))
	for _, s := range done.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			t.Errorf("init %s: %+v", s.Name, s.State)
		}
	}
	if got := h.logs(pod, "main"); got != "1\n2\n" {
		t.Errorf("main saw %q", got)
	}
}

func TestRunnerFailedInitFailsPod(t *testing.T) {
	h := newHarness(t)
	pod := h.pod("badinit", corev1.RestartPolicyNever, sh("main", "echo never"))
	pod.Spec.InitContainers = []corev1.Container{sh("first", "exit 4")}
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	done := h.await("Failed", phase(corev1.PodFailed))
	if w := done.Status.ContainerStatuses[0].State.Waiting; w == nil {
		t.Errorf("main must never start: %+v", done.Status.ContainerStatuses[0].State)
	}
}

func TestRunnerRestartsOnFailure(t *testing.T) {
	h := newHarness(t)
	pod := h.pod("retry", corev1.RestartPolicyOnFailure, sh("main", "echo try; test -f marker && exit 0; touch marker; exit 1"))
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	done := h.await("Succeeded", phase(corev1.PodSucceeded))
	s := done.Status.ContainerStatuses[0]
	if s.RestartCount != 1 || s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("status after one restart: %+v", s)
	}
	prev, err := h.p.a.findLog("ns", "retry", "main", true)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(prev.Path); string(b) != "try\n" {
		t.Errorf("previous instance log %q", b)
	}
}

func TestRunnerWaitsForConfigMap(t *testing.T) {
	h := newHarness(t)
	c := sh("main", "echo $V")
	c.Env = []corev1.EnvVar{{Name: "V", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"}}}}
	pod := h.pod("needcm", corev1.RestartPolicyNever, c)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	waiting := h.await("CreateContainerConfigError", func(p *corev1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == kubelet.ReasonConfigError
	})
	if waiting.Status.Phase != corev1.PodPending || !strings.Contains(waiting.Status.ContainerStatuses[0].State.Waiting.Message, `configmap "cm" not found`) {
		t.Errorf("waiting status %+v", waiting.Status)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "arrived"}}
	if _, err := h.client.CoreV1().ConfigMaps("ns").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.await("Succeeded", phase(corev1.PodSucceeded))
	if got := h.logs(pod, "main"); got != "arrived\n" {
		t.Errorf("log %q", got)
	}
}

func TestRunnerUnknownImage(t *testing.T) {
	h := newHarness(t)
	pod := h.pod("noimage", corev1.RestartPolicyNever, corev1.Container{Name: "main", Image: "example.com/none:1"})
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	got := h.await("ErrImagePull", func(p *corev1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == kubelet.ReasonErrImagePull
	})
	if got.Status.Phase != corev1.PodPending || !strings.Contains(got.Status.ContainerStatuses[0].State.Waiting.Message, "no local program is mapped") {
		t.Errorf("status %+v", got.Status)
	}
}

func TestRunnerDeletionStopsAndDeletes(t *testing.T) {
	h := newHarness(t)
	pod := h.pod("victim", corev1.RestartPolicyAlways, sh("main", "trap 'exit 0' TERM; echo ready; while :; do sleep 0.1; done"))
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	h.await("Running", phase(corev1.PodRunning))
	for i := 0; i < 100 && !strings.Contains(h.logs(pod, "main"), "ready"); i++ {
		time.Sleep(20 * time.Millisecond) // the trap is set
	}
	deleting := pod.DeepCopy()
	now := metav1.Now()
	grace := int64(5)
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &now, &grace
	_ = h.indexer.Update(deleting)
	start := time.Now()
	if err := h.p.DeletePod(context.Background(), deleting); err != nil {
		t.Fatal(err)
	}
	// Exits on SIGTERM at once: exit 0, so Succeeded; then the pod is deleted.
	h.await("Succeeded", phase(corev1.PodSucceeded))
	for {
		_, err := h.client.CoreV1().Pods("ns").Get(context.Background(), "victim", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Since(start) > 4*time.Second {
			t.Fatal("pod not deleted before its grace period ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
