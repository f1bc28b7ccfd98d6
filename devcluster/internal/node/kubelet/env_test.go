package kubelet

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "1"},
		{"x$(A)y$(B)z", "x1ytwoz"},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$1"},
		{"$$", "$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"$(A$(B)", "$(A$(B)"}, // no name "A$(B": unknown, kept
		{"$()", "$()"},
		{"$(EMPTY)x", "x"},
		{"100$", "100$"},
	} {
		if got := Expand(tc.in, lookup); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type fakeSources struct {
	cms  map[string]*corev1.ConfigMap
	secs map[string]*corev1.Secret
	err  error
}

func (f fakeSources) ConfigMap(_, name string) (*corev1.ConfigMap, error) { return f.cms[name], f.err }
func (f fakeSources) Secret(_, name string) (*corev1.Secret, error)       { return f.secs[name], f.err }

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "uid-1",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "hi"},
		},
		Spec: corev1.PodSpec{NodeName: "devcluster-node-0", ServiceAccountName: "sa"},
	}
}

func envMap(e *EnvList) map[string]string { return e.vals }

func TestResolveEnvOrderAndExpansion(t *testing.T) {
	pod := testPod()
	opt := true
	c := &corev1.Container{
		Name: "c",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: &opt}},
		},
		Env: []corev1.EnvVar{
			{Name: "FROM_CM", Value: "cm says $(K1)"},
			{Name: "K1", Value: "overridden"},
			{Name: "LATER", Value: "$(NOT_YET)"},
			{Name: "NOT_YET", Value: "x"},
			{Name: "ESC", Value: "$$(K1)"},
			{Name: "HOST", Value: "$(KUBERNETES_SERVICE_HOST)"},
			{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "KEY", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "K2"}}},
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "pw"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "missing", Optional: &opt}}},
		},
	}
	src := fakeSources{
		cms:  map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{"K1": "v1", "K2": "v2", "bad=key": "x"}}},
		secs: map[string]*corev1.Secret{"sec": {Data: map[string][]byte{"pw": []byte("s3cret")}}},
	}
	injected := NewEnvList()
	injected.Set("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	env, err := ResolveEnv(pod, c, injected, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST": "127.0.0.1",
		"K1":                      "overridden",
		"K2":                      "v2",
		"S_pw":                    "s3cret",
		"FROM_CM":                 "cm says v1",
		"LATER":                   "$(NOT_YET)",
		"NOT_YET":                 "x",
		"ESC":                     "$(K1)",
		"HOST":                    "127.0.0.1",
		"NAME":                    "p",
		"KEY":                     "v2",
		"PW":                      "s3cret",
	}
	got := envMap(env)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["OPT"]; ok {
		t.Error("optional missing key should leave the variable out")
	}
	if _, ok := got["bad=key"]; ok {
		t.Error("a key with '=' cannot be a variable")
	}
	// Redefinition keeps the first position.
	if i, j := slices.Index(env.names, "K1"), slices.Index(env.names, "FROM_CM"); i > j {
		t.Errorf("K1 should stay where envFrom put it: %v", env.names)
	}
}

func TestResolveEnvMissingSources(t *testing.T) {
	pod := testPod()
	ref := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
	}
	src := fakeSources{cms: map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{"a": "1"}}}}
	for _, tc := range []struct {
		name string
		c    corev1.Container
		want string
	}{
		{"missing configmap", corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: ref("gone", "a")}}}, `configmap "gone" not found`},
		{"missing key", corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: ref("cm", "b")}}}, "couldn't find key b in ConfigMap ns/cm"},
		{"missing secret", corev1.Container{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}}, `secret "s" not found`},
		{"bad field", corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nope"}}}}}, `unsupported fieldRef fieldPath "spec.nope"`},
	} {
		_, err := ResolveEnv(pod, &tc.c, NewEnvList(), src, nil)
		var ce *configError
		if !errors.As(err, &ce) || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want config error %q", tc.name, err, tc.want)
		}
	}
}

func TestPodFieldValue(t *testing.T) {
	pod := testPod()
	for path, want := range map[string]string{
		"metadata.name":                "p",
		"metadata.namespace":           "ns",
		"metadata.uid":                 "uid-1",
		"metadata.labels['app']":       "web",
		"metadata.labels['none']":      "",
		"metadata.annotations['note']": "hi",
		`metadata.annotations["note"]`: "hi",
		"spec.nodeName":                "devcluster-node-0",
		"spec.serviceAccountName":      "sa",
		"status.podIP":                 PodIP(pod),
		"status.hostIP":                "127.0.0.1",
	} {
		got, err := podFieldValue(pod, path)
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := podFieldValue(pod, "metadata.labels"); err == nil {
		t.Error("whole label map is not allowed in env")
	}
}

func TestResourceFieldValue(t *testing.T) {
	pod := testPod()
	c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}}
	pod.Spec.Containers = []corev1.Container{c}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	for _, tc := range []struct {
		res, div, want string
	}{
		{"requests.cpu", "", "1"}, // 0.25 rounded up
		{"requests.cpu", "1m", "250"},
		{"limits.cpu", "", "4"}, // node allocatable
		{"limits.memory", "1Mi", "128"},
		{"requests.memory", "", "67108864"},
	} {
		ref := &corev1.ResourceFieldSelector{Resource: tc.res}
		if tc.div != "" {
			ref.Divisor = resource.MustParse(tc.div)
		}
		got, err := resourceFieldValue(pod, &c, ref, alloc)
		if err != nil || got != tc.want {
			t.Errorf("%s/%s = %q, %v; want %q", tc.res, tc.div, got, err, tc.want)
		}
	}
}
