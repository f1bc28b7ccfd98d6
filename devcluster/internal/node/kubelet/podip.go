package kubelet

import (
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
)

// PodIP gives each pod an address of its own in 127.0.0.0/8 (all of it is
// loopback on Linux, no setup needed), derived from the pod's UID so it
// survives agent restarts. A program that binds $(POD_IP):PORT, as it would
// in a real cluster, then never clashes with another pod on this host, and
// tests reach it at that address. (The API server's pod proxy refuses
// loopback targets, "address not allowed", so pods/proxy does not work
// here.) 127.0.0.x is left to the host and the control plane.
func PodIP(pod *corev1.Pod) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(pod.UID))
	v := h.Sum32()
	return fmt.Sprintf("127.%d.%d.%d", 1+v%254, (v>>8)%256, 1+(v>>16)%254)
}
