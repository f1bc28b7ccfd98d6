package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	s := waiting(name, ReasonCrashLoopBackOff)
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
		f    PodFacts
		want corev1.PodPhase
	}{
		{"not started", spec(never, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{waiting("a", ReasonContainerCreating)}}, corev1.PodPending},
		{"image pull error stays pending", spec(never, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{waiting("a", ReasonErrImagePull)}}, corev1.PodPending},
		{"one running one waiting", spec(never, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{running("a"), waiting("b", ReasonConfigError)}}, corev1.PodPending},
		{"running", spec(never, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{running("a")}}, corev1.PodRunning},
		{"never: one failed one running", spec(never, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{exited("a", 3), running("b")}}, corev1.PodRunning},
		{"never: succeeded", spec(never, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{exited("a", 0), exited("b", 0)}}, corev1.PodSucceeded},
		{"never: failed", spec(never, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{exited("a", 0), exited("b", 3)}}, corev1.PodFailed},
		{"onfailure: failed restarts", spec(onFailure, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{exited("a", 1)}}, corev1.PodRunning},
		{"onfailure: backing off", spec(onFailure, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{backingOff("a", 1)}}, corev1.PodRunning},
		{"onfailure: succeeded", spec(onFailure, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{exited("a", 0)}}, corev1.PodSucceeded},
		{"always: exited 0 restarts", spec(always, 0), PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{exited("a", 0)}}, corev1.PodRunning},
		{"init running", spec(never, 1), PodFacts{InitStatuses: []corev1.ContainerStatus{running("init")}, Statuses: []corev1.ContainerStatus{waiting("a", ReasonPodInitializing)}}, corev1.PodPending},
		{"init failed, never", spec(never, 1), PodFacts{InitStatuses: []corev1.ContainerStatus{exited("init", 2)}, Statuses: []corev1.ContainerStatus{waiting("a", ReasonPodInitializing)}}, corev1.PodFailed},
		{"init failed, onfailure", spec(onFailure, 1), PodFacts{InitStatuses: []corev1.ContainerStatus{exited("init", 2)}, Statuses: []corev1.ContainerStatus{waiting("a", ReasonPodInitializing)}}, corev1.PodPending},
		{"stopped while running", spec(always, 0), PodFacts{Initialized: true, Stopped: true, Statuses: []corev1.ContainerStatus{exited("a", 143)}}, corev1.PodFailed},
		{"stopped after clean exit", spec(always, 0), PodFacts{Initialized: true, Stopped: true, Statuses: []corev1.ContainerStatus{exited("a", 0)}}, corev1.PodSucceeded},
		{"stopped before start", spec(never, 0), PodFacts{Initialized: true, Stopped: true, Statuses: []corev1.ContainerStatus{waiting("a", ReasonErrImagePull)}}, corev1.PodFailed},
		{"stopped during init", spec(never, 1), PodFacts{Stopped: true, InitStatuses: []corev1.ContainerStatus{exited("init", 137)}}, corev1.PodFailed},
		{"deadline", spec(always, 0), PodFacts{Initialized: true, Reason: ReasonDeadlineExceeded, Statuses: []corev1.ContainerStatus{exited("a", 0)}}, corev1.PodFailed},
	} {
		if got := PodPhase(tc.spec, tc.f); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestComputeStatusConditions(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}
	scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}
	prev := corev1.PodStatus{QOSClass: corev1.PodQOSBestEffort, Conditions: []corev1.PodCondition{scheduled}}
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))

	f := PodFacts{Initialized: true, SandboxReady: true, StartTime: t0, Statuses: []corev1.ContainerStatus{running("a")}}
	st := ComputeStatus(pod, prev, f, t0)
	if st.Phase != corev1.PodRunning || st.QOSClass != corev1.PodQOSBestEffort || st.PodIP != PodIP(pod) || st.HostIP != "127.0.0.1" {
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
	again := ComputeStatus(pod, st, f, t1)
	if c := cond(again, corev1.PodReady); !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("Ready transition time moved to %v", c.LastTransitionTime)
	}

	// The container exits non-zero: Failed, not ready, transition at t1.
	f.Statuses = []corev1.ContainerStatus{exited("a", 3)}
	done := ComputeStatus(pod, st, f, t1)
	if done.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", done.Phase)
	}
	if c := cond(done, corev1.PodReady); c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Equal(&t1) || c.Reason != "ContainersNotReady" {
		t.Errorf("Ready after exit: %+v", c)
	}
}

func TestComputeStatusInitNotDone(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, InitContainers: []corev1.Container{{Name: "i1"}, {Name: "i2"}}}}
	f := PodFacts{
		InitStatuses: []corev1.ContainerStatus{exited("i1", 0), running("i2")},
		Statuses:     []corev1.ContainerStatus{waiting("a", ReasonPodInitializing)},
	}
	st := ComputeStatus(pod, corev1.PodStatus{}, f, metav1.Now())
	for _, c := range st.Conditions {
		if c.Type == corev1.PodInitialized && (c.Status != corev1.ConditionFalse || c.Message != "containers with incomplete status: [i2]") {
			t.Errorf("Initialized: %+v", c)
		}
	}
	if st.Phase != corev1.PodPending {
		t.Errorf("phase %s", st.Phase)
	}
}
