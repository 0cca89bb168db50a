{{/*
Names and labels of every object come from here.
*/}}

{{/* Chart name, overridable with nameOverride. */}}
{{- define "planengine-jobs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Chart label value. */}}
{{- define "planengine-jobs.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object: pass (list root jobName component). */}}
{{- define "planengine-jobs.labels" -}}
{{- $root := index . 0 -}}
{{- $job := index . 1 -}}
{{- $component := index . 2 -}}
helm.sh/chart: {{ include "planengine-jobs.chart" $root }}
app.kubernetes.io/name: {{ include "planengine-jobs.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name | quote }}
app.kubernetes.io/component: {{ $component }}
app.kubernetes.io/part-of: planengine
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
planengine.io/job: {{ $job | quote }}
{{- with $root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The ConfigMap holding a job's script (script.sql) and catalog (catalog.sql). */}}
{{- define "planengine-jobs.sqlConfigMap" -}}
{{- printf "%s-sql" . }}
{{- end }}

{{/* A job's namespace: its own, or the release's. Pass (list root job). */}}
{{- define "planengine-jobs.namespace" -}}
{{- $root := index . 0 -}}
{{- $job := index . 1 -}}
{{- default $root.Release.Namespace $job.namespace }}
{{- end }}

{{/*
Deep merge of two maps as YAML, the second winning, false/0/"" included (sprig's mergeOverwrite keeps the first
map's value when the second's is empty, so a job's `rollback: {enabled: false}` would lose to a default of true).
Pass (list base over).
*/}}
{{- define "planengine-jobs.merge" -}}
{{- $out := deepCopy (index . 0) -}}
{{- range $key, $value := index . 1 }}
{{- if and (kindIs "map" $value) (kindIs "map" (get $out $key)) }}
{{- $_ := set $out $key (include "planengine-jobs.merge" (list (get $out $key) $value) | fromYaml) }}
{{- else }}
{{- $_ := set $out $key $value }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/*
A job's SparkPlanJob spec as YAML: jobDefaults under the job's spec, plus the references to the rendered
script and catalog. Pass (list root name job).
*/}}
{{- define "planengine-jobs.spec" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $job := index . 2 -}}
{{- $spec := include "planengine-jobs.merge" (list ($root.Values.jobDefaults | default dict) ($job.spec | default dict)) | fromYaml -}}
{{- $configMap := include "planengine-jobs.sqlConfigMap" $name -}}
{{- if $job.script }}
{{- if hasKey $spec "plan" }}
{{- fail (printf "jobs.%s: give either script or spec.plan, not both (script becomes spec.plan.configMapRef to the ConfigMap %s)" $name $configMap) }}
{{- end }}
{{- $_ := set $spec "plan" (dict "configMapRef" (dict "name" $configMap "key" "script.sql")) }}
{{- else if not (hasKey $spec "plan") }}
{{- fail (printf "jobs.%s: the job has no program: set script (SQL), or spec.plan (sql, configMapRef or compiledPlanRef)" $name) }}
{{- end }}
{{- if $job.catalog }}
{{- if hasKey $spec "catalog" }}
{{- fail (printf "jobs.%s: give either catalog or spec.catalog, not both (catalog becomes spec.catalog.configMapRef to the ConfigMap %s)" $name $configMap) }}
{{- end }}
{{- $_ := set $spec "catalog" (dict "configMapRef" (dict "name" $configMap "key" "catalog.sql")) }}
{{- end }}
{{- toYaml $spec }}
{{- end }}
