package node

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The addresses every pod and node reports: pods are host processes.
const loopbackIP = "127.0.0.1"

// Reasons a kubelet uses, which Job controllers, kubectl and our operator read.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonConfigError       = "CreateContainerConfigError"
	reasonCrashLoopBackOff  = "CrashLoopBackOff"
	reasonCompleted         = "Completed"
	reasonError             = "Error"
	reasonStartError        = "StartError"
	reasonDeadlineExceeded  = "DeadlineExceeded"
	reasonPodCompleted      = "PodCompleted"
)

// podFacts is what a pod's runner knows, as plain data, so that the status
// a kubelet would report is computed (and unit-tested) apart from processes.
type podFacts struct {
	initStatuses []corev1.ContainerStatus
	statuses     []corev1.ContainerStatus
	sandboxReady bool // per-pod files and token are in place
	initialized  bool // every init container completed
	// stopped: the runner stopped the containers for good (pod deleted,
	// deadline exceeded), so the phase must become terminal.
	stopped         bool
	reason, message string // pod-level, e.g. DeadlineExceeded
	startTime       metav1.Time
}

// shouldRestart applies the container's own restartPolicy (sidecar-style
// or the newer per-container field) and else the pod's.
func shouldRestart(spec *corev1.PodSpec, c *corev1.Container, exitCode int32) bool {
	policy := spec.RestartPolicy
	if c != nil && c.RestartPolicy != nil {
		policy = corev1.RestartPolicy(*c.RestartPolicy)
	}
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default: // Always, and the API default
		return true
	}
}

// initShouldRestart: an init container must succeed once; a failed one is
// retried unless the pod's policy is Never.
func initShouldRestart(spec *corev1.PodSpec, exitCode int32) bool {
	return exitCode != 0 && spec.RestartPolicy != corev1.RestartPolicyNever
}

// podPhase follows the kubelet's rules (pkg/kubelet getPhase): a phase only
// becomes terminal when no container will run again.
func podPhase(spec *corev1.PodSpec, f podFacts) corev1.PodPhase {
	if f.reason == reasonDeadlineExceeded {
		return corev1.PodFailed
	}
	if !f.initialized {
		if f.stopped {
			return corev1.PodFailed
		}
		for _, s := range f.initStatuses {
			t := s.State.Terminated
			if t != nil && t.ExitCode != 0 && !initShouldRestart(spec, t.ExitCode) {
				return corev1.PodFailed
			}
		}
		return corev1.PodPending
	}
	var waiting, running, stopped, succeeded int
	for _, s := range f.statuses {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.LastTerminationState.Terminated != nil:
			stopped++ // waiting to restart
		default:
			waiting++
		}
	}
	switch {
	case f.stopped:
		if running == 0 && waiting == 0 && stopped > 0 && stopped == succeeded {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		if spec.RestartPolicy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning // OnFailure: a failed container restarts
	default:
		return corev1.PodPending
	}
}

