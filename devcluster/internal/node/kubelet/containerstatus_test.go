package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSeedStatusAfterAgentRestart(t *testing.T) {
	now := metav1.Now()
	c := &corev1.Container{Name: "a", Image: "img"}
	prev := running("a")
	prev.RestartCount = 2
	s := SeedStatus(&prev, c, now)
	term := s.State.Terminated
	if term == nil || term.ExitCode != 137 || term.Reason != ReasonError || term.Message != "node agent restarted" || s.RestartCount != 2 {
		t.Errorf("a container that was running is recorded as killed: %+v", s)
	}
	done := exited("a", 0)
	if s := SeedStatus(&done, c, now); s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		t.Errorf("a finished container stays finished: %+v", s)
	}
	if s := SeedStatus(nil, c, now); s.State.Waiting == nil || s.Image != "img" {
		t.Errorf("a new container waits: %+v", s)
	}
	// With restartPolicy Never the pod ends Failed.
	spec := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}
	if p := PodPhase(spec, PodFacts{Initialized: true, Statuses: []corev1.ContainerStatus{SeedStatus(&prev, c, now)}}); p != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", p)
	}
}

func TestTerminatedState(t *testing.T) {
	now := metav1.Now()
	if s := TerminatedState(0, 0, now, now, "id", ""); s.Reason != ReasonCompleted {
		t.Errorf("exit 0: %+v", s)
	}
	if s := TerminatedState(3, 0, now, now, "id", "boom"); s.Reason != ReasonError || s.Message != "boom" {
		t.Errorf("exit 3: %+v", s)
	}
	if s := TerminatedState(137, 9, now, now, "id", ""); s.Reason != ReasonError || s.Message != "killed by signal 9" || s.Signal != 9 {
		t.Errorf("signal: %+v", s)
	}
}
