#!/usr/bin/env bash
# Builds the image of the Containerfile with buildah (a static binary and the
# CA bundle of this machine: nothing is pulled), checks its configuration
# (non-root numeric user, entrypoint, port), then runs `streaming-hub dev`
# in it with podman and asks /healthz and /readyz from outside. A machine
# that forbids running containers gets a SKIP line for the run, not a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=go1.27.3  # the Go that go.mod requires, fetched by the go command (README)

if ! command -v buildah >/dev/null 2>&1 || ! command -v podman >/dev/null 2>&1; then
  apt-get install -y -q buildah podman >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q buildah podman >/dev/null 2>&1; } || true
fi
if ! command -v buildah >/dev/null 2>&1; then
  echo "SKIP container image: buildah is not installed and could not be (apt-get install buildah podman)"; exit 0
fi

ctx=$(mktemp -d)
name="streaming-hub-ci-$$"
image="localhost/streaming-hub:ci-$$"
cleanup() {
  podman rm -f "$name" >/dev/null 2>&1 || true
  buildah rmi "$image" >/dev/null 2>&1 || true
  rm -rf "$ctx"
}
trap cleanup EXIT

echo "-- build: static binary and CA bundle from this machine"
# Version, commit and date as the Containerfile says: in the binary (linker
# flags) and on the image (build args → OCI labels).
VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
pkg=github.com/lerianstudio/streaming-hub
CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X $pkg.Version=$VERSION -X $pkg.Commit=$COMMIT -X $pkg.Date=$DATE" \
  -o "$ctx/streaming-hub" ./cmd/streaming-hub
"$ctx/streaming-hub" --version
cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
if ! buildah info >/dev/null 2>&1; then
  echo "SKIP container image: buildah cannot run on this machine: $(buildah info 2>&1 | tail -1)"; exit 0
fi
buildah build --quiet -f Containerfile --build-arg "VERSION=$VERSION" --build-arg "COMMIT=$COMMIT" \
  --build-arg "DATE=$DATE" -t "$image" "$ctx" >/dev/null
for label in version=$VERSION revision=$COMMIT created=$DATE; do
  got=$(buildah inspect --type image --format "{{index .OCIv1.Config.Labels \"org.opencontainers.image.${label%%=*}\"}}" "$image")
  [ "$got" = "${label#*=}" ] || { echo "the image's org.opencontainers.image.${label%%=*} label is \"$got\", want \"${label#*=}\""; exit 1; }
done
user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$image")
entry=$(buildah inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$image")
echo "built $image: user $user, entrypoint $entry, $(du -sh "$ctx/streaming-hub" | cut -f1) binary"
[[ "$user" =~ ^[1-9][0-9]*(:[0-9]+)?$ ]] || { echo "the image's USER is \"$user\", want a non-root numeric user"; exit 1; }
[ "$entry" = '[/usr/local/bin/streaming-hub]' ] || { echo "the image's ENTRYPOINT is $entry"; exit 1; }

if ! command -v podman >/dev/null 2>&1; then
  echo "SKIP container run: podman is not installed"; exit 0
fi
echo "-- run: streaming-hub dev in the container, /healthz from outside"
# A sandbox may refuse raising rlimits (no CAP_SYS_RESOURCE) or crun's
# cgroup setup: ask for small limits (4096 files and processes are plenty
# for dev) and try runc too.
nofile=$(( $(ulimit -n) < 4096 ? $(ulimit -n) : 4096 ))
limits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=4096:4096")
run_args=(-d --name "$name" "${limits[@]}" --tmpfs /tmp:rw,size=64m,mode=1777
  -e STREAMING_HUB_HTTP_ADDR=0.0.0.0:8080 -e STREAMING_HUB_DEV_KAFKA_ADDR=127.0.0.1:0
  -e STREAMING_HUB_DATABASE_URL=sqlite:///tmp/hub.db -p 127.0.0.1::8080 "$image" dev)
started=""
errors=""
for runtime in "" runc; do
  rt=()
  if [ -n "$runtime" ]; then
    command -v "$runtime" >/dev/null 2>&1 || continue
    rt=(--runtime "$runtime")
  fi
  podman rm -f "$name" >/dev/null 2>&1 || true
  if err=$(podman "${rt[@]}" run "${run_args[@]}" 2>&1); then
    started="${runtime:-default runtime}"; break
  fi
  errors+="${runtime:-default runtime}: $(echo "$err" | tail -1); "
done
if [ -z "$started" ]; then
  echo "SKIP container run: this machine does not allow running containers ($errors)"
  echo "the image was built and its configuration checked"
  exit 0
fi
port=$(podman port "$name" 8080/tcp | head -1 | sed 's/.*://')
ok=""
for _ in $(seq 1 60); do
  if curl -sf -m 2 "http://127.0.0.1:$port/healthz" >/dev/null; then ok=1; break; fi
  sleep 0.5
done
if [ -z "$ok" ]; then
  echo "the container ($started) did not answer /healthz on 127.0.0.1:$port within 30s; its log:"
  podman logs "$name" 2>&1 | tail -20
  exit 1
fi
echo "container ($started) on 127.0.0.1:$port: /healthz $(curl -s -m 2 "http://127.0.0.1:$port/healthz")"
ready=""
for _ in $(seq 1 60); do
  if curl -sf -m 2 "http://127.0.0.1:$port/readyz" >/dev/null; then ready=1; break; fi
  sleep 0.5
done
[ -n "$ready" ] || { echo "/readyz never answered 200:"; curl -s -m 2 "http://127.0.0.1:$port/readyz"; podman logs "$name" 2>&1 | tail -20; exit 1; }
echo "container: /readyz $(curl -s -m 2 "http://127.0.0.1:$port/readyz")"
podman stop -t 20 "$name" >/dev/null
code=$(podman inspect "$name" --format '{{.State.ExitCode}}')
echo "container stopped on SIGTERM with exit code $code"
[ "$code" = 0 ] || { podman logs "$name" 2>&1 | tail -20; exit 1; }
