#!/usr/bin/env bash
# Builds the real control plane the tests and benchmarks measure against:
# kube-apiserver, kube-scheduler, kube-controller-manager (k8s.io/kubernetes) and
# etcd (go.etcd.io/etcd/server/v3), from the Go module proxy, into a cache outside the
# repository keyed by version. Does nothing when the binaries are already there. Then it runs
# scripts/build-scheduler-plugin.sh: kube-scheduler with the gangplace plugin, keyed by the
# plugin's sources (its path on stderr).
#
#   scripts/build-control-plane.sh            # prints the bin directory on stdout
#   K8S_VERSION=v1.37.2 ETCD_VERSION=v3.7.3 GANGPLACE_CONTROL_PLANE_CACHE=DIR scripts/...
#
# No upstream source is copied into this repository: two throw-away consumer modules are
# written into the cache and `go build` fetches the rest through GOPROXY.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
CACHE=${GANGPLACE_CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gangplace/control-plane}
KEY="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}"
BIN="$CACHE/$KEY/bin"
BINARIES=(kube-apiserver kube-scheduler kube-controller-manager etcd)

have_all() {
  local b
  for b in "${BINARIES[@]}"; do [[ -x "$BIN/$b" ]] || return 1; done
}
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
plugin() { "$SCRIPTS/build-scheduler-plugin.sh" >&2; }
if have_all; then plugin; echo "$BIN"; exit 0; fi

command -v go >/dev/null || { echo "build-control-plane: go is not on PATH (Go >= 1.26 needed)" >&2; exit 2; }
log() { echo "build-control-plane: $*" >&2; }

# k8s.io/kubernetes vX.Y.Z ships its staging modules as k8s.io/<name> vX-1 … i.e. v0.Y.Z.
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
WORK="$CACHE/$KEY/work"
mkdir -p "$WORK/k8s" "$WORK/etcd" "$BIN"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

start=$(date +%s)

# --- Kubernetes -------------------------------------------------------------------------
# k8s.io/kubernetes requires every staging module at v0.0.0 and replaces it with a path
# inside its own tree; replace directives only apply in the main module, so a consumer must
# replace each with the published version. The list is read from the go.mod the proxy
# serves for this version, never written by hand.
cd "$WORK/k8s"
go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" >download.json
K8S_GOMOD=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p' download.json)
K8S_DIR=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' download.json)
GO_DIRECTIVE=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$K8S_GOMOD")
{
  echo "module gangplace.local/control-plane/k8s"
  echo
  echo "go ${GO_DIRECTIVE}"
  echo
  echo "require k8s.io/kubernetes ${K8S_VERSION}"
  echo
  echo "replace ("
  sed -n 's|^[[:space:]]*\(k8s\.io/[a-z0-9.-]*\) => \./staging/.*$|\t\1 => \1 '"${STAGING_VERSION}"'|p' "$K8S_GOMOD"
  echo ")"
} >go.mod
log "k8s.io/kubernetes ${K8S_VERSION}: $(grep -c '=> k8s.io/' go.mod) staging modules replaced at ${STAGING_VERSION}"

# shellcheck source=scripts/k8s-ldflags.sh
source "$SCRIPTS/k8s-ldflags.sh"
LDFLAGS=$(k8s_ldflags "$K8S_VERSION")
for cmd in kube-apiserver kube-scheduler kube-controller-manager; do
  [[ -x "$BIN/$cmd" ]] && continue
  log "building $cmd (a cold build takes tens of minutes on 2 cores)"
  go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd"
  mv "$BIN/$cmd.tmp" "$BIN/$cmd"
done

# --- etcd ------------------------------------------------------------------------------
# go.etcd.io/etcd/server/v3 replaces its sibling modules with relative paths too, so it is
# built from a module of our own that pins all of them at one version; main is one call.
if [[ ! -x "$BIN/etcd" ]]; then
  cd "$WORK/etcd"
  cat >go.mod <<MOD
module gangplace.local/control-plane/etcd

go ${GO_DIRECTIVE}

require (
	go.etcd.io/etcd/api/v3 ${ETCD_VERSION}
	go.etcd.io/etcd/client/pkg/v3 ${ETCD_VERSION}
	go.etcd.io/etcd/client/v3 ${ETCD_VERSION}
	go.etcd.io/etcd/pkg/v3 ${ETCD_VERSION}
	go.etcd.io/etcd/server/v3 ${ETCD_VERSION}
)
MOD
  cat >main.go <<'GO'
// The etcd server, built from go.etcd.io/etcd/server/v3 at the version go.mod pins.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  log "building etcd ${ETCD_VERSION}"
  go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" .
  mv "$BIN/etcd.tmp" "$BIN/etcd"
fi

log "done in $(( $(date +%s) - start )) s: $BIN"
plugin
echo "$BIN"
