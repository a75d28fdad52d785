{{/* Names and labels. */}}
{{- define "streaming-hub.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "streaming-hub.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "streaming-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "streaming-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "streaming-hub.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "streaming-hub.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "streaming-hub.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "streaming-hub.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "streaming-hub.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
A variable from a Secret: (list NAME REF). REF is {name, key}; an empty name
renders nothing.
*/}}
{{- define "streaming-hub.secretEnv" -}}
{{- $name := index . 0 -}}
{{- $ref := index . 1 -}}
{{- if and $ref $ref.name }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $ref.name | quote }}
      key: {{ required (printf "the key of the Secret for %s" $name) $ref.key | quote }}
{{- end -}}
{{- end -}}

{{/* A plain variable, rendered only when its value is not empty: (list NAME VALUE). */}}
{{- define "streaming-hub.valueEnv" -}}
{{- $name := index . 0 -}}
{{- $value := index . 1 | toString -}}
{{- if ne $value "" }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end -}}
{{- end -}}

{{/* STREAMING_HUB_DATABASE_URL, for the hub and for the migrations Job. */}}
{{- define "streaming-hub.databaseEnv" -}}
{{- $_ := required "secrets.databaseURL.name: the Secret holding STREAMING_HUB_DATABASE_URL is required" .Values.secrets.databaseURL.name -}}
{{- include "streaming-hub.secretEnv" (list "STREAMING_HUB_DATABASE_URL" .Values.secrets.databaseURL) -}}
{{- end -}}

{{/* Every hub container's environment: (list $ ROLE ROLEVALUES). */}}
{{- define "streaming-hub.env" -}}
{{- $ := index . 0 -}}
{{- $role := index . 1 -}}
{{- $rv := index . 2 -}}
{{- $v := $.Values -}}
- name: STREAMING_HUB_ROLE
  value: {{ $role | quote }}
- name: STREAMING_HUB_HTTP_ADDR
  value: {{ printf ":%v" $v.httpPort | quote }}
{{- include "streaming-hub.databaseEnv" $ }}
- name: STREAMING_HUB_ENV
  value: {{ $v.env | quote }}
- name: STREAMING_HUB_ALLOW_INSECURE_DB_TLS
  value: {{ $v.database.allowInsecureTLS | toString | quote }}
{{- $_ := required "secrets.kek.name: the Secret holding STREAMING_HUB_KEK is required" $v.secrets.kek.name }}
{{- include "streaming-hub.secretEnv" (list "STREAMING_HUB_KEK" $v.secrets.kek) }}
{{- include "streaming-hub.secretEnv" (list "STREAMING_HUB_KEK_PREVIOUS" $v.secrets.kekPrevious) }}
{{- $_ := required "secrets.adminToken.name: the Secret holding STREAMING_HUB_ADMIN_TOKEN is required" $v.secrets.adminToken.name }}
{{- include "streaming-hub.secretEnv" (list "STREAMING_HUB_ADMIN_TOKEN" $v.secrets.adminToken) }}
{{- if eq $role "ingest" }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_KAFKA_BROKERS" (required "kafka.brokers is required for the ingest role" $v.kafka.brokers)) }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_KAFKA_TOPICS_REGEX" $v.kafka.topicsRegex) }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_KAFKA_GROUP" $v.kafka.group) }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_KAFKA_SESSION_TIMEOUT" $v.kafka.sessionTimeout) }}
{{- if $v.kafka.staticMembership }}
- name: STREAMING_HUB_KAFKA_INSTANCE_ID
  valueFrom:
    fieldRef: {fieldPath: metadata.name}
{{- end }}
- name: STREAMING_HUB_KAFKA_TLS_ENABLED
  value: {{ $v.kafka.tls.enabled | toString | quote }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_KAFKA_TLS_SERVER_NAME" $v.kafka.tls.serverName) }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_KAFKA_SASL_MECHANISM" $v.kafka.sasl.mechanism) }}
- name: STREAMING_HUB_ALLOW_INSECURE_KAFKA
  value: {{ $v.kafka.allowInsecure | toString | quote }}
{{- include "streaming-hub.secretEnv" (list "STREAMING_HUB_KAFKA_SASL_USERNAME" $v.secrets.kafkaSASLUsername) }}
{{- include "streaming-hub.secretEnv" (list "STREAMING_HUB_KAFKA_SASL_PASSWORD" $v.secrets.kafkaSASLPassword) }}
{{- include "streaming-hub.secretEnv" (list "STREAMING_HUB_KAFKA_CA_CERT" $v.secrets.kafkaCACert) }}
{{- include "streaming-hub.secretEnv" (list "STREAMING_HUB_KAFKA_TLS_CERT" $v.secrets.kafkaTLSCert) }}
{{- include "streaming-hub.secretEnv" (list "STREAMING_HUB_KAFKA_TLS_KEY" $v.secrets.kafkaTLSKey) }}
{{- end }}
{{- with $v.accessManager }}
- name: STREAMING_HUB_PLUGIN_AUTH_ENABLED
  value: {{ .enabled | toString | quote }}
{{- if .enabled }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_PLUGIN_AUTH_ADDRESS" (required "accessManager.address is required with accessManager.enabled" .address)) }}
{{- end }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_AUTH_JWT_ISSUER" .jwtIssuer) }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_AUTH_TIMEOUT" .timeout) }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_AUTH_CACHE_TTL" .cacheTTL) }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_AUTH_REQUIRED" (.required | toString)) }}
{{- include "streaming-hub.valueEnv" (list "STREAMING_HUB_TRUSTED_PROXIES" .trustedProxies) }}
{{- end }}
{{- include "streaming-hub.secretEnv" (list "STREAMING_HUB_AUTH_JWT_VERIFY_CERT" $v.secrets.authJWTVerifyCert) }}
{{- $cfg := merge (deepCopy ($rv.config | default dict)) $v.config }}
{{- range $k := keys $cfg | sortAlpha }}
{{- include "streaming-hub.valueEnv" (list (printf "STREAMING_HUB_%s" (trimPrefix "STREAMING_HUB_" $k)) (get $cfg $k)) }}
{{- end }}
{{- range $k := keys $v.otel | sortAlpha }}
{{- include "streaming-hub.valueEnv" (list $k (get $v.otel $k)) }}
{{- end }}
{{- with $v.telemetry.otlpHeadersSecret }}
{{- if and .name $v.otel.OTEL_EXPORTER_OTLP_HEADERS }}
{{- fail "set OTEL_EXPORTER_OTLP_HEADERS either as otel.OTEL_EXPORTER_OTLP_HEADERS or from telemetry.otlpHeadersSecret, not both" }}
{{- end }}
{{- include "streaming-hub.secretEnv" (list "OTEL_EXPORTER_OTLP_HEADERS" .) }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}
