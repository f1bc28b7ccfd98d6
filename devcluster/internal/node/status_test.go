package node

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func running(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func exited(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func backingOff(name string, code int32) corev1.ContainerStatus {
	s := waiting(name, reasonCrashLoopBackOff)
	s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: code}
	return s
}

func TestPodPhase(t *testing.T) {
	spec := func(policy corev1.RestartPolicy, inits int) *corev1.PodSpec {
		s := &corev1.PodSpec{RestartPolicy: policy}
		for i := 0; i < inits; i++ {
			s.InitContainers = append(s.InitContainers, corev1.Container{Name: "init"})
		}
		return s
	}
	never, onFailure, always := corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure, corev1.RestartPolicyAlways
	for _, tc := range []struct {
		name string
		spec *corev1.PodSpec
		f    podFacts
		want corev1.PodPhase
	}{
		{"not started", spec(never, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{waiting("a", reasonContainerCreating)}}, corev1.PodPending},
		{"image pull error stays pending", spec(never, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{waiting("a", reasonErrImagePull)}}, corev1.PodPending},
		{"one running one waiting", spec(never, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{running("a"), waiting("b", reasonConfigError)}}, corev1.PodPending},
		{"running", spec(never, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{running("a")}}, corev1.PodRunning},
		{"never: one failed one running", spec(never, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{exited("a", 3), running("b")}}, corev1.PodRunning},
		{"never: succeeded", spec(never, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{exited("a", 0), exited("b", 0)}}, corev1.PodSucceeded},
		{"never: failed", spec(never, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{exited("a", 0), exited("b", 3)}}, corev1.PodFailed},
		{"onfailure: failed restarts", spec(onFailure, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{exited("a", 1)}}, corev1.PodRunning},
		{"onfailure: backing off", spec(onFailure, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{backingOff("a", 1)}}, corev1.PodRunning},
		{"onfailure: succeeded", spec(onFailure, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{exited("a", 0)}}, corev1.PodSucceeded},
		{"always: exited 0 restarts", spec(always, 0), podFacts{initialized: true, statuses: []corev1.ContainerStatus{exited("a", 0)}}, corev1.PodRunning},
		{"init running", spec(never, 1), podFacts{initStatuses: []corev1.ContainerStatus{running("init")}, statuses: []corev1.ContainerStatus{waiting("a", reasonPodInitializing)}}, corev1.PodPending},
		{"init failed, never", spec(never, 1), podFacts{initStatuses: []corev1.ContainerStatus{exited("init", 2)}, statuses: []corev1.ContainerStatus{waiting("a", reasonPodInitializing)}}, corev1.PodFailed},
		{"init failed, onfailure", spec(onFailure, 1), podFacts{initStatuses: []corev1.ContainerStatus{exited("init", 2)}, statuses: []corev1.ContainerStatus{waiting("a", reasonPodInitializing)}}, corev1.PodPending},
		{"stopped while running", spec(always, 0), podFacts{initialized: true, stopped: true, statuses: []corev1.ContainerStatus{exited("a", 143)}}, corev1.PodFailed},
		{"stopped after clean exit", spec(always, 0), podFacts{initialized: true, stopped: true, statuses: []corev1.ContainerStatus{exited("a", 0)}}, corev1.PodSucceeded},
		{"stopped before start", spec(never, 0), podFacts{initialized: true, stopped: true, statuses: []corev1.ContainerStatus{waiting("a", reasonErrImagePull)}}, corev1.PodFailed},
		{"stopped during init", spec(never, 1), podFacts{stopped: true, initStatuses: []corev1.ContainerStatus{exited("init", 137)}}, corev1.PodFailed},
		{"deadline", spec(always, 0), podFacts{initialized: true, reason: reasonDeadlineExceeded, statuses: []corev1.ContainerStatus{exited("a", 0)}}, corev1.PodFailed},
	} {
		if got := podPhase(tc.spec, tc.f); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestShouldRestartHonoursContainerPolicy(t *testing.T) {
	spec := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}
	always := corev1.ContainerRestartPolicyAlways
	if shouldRestart(spec, &corev1.Container{}, 1) {
		t.Error("Never must not restart")
	}
	if !shouldRestart(spec, &corev1.Container{RestartPolicy: &always}, 0) {
		t.Error("a container's own Always wins")
	}
	if !shouldRestart(&corev1.PodSpec{}, &corev1.Container{}, 0) {
		t.Error("the default policy is Always")
	}
}

func TestInitContainersRunOnce(t *testing.T) {
	always := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}
	never := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}
	if initShouldRestart(always, 0) {
		t.Error("a succeeded init container never runs again, even with restartPolicy Always")
	}
	if !initShouldRestart(always, 1) || initShouldRestart(never, 1) {
		t.Error("a failed init container is retried unless the policy is Never")
	}
}

