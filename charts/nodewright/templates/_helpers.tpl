{{/* Names, as Karpenter's chart makes them: nameOverride replaces the chart's name, fullnameOverride the
release-derived prefix. Every object of the release is named from the fullname, so two releases in one cluster
(or a release in kube-system beside one in nodewright) never share a cluster-scoped name. */}}
{{- define "nodewright.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "nodewright.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The forwarder's Deployment, PodDisruptionBudget, RBAC and leader-election Lease (release `nodewright`:
nodewright-forwarder, the names the CDK stack's defaults expect). */}}
{{- define "nodewright.forwarder" -}}
{{- printf "%s-forwarder" (include "nodewright.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The Lease the replicas elect a leader with: the Deployment passes it to the forwarder and the Role grants
get/update on exactly this name, so the two cannot drift apart. */}}
{{- define "nodewright.leaseName" -}}
{{- include "nodewright.forwarder" . }}
{{- end -}}

{{/* The ServiceAccount the pods run as. The stack's Pod Identity association (and IRSA trust) must name the
same namespace and account: its `namespace` and `serviceAccount` context values. */}}
{{- define "nodewright.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nodewright.forwarder" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false: the existing ServiceAccount the forwarder runs as (the stack's serviceAccount context value)" .Values.serviceAccount.name }}
{{- end }}
{{- end -}}

{{- define "nodewright.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "nodewright.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: nodewright
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "nodewright.selector" -}}
app.kubernetes.io/name: {{ include "nodewright.name" . }}
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

{{/* Container resources: the user's `resources` whole, or these when it is empty. The defaults live here, not
in values.yaml, because Helm deep-merges maps: a user's `resources.requests` would otherwise keep the default
limits. */}}
{{- define "nodewright.resources" -}}
{{- if .Values.resources }}
{{- toYaml .Values.resources }}
{{- else -}}
requests:
  cpu: 50m
  memory: 128Mi
limits:
  cpu: "1"
  memory: 512Mi
{{- end }}
{{- end -}}

{{/* Variables the chart sets itself. A user's `env` naming one would be silently overridden by (or silently
override) the chart's value, so the chart refuses it and names the value to use instead. */}}
{{- define "nodewright.checkEnv" -}}
{{- $owned := dict
  "NODEWRIGHT_CLUSTER" "clusterName"
  "NODEWRIGHT_PROVISIONER_FUNCTION" "provisionerFunction"
  "AWS_REGION" "region"
  "LOG_LEVEL" "logLevel"
  "POD_NAME" "(the downward API)"
  "POD_NAMESPACE" "(the release namespace)"
-}}
{{- range .Values.env }}
{{- if hasKey $owned .name }}
{{- fail (printf "env: %s is set by the chart; use the value %s instead" .name (get $owned .name)) }}
{{- end }}
{{- if hasPrefix "NODEWRIGHT_FORWARDER_" .name }}
{{- fail (printf "env: %s is a forwarder setting; set it as settings.%s (the chart checks its name)" .name .name) }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Add the pods' selector as labelSelector where a term has none (as Karpenter's chart patches its affinity
and topology spread constraints); `terms` is a list of terms, each changed in place. */}}
{{- define "nodewright.patchSelectors" -}}
{{- $selector := include "nodewright.selector" .root | fromYaml }}
{{- range .terms }}
{{- if not (hasKey . "labelSelector") }}
{{- $_ := set . "labelSelector" (dict "matchLabels" $selector) }}
{{- end }}
{{- end }}
{{- end -}}
