package kubelet

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ImageError is a container whose image maps to no local program: a
// kubelet would fail to pull it.
type ImageError struct{ Image string }

func (e *ImageError) Error() string {
	return fmt.Sprintf("no local program is mapped for image %q on this node (start the node agent with --image %s=/path/to/program, or set command)", e.Image, e.Image)
}

// InjectedEnv is what every container of pod gets before its own
// variables: HOSTNAME, the API server's address and, when the pod has
// service-account credentials (kubeconfig not ""), KUBECONFIG.
func InjectedEnv(pod *corev1.Pod, apiHost, apiPort, kubeconfig string) *EnvList {
	env := NewEnvList()
	env.Set("HOSTNAME", pod.Name)
	env.Set("KUBERNETES_SERVICE_HOST", apiHost)
	env.Set("KUBERNETES_SERVICE_PORT", apiPort)
	if kubeconfig != "" {
		env.Set("KUBECONFIG", kubeconfig)
	}
	return env
}

// Command is a container's argv, command then args with $(VAR) expanded
// from env, and the imageID to report. Without a command the image's
// program runs with the args; an image mapped to no program is an
// *ImageError.
func Command(c *corev1.Container, env *EnvList, images *ImageMap) (argv []string, imageID string, err error) {
	for _, s := range append(append([]string{}, c.Command...), c.Args...) {
		argv = append(argv, Expand(s, env.Get))
	}
	if len(c.Command) > 0 {
		return argv, "devcluster://host", nil
	}
	prog, ok := images.Lookup(c.Image)
	if !ok {
		return nil, "", &ImageError{Image: c.Image}
	}
	return append([]string{prog}, argv...), "devcluster://" + prog, nil
}

// HostEnv picks the few variables a host program needs to work at all.
// Everything else, KUBECONFIG above all, stays out: a pod must get its own
// service account's rights, never the agent's. DEVCLUSTER_DIR lets
// `devcluster down` find strays.
func HostEnv(environ []string) [][2]string {
	keep := map[string]bool{
		"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "LANG": true, "LC_ALL": true,
		"TZ": true, "TMPDIR": true, "SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "DEVCLUSTER_DIR": true,
	}
	var out [][2]string
	hasPath := false
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if keep[k] {
			out = append(out, [2]string{k, v})
			hasPath = hasPath || k == "PATH"
		}
	}
	if !hasPath {
		out = append(out, [2]string{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})
	}
	return out
}

// ProcessEnv is the environment a container's process starts with: the
// host variables it inherits (see HostEnv), then its own, which win.
func ProcessEnv(host [][2]string, env *EnvList) []string {
	full := NewEnvList()
	for _, kv := range host {
		full.Set(kv[0], kv[1])
	}
	for _, n := range env.names {
		full.Set(n, env.vals[n])
	}
	return full.Environ()
}
