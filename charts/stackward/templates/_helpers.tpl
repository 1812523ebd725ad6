{{/* The release's full name, cut to the 63 characters a name may have. */}}
{{- define "stackward.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
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

{{/* Labels on every object of the chart. */}}
{{- define "stackward.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels that select the pods: stable across upgrades. */}}
{{- define "stackward.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: cloud-controller-manager
{{- end -}}

{{/* An image reference; the tag defaults to the chart's appVersion. */}}
{{- define "stackward.image" -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
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
double-quoted with \ and " escaped, lists as repeated keys. */}}
{{- define "stackward.cloudConf" -}}
{{- range $section, $keys := .Values.cloudConfig.config }}
[{{ $section }}]
{{- range $key, $value := $keys }}
{{- $values := kindIs "slice" $value | ternary $value (list $value) }}
{{- range $values }}
{{- if kindIs "string" . }}
{{ $key }} = "{{ . | replace "\\" "\\\\" | replace "\"" "\\\"" }}"
{{- else }}
{{ $key }} = {{ . }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The checksum that rolls the pods when the cloud config changes. For an
existing Secret it is taken from the live object (lookup), so it is absent
from `helm template` output and from a first install that precedes the
Secret. */}}
{{- define "stackward.cloudConfigChecksum" -}}
{{- if include "stackward.createCloudConfig" . -}}
{{- include "stackward.cloudConfigData" . | sha256sum -}}
{{- else if .Values.cloudConfig.existingSecret -}}
{{- with lookup "v1" "Secret" .Release.Namespace .Values.cloudConfig.existingSecret -}}
{{- toJson .data | sha256sum -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The data of the chart's cloud-config Secret, base64 values. */}}
{{- define "stackward.cloudConfigData" -}}
{{- $c := .Values.cloudConfig -}}
{{ $c.key }}: {{ (ternary $c.contents (include "stackward.cloudConf" . | trimPrefix "\n" | printf "%s\n") (ne $c.contents "")) | b64enc }}
{{- range $name, $content := $c.extraFiles }}
{{ $name }}: {{ $content | b64enc }}
{{- end }}
{{- end -}}

{{/* host:port for a bind flag; IPv6 literals get brackets. */}}
{{- define "stackward.hostPort" -}}
{{- $host := index . 0 -}}
{{- $port := index . 1 -}}
{{- if contains ":" $host -}}
{{- printf "[%s]:%v" $host $port -}}
{{- else -}}
{{- printf "%s:%v" $host $port -}}
{{- end -}}
{{- end -}}
