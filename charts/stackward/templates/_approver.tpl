{{/* The approver container, in the CCM pod (a sidecar) or in its own
(approver.separatePod); its credentials come from the pod it is in. */}}
{{- define "stackward.approverContainer" -}}
{{- $le := .Values.leaderElection -}}
{{- $approverLoopback := has .Values.approver.metricsBindAddress (list "127.0.0.1" "::1" "localhost") -}}
- name: approver
  image: {{ include "stackward.image" (dict "image" .Values.approver.image "root" .) }}
  imagePullPolicy: {{ .Values.approver.image.pullPolicy }}
  env:
    # --bind-address=$(POD_IP): the pod's IP (see the README).
    - name: POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    {{- with concat (.Values.extraEnv | default list) (.Values.approver.extraEnv | default list) }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  args:
    {{- if .Values.approver.cloudConfig.existingSecret }}
    - --cloud-config=/etc/stackward-approver/{{ .Values.approver.cloudConfig.key }}
    {{- else }}
    - --cloud-config=/etc/stackward/{{ .Values.cloudConfig.key }}
    {{- end }}
    # /healthz, /readyz and /metrics as the CCM serves them: HTTPS,
    # delegated authentication and authorization.
    - --bind-address={{ .Values.approver.metricsBindAddress | default "$(POD_IP)" }}
    - --secure-port={{ .Values.approver.metricsPort }}
    {{- range .Values.approver.serviceCIDRs }}
    - --service-cidr={{ . }}
    {{- end }}
    {{- range .Values.approver.controlPlaneEndpoints }}
    - --control-plane-endpoint={{ . }}
    {{- end }}
    {{- range .Values.approver.trustedNetworkIDs }}
    - --trusted-network-id={{ . }}
    {{- end }}
    {{- if .Values.approver.allowAccessIPs }}
    - --allow-access-ips
    {{- end }}
    {{- if .Values.approver.signer.enabled }}
    - --sign-with-ca-dir=/etc/stackward-signer
    - --serving-cert-lifetime={{ .Values.approver.signer.certLifetime }}
    {{- end }}
    {{- range .Values.nodeDNSSuffixes }}
    - --dns-suffix={{ . }}
    {{- end }}
    {{- with .Values.approver.caBundle }}
    {{- if .enabled }}
    # Publishes the kubelet-serving CA bundle while leading.
    - --ca-bundle-dir=/etc/stackward-ca-bundle
    - --ca-bundle-configmap={{ $.Release.Namespace }}/{{ .configMapName }}
    {{- if not .clusterTrustBundle }}
    - --ca-bundle-cluster-trust-bundle=
    {{- end }}
    {{- end }}
    {{- end }}
    - --kube-api-qps={{ .Values.approver.kubeAPIQPS }}
    - --kube-api-burst={{ .Values.approver.kubeAPIBurst }}
    - --leader-elect={{ $le.enabled }}
    {{- if $le.enabled }}
    - --leader-elect-resource-namespace={{ $le.namespace }}
    - --leader-elect-resource-name={{ $le.approverLeaseName }}
    {{- end }}
    {{- range $name, $value := .Values.approver.extraArgs }}
    {{- range kindIs "slice" $value | ternary $value (list $value) }}
    - {{ printf "--%s=%v" $name . | quote }}
    {{- end }}
    {{- end }}
  ports:
    - name: approver-https
      containerPort: {{ .Values.approver.metricsPort }}
      protocol: TCP
  livenessProbe:
    httpGet:
      {{- if $approverLoopback }}
      host: {{ .Values.approver.metricsBindAddress }}
      {{- end }}
      path: /healthz
      port: approver-https
      scheme: HTTPS
    initialDelaySeconds: 15
    periodSeconds: 10
    timeoutSeconds: 5
    failureThreshold: 3
  readinessProbe:
    httpGet:
      {{- if $approverLoopback }}
      host: {{ .Values.approver.metricsBindAddress }}
      {{- end }}
      path: /readyz
      port: approver-https
      scheme: HTTPS
    periodSeconds: 10
    timeoutSeconds: 5
  resources:
    {{- toYaml .Values.approver.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    {{- /* Its own credential when it has one: never the CCM's read-write cloud.conf too. */}}
    {{- if not .Values.approver.cloudConfig.existingSecret }}
    - name: cloud-config
      mountPath: /etc/stackward
      readOnly: true
    {{- end }}
    - name: tmp
      mountPath: /tmp
    - name: approver-token
      mountPath: /var/run/secrets/kubernetes.io/serviceaccount
      readOnly: true
    {{- if .Values.approver.cloudConfig.existingSecret }}
    - name: approver-cloud-config
      mountPath: /etc/stackward-approver
      readOnly: true
    {{- end }}
    {{- if .Values.approver.signer.enabled }}
    - name: signer-ca
      mountPath: /etc/stackward-signer
      readOnly: true
    {{- end }}
    {{- if .Values.approver.caBundle.enabled }}
    - name: ca-bundle
      mountPath: /etc/stackward-ca-bundle
      readOnly: true
    {{- end }}
    {{- with concat (.Values.extraVolumeMounts | default list) (.Values.approver.extraVolumeMounts | default list) }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* The approver's volumes other than its credentials and the CCM's
cloud.conf: its own cloud.conf, the signer's CA and the certificates it
publishes. Empty when it has none. */}}
{{- define "stackward.approverVolumes" -}}
{{- if .Values.approver.cloudConfig.existingSecret }}
- name: approver-cloud-config
  secret:
    secretName: {{ .Values.approver.cloudConfig.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- if .Values.approver.signer.enabled }}
- name: signer-ca
  secret:
    secretName: {{ .Values.approver.signer.caSecret }}
    defaultMode: 0440
    items:
      - key: kubelet-serving-ca.crt
        path: kubelet-serving-ca.crt
      - key: kubelet-serving-ca.key
        path: kubelet-serving-ca.key
{{- end }}
{{- if .Values.approver.caBundle.enabled }}
{{- /* The certificates of the same Secret, never its key; optional, so
the approver runs before the Secret exists (KCM signing) and publishes once
it does. */}}
- name: ca-bundle
  secret:
    secretName: {{ .Values.approver.signer.caSecret }}
    defaultMode: 0444
    optional: true
    items:
      - key: kubelet-serving-ca.crt
        path: kubelet-serving-ca.crt
      - key: kubelet-serving-ca-bundle.crt
        path: kubelet-serving-ca-bundle.crt
{{- end }}
{{- end -}}
