package kubelet

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Restart back-off: 1s doubling to 60s (the kubelet's reduced back-off);
// an instance that ran 10 minutes resets it. A container that cannot start
// is retried after configRetry, or imageRetry when its image is unknown.
const (
	backoffBase  = time.Second
	backoffMax   = 60 * time.Second
	backoffReset = 10 * time.Minute
	configRetry  = 3 * time.Second
	imageRetry   = 10 * time.Second
)

// ShouldRestart applies the container's own restartPolicy (sidecar-style
// or the newer per-container field) and else the pod's.
func ShouldRestart(spec *corev1.PodSpec, c *corev1.Container, exitCode int32) bool {
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

// InitShouldRestart: an init container must succeed once; a failed one is
// retried unless the pod's policy is Never.
func InitShouldRestart(spec *corev1.PodSpec, exitCode int32) bool {
	return exitCode != 0 && spec.RestartPolicy != corev1.RestartPolicyNever
}

// RestartBackoff is the wait before restarting a container whose last
// instance ended as last, after backoffs quick failures in a row; it also
// returns the count to keep for the next failure.
func RestartBackoff(backoffs int, last *corev1.ContainerStateTerminated) (time.Duration, int) {
	if last.FinishedAt.Sub(last.StartedAt.Time) >= backoffReset {
		backoffs = 0
	}
	return min(backoffBase<<min(backoffs, 6), backoffMax), backoffs + 1
}

// StartFailure is the waiting reason of a container that cannot start
// because of err, given its current waiting state (nil if none), and how
// long to wait before trying again: ErrImagePull for an unknown image
// (ImagePullBackOff from the second report on), else
// CreateContainerConfigError.
func StartFailure(err error, cur *corev1.ContainerStateWaiting) (string, time.Duration) {
	var ie *ImageError
	if !errors.As(err, &ie) {
		return ReasonConfigError, configRetry
	}
	if cur != nil && (cur.Reason == ReasonErrImagePull || cur.Reason == ReasonImagePullBackOff) {
		return ReasonImagePullBackOff, imageRetry // the kubelet's second and later report
	}
	return ReasonErrImagePull, imageRetry
}

// TerminationGrace is the pod's terminationGracePeriodSeconds, 30s by
// default.
func TerminationGrace(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}
