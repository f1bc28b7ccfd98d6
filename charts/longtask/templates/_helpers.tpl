{{/*
Labels on every object the chart renders: the kustomization's
app.kubernetes.io/part-of plus Helm's usual four. A test
(tests/chart) removes exactly the four Helm ones before it compares the
chart with `kubectl kustomize manifests/`.
*/}}
{{- define "longtask.labels" -}}
app.kubernetes.io/part-of: longtask
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
An image reference from {registry, repository, tag}: REGISTRY/REPOSITORY:TAG
(no REGISTRY/ when registry is empty), the tag defaulting to appVersion.
Call with (dict "image" .Values.images.operator "ctx" $).
*/}}
{{- define "longtask.image" -}}
{{- $tag := .image.tag | default .ctx.Chart.AppVersion -}}
{{- if .image.registry -}}
{{- printf "%s/%s:%s" (trimSuffix "/" .image.registry) .image.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}
{{- end }}

{{/*
The YAML documents of one file under files/ (each a symlink to the file of
manifests/ that is the one source), rendered as they are plus:
  - the chart's labels;
  - metadata.namespace, for the namespaced kinds, set to the release
    namespace;
  - the namespace of every ServiceAccount subject of a (Cluster)RoleBinding
    or a FlowSchema set to the release namespace (the operator's account
    lives there);
  - on CustomResourceDefinitions, helm.sh/resource-policy: keep when
    crds.keep.
Call with (dict "file" "files/rbac.yaml" "ctx" $). Objects of the kinds in
"skip" (a list, optional) are left out.
*/}}
{{- define "longtask.manifest" -}}
{{- $ctx := .ctx -}}
{{- $skip := .skip | default list -}}
{{- $labels := include "longtask.labels" $ctx | fromYaml -}}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" ($ctx.Files.Get .file) -1 }}
{{- $obj := fromYaml $doc -}}
{{- if hasKey $obj "Error" }}
{{- fail (printf "%s: %s" $.file $obj.Error) }}
{{- end }}
{{- if and $obj (not (has $obj.kind $skip)) }}
{{- $meta := $obj.metadata -}}
{{- $_ := set $meta "labels" (merge (dict) ($meta.labels | default dict) $labels) -}}
{{- if has $obj.kind (list "ServiceAccount" "Role" "RoleBinding") }}
{{- $_ := set $meta "namespace" $ctx.Release.Namespace -}}
{{- end }}
{{- range $s := $obj.subjects | default list }}
{{- if eq $s.kind "ServiceAccount" }}
{{- $_ := set $s "namespace" $ctx.Release.Namespace -}}
{{- end }}
{{- end }}
{{- if eq $obj.kind "FlowSchema" }}
{{- range $r := $obj.spec.rules | default list }}
{{- range $s := $r.subjects | default list }}
{{- if eq $s.kind "ServiceAccount" }}
{{- $_ := set $s.serviceAccount "namespace" $ctx.Release.Namespace -}}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if and (eq $obj.kind "CustomResourceDefinition") $ctx.Values.crds.keep }}
{{- $_ := set $meta "annotations" (merge ($meta.annotations | default dict) (dict "helm.sh/resource-policy" "keep")) -}}
{{- end }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end }}
