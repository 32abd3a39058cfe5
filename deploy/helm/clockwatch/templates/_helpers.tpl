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

{{/*
The mixin's files with the chart's mixin values in place. .text: one of
files/ (as JSON), whose placeholders make mixin wrote: @selector@ and
@criticalSeverity@ (strings); @runbookURLPattern:<alert>@ (the pattern
given the alert's name, as the mixin's printf does); per threshold @name@
(the number, as printf "%g" writes it and the mixin's utils.number) and
@name:duration@ (as the mixin's utils.duration: 100us, 500ms, 2s).
.values: .Values.mixin. .strict: fail on a value the text has no place
for (the rules have every one). Values go in JSON-escaped, so a selector
with quotes stays one string.
*/}}
{{- define "clockwatch.mixin" -}}
{{- $text := .text -}}
{{- range $name, $v := .values -}}
{{- if and $.strict (not (contains (printf "@%s@" $name) $text)) (not (contains (printf "@%s:" $name) $text)) -}}
{{- fail (printf "mixin.%s: the mixin has no such value (values.yaml lists them)" $name) -}}
{{- end -}}
{{- if has $name (list "selector" "criticalSeverity") -}}
{{- $text = replace (printf "@%s@" $name) (toJson (toString $v) | trimPrefix "\"" | trimSuffix "\"") $text -}}
{{- else if eq $name "runbookURLPattern" -}}
{{- if not (regexMatch "^([^%]|%%)*%s([^%]|%%)*$" (toString $v)) -}}
{{- fail (printf "mixin.%s: %q: want a pattern with one %%s and no other %% than %%%%" $name $v) -}}
{{- end -}}
{{- range $p := regexFindAll (printf "@%s:[a-z0-9]+@" $name) $text -1 | uniq -}}
{{- $url := printf (toString $v) (trimSuffix "@" (trimPrefix (printf "@%s:" $name) $p)) -}}
{{- $text = replace $p (toJson $url | trimPrefix "\"" | trimSuffix "\"") $text -}}
{{- end -}}
{{- else -}}
{{- if not (regexMatch "^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$" (toString $v)) -}}
{{- fail (printf "mixin.%s: %v is not a number" $name $v) -}}
{{- end -}}
{{- $s := float64 $v -}}
{{- $d := printf "%gs" $s -}}
{{- if lt $s 0.001 -}}{{- $d = printf "%gus" (mulf $s 1000000) -}}
{{- else if lt $s 1.0 -}}{{- $d = printf "%gms" (mulf $s 1000) -}}
{{- end -}}
{{- $text = replace (printf "@%s:duration@" $name) $d $text | replace (printf "@%s@" $name) (printf "%g" $s) -}}
{{- end -}}
{{- end -}}
{{- with regexFind "@[A-Za-z]+(:[a-z0-9]+)?@" $text -}}
{{- fail (printf "mixin.%s is not set (the mixin's files have %s)" (regexReplaceAll "@|:[a-z0-9]+" . "") .) -}}
{{- end -}}
{{- $text -}}
{{- end -}}
