package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestShouldRestartHonoursContainerPolicy(t *testing.T) {
	spec := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}
	always := corev1.ContainerRestartPolicyAlways
	if ShouldRestart(spec, &corev1.Container{}, 1) {
		t.Error("Never must not restart")
	}
	if !ShouldRestart(spec, &corev1.Container{RestartPolicy: &always}, 0) {
		t.Error("a container's own Always wins")
	}
	if !ShouldRestart(&corev1.PodSpec{}, &corev1.Container{}, 0) {
		t.Error("the default policy is Always")
	}
}

func TestInitContainersRunOnce(t *testing.T) {
	always := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}
	never := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}
	if InitShouldRestart(always, 0) {
		t.Error("a succeeded init container never runs again, even with restartPolicy Always")
	}
	if !InitShouldRestart(always, 1) || InitShouldRestart(never, 1) {
		t.Error("a failed init container is retried unless the policy is Never")
	}
}

func TestRestartBackoff(t *testing.T) {
	quick := &corev1.ContainerStateTerminated{}
	for n, want := range map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 5: 32 * time.Second, 6: time.Minute, 20: time.Minute} {
		if d, next := RestartBackoff(n, quick); d != want || next != n+1 {
			t.Errorf("after %d failures: %v then %d, want %v", n, d, next, want)
		}
	}
	long := &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(time.Unix(0, 0)), FinishedAt: metav1.NewTime(time.Unix(600, 0))}
	if d, next := RestartBackoff(5, long); d != time.Second || next != 1 {
		t.Errorf("a 10-minute run resets the back-off: %v then %d", d, next)
	}
}

func TestStartFailure(t *testing.T) {
	img := &ImageError{Image: "x"}
	pulling := &corev1.ContainerStateWaiting{Reason: ReasonErrImagePull}
	for _, tc := range []struct {
		err    error
		cur    *corev1.ContainerStateWaiting
		reason string
		retry  time.Duration
	}{
		{configErrorf("configmap %q not found", "cm"), nil, ReasonConfigError, 3 * time.Second},
		{img, nil, ReasonErrImagePull, 10 * time.Second},
		{img, &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}, ReasonErrImagePull, 10 * time.Second},
		{img, pulling, ReasonImagePullBackOff, 10 * time.Second},
		{img, &corev1.ContainerStateWaiting{Reason: ReasonImagePullBackOff}, ReasonImagePullBackOff, 10 * time.Second},
		{configErrorf("x"), pulling, ReasonConfigError, 3 * time.Second},
	} {
		if reason, retry := StartFailure(tc.err, tc.cur); reason != tc.reason || retry != tc.retry {
			t.Errorf("StartFailure(%v, %+v) = %s, %v; want %s, %v", tc.err, tc.cur, reason, retry, tc.reason, tc.retry)
		}
	}
}
