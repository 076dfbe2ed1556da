#!/usr/bin/env bash
# Puts Helm into the corral-vdi binary cache, building it from the Go module proxy (helm.sh/helm/v4/cmd/helm) when
# it is not there yet, so the chart in deploy/helm is linted and rendered by Helm itself. Safe to interrupt and
# rerun: the binary is moved into the cache only after it was built completely. CORRAL_HELM_VERSION picks another
# v4 release (a folder of its own in the cache).
set -euo pipefail

helm_version=${CORRAL_HELM_VERSION:-v4.3.2}
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/corral-vdi"
bin_dir="$cache_root/bin/helm-$helm_version"
work_dir="$cache_root/build/helm-$helm_version"

say() { printf '[helm] %s\n' "$*" >&2; }
retry='run "bash scripts/build-helm.sh" again'
step='checking the cache'
trap 'say "step '"'"'$step'"'"' failed (see above); $retry"' ERR

# Test files that start at once wait for one build instead of racing in the same folder.
mkdir -p "$cache_root/build"
exec 9>"$cache_root/build/helm-$helm_version.lock"
flock 9

if [ -x "$bin_dir/helm" ]; then
  say "helm ready in $bin_dir"
  printf '%s\n' "$bin_dir"
  exit 0
fi

step='finding go'
# Go's own installer puts it here, off the PATH of non-login shells
command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || { say "step '$step' failed: Go 1.26 or newer is needed; $retry"; exit 1; }
# Helm 4.3 needs Go 1.26; an older go fetches that toolchain through the module proxy.
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} CGO_ENABLED=0

mkdir -p "$bin_dir" "$work_dir"
rm -rf "$work_dir/bin"

# Helm's go.mod has no replace directives, so `go install module@version` builds it as its own release does;
# the linker flag sets what `helm version` reports, as Helm's Makefile does for a tagged build.
step='helm build'
say "building helm $helm_version from the Go module proxy with $(go version | cut -d' ' -f3) (minutes on 2 cores, once)"
(cd "$work_dir" && GOBIN="$work_dir/bin" go install -trimpath \
  -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
  "helm.sh/helm/v4/cmd/helm@$helm_version" >"$work_dir/build.log" 2>&1) || {
  tail -n 40 "$work_dir/build.log" >&2
  say "step '$step' failed; the full log is $work_dir/build.log; $retry"
  exit 1
}
mv -f "$work_dir/bin/helm" "$bin_dir/helm"

say "helm ready in $bin_dir"
printf '%s\n' "$bin_dir"
