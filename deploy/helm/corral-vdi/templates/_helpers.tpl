{{/* The labels of every object, and what the selectors match: the same as deploy/'s. */}}
{{- define "corral-vdi.labels" -}}
app.kubernetes.io/name: {{ .Values.name }}
{{- end }}

{{/* The ServiceAccount as a RoleBinding subject. */}}
{{- define "corral-vdi.subjects" -}}
subjects:
  - kind: ServiceAccount
    name: {{ .Values.name }}
    namespace: {{ .Release.Namespace }}
{{- end }}

{{/* Fails the render on a setting the broker could not run with, naming the value to change. */}}
{{- define "corral-vdi.validate" -}}
{{- if not (has .Values.mode (list "gateway" "oidc")) }}
{{- fail (printf "mode is %q: use gateway or oidc" .Values.mode) }}
{{- end }}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicas above 1 need leaderElection.enabled: without it every replica renews and reclaims" }}
{{- end }}
{{- if empty .Values.servedNamespaces }}
{{- fail "servedNamespaces is empty: name at least one namespace whose pools the broker serves" }}
{{- end }}
{{- end }}
