#!/usr/bin/env bash
# The chart's migrations Job, black-box: golang-migrate's own CLI (the
# version go.mod pins, built with its postgres driver as the stock
# migrate/migrate image has it) and `streaming-hub migrate` agree on a
# database in either order, on the folder the Job copies to /migrations
# (docs/deploy.md, "Migrations"). Each order gets a fresh schema of the
# database STREAMING_HUB_TEST_POSTGRES_URL names. Skips, saying so, when the
# CLI cannot be built or PostgreSQL is not there.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=go1.27.3  # the Go that go.mod requires, fetched by the go command (README)

if [ -z "${STREAMING_HUB_TEST_POSTGRES_URL:-}" ] || ! command -v psql >/dev/null 2>&1; then
  echo "SKIP golang-migrate CLI check: STREAMING_HUB_TEST_POSTGRES_URL is not set or psql is missing"; exit 0
fi
work=$(mktemp -d)
schemas=()
cleanup() {
  for s in "${schemas[@]}"; do psql "$STREAMING_HUB_TEST_POSTGRES_URL" -q -c "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

version=$(go list -m -f '{{.Version}}' github.com/golang-migrate/migrate/v4)
if ! GOBIN="$work/bin" go install -tags postgres "github.com/golang-migrate/migrate/v4/cmd/migrate@$version" >"$work/install.log" 2>&1; then
  echo "SKIP golang-migrate CLI check: go install of its CLI $version failed:"; tail -3 "$work/install.log"; exit 0
fi
go build -o "$work/bin/streaming-hub" ./cmd/streaming-hub
# What the Job's image holds: the folder, copied.
cp -r internal/store/postgres/migrations "$work/migrations"
latest=$(ls "$work/migrations" | grep -c '\.up\.sql$')

# fresh NAME: a new schema, and the URL whose search_path is it.
fresh() {
  local s="ci_migrate_$1_$$"
  schemas+=("$s")
  psql "$STREAMING_HUB_TEST_POSTGRES_URL" -q -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $s CASCADE; CREATE SCHEMA $s" >/dev/null
  case "$STREAMING_HUB_TEST_POSTGRES_URL" in
    *\?*) url="$STREAMING_HUB_TEST_POSTGRES_URL&search_path=$s" ;;
    *) url="$STREAMING_HUB_TEST_POSTGRES_URL?search_path=$s" ;;
  esac
}
job() { "$work/bin/migrate" -path="$work/migrations" -database="$url" "$@" 2>&1; }
hub() { STREAMING_HUB_DATABASE_URL="$url" "$work/bin/streaming-hub" migrate "$@"; }
expect() { # expect WHAT WANT GOT
  if [[ "$3" != *"$2"* ]]; then echo "FAIL: $1: want \"$2\", got: $3"; exit 1; fi
  echo "ok: $1"
}

echo "golang-migrate CLI $version (-tags postgres), $latest migrations"

fresh job_first
job up >/dev/null
expect "the Job migrates a fresh schema to $latest" "$latest" "$(job version)"
expect "then the hub's check finds it current" "schema is current" "$(hub --check)"
expect "and the hub's migrate has nothing to do" "schema is current" "$(hub)"
expect "and golang-migrate agrees" "$latest" "$(job version)"

fresh hub_first
expect "the hub migrates a fresh schema" "schema is current" "$(hub)"
expect "then the Job has no change to make" "no change" "$(job up)"
expect "at version $latest" "$latest" "$(job version)"
echo "golang-migrate CLI check passed"
