package cluster

import (
	"encoding/base64"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const kueueSample = `apiVersion: v1
kind: Namespace
metadata:
  name: kueue-system
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: workloads.kueue.x-k8s.io
spec:
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service: {name: kueue-webhook-service, namespace: kueue-system, path: /convert}
      conversionReviewVersions: [v1]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: topologies.kueue.x-k8s.io
spec: {}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: kueue-validating-webhook-configuration
webhooks:
- name: vjob.kb.io
  clientConfig:
    service: {name: kueue-webhook-service, namespace: kueue-system, path: /validate-batch-v1-job}
- name: vpod.kb.io
  clientConfig:
    service: {name: kueue-webhook-service, namespace: kueue-system, path: /validate--v1-pod}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kueue-controller-manager, namespace: kueue-system}
---
apiVersion: v1
kind: Service
metadata: {name: kueue-webhook-service, namespace: kueue-system}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta2.visibility.kueue.x-k8s.io}
---
apiVersion: v1
kind: Secret
metadata: {name: kueue-webhook-server-cert, namespace: kueue-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
`

func TestAdaptKueue(t *testing.T) {
	objs, err := parseManifests([]byte(kueueSample))
	if err != nil {
		t.Fatal(err)
	}
	out, err := adaptKueue(objs, "https://127.0.0.1:9443", []byte("CA"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range out {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	want := []string{"Namespace/kueue-system", "CustomResourceDefinition/workloads.kueue.x-k8s.io",
		"CustomResourceDefinition/topologies.kueue.x-k8s.io", "ValidatingWebhookConfiguration/kueue-validating-webhook-configuration"}
	if len(kinds) != len(want) {
		t.Fatalf("kept %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("kept %v, want %v", kinds, want)
		}
	}
	ca := base64.StdEncoding.EncodeToString([]byte("CA"))
	conv, _, _ := unstructured.NestedMap(out[1].Object, "spec", "conversion", "webhook", "clientConfig")
	if conv["url"] != "https://127.0.0.1:9443/convert" || conv["caBundle"] != ca || conv["service"] != nil {
		t.Errorf("conversion clientConfig %v", conv)
	}
	if _, found, _ := unstructured.NestedMap(out[2].Object, "spec", "conversion"); found {
		t.Errorf("a CRD without conversion got one")
	}
	hooks, _, _ := unstructured.NestedSlice(out[3].Object, "webhooks")
	for i, path := range []string{"/validate-batch-v1-job", "/validate--v1-pod"} {
		cc := hooks[i].(map[string]any)["clientConfig"].(map[string]any)
		if cc["url"] != "https://127.0.0.1:9443"+path || cc["caBundle"] != ca || cc["service"] != nil {
			t.Errorf("webhook %d clientConfig %v", i, cc)
		}
	}
}

func TestAdaptKueueRefusesWebhookWithoutPath(t *testing.T) {
	objs, err := parseManifests([]byte(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: m}
webhooks:
- name: x
  clientConfig: {url: "https://elsewhere"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adaptKueue(objs, "https://127.0.0.1:1", nil); err == nil {
		t.Fatal("want an error for a webhook that names no service path")
	}
}
