package kubelet

import (
	"fmt"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPodIPIsLoopbackStableAndDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		pod := &corev1.Pod{}
		pod.UID = types.UID(fmt.Sprintf("uid-%d", i))
		ip := PodIP(pod)
		parsed := net.ParseIP(ip)
		if parsed == nil || !parsed.IsLoopback() || strings.HasPrefix(ip, "127.0.0.") {
			t.Fatalf("PodIP %q: want a loopback address outside 127.0.0.0/24", ip)
		}
		if ip != PodIP(pod) {
			t.Fatalf("PodIP not stable for %s", pod.UID)
		}
		seen[ip] = true
	}
	if len(seen) < 1990 {
		t.Fatalf("only %d distinct addresses for 2000 pods", len(seen))
	}
}
