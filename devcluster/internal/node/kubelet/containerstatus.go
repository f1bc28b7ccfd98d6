package kubelet

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SeedStatus turns a container status read from the API server into the
// starting point of a new runner. A container the API still shows running
// has no process here any more (the agent restarted and killed it), so it
// is recorded as killed; terminated and waiting states carry over, which
// keeps restart counts and never resurrects a finished container.
func SeedStatus(prev *corev1.ContainerStatus, c *corev1.Container, now metav1.Time) corev1.ContainerStatus {
	s := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	if prev == nil {
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}
		return s
	}
	s.RestartCount = prev.RestartCount
	s.ContainerID, s.ImageID = prev.ContainerID, prev.ImageID
	s.LastTerminationState = *prev.LastTerminationState.DeepCopy()
	switch {
	case prev.State.Running != nil:
		s.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode:    137,
			Reason:      ReasonError,
			Message:     "node agent restarted",
			StartedAt:   prev.State.Running.StartedAt,
			FinishedAt:  now,
			ContainerID: prev.ContainerID,
		}
	case prev.State.Terminated != nil:
		s.State.Terminated = prev.State.Terminated.DeepCopy()
	default:
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}
	}
	return s
}

// FindStatus returns the status of the container named name, or nil.
func FindStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// TerminatedState builds the record of one finished process, with the
// kubelet's exit-code conventions (128+N for signal N).
func TerminatedState(exitCode int32, signal int, started, finished metav1.Time, id, msg string) *corev1.ContainerStateTerminated {
	t := &corev1.ContainerStateTerminated{
		ExitCode:    exitCode,
		Signal:      int32(signal),
		StartedAt:   started,
		FinishedAt:  finished,
		ContainerID: id,
		Message:     msg,
		Reason:      ReasonCompleted,
	}
	if exitCode != 0 {
		t.Reason = ReasonError
	}
	if signal != 0 && msg == "" {
		t.Message = fmt.Sprintf("killed by signal %d", signal)
	}
	return t
}
