{{/* Names the CDK stack also uses (infra/forwarder.py): the namespace and the service account. */}}
{{- define "nodewright.name" -}}nodewright-forwarder{{- end -}}

{{- define "nodewright.labels" -}}
app.kubernetes.io/name: nodewright
app.kubernetes.io/part-of: nodewright
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "nodewright.selector" -}}
app.kubernetes.io/name: nodewright
app.kubernetes.io/component: forwarder
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nodewright.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The stack's Pod Identity association and IRSA trust name nodewright/nodewright-forwarder. */}}
{{- define "nodewright.checkNamespace" -}}
{{- if ne .Release.Namespace "nodewright" -}}
{{- fail (printf "install into the namespace nodewright (helm install ... -n nodewright --create-namespace), not %s: the CDK stack's Pod Identity association and IRSA trust name nodewright/nodewright-forwarder" .Release.Namespace) -}}
{{- end -}}
{{- end -}}
