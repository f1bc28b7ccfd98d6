package kubelet

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// configError is a problem in a container's configuration that a kubelet
// reports as CreateContainerConfigError and retries until it goes away
// (typically a ConfigMap or Secret that does not exist yet).
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func configErrorf(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}

// Expand applies Kubernetes' $(VAR) syntax: $(NAME) becomes the value when
// lookup knows NAME and stays as written otherwise, $$ is an escaped $, and
// any other $ is literal.
func Expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				// Unterminated: both bytes are literal, scanning goes on.
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

// EnvList is an ordered environment where a later definition of a name
// replaces the value but keeps the first position.
type EnvList struct {
	names []string
	vals  map[string]string
}

// NewEnvList returns an empty environment.
func NewEnvList() *EnvList { return &EnvList{vals: map[string]string{}} }

// Set defines name.
func (e *EnvList) Set(name, val string) {
	if _, ok := e.vals[name]; !ok {
		e.names = append(e.names, name)
	}
	e.vals[name] = val
}

// Get looks name up.
func (e *EnvList) Get(name string) (string, bool) {
	v, ok := e.vals[name]
	return v, ok
}

// Environ renders NAME=value pairs for os/exec.
func (e *EnvList) Environ() []string {
	out := make([]string, 0, len(e.names))
	for _, n := range e.names {
		out = append(out, n+"="+e.vals[n])
	}
	return out
}

// EnvSources fetches the objects env vars refer to; the runner backs it
// with the API server, tests with maps. A nil object with nil error means
// "not found".
type EnvSources interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, error)
	Secret(namespace, name string) (*corev1.Secret, error)
}

// ResolveEnv computes a container's environment the way a kubelet does:
// injected first, then envFrom sources in order, then env entries in
// order; a literal value may refer to anything defined before it.
// allocatable stands in for unset limits in resourceFieldRef.
func ResolveEnv(pod *corev1.Pod, c *corev1.Container, injected *EnvList, src EnvSources, allocatable corev1.ResourceList) (*EnvList, error) {
	env := NewEnvList()
	for _, n := range injected.names {
		env.Set(n, injected.vals[n])
	}
	cache := &sourceCache{src: src, ns: pod.Namespace, cms: map[string]*corev1.ConfigMap{}, secs: map[string]*corev1.Secret{}}
	for _, from := range c.EnvFrom {
		data, err := cache.envFrom(from)
		if err != nil {
			return nil, err
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			if strings.Contains(from.Prefix+k, "=") {
				continue // cannot be an environment variable name
			}
			env.Set(from.Prefix+k, data[k])
		}
	}
	for _, v := range c.Env {
		if v.ValueFrom == nil {
			env.Set(v.Name, Expand(v.Value, env.Get))
			continue
		}
		val, ok, err := valueFrom(pod, c, v.ValueFrom, cache, allocatable)
		if err != nil {
			return nil, err
		}
		if ok {
			env.Set(v.Name, val)
		}
	}
	return env, nil
}

// sourceCache reads each ConfigMap and Secret once per resolution, so a
// container sees one consistent version of each.
type sourceCache struct {
	src  EnvSources
	ns   string
	cms  map[string]*corev1.ConfigMap
	secs map[string]*corev1.Secret
}

func (s *sourceCache) configMap(name string) (*corev1.ConfigMap, error) {
	if cm, ok := s.cms[name]; ok {
		return cm, nil
	}
	cm, err := s.src.ConfigMap(s.ns, name)
	if err != nil {
		return nil, err
	}
	s.cms[name] = cm
	return cm, nil
}

func (s *sourceCache) secret(name string) (*corev1.Secret, error) {
	if sec, ok := s.secs[name]; ok {
		return sec, nil
	}
	sec, err := s.src.Secret(s.ns, name)
	if err != nil {
		return nil, err
	}
	s.secs[name] = sec
	return sec, nil
}

