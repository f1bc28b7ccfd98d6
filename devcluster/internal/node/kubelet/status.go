// Package kubelet is the node agent's pure kubelet behaviour: the pod
// status a kubelet would report, restart and back-off decisions, container
// environments and commands, image references and pod addresses. Nothing
// here starts processes, touches files or talks to the API server; the
// node package feeds it facts and acts on its answers.
package kubelet

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LoopbackIP is the host address every pod and node reports: pods are host
// processes.
const LoopbackIP = "127.0.0.1"

// Reasons a kubelet uses, which Job controllers, kubectl and our operator read.
const (
	ReasonContainerCreating = "ContainerCreating"
	ReasonPodInitializing   = "PodInitializing"
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonConfigError       = "CreateContainerConfigError"
	ReasonCrashLoopBackOff  = "CrashLoopBackOff"
	ReasonCompleted         = "Completed"
	ReasonError             = "Error"
	ReasonStartError        = "StartError"
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	ReasonPodCompleted      = "PodCompleted"
)

// PodFacts is what a pod's runner knows, as plain data, so that the status
// a kubelet would report is computed (and unit-tested) apart from processes.
type PodFacts struct {
	InitStatuses []corev1.ContainerStatus
	Statuses     []corev1.ContainerStatus
	SandboxReady bool // per-pod files and token are in place
	Initialized  bool // every init container completed
	// Stopped: the runner stopped the containers for good (pod deleted,
	// deadline exceeded), so the phase must become terminal.
	Stopped         bool
	Reason, Message string // pod-level, e.g. DeadlineExceeded
	StartTime       metav1.Time
}

// PodPhase follows the kubelet's rules (pkg/kubelet getPhase): a phase only
// becomes terminal when no container will run again.
func PodPhase(spec *corev1.PodSpec, f PodFacts) corev1.PodPhase {
	if f.Reason == ReasonDeadlineExceeded {
		return corev1.PodFailed
	}
	if !f.Initialized {
		return initPhase(spec, f)
	}
	var waiting, running, stopped, succeeded int
	for _, s := range f.Statuses {
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
	case f.Stopped:
		if running == 0 && waiting == 0 && stopped > 0 && stopped == succeeded {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		return stoppedPhase(spec, stopped == succeeded)
	default:
		return corev1.PodPending
	}
}

// initPhase is the phase while init containers have not all completed.
func initPhase(spec *corev1.PodSpec, f PodFacts) corev1.PodPhase {
	if f.Stopped {
		return corev1.PodFailed
	}
	for _, s := range f.InitStatuses {
		t := s.State.Terminated
		if t != nil && t.ExitCode != 0 && !InitShouldRestart(spec, t.ExitCode) {
			return corev1.PodFailed
		}
	}
	return corev1.PodPending
}

// stoppedPhase is the phase when every container has exited (or waits to
// restart) and the runner has not stopped the pod.
func stoppedPhase(spec *corev1.PodSpec, allSucceeded bool) corev1.PodPhase {
	if spec.RestartPolicy == corev1.RestartPolicyAlways {
		return corev1.PodRunning
	}
	if allSucceeded {
		return corev1.PodSucceeded
	}
	if spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	return corev1.PodRunning // OnFailure: a failed container restarts
}

// ComputeStatus builds the full pod status from prev (what was reported
// last, or what the API server had), keeping fields owned by others
// (PodScheduled, QOSClass, foreign conditions) and transition times of
// conditions that did not change.
func ComputeStatus(pod *corev1.Pod, prev corev1.PodStatus, f PodFacts, now metav1.Time) corev1.PodStatus {
	st := *prev.DeepCopy()
	phase := PodPhase(&pod.Spec, f)
	st.Phase = phase
	st.ObservedGeneration = pod.Generation
	if f.Reason != "" {
		st.Reason, st.Message = f.Reason, f.Message
	}
	ip := PodIP(pod)
	st.HostIP, st.PodIP = LoopbackIP, ip
	st.HostIPs = []corev1.HostIP{{IP: LoopbackIP}}
	st.PodIPs = []corev1.PodIP{{IP: ip}}
	if st.StartTime == nil && !f.StartTime.IsZero() {
		t := f.StartTime
		st.StartTime = &t
	}
	st.InitContainerStatuses = copyStatuses(f.InitStatuses, f.Stopped)
	st.ContainerStatuses = copyStatuses(f.Statuses, f.Stopped)
	setConditions(&st, pod, f, phase, now)
	return st
}

// setConditions sets the conditions a kubelet owns (see nodeConditions)
// from the container statuses already in st.
func setConditions(st *corev1.PodStatus, pod *corev1.Pod, f PodFacts, phase corev1.PodPhase, now metav1.Time) {
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
	set(corev1.PodReadyToStartContainers, f.SandboxReady, "", "")
	if f.Initialized {
		set(corev1.PodInitialized, true, "", "")
	} else {
		set(corev1.PodInitialized, false, "ContainersNotInitialized", listMsg("containers with incomplete status", notInit))
	}
	readyReason, readyMsg := "ContainersNotReady", listMsg("containers with unready status", unready)
	if phase == corev1.PodSucceeded {
		readyReason, readyMsg = ReasonPodCompleted, ""
	}
	containersReady := len(unready) == 0 && !f.Stopped && phase == corev1.PodRunning
	set(corev1.ContainersReady, containersReady, readyReason, readyMsg)
	ready := containersReady
	if ready {
		if gateMsg := unmetReadinessGate(pod, st.Conditions); gateMsg != "" {
			ready, readyReason, readyMsg = false, "ReadinessGatesNotReady", gateMsg
		}
	}
	set(corev1.PodReady, ready, readyReason, readyMsg)
}

// unmetReadinessGate describes the first readiness gate whose condition is
// not True, or returns "" when all are met.
func unmetReadinessGate(pod *corev1.Pod, conds []corev1.PodCondition) string {
	for _, g := range pod.Spec.ReadinessGates {
		if !conditionTrue(conds, g.ConditionType) {
			return fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist or is not True", g.ConditionType)
		}
	}
	return ""
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

// nodeConditions are the pod conditions a kubelet owns; the others
// (PodScheduled, DisruptionTarget, readiness gates, ...) are other writers'.
var nodeConditions = map[corev1.PodConditionType]bool{
	corev1.PodReadyToStartContainers: true,
	corev1.PodInitialized:            true,
	corev1.ContainersReady:           true,
	corev1.PodReady:                  true,
}

// WithForeignConditions takes our conditions and everybody else's as
// currently stored, like the kubelet's status merge, so a patch never
// removes a condition someone added since our last look.
func WithForeignConditions(st *corev1.PodStatus, stored []corev1.PodCondition) *corev1.PodStatus {
	out := st.DeepCopy()
	out.Conditions = nil
	for _, c := range st.Conditions {
		if nodeConditions[c.Type] {
			out.Conditions = append(out.Conditions, c)
		}
	}
	for _, c := range stored {
		if !nodeConditions[c.Type] {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}
