{{/* The chart's name: nameOverride replaces it in names and in the
app.kubernetes.io/name label. */}}
{{- define "stackward.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name, cut to the 63 characters a name may have;
fullnameOverride replaces it outright. */}}
{{- define "stackward.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "stackward.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount the CCM pod runs as (the approver is a sidecar in that pod). */}}
{{- define "stackward.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "stackward.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The approver's own ServiceAccount: it reads Nodes and approves kubelet
serving CSRs, and nothing of the CCM's (no Node writes). */}}
{{- define "stackward.approverServiceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (printf "%s-approver" (include "stackward.fullname" .) | trunc 63 | trimSuffix "-") .Values.serviceAccount.approverName -}}
{{- else -}}
{{- required "serviceAccount.approverName is required when serviceAccount.create is false" .Values.serviceAccount.approverName -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object of the chart, then commonLabels without the
keys the chart sets itself (a duplicate key would make invalid YAML, and the
selector labels must stay the chart's). */}}
{{- define "stackward.labels" -}}
{{- include "stackward.ownLabels" . }}
{{- with include "stackward.userLabels" (list .Values.commonLabels) | fromYaml }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "stackward.ownLabels" -}}
app.kubernetes.io/name: {{ include "stackward.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The keys of the chart's own labels, which no user label may repeat. */}}
{{- define "stackward.ownLabelKeys" -}}
app.kubernetes.io/name app.kubernetes.io/instance app.kubernetes.io/version app.kubernetes.io/managed-by helm.sh/chart app.kubernetes.io/component
{{- end -}}

{{/* The pods' labels: the chart's, then commonLabels, then podLabels,
which win over commonLabels for the same key. */}}
{{- define "stackward.podLabels" -}}
{{- include "stackward.ownLabels" . }}
app.kubernetes.io/component: cloud-controller-manager
{{- with include "stackward.userLabels" (list .Values.commonLabels .Values.podLabels) | fromYaml }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* User label maps merged in order (a later one wins), without the
chart's own keys; YAML, as include can only return text. */}}
{{- define "stackward.userLabels" -}}
{{- $own := include "stackward.ownLabelKeys" . | splitList " " -}}
{{- $out := dict -}}
{{- range . -}}
{{- range $k, $v := . -}}
{{- if not (has $k $own) -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* Labels that select the pods: stable across upgrades. */}}
{{- define "stackward.selectorLabels" -}}
app.kubernetes.io/name: {{ include "stackward.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: cloud-controller-manager
{{- end -}}

{{/* The approver's own pod (approver.separatePod). */}}
{{- define "stackward.approverSelectorLabels" -}}
app.kubernetes.io/name: {{ include "stackward.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: approver
{{- end -}}

{{/* The pods a monitor scrapes: the CCM's, and the approver's own with
approver.separatePod (each endpoint's port is on one of them). */}}
{{- define "stackward.monitorSelectorLabels" -}}
{{- if and .Values.approver.enabled .Values.approver.separatePod -}}
app.kubernetes.io/name: {{ include "stackward.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- else -}}
{{- include "stackward.selectorLabels" . -}}
{{- end -}}
{{- end -}}

{{/* An image reference: repository@digest when a digest is set (the tag
is then ignored: the digest alone names the image), else repository:tag with
the tag defaulting to the chart's appVersion. */}}
{{- define "stackward.image" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding cloud.conf: the user's or the chart's. */}}
{{- define "stackward.cloudConfigSecret" -}}
{{- default (printf "%s-cloud-config" (include "stackward.fullname" .)) .Values.cloudConfig.existingSecret -}}
{{- end -}}

{{/* Whether the chart creates the cloud-config Secret (and checks its values). */}}
{{- define "stackward.createCloudConfig" -}}
{{- $c := .Values.cloudConfig -}}
{{- if and $c.existingSecret (or $c.contents $c.config $c.extraFiles) -}}
{{- fail "cloudConfig: existingSecret cannot be combined with contents, config or extraFiles (the chart does not write to a Secret it does not own)" -}}
{{- end -}}
{{- if and $c.extraFiles (not (or $c.contents $c.config)) -}}
{{- fail "cloudConfig: extraFiles go into the chart's Secret, which needs contents or config" -}}
{{- end -}}
{{- if and $c.contents $c.config -}}
{{- fail "cloudConfig: set contents or config, not both" -}}
{{- end -}}
{{- if and (not $c.existingSecret) (or $c.contents $c.config) -}}true{{- end -}}
{{- end -}}

{{/* cloud.conf rendered from cloudConfig.config: gcfg syntax, strings
double-quoted with \ and " escaped, lists as repeated keys. LoadBalancerClass
is a map of class name → keys and becomes one [LoadBalancerClass "name"]
section per class. */}}
{{- define "stackward.cloudConf" -}}
{{- range $section, $keys := .Values.cloudConfig.config }}
{{- if eq $section "LoadBalancerClass" }}
{{- range $class, $classKeys := $keys }}
[LoadBalancerClass "{{ $class | replace "\\" "\\\\" | replace "\"" "\\\"" }}"]
{{- include "stackward.cloudConfKeys" $classKeys }}
{{- end }}
{{- else }}
[{{ $section }}]
{{- include "stackward.cloudConfKeys" $keys }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The key = value lines of one cloud.conf section. */}}
{{- define "stackward.cloudConfKeys" -}}
{{- range $key, $value := . }}
{{- $values := kindIs "slice" $value | ternary $value (list $value) }}
{{- range $values }}
{{- if kindIs "string" . }}
{{ $key }} = "{{ . | replace "\\" "\\\\" | replace "\"" "\\\"" }}"
{{- else }}
{{ $key }} = {{ . }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* What rolls the pods when their configuration changes, as one hash per
container. Everything the chart renders itself is hashed from the rendered
text, so the annotation is the same under `helm template`, Argo CD and Flux
as under `helm upgrade`. A Secret the chart does not own contributes its
name and key (so pointing at another Secret rolls the pods everywhere) and,
when the chart is installed against a cluster that holds it, its data
(lookup); `helm template` and GitOps tools cannot see that data: give such a
Secret a new name when its content changes (Kustomize's secretGenerator and
Flux's do this). */}}
{{- define "stackward.cloudConfigChecksum" -}}
{{- if include "stackward.createCloudConfig" . -}}
{{- include "stackward.cloudConfigData" . | sha256sum -}}
{{- else -}}
{{- include "stackward.existingSecretChecksum" (dict "root" . "name" (include "stackward.cloudConfigSecret" .) "key" .Values.cloudConfig.key) -}}
{{- end -}}
{{- end -}}

{{/* The approver's own Secrets: its ServiceAccount token Secret (by
name: the token controller fills it, the chart renders only the name), its
separate cloud config and the signer's CA. */}}
{{- define "stackward.approverConfigChecksum" -}}
{{- $a := .Values.approver -}}
{{- $parts := list -}}
{{- if not $a.separatePod -}}
{{- $parts = append $parts (include "stackward.approverTokenSecret" .) -}}
{{- end -}}
{{- with $a.cloudConfig.existingSecret -}}
{{- $parts = append $parts (include "stackward.existingSecretChecksum" (dict "root" $ "name" . "key" $a.cloudConfig.key)) -}}
{{- end -}}
{{- if $a.signer.enabled -}}
{{- $parts = append $parts (include "stackward.existingSecretChecksum" (dict "root" . "name" $a.signer.caSecret "key" "kubelet-serving-ca.crt,kubelet-serving-ca.key")) -}}
{{- end -}}
{{- join "\n" $parts | sha256sum -}}
{{- end -}}

{{/* A Secret the chart does not own: sha256 of its data when lookup finds
it (install/upgrade against a cluster), else of its name and key. The data
form is what `kubectl get secret -o json` shows: base64 values, sorted keys. */}}
{{- define "stackward.existingSecretChecksum" -}}
{{- $live := lookup "v1" "Secret" .root.Release.Namespace .name -}}
{{- if and $live $live.data -}}
{{- toJson $live.data | sha256sum -}}
{{- else -}}
{{- printf "secret %s key %s" .name .key | sha256sum -}}
{{- end -}}
{{- end -}}

{{/* The approver's ServiceAccount token Secret (rbac.yaml renders it). */}}
{{- define "stackward.approverTokenSecret" -}}
{{- printf "%s-token" (include "stackward.approverServiceAccountName" .) -}}
{{- end -}}

{{/* The data of the chart's cloud-config Secret, base64 values. */}}
{{- define "stackward.cloudConfigData" -}}
{{- $c := .Values.cloudConfig -}}
{{ $c.key }}: {{ (ternary $c.contents (include "stackward.cloudConf" . | trimPrefix "\n" | printf "%s\n") (ne $c.contents "")) | b64enc }}
{{- range $name, $content := $c.extraFiles }}
{{ $name }}: {{ $content | b64enc }}
{{- end }}
{{- end -}}

{{/* An "annotations:" block for an object's metadata, or nothing when there
are none: the maps of the list merged in order, a later one winning. Callers
put commonAnnotations first and the chart's own last, so an operator's
annotation never replaces one the chart relies on (a checksum, a token
Secret's ServiceAccount). */}}
{{- define "stackward.annotations" -}}
{{- $out := dict -}}
{{- range . -}}
{{- range $k, $v := . | default dict -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- with $out -}}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}
