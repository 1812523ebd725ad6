{{/* Whether a prometheus-operator object is rendered: enabled, and its
kind served by the apiserver (Capabilities: what `helm install` asks the
cluster, Argo CD and Flux pass the cluster's API versions too) unless
skipAPICheck. Called with (dict "root" $ "kind" "ServiceMonitor" "cfg" ...). */}}
{{- define "stackward.monitorRendered" -}}
{{- if and .cfg.enabled (or .cfg.skipAPICheck (.root.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" .kind))) -}}true{{- end -}}
{{- end -}}

{{/* Whether the approver's /metrics can be scraped: not on loopback. */}}
{{- define "stackward.approverScrapable" -}}
{{- if and .Values.approver.enabled (not (has .Values.approver.metricsBindAddress (list "127.0.0.1" "::1" "localhost"))) -}}true{{- end -}}
{{- end -}}

{{/* The Secret holding the token a monitor sends, and whether the chart
makes it (a metrics-reader ServiceAccount's token). */}}
{{- define "stackward.metricsReaderName" -}}
{{- printf "%s-metrics-reader" (include "stackward.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "stackward.monitorTokenSecret" -}}
{{- default (printf "%s-token" (include "stackward.metricsReaderName" .root)) .cfg.authorization.secretName -}}
{{- end -}}

{{/* Whether the chart creates the metrics-reader ServiceAccount: a
rendered monitor sends its token (no secretName of the user's, and for the
ServiceMonitor no deprecated bearerTokenFile instead). */}}
{{- define "stackward.createMetricsReader" -}}
{{- $sm := .Values.serviceMonitor -}}
{{- $pm := .Values.podMonitor -}}
{{- $smNeeds := and (include "stackward.monitorRendered" (dict "root" . "kind" "ServiceMonitor" "cfg" $sm)) (not $sm.authorization.secretName) (not $sm.ccm.bearerTokenFile) -}}
{{- $pmNeeds := and (include "stackward.monitorRendered" (dict "root" . "kind" "PodMonitor" "cfg" $pm)) (not $pm.authorization.secretName) -}}
{{- if or $smNeeds $pmNeeds -}}
{{- if not .Values.rbac.create -}}
{{- fail "serviceMonitor/podMonitor: with rbac.create false the chart cannot create the metrics-reader ServiceAccount; set authorization.secretName to a Secret with a token that may GET /metrics" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}

{{/* The scrape endpoints of a ServiceMonitor or PodMonitor (the same
fields in both): the CCM's HTTPS /metrics with a token, and the approver's
when it is not on loopback (HTTPS with the same token). */}}
{{- define "stackward.monitorEndpoints" -}}
{{- $cfg := .cfg -}}
{{- $root := .root -}}
- port: ccm-https
  path: /metrics
  scheme: https
  interval: {{ $cfg.interval }}
  scrapeTimeout: {{ $cfg.scrapeTimeout }}
  {{- if $cfg.ccm.bearerTokenFile }}
  bearerTokenFile: {{ $cfg.ccm.bearerTokenFile }}
  {{- else }}
  {{- include "stackward.monitorAuthorization" . | nindent 2 }}
  {{- end }}
  tlsConfig:
    insecureSkipVerify: {{ $cfg.ccm.insecureSkipVerify }}
  {{- with include "stackward.monitorRelabelings" $cfg | trim }}
  {{- . | nindent 2 }}
  {{- end }}
{{- if include "stackward.approverScrapable" $root }}
- port: approver-https
  path: /metrics
  scheme: https
  interval: {{ $cfg.interval }}
  scrapeTimeout: {{ $cfg.scrapeTimeout }}
  {{- include "stackward.monitorAuthorization" . | nindent 2 }}
  tlsConfig:
    insecureSkipVerify: {{ $cfg.ccm.insecureSkipVerify }}
  {{- with include "stackward.monitorRelabelings" $cfg | trim }}
  {{- . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* prometheus-operator's authorization (Bearer, credentials from a
Secret) replaces the deprecated bearerTokenFile. */}}
{{- define "stackward.monitorAuthorization" -}}
authorization:
  type: Bearer
  credentials:
    name: {{ include "stackward.monitorTokenSecret" . }}
    key: {{ .cfg.authorization.key }}
{{- end -}}

{{- define "stackward.monitorRelabelings" -}}
{{- with .relabelings }}
relabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