func TestComputeStatusConditions(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}
	scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}
	prev := corev1.PodStatus{QOSClass: corev1.PodQOSBestEffort, Conditions: []corev1.PodCondition{scheduled}}
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))

	f := podFacts{initialized: true, sandboxReady: true, startTime: t0, statuses: []corev1.ContainerStatus{running("a")}}
	st := computeStatus(pod, prev, f, t0)
	if st.Phase != corev1.PodRunning || st.QOSClass != corev1.PodQOSBestEffort || st.PodIP != podIP(pod) || st.HostIP != "127.0.0.1" {
		t.Fatalf("unexpected status %+v", st)
	}
	if st.StartTime == nil || !st.StartTime.Equal(&t0) {
		t.Errorf("startTime = %v", st.StartTime)
	}
	cond := func(st corev1.PodStatus, ct corev1.PodConditionType) corev1.PodCondition {
		for _, c := range st.Conditions {
			if c.Type == ct {
				return c
			}
		}
		t.Fatalf("no %s condition", ct)
		return corev1.PodCondition{}
	}
	if c := cond(st, corev1.PodScheduled); c.Status != corev1.ConditionTrue {
		t.Error("PodScheduled must be kept")
	}
	for _, ct := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, corev1.PodReadyToStartContainers} {
		if c := cond(st, ct); c.Status != corev1.ConditionTrue {
			t.Errorf("%s = %s, want True", ct, c.Status)
		}
	}
	if !st.ContainerStatuses[0].Ready || !*st.ContainerStatuses[0].Started {
		t.Error("a running container without probes is ready and started")
	}

	// Same facts later: nothing moves, not even transition times.
	again := computeStatus(pod, st, f, t1)
	if c := cond(again, corev1.PodReady); !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("Ready transition time moved to %v", c.LastTransitionTime)
	}

	// The container exits non-zero: Failed, not ready, transition at t1.
	f.statuses = []corev1.ContainerStatus{exited("a", 3)}
	done := computeStatus(pod, st, f, t1)
	if done.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", done.Phase)
	}
	if c := cond(done, corev1.PodReady); c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Equal(&t1) || c.Reason != "ContainersNotReady" {
		t.Errorf("Ready after exit: %+v", c)
	}
}

func TestComputeStatusInitNotDone(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, InitContainers: []corev1.Container{{Name: "i1"}, {Name: "i2"}}}}
	f := podFacts{
		initStatuses: []corev1.ContainerStatus{exited("i1", 0), running("i2")},
		statuses:     []corev1.ContainerStatus{waiting("a", reasonPodInitializing)},
	}
	st := computeStatus(pod, corev1.PodStatus{}, f, metav1.Now())
	for _, c := range st.Conditions {
		if c.Type == corev1.PodInitialized && (c.Status != corev1.ConditionFalse || c.Message != "containers with incomplete status: [i2]") {
			t.Errorf("Initialized: %+v", c)
		}
	}
	if st.Phase != corev1.PodPending {
		t.Errorf("phase %s", st.Phase)
	}
}

func TestSeedStatusAfterAgentRestart(t *testing.T) {
	now := metav1.Now()
	c := &corev1.Container{Name: "a", Image: "img"}
	prev := running("a")
	prev.RestartCount = 2
	s := seedStatus(&prev, c, now)
	term := s.State.Terminated
	if term == nil || term.ExitCode != 137 || term.Reason != reasonError || term.Message != "node agent restarted" || s.RestartCount != 2 {
		t.Errorf("a container that was running is recorded as killed: %+v", s)
	}
	done := exited("a", 0)
	if s := seedStatus(&done, c, now); s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		t.Errorf("a finished container stays finished: %+v", s)
	}
	if s := seedStatus(nil, c, now); s.State.Waiting == nil || s.Image != "img" {
		t.Errorf("a new container waits: %+v", s)
	}
	// With restartPolicy Never the pod ends Failed.
	spec := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}
	if p := podPhase(spec, podFacts{initialized: true, statuses: []corev1.ContainerStatus{seedStatus(&prev, c, now)}}); p != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", p)
	}
}

func TestTerminatedState(t *testing.T) {
	now := metav1.Now()
	if s := terminatedState(0, 0, now, now, "id", ""); s.Reason != reasonCompleted {
		t.Errorf("exit 0: %+v", s)
	}
	if s := terminatedState(3, 0, now, now, "id", "boom"); s.Reason != reasonError || s.Message != "boom" {
		t.Errorf("exit 3: %+v", s)
	}
	if s := terminatedState(137, 9, now, now, "id", ""); s.Reason != reasonError || s.Message != "killed by signal 9" || s.Signal != 9 {
		t.Errorf("signal: %+v", s)
	}
}

func TestPodIPIsLoopbackStableAndDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		pod := &corev1.Pod{}
		pod.UID = types.UID(fmt.Sprintf("uid-%d", i))
		ip := podIP(pod)
		parsed := net.ParseIP(ip)
		if parsed == nil || !parsed.IsLoopback() || strings.HasPrefix(ip, "127.0.0.") {
			t.Fatalf("podIP %q: want a loopback address outside 127.0.0.0/24", ip)
		}
		if ip != podIP(pod) {
			t.Fatalf("podIP not stable for %s", pod.UID)
		}
		seen[ip] = true
	}
	if len(seen) < 1990 {
		t.Fatalf("only %d distinct addresses for 2000 pods", len(seen))
	}
}