// computeStatus builds the full pod status from prev (what was reported
// last, or what the API server had), keeping fields owned by others
// (PodScheduled, QOSClass, foreign conditions) and transition times of
// conditions that did not change.
func computeStatus(pod *corev1.Pod, prev corev1.PodStatus, f podFacts, now metav1.Time) corev1.PodStatus {
	st := *prev.DeepCopy()
	phase := podPhase(&pod.Spec, f)
	st.Phase = phase
	st.ObservedGeneration = pod.Generation
	if f.reason != "" {
		st.Reason, st.Message = f.reason, f.message
	}
	ip := podIP(pod)
	st.HostIP, st.PodIP = loopbackIP, ip
	st.HostIPs = []corev1.HostIP{{IP: loopbackIP}}
	st.PodIPs = []corev1.PodIP{{IP: ip}}
	if st.StartTime == nil && !f.startTime.IsZero() {
		t := f.startTime
		st.StartTime = &t
	}
	st.InitContainerStatuses = copyStatuses(f.initStatuses, f.stopped)
	st.ContainerStatuses = copyStatuses(f.statuses, f.stopped)

	var notInit, unready []string
	for _, s := range st.InitContainerStatuses {
		if t := s.State.Terminated; t == nil || t.ExitCode != 0 {
			notInit = append(notInit, s.Name)
		}
	}
	for _, s := range st.ContainerStatuses {
		if !s.Ready {
			unready = append(unready, s.Name)
		}
	}

	set := func(t corev1.PodConditionType, ok bool, reason, msg string) {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: pod.Generation}
		if ok {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, "", ""
		}
		st.Conditions = setCondition(st.Conditions, c, now)
	}
	set(corev1.PodReadyToStartContainers, f.sandboxReady, "", "")
	if f.initialized {
		set(corev1.PodInitialized, true, "", "")
	} else {
		set(corev1.PodInitialized, false, "ContainersNotInitialized", listMsg("containers with incomplete status", notInit))
	}
	readyReason, readyMsg := "ContainersNotReady", listMsg("containers with unready status", unready)
	if phase == corev1.PodSucceeded {
		readyReason, readyMsg = reasonPodCompleted, ""
	}
	containersReady := len(unready) == 0 && !f.stopped && phase == corev1.PodRunning
	set(corev1.ContainersReady, containersReady, readyReason, readyMsg)
	ready, gateMsg := containersReady, ""
	if ready {
		for _, g := range pod.Spec.ReadinessGates {
			if !conditionTrue(st.Conditions, g.ConditionType) {
				ready, readyReason = false, "ReadinessGatesNotReady"
				gateMsg = fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist or is not True", g.ConditionType)
				break
			}
		}
	}
	if gateMsg != "" {
		readyMsg = gateMsg
	}
	set(corev1.PodReady, ready, readyReason, readyMsg)
	return st
}

// copyStatuses deep-copies and sets Ready/Started from the state: without
// probes a running container is ready, and nothing is ready once stopping.
func copyStatuses(in []corev1.ContainerStatus, stopped bool) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
		running := out[i].State.Running != nil
		started := running
		out[i].Started = &started
		out[i].Ready = running && !stopped
	}
	return out
}

func listMsg(prefix string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: [%s]", prefix, strings.Join(names, " "))
}

func conditionTrue(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setCondition upserts c by type; the transition time moves only when the
// status does, so repeated reports of the same facts are identical.
func setCondition(conds []corev1.PodCondition, c corev1.PodCondition, now metav1.Time) []corev1.PodCondition {
	for i := range conds {
		if conds[i].Type != c.Type {
			continue
		}
		c.LastTransitionTime = conds[i].LastTransitionTime
		if conds[i].Status != c.Status || c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
		c.LastProbeTime = conds[i].LastProbeTime
		conds[i] = c
		return conds
	}
	c.LastTransitionTime = now
	return append(conds, c)
}

// seedStatus turns a container status read from the API server into the
// starting point of a new runner. A container the API still shows running
// has no process here any more (the agent restarted and killed it), so it
// is recorded as killed; terminated and waiting states carry over, which
// keeps restart counts and never resurrects a finished container.
func seedStatus(prev *corev1.ContainerStatus, c *corev1.Container, now metav1.Time) corev1.ContainerStatus {
	s := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	if prev == nil {
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}
		return s
	}
	s.RestartCount = prev.RestartCount
	s.ContainerID, s.ImageID = prev.ContainerID, prev.ImageID
	s.LastTerminationState = *prev.LastTerminationState.DeepCopy()
	switch {
	case prev.State.Running != nil:
		s.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode:    137,
			Reason:      reasonError,
			Message:     "node agent restarted",
			StartedAt:   prev.State.Running.StartedAt,
			FinishedAt:  now,
			ContainerID: prev.ContainerID,
		}
	case prev.State.Terminated != nil:
		s.State.Terminated = prev.State.Terminated.DeepCopy()
	default:
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}
	}
	return s
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// terminatedState builds the record of one finished process, with the
// kubelet's exit-code conventions (128+N for signal N).
func terminatedState(exitCode int32, signal int, started, finished metav1.Time, id, msg string) *corev1.ContainerStateTerminated {
	t := &corev1.ContainerStateTerminated{
		ExitCode:    exitCode,
		Signal:      int32(signal),
		StartedAt:   started,
		FinishedAt:  finished,
		ContainerID: id,
		Message:     msg,
		Reason:      reasonCompleted,
	}
	if exitCode != 0 {
		t.Reason = reasonError
	}
	if signal != 0 && msg == "" {
		t.Message = fmt.Sprintf("killed by signal %d", signal)
	}
	return t
}
