package kubelet

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCommand(t *testing.T) {
	env := NewEnvList()
	env.Set("X", "1")
	images := NewImageMap()
	images.Add("worker:dev", "/bin/worker")
	for _, tc := range []struct {
		name     string
		c        corev1.Container
		argv     []string
		imageID  string
		imageErr bool
	}{
		{"command and args expanded", corev1.Container{Image: "worker:dev", Command: []string{"sh", "-c"}, Args: []string{"echo $(X) $(Y)"}},
			[]string{"sh", "-c", "echo 1 $(Y)"}, "devcluster://host", false},
		{"image program then args", corev1.Container{Image: "worker:dev", Args: []string{"--n=$(X)"}},
			[]string{"/bin/worker", "--n=1"}, "devcluster:///bin/worker", false},
		{"unknown image", corev1.Container{Image: "other:1"}, nil, "", true},
	} {
		argv, imageID, err := Command(&tc.c, env, images)
		var ie *ImageError
		if !slices.Equal(argv, tc.argv) || imageID != tc.imageID || errors.As(err, &ie) != tc.imageErr {
			t.Errorf("%s: %q, %q, %v", tc.name, argv, imageID, err)
		}
	}
}

func TestProcessEnvContainerWins(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Name = "p"
	env := InjectedEnv(pod, "127.0.0.1", "6443", "")
	env.Set("PATH", "/mine")
	got := ProcessEnv([][2]string{{"PATH", "/bin"}, {"HOME", "/root"}}, env)
	want := []string{"PATH=/mine", "HOME=/root", "HOSTNAME=p", "KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=6443"}
	if !slices.Equal(got, want) {
		t.Errorf("ProcessEnv = %q, want %q", got, want)
	}
}

func TestHostEnvKeepsOnlySafeVariables(t *testing.T) {
	got := HostEnv([]string{"PATH=/bin", "KUBECONFIG=/admin", "HOME=/root", "SECRET=x", "DEVCLUSTER_DIR=/d"})
	want := [][2]string{{"PATH", "/bin"}, {"HOME", "/root"}, {"DEVCLUSTER_DIR", "/d"}}
	if !slices.Equal(got, want) {
		t.Errorf("HostEnv = %v, want %v", got, want)
	}
	if got := HostEnv(nil); len(got) != 1 || got[0][0] != "PATH" {
		t.Errorf("a default PATH is needed: %v", got)
	}
}
