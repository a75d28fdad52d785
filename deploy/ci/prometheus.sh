#!/usr/bin/env bash
# promtool check rules and promtool test rules on the alerts, which live in
# the chart (deploy/helm/streaming-hub/files/prometheus) so that its
# PrometheusRule renders them. Debian's
# prometheus package brings promtool; skips, saying so, when it cannot be had.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=go1.27.3  # the Go that go.mod requires, fetched by the go command (README)
if ! command -v promtool >/dev/null 2>&1; then
  apt-get install -y -q prometheus >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q prometheus >/dev/null 2>&1; } || true
fi
if ! command -v promtool >/dev/null 2>&1; then
  echo "SKIP alert rules: promtool is not installed and could not be (apt-get install prometheus)"; exit 0
fi
promtool --version 2>&1 | head -1
promtool check rules deploy/helm/streaming-hub/files/prometheus/alerts.yaml
promtool test rules deploy/helm/streaming-hub/files/prometheus/alerts_test.yaml
