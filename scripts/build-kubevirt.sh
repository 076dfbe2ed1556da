#!/usr/bin/env bash
# Puts KubeVirt's own virt-api and virt-controller, and kubevirt-install (virt-operator's install strategy and
# certificate code in a small command of ours, scripts/kubevirt-install), into the corral-vdi binary cache,
# building them from the Go module proxy when they are not there yet. Safe to interrupt and rerun: the binaries
# are moved into the cache only once all three were built. CORRAL_KUBEVIRT_VERSION picks another release (a folder
# of its own in the cache). Prints the folder.
set -euo pipefail

kubevirt_version=${CORRAL_KUBEVIRT_VERSION:-v1.9.0}
scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$scripts/kubevirt-build-module.sh"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/corral-vdi"
bin_dir="$cache_root/bin/kubevirt-$kubevirt_version"
work_dir="$cache_root/build/kubevirt-$kubevirt_version"
programs=(virt-api virt-controller kubevirt-install)

say() { printf '[kubevirt] %s\n' "$*" >&2; }
retry='run "bash scripts/build-kubevirt.sh" again'
step='checking the cache'
trap 'say "step '"'"'$step'"'"' failed (see above); $retry"' ERR

case "$kubevirt_version" in
v1.[6-9].* | v1.1[0-9].*) ;;
*)
  say "KubeVirt $kubevirt_version is not one this script builds; use v1.6.x or newer"
  exit 1
  ;;
esac

# Test files that start at once wait for one build instead of racing in the same folder.
mkdir -p "$cache_root/build"
exec 9>"$cache_root/build/kubevirt-$kubevirt_version.lock"
flock 9

ready() {
  local program
  for program in "${programs[@]}"; do [ -x "$bin_dir/$program" ] || return 1; done
}
if ready; then
  say "virt-api and virt-controller $kubevirt_version ready in $bin_dir"
  printf '%s\n' "$bin_dir"
  exit 0
fi

step='finding Go'
# Go's own installer puts it here, off the PATH of non-login shells
command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || {
  say "step '$step' failed: Go 1.26 or newer is needed to build KubeVirt's controllers (https://go.dev/doc/install); $retry"
  exit 1
}

mkdir -p "$work_dir"
cd "$work_dir"
rm -f ./*.go

step='kubevirt module download'
say "downloading kubevirt.io/kubevirt $kubevirt_version from the Go module proxy"
kubevirt_dir=$(GOFLAGS=-mod=mod go mod download -json "kubevirt.io/kubevirt@$kubevirt_version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -f "$kubevirt_dir/go.mod" ] || { say "step '$step' found no go.mod; $retry"; exit 1; }

step='build module'
write_template_stand_ins
write_build_go_mod corral.dev/kubevirt-build "$kubevirt_dir"
cp "$scripts/kubevirt-install/main.go" main.go
# the two commands are main packages of the dependency: a blank import cannot name them, so tidy keeps their
# requirements only through a build-tagged file
cat >programs.go <<'GO'
//go:build programs

package main

import (
	_ "kubevirt.io/kubevirt/cmd/virt-api"
	_ "kubevirt.io/kubevirt/cmd/virt-controller"
)
GO

step='dependency download'
say "resolving the dependencies of virt-api and virt-controller"
GOFLAGS=-mod=mod go mod tidy >"$work_dir/tidy.log" 2>&1 || {
  tail -n 40 "$work_dir/tidy.log" >&2
  say "step '$step' failed; the full log is $work_dir/tidy.log; $retry"
  exit 1
}

step='build'
say "building virt-api, virt-controller and kubevirt-install $kubevirt_version with $(go version | cut -d' ' -f3) (about ten minutes on 2 cores the first time)"
version_package=kubevirt.io/client-go/version
ldflags="-s -w -X $version_package.gitVersion=$kubevirt_version -X $version_package.gitTreeState=clean"
ldflags="$ldflags -X $version_package.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
rm -rf "$bin_dir.partial"
mkdir -p "$bin_dir.partial"
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$bin_dir.partial/" \
  kubevirt.io/kubevirt/cmd/virt-api kubevirt.io/kubevirt/cmd/virt-controller . \
  >"$work_dir/build.log" 2>&1 || {
  tail -n 40 "$work_dir/build.log" >&2
  say "step '$step' failed; the full log is $work_dir/build.log; $retry"
  exit 1
}
mv "$bin_dir.partial/kubevirt-build" "$bin_dir.partial/kubevirt-install"
rm -rf "$bin_dir"
mv "$bin_dir.partial" "$bin_dir"

say "virt-api and virt-controller $kubevirt_version ready in $bin_dir"
printf '%s\n' "$bin_dir"
