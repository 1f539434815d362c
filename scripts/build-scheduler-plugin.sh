#!/usr/bin/env bash
# Builds kube-scheduler 1.37.2 with the gangplace plugin registered (adapter/kubescheduler,
# issue 49) into the control-plane cache, keyed by a hash of the plugin module's files, so an
# edit to the plugin builds a new binary and an unchanged one is reused.
#
#   scripts/build-scheduler-plugin.sh     # prints the binary's path on stdout
#
# It shares the Go build cache with scripts/build-control-plane.sh (which calls it), so after
# the control plane is built the plugin's binary takes a minute or two, not a cold build.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
CACHE=${GANGPLACE_CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gangplace/control-plane}
MODULE="$(cd "$(dirname "$0")/../adapter/kubescheduler" && pwd)"

command -v go >/dev/null || { echo "build-scheduler-plugin: go is not on PATH (Go >= 1.26 needed)" >&2; exit 2; }

# The key: every file of the module (sources, go.mod, go.sum), by content, in a stable order.
HASH=$(cd "$MODULE" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) ! -name '*_test.go' \
  | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
OUT="$CACHE/k8s-${K8S_VERSION}_plugin-${HASH}/kube-scheduler"
if [[ -x "$OUT" ]]; then echo "$OUT"; exit 0; fi

echo "build-scheduler-plugin: building kube-scheduler ${K8S_VERSION} with the gangplace plugin" >&2
start=$(date +%s)
mkdir -p "$(dirname "$OUT")"
# shellcheck source=scripts/k8s-ldflags.sh
source "$(dirname "$0")/k8s-ldflags.sh"
LDFLAGS=$(k8s_ldflags "$K8S_VERSION")
(cd "$MODULE" && CGO_ENABLED=0 go build -trimpath -ldflags "$LDFLAGS" -o "$OUT.tmp" ./cmd/kube-scheduler)
mv "$OUT.tmp" "$OUT"
echo "build-scheduler-plugin: done in $(( $(date +%s) - start )) s: $OUT" >&2
echo "$OUT"
