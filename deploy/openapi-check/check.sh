#!/usr/bin/env bash
# Lints internal/api/openapi.json with Redocly (no errors allowed), generates
# TypeScript types from it with openapi-typescript, and type-checks sample.ts
# under tsc --strict (and checks that must-fail.ts does not type-check);
# then generates a Go client with oapi-codegen (default options) and builds
# sample-client.go against it in a temporary module.
# The node packages, pinned in package.json, go into a temporary folder:
# nothing is installed in the repository. Skips, saying so, without npm or
# without the registry (npm or the Go module proxy).
set -euo pipefail
export GOTOOLCHAIN=go1.27.3  # the Go that go.mod requires, fetched by the go command (README)
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
doc="$root/internal/api/openapi.json"

if ! command -v npm >/dev/null 2>&1; then
  echo "SKIP OpenAPI checks: npm is not installed"; exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/package.json" "$here/tsconfig.json" "$here/sample.ts" "$here/must-fail.ts" "$work/"
if ! (cd "$work" && npm install --no-audit --no-fund --loglevel=error >"$work/npm.log" 2>&1); then
  echo "SKIP OpenAPI checks: npm install failed (registry unreachable?):"; tail -3 "$work/npm.log"; exit 0
fi
bin="$work/node_modules/.bin"

echo "-- redocly lint (recommended rules; errors fail)"
"$bin/redocly" lint --format=summary "$doc" 2>&1 | grep -vE '^\s*(║|╔|╚)' | sed '/^$/d'

if grep -nE '[A-Za-z0-9_)\]]![.[]' "$here/sample.ts"; then
  echo "sample.ts uses a non-null assertion (!): it must not"; exit 1
fi
echo "-- openapi-typescript, then tsc --strict on sample.ts"
# Default options: request schemas state their defaults in descriptions (a
# "default" keyword would make the generator require the field).
"$bin/openapi-typescript" "$doc" -o "$work/generated/hub.ts" 2>&1 | tail -1
(cd "$work" && "$bin/tsc" -p tsconfig.json)
echo "sample.ts type-checks under --strict"
if (cd "$work" && "$bin/tsc" --strict --noEmit --target ES2022 --module ES2022 --moduleResolution bundler --skipLibCheck must-fail.ts >"$work/fail.log" 2>&1); then
  echo "must-fail.ts type-checks: optional and nullable fields are not typed as such"; exit 1
fi
echo "must-fail.ts is refused as it should be: $(grep -c 'error TS' "$work/fail.log") errors ($(grep -o 'error TS[0-9]*' "$work/fail.log" | sort -u | tr '\n' ' '))"

echo "-- oapi-codegen, then go build and go vet of a sample client"
mkdir -p "$work/gocheck/hubclient"
if ! go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -package hubclient -generate types,client "$doc" >"$work/gocheck/hubclient/hub.go" 2>"$work/ocg.log"; then
  if grep -qiE 'dial tcp|proxy|no such host|timeout|TLS' "$work/ocg.log"; then
    echo "SKIP oapi-codegen: the Go module proxy is unreachable:"; tail -3 "$work/ocg.log"; exit 0
  fi
  echo "oapi-codegen refuses the document:"; tail -5 "$work/ocg.log"; exit 1
fi
mkdir -p "$work/gocheck/sample"
sed '/^\/\/go:build ignore$/d' "$here/sample-client.go" >"$work/gocheck/sample/main.go"
(
  cd "$work/gocheck"
  export GOFLAGS=-mod=mod GOWORK=off
  printf 'module example.com/hubcheck\n\ngo 1.24\n\nrequire github.com/oapi-codegen/runtime v1.9.0\n' >go.mod
  go mod tidy >"$work/tidy.log" 2>&1 || { echo "go mod tidy failed:"; tail -5 "$work/tidy.log"; exit 1; }
  go build ./... && go vet ./...
)
echo "the oapi-codegen client ($(grep -c '^func ' "$work/gocheck/hubclient/hub.go") funcs) builds and vets with sample-client.go"