func (s *sourceCache) envFrom(from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		ref := from.ConfigMapRef
		cm, err := s.configMap(ref.Name)
		if err != nil {
			return nil, err
		}
		if cm == nil {
			if isOptional(ref.Optional) {
				return nil, nil
			}
			return nil, configErrorf("configmap %q not found", ref.Name)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		ref := from.SecretRef
		sec, err := s.secret(ref.Name)
		if err != nil {
			return nil, err
		}
		if sec == nil {
			if isOptional(ref.Optional) {
				return nil, nil
			}
			return nil, configErrorf("secret %q not found", ref.Name)
		}
		out := make(map[string]string, len(sec.Data))
		for k, v := range sec.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	return nil, nil
}

// valueFrom resolves one env var source; ok is false when an optional
// source is missing and the variable is left out.
func valueFrom(pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource, s *sourceCache, allocatable corev1.ResourceList) (val string, ok bool, err error) {
	switch {
	case from.FieldRef != nil:
		v, err := podFieldValue(pod, from.FieldRef.FieldPath)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := resourceFieldValue(pod, c, from.ResourceFieldRef, allocatable)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		return s.configMapKey(from.ConfigMapKeyRef)
	case from.SecretKeyRef != nil:
		return s.secretKey(from.SecretKeyRef)
	}
	return "", false, configErrorf("unsupported env var source (only fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef work on this node)")
}

// configMapKey resolves configMapKeyRef; ok is false when an optional
// ConfigMap or key is missing.
func (s *sourceCache) configMapKey(ref *corev1.ConfigMapKeySelector) (val string, ok bool, err error) {
	cm, err := s.configMap(ref.Name)
	if err != nil {
		return "", false, err
	}
	if cm == nil {
		if isOptional(ref.Optional) {
			return "", false, nil
		}
		return "", false, configErrorf("configmap %q not found", ref.Name)
	}
	if v, found := cm.Data[ref.Key]; found {
		return v, true, nil
	}
	if v, found := cm.BinaryData[ref.Key]; found {
		return string(v), true, nil
	}
	if isOptional(ref.Optional) {
		return "", false, nil
	}
	return "", false, configErrorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, s.ns, ref.Name)
}

// secretKey resolves secretKeyRef; ok is false when an optional Secret or
// key is missing.
func (s *sourceCache) secretKey(ref *corev1.SecretKeySelector) (val string, ok bool, err error) {
	sec, err := s.secret(ref.Name)
	if err != nil {
		return "", false, err
	}
	if sec == nil {
		if isOptional(ref.Optional) {
			return "", false, nil
		}
		return "", false, configErrorf("secret %q not found", ref.Name)
	}
	if v, found := sec.Data[ref.Key]; found {
		return string(v), true, nil
	}
	if isOptional(ref.Optional) {
		return "", false, nil
	}
	return "", false, configErrorf("couldn't find key %s in Secret %s/%s", ref.Key, s.ns, ref.Name)
}

func isOptional(b *bool) bool { return b != nil && *b }

// podFieldValue implements the downward API fields allowed in env vars.
func podFieldValue(pod *corev1.Pod, path string) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return PodIP(pod), nil
	case "status.hostIP", "status.hostIPs":
		return LoopbackIP, nil
	}
	return "", configErrorf("unsupported fieldRef fieldPath %q", path)
}

// subscript parses PREFIX['key'] (or double quotes).
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"[")
	if !ok || len(rest) < 3 || !strings.HasSuffix(rest, "]") {
		return "", false
	}
	rest = rest[:len(rest)-1]
	q := rest[0]
	if (q != '\'' && q != '"') || rest[len(rest)-1] != q {
		return "", false
	}
	return rest[1 : len(rest)-1], true
}

// resourceFieldValue implements resourceFieldRef: the value divided by the
// divisor and rounded up, with the node's allocatable standing in for an
// unset limit, as the kubelet does.
func resourceFieldValue(pod *corev1.Pod, self *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	c := self
	if ref.ContainerName != "" && ref.ContainerName != self.Name {
		c = nil
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				if list[i].Name == ref.ContainerName {
					c = &list[i]
				}
			}
		}
		if c == nil {
			return "", configErrorf("resourceFieldRef: container %q not found", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", configErrorf("unsupported resourceFieldRef resource %q", ref.Resource)
	}
	rn := corev1.ResourceName(name)
	var q resource.Quantity
	if kind == "limits" {
		if v, found := c.Resources.Limits[rn]; found {
			q = v
		} else {
			q = allocatable[rn]
		}
	} else {
		q = c.Resources.Requests[rn]
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	if rn == corev1.ResourceCPU {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(div.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(div.Value())))), nil
}
