# Sourced by build-control-plane.sh and build-scheduler-plugin.sh: the version stamps upstream's
# hack/lib/version.sh sets; without them the binaries call themselves v0.0.0-master and
# version-gated features misbehave.
k8s_ldflags() { # VERSION (vX.Y.Z) -> the value of go build's -ldflags
  local version=$1 minor pkg flags="-s -w"
  minor=$(echo "$version" | cut -d. -f2)
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X ${pkg}.gitVersion=${version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    flags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}
