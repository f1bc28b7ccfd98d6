package cluster

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// parseManifests splits a multi-document YAML stream into objects.
func parseManifests(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// adaptKueue turns Kueue's install manifests (`kustomize build
// config/default` of its module) into what a devcluster applies. Kueue's
// manager runs as a host process, not as the Deployment, so:
//   - the Deployment, its Services and the visibility APIServices go (the
//     aggregator reaches an APIService only through a Service's endpoints,
//     which may not be loopback addresses), and so do the ConfigMap and the
//     empty certificate Secret: the devcluster writes the configuration and
//     a serving certificate from its own CA to files;
//   - every webhook, admission and CRD conversion, is called at base (an
//     https URL on loopback) plus the path Kueue's manifests name, trusting
//     caBundle (PEM), where the manifests name the webhook Service.
//
// The Namespace, CRDs, ServiceAccount and RBAC are kept as they are.
func adaptKueue(objs []*unstructured.Unstructured, base string, caBundle []byte) ([]*unstructured.Unstructured, error) {
	ca := base64.StdEncoding.EncodeToString(caBundle)
	clientConfig := func(cc map[string]any, where string) (map[string]any, error) {
		path, _, _ := unstructured.NestedString(cc, "service", "path")
		if path == "" {
			return nil, fmt.Errorf("%s: clientConfig names no service path", where)
		}
		return map[string]any{"url": base + path, "caBundle": ca}, nil
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		where := o.GetKind() + " " + o.GetName()
		switch o.GetKind() {
		case "Deployment", "Service", "APIService", "ConfigMap", "Secret":
			continue
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			for i, h := range hooks {
				hm, ok := h.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s: webhook %d is not an object", where, i)
				}
				cc, _, _ := unstructured.NestedMap(hm, "clientConfig")
				if hm["clientConfig"], err = clientConfig(cc, where); err != nil {
					return nil, err
				}
			}
			if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		case "CustomResourceDefinition":
			cc, found, _ := unstructured.NestedMap(o.Object, "spec", "conversion", "webhook", "clientConfig")
			if !found {
				break
			}
			adapted, err := clientConfig(cc, where)
			if err != nil {
				return nil, err
			}
			if err := unstructured.SetNestedMap(o.Object, adapted, "spec", "conversion", "webhook", "clientConfig"); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		}
		out = append(out, o)
	}
	return out, nil
}
