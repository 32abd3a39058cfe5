{{- define "clockwatch.name" -}}clockwatch{{- end -}}

{{- define "clockwatch.fullname" -}}
{{- if contains "clockwatch" .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-clockwatch" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "clockwatch.labels" -}}
app.kubernetes.io/name: clockwatch
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "clockwatch.selectorLabels" -}}
app.kubernetes.io/name: clockwatch
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "clockwatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "clockwatch.fullname" .) .Values.serviceAccount.name }}{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{/* The mixin's output (.text) with the selector of the values (.selector) in place of its default; .json: the text is JSON, where the quotes are escaped. */}}
{{- define "clockwatch.selector" -}}
{{- if .json -}}
{{- replace "job=\\\"clockwatch\\\"" (.selector | toJson | trimPrefix "\"" | trimSuffix "\"") .text -}}
{{- else -}}
{{- replace "job=\"clockwatch\"" .selector .text -}}
{{- end -}}
{{- end -}}
