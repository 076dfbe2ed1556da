#!/usr/bin/env bash
# Puts kube-apiserver and etcd into the corral-vdi binary cache, building them from the Go module proxy when they
# are not there yet: kube-apiserver from k8s.io/kubernetes and etcd from go.etcd.io/etcd/server/v3, each in a build
# module of its own. Safe to interrupt and rerun: a binary is moved into the cache only once it was built whole.
# CORRAL_KUBERNETES_VERSION picks another release of the served ones (a folder of its own in the cache).
set -euo pipefail

k8s_version=${CORRAL_KUBERNETES_VERSION:-v1.37.2}
# The etcd minor release each Kubernetes minor version requires in its go.mod, at its newest patch.
case "$k8s_version" in
v1.37.*) etcd_version=v3.7.3 ;;
v1.3[4-6].*) etcd_version=v3.6.16 ;;
*)
  printf '[control-plane] Kubernetes %s is not one this script builds; use v1.34.x to v1.37.x\n' "$k8s_version" >&2
  exit 1
  ;;
esac
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/corral-vdi"
bin_dir="$cache_root/bin/$k8s_version"
work_dir="$cache_root/build/$k8s_version"

say() { printf '[control-plane] %s\n' "$*" >&2; }
retry='run "bash scripts/build-control-plane.sh" again'
step='checking the cache'
trap 'say "step '"'"'$step'"'"' failed (see above); $retry"' ERR

if [ -x "$bin_dir/kube-apiserver" ] && [ -x "$bin_dir/etcd" ]; then
  say "binaries ready in $bin_dir"
  printf '%s\n' "$bin_dir"
  exit 0
fi

step='finding Go'
# Go's own installer puts it here, off the PATH of non-login shells
command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null 2>&1; then
  say "step '$step' failed: Go 1.26 or newer is needed to build the control plane (https://go.dev/doc/install); $retry"
  exit 1
fi
# Kubernetes 1.37 needs Go 1.26; an older go fetches that toolchain through the module proxy.
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOFLAGS=-mod=mod CGO_ENABLED=0

# Builds one command of one module into the cache: $1 binary name, $2 module folder, $3 package, $4 what, then
# linker flags.
build_into_cache() {
  local name=$1 module_dir=$2 package=$3 what=$4
  shift 4
  step="$name build"
  say "building $what with $(go version | cut -d' ' -f3) (several minutes on 2 cores, once)"
  (cd "$module_dir" && go build -trimpath -ldflags="-s -w $*" -o "$bin_dir/$name.partial" "$package" \
    >"$module_dir/build.log" 2>&1) || {
    tail -n 40 "$module_dir/build.log" >&2
    say "step '$step' failed; the full log is $module_dir/build.log; $retry"
    exit 1
  }
  mv -f "$bin_dir/$name.partial" "$bin_dir/$name"
}

mkdir -p "$bin_dir" "$work_dir/kube-apiserver" "$work_dir/etcd"

if [ ! -x "$bin_dir/kube-apiserver" ]; then
  module_dir="$work_dir/kube-apiserver"
  step='kubernetes module download'
  say "downloading k8s.io/kubernetes $k8s_version from the Go module proxy"
  (cd "$module_dir" && go mod download -json "k8s.io/kubernetes@$k8s_version" >"$module_dir/download.json")
  upstream_mod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p' "$module_dir/download.json")
  # k8s.io/kubernetes points its staging modules at folders its zip lacks; the published v0.x.y are the same code.
  staging_version="v0.${k8s_version#v1.}"
  {
    printf 'module corral.dev/control-plane/kube-apiserver\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\n' "$k8s_version"
    sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*#\1#p' "$upstream_mod" |
      while read -r staging; do printf 'replace %s => %s %s\n' "$staging" "$staging" "$staging_version"; done
  } >"$module_dir/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' >"$module_dir/tools.go"
  step='kube-apiserver dependencies'
  say "resolving kube-apiserver's dependencies (staging modules at $staging_version)"
  (cd "$module_dir" && go mod tidy >"$module_dir/tidy.log" 2>&1) || {
    tail -n 20 "$module_dir/tidy.log" >&2
    false
  }
  # what /version reports, as a release build stamps it
  minor=${k8s_version#v1.}
  minor=${minor%%.*}
  version_flags=()
  for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    version_flags+=("-X $package.gitVersion=$k8s_version" "-X $package.gitMajor=1" "-X $package.gitMinor=$minor"
      "-X $package.gitTreeState=clean")
  done
  build_into_cache kube-apiserver "$module_dir" k8s.io/kubernetes/cmd/kube-apiserver "kube-apiserver $k8s_version" \
    "${version_flags[@]}"
fi

if [ ! -x "$bin_dir/etcd" ]; then
  module_dir="$work_dir/etcd"
  printf 'module corral.dev/control-plane/etcd\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
    "$etcd_version" >"$module_dir/go.mod"
  # etcd's own main is a thin wrapper of etcdmain; its module is not published, the server's is.
  printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' \
    >"$module_dir/main.go"
  step='etcd dependencies'
  say "resolving etcd $etcd_version's dependencies from the Go module proxy"
  (cd "$module_dir" && go mod tidy >"$module_dir/tidy.log" 2>&1) || {
    tail -n 20 "$module_dir/tidy.log" >&2
    false
  }
  build_into_cache etcd "$module_dir" . "etcd $etcd_version"
fi

say "binaries ready in $bin_dir"
printf '%s\n' "$bin_dir"
