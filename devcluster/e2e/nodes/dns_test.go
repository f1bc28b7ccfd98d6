package nodes

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod resolves Services by name through the cluster DNS: its own
// namespace's Service by the short name (the resolv.conf search path the
// kubelet writes from clusterDNS), another namespace's by name.namespace.
func TestClusterDNS(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	svc, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"web": svc.Spec.ClusterIP, "kubernetes.default": "10.0.0.1"} {
		pod := "resolve-" + strings.ReplaceAll(name, ".", "-")
		createPod(t, ns, probePod(pod, "", "resolve", name))
		var phase corev1.PodPhase
		waitUntil(t, 60*time.Second, "pod "+pod+" finished", func() (bool, error) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			phase = p.Status.Phase
			return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
		})
		out, err := client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); phase != corev1.PodSucceeded || got != want {
			t.Errorf("%s resolved to %q (pod %s), want %s", name, got, phase, want)
		}
	}
}
