#!/usr/bin/env bash
# helm lint --strict and helm template of deploy/helm/streaming-hub, for the
# default values, for examples/production.yaml and for deploy/ci/helm-all-on.yaml
# (every optional template on), then check-rendered.py on what was rendered. Installs helm with `go install` when it is missing; skips,
# saying so, when it cannot.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=go1.27.3  # the Go that go.mod requires, fetched by the go command (README)
chart=deploy/helm/streaming-hub
HELM_VERSION=v3.22.0

helm=$(command -v helm || true)
[ -z "$helm" ] && [ -x "$HOME/go/bin/helm" ] && helm="$HOME/go/bin/helm"
if [ -z "$helm" ]; then
  echo "helm not found: go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION into \$HOME/go/bin"
  if GOBIN="$HOME/go/bin" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"; then
    helm="$HOME/go/bin/helm"
  else
    echo "SKIP helm chart checks: helm could not be installed (go install failed)"; exit 0
  fi
fi
"$helm" version --short

if ! python3 -c 'import yaml' 2>/dev/null; then
  apt-get install -y -q python3-yaml >/dev/null 2>&1 || true
fi
if ! python3 -c 'import yaml' 2>/dev/null; then
  echo "SKIP helm chart checks: python3 with PyYAML is needed to read the rendered YAML (apt-get install python3-yaml)"; exit 0
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for case in default production all-on; do
  args=()
  check=()
  case "$case" in
    production) args=(-f "$chart/examples/production.yaml"); check=(--production) ;;
    # Every optional template on: ServiceMonitor, PrometheusRule, HPA,
    # Ingress, extra volumes and env, OTLP headers from a Secret.
    all-on) args=(-f deploy/ci/helm-all-on.yaml); check=(--all-on) ;;
  esac
  echo "-- $case values"
  "$helm" lint --strict "$chart" "${args[@]}"
  "$helm" template hub "$chart" "${args[@]}" > "$out/$case.yaml"
  echo "kinds: $(grep '^kind: ' "$out/$case.yaml" | sed 's/kind: //' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
  python3 deploy/helm/check-rendered.py "$out/$case.yaml" "${check[@]}"
done

# The OTLP headers come from one place: both set is refused.
if both=$("$helm" template hub "$chart" -f deploy/ci/helm-all-on.yaml \
    --set otel.OTEL_EXPORTER_OTLP_HEADERS=x=y 2>&1); then
  echo "helm template accepted OTEL_EXPORTER_OTLP_HEADERS both as a value and from a Secret"; exit 1
fi
grep -q "not both" <<<"$both" || { echo "helm template failed otherwise: $both"; exit 1; }
echo "-- both otel.OTEL_EXPORTER_OTLP_HEADERS and telemetry.otlpHeadersSecret: refused, as it should be"
