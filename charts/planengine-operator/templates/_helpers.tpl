{{/*
Names and labels of every resource come from here, so they stay consistent and within the 63-character
limit of DNS labels.
*/}}

{{/* Chart name, overridable with nameOverride. */}}
{{- define "planengine-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: "<release>-<chart>", or just the release name when it already contains the chart name. */}}
{{- define "planengine-operator.fullname" -}}
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
{{- end }}

{{/* "<fullname>-<suffix>", truncated so the suffix always survives. */}}
{{- define "planengine-operator.componentName" -}}
{{- $root := index . 0 -}}
{{- $suffix := index . 1 }}
{{- printf "%s-%s" (include "planengine-operator.fullname" $root | trunc (int (sub 62 (len $suffix))) | trimSuffix "-") $suffix }}
{{- end }}

{{/* Chart label value. */}}
{{- define "planengine-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that select the operator pod; immutable once deployed, so keep them minimal. */}}
{{- define "planengine-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "planengine-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* Common labels for every resource: pass a list (root context, component). */}}
{{- define "planengine-operator.labels" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
helm.sh/chart: {{ include "planengine-operator.chart" $root }}
app.kubernetes.io/name: {{ include "planengine-operator.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ $component }}
app.kubernetes.io/part-of: planengine
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
{{- end }}

{{/* ServiceAccount name. */}}
{{- define "planengine-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "planengine-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Operator image reference: digest wins over tag; the tag defaults to the chart's appVersion. */}}
{{- define "planengine-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Resource names. */}}
{{- define "planengine-operator.configMapName" -}}
{{- include "planengine-operator.componentName" (list . "config") }}
{{- end }}
{{- define "planengine-operator.metricsServiceName" -}}
{{- include "planengine-operator.componentName" (list . "metrics") }}
{{- end }}
{{- define "planengine-operator.webhookName" -}}
{{- include "planengine-operator.componentName" (list . "webhook") }}
{{- end }}
{{- define "planengine-operator.webhookSecretName" -}}
{{- default (include "planengine-operator.componentName" (list . "webhook-tls")) .Values.webhook.certificate.secretName }}
{{- end }}

{{/*
Namespaces that get the driver's ServiceAccount and Role, as a JSON list: driverRbac.namespaces, else the
watched namespaces, else (cluster-wide operator) the release namespace; other namespaces need them by hand.
*/}}
{{- define "planengine-operator.driverNamespaces" -}}
{{- $namespaces := .Values.driverRbac.namespaces | default .Values.watchNamespaces | default (list .Release.Namespace) }}
{{- $namespaces | uniq | toJson }}
{{- end }}

{{/* The ServiceAccount driver pods run as: fixed, the operator names it in every driver pod. */}}
{{- define "planengine-operator.driverServiceAccountName" -}}planengine-driver{{- end }}

{{/* Mount points inside the operator container. */}}
{{- define "planengine-operator.configDir" -}}/etc/planengine-operator{{- end }}
{{- define "planengine-operator.configPath" -}}/etc/planengine-operator/config.yaml{{- end }}
{{- /* Not under the config mount: a volume nested in a read-only one needs a mount point the read-only volume
     cannot get (the helm-install test on the real control plane found it). */}}
{{- define "planengine-operator.webhookCertDir" -}}/etc/planengine-webhook-tls{{- end }}

{{/*
The operator configuration (shared contract with planengine_operator.config): exactly these keys.
Engine versions stay strings ("0.1"): toYaml quotes strings that would otherwise read as numbers.
*/}}
{{- define "planengine-operator.config" -}}
{{- $c := .Values.config }}
{{- if not (hasKey $c.engines $c.defaultEngineVersion) }}
{{- fail (printf "config.defaultEngineVersion %q is not a key of config.engines (%s): add the engine or change the default" $c.defaultEngineVersion (keys $c.engines | sortAlpha | join ", ")) }}
{{- end }}
{{- $config := dict
  "defaultEngineVersion" $c.defaultEngineVersion
  "engines" $c.engines
  "launcher" $c.launcher
  "rollout" $c.rollout
  "stability" $c.stability
  "snapshots" $c.snapshots
  "jobRootBase" $c.jobRootBase
  "admission" $c.admission
  "watchNamespaces" (.Values.watchNamespaces | default list)
  "metrics" (dict "port" .Values.metrics.port)
}}
{{- toYaml $config }}
{{- end }}

{{/*
RBAC rules on namespaced resources: granted cluster-wide (ClusterRole) or per watched namespace (Role).
*/}}
{{- define "planengine-operator.namespacedRules" -}}
# The custom resource and its status subresource (status is the operator's write-ahead log).
- apiGroups: ["planengine.io"]
  resources: ["sparkplanjobs"]
  verbs: ["get", "list", "watch", "patch", "update"]
- apiGroups: ["planengine.io"]
  resources: ["sparkplanjobs/status"]
  verbs: ["get", "patch", "update"]
# Driver pods and check pods (`planengine check` runs in a short-lived pod; its verdict is read from the log).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
- apiGroups: [""]
  resources: ["pods/log"]
  verbs: ["get"]
# Driver services (status API, Spark driver endpoint for executors).
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
# Each job's driver API token (<job>-control-token): created once, read to authorize stop and start.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create"]
# SQL scripts, catalogs and compiled plans.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Job roots on persistent volumes.
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "list", "watch", "create", "delete"]
# Events on SparkPlanJobs (kopf posts them through the core API; newer clients through events.k8s.io).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
# Leases: one writer per job root, and operator leader election.
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
{{- end }}

{{/* RBAC rules on cluster-scoped resources that kopf needs in either mode. */}}
{{- define "planengine-operator.clusterScopedRules" -}}
# kopf scans CRDs to discover the resources it serves.
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["get", "list", "watch"]
# kopf watches namespaces to follow the namespaces it is told to serve.
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["list", "watch"]
{{- end }}
