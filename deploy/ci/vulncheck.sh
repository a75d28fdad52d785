#!/usr/bin/env bash
# govulncheck over ./... against a vulnerability database built here from the
# golang.org/x/vulndb module (the public endpoint cannot be reached): the
# module comes from the Go module proxy into the module cache, its OSV
# entries (data/osv) become a database in a temporary folder with
# deploy/ci/vulndb, and govulncheck reads it with -db file://. Fails when a
# vulnerability is reachable from the hub's code (govulncheck exits 3), or
# when the check cannot run; a vulnerable package that is only imported or
# required is printed, not failed. Nothing is written in the repository.
#
# To refresh the data, pin the newest vulndb version:
#   GOTOOLCHAIN=go1.27.3 go list -m golang.org/x/vulndb@latest
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=go1.27.3

VULNDB_VERSION=v0.0.0-20261105234957-e22db6528018
GOVULNCHECK_VERSION=v1.9.0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "-- golang.org/x/vulndb@$VULNDB_VERSION from the module proxy"
# Outside the repository, so that its go.mod and go.sum stay as they are.
if ! meta=$(cd "$work" && go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION"); then
  echo "FAIL: go mod download golang.org/x/vulndb@$VULNDB_VERSION:"; echo "$meta"; exit 1
fi
field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" <<<"$meta" | head -1; }
src=$(field Dir)
modified=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$(field Info)")
[ -d "$src/data/osv" ] || { echo "FAIL: no data/osv in $src"; exit 1; }

echo "-- database from its data/osv (modified $modified; ${SECONDS}s so far)"
go run ./deploy/ci/vulndb -osv "$src/data/osv" -out "$work/db" -modified "$modified"

echo "-- govulncheck $GOVULNCHECK_VERSION (${SECONDS}s so far)"
(cd "$work" && GOBIN="$work/bin" go install "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION")

echo "-- govulncheck -show version -db file://$work/db ./... (${SECONDS}s so far)"
status=0
"$work/bin/govulncheck" -show version -db "file://$work/db" ./... || status=$?
case $status in
  0) echo "no reachable vulnerability (${SECONDS}s)" ;;
  3) echo "FAIL: the code above reaches a known vulnerability (${SECONDS}s): upgrade the toolchain or the module it names"; exit 1 ;;
  *) echo "FAIL: govulncheck could not run (exit $status)"; exit 1 ;;
esac
