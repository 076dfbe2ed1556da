#!/usr/bin/env bash
# Puts etcd and kube-apiserver into the corral-vdi binary cache, building kube-apiserver from
# Debian's kubernetes source package when it is not there yet. Safe to interrupt and rerun:
# a binary is moved into the cache only after it was built completely.
set -euo pipefail

k8s_version=v1.20.2
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/corral-vdi"
bin_dir="$cache_root/bin/$k8s_version"
work_dir="$cache_root/build"

say() { printf '[control-plane] %s\n' "$*" >&2; }
retry='run "bash scripts/build-control-plane.sh" again'
step='checking the cache'
trap 'say "step '"'"'$step'"'"' failed (see above); $retry"' ERR

if [ -x "$bin_dir/kube-apiserver" ] && [ -x "$bin_dir/etcd" ]; then
  say "binaries ready in $bin_dir"
  printf '%s\n' "$bin_dir"
  exit 0
fi

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

step='apt install'
need_packages=()
for pair in etcd:etcd-server go:golang-go rsync:rsync dpkg-source:dpkg-dev; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need_packages+=("${pair#*:}")
done
reflect2_src=/usr/share/gocode/src/github.com/modern-go/reflect2
[ -d "$reflect2_src" ] || need_packages+=(golang-github-modern-go-reflect2-dev)

src_list=/etc/apt/sources.list.d/corral-vdi-src.sources
if [ ! -f "$src_list" ]; then
  step='deb-src entry'
  say "adding a deb-src entry for Debian's kubernetes source package"
  as_root tee "$src_list" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  as_root apt-get update -qq
fi
if [ ${#need_packages[@]} -gt 0 ]; then
  # it names its failed step itself
  bash "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" "${need_packages[@]}" || exit 1
fi

mkdir -p "$bin_dir" "$work_dir"
ln -sf "$(command -v etcd)" "$bin_dir/etcd.partial" && mv -f "$bin_dir/etcd.partial" "$bin_dir/etcd"

if [ ! -x "$bin_dir/kube-apiserver" ]; then
  cd "$work_dir"
  tree=$(find . -maxdepth 1 -type d -name 'kubernetes-*' | head -n 1)
  if [ -z "$tree" ] || [ ! -f "$tree/.corral-extracted" ]; then
    rm -rf ./kubernetes-*/
    step='kubernetes source download'
    say "downloading Debian's kubernetes source package (about 34 MB)"
    apt-get source --download-only kubernetes >/dev/null 2>&1 || apt-get source --download-only kubernetes
    dsc=$(ls kubernetes_*.dsc | head -n 1)
    step='kubernetes source unpack'
    say "unpacking $dsc"
    dpkg-source --no-check -x "$dsc" >/dev/null
    tree=$(find . -maxdepth 1 -type d -name 'kubernetes-*' | head -n 1)
    touch "$tree/.corral-extracted"
  fi
  tree=$(cd "$tree" && pwd)
  # reflect2 1.0.1 panics under Go >= 1.18 on the first custom-resource create; 1.0.2 replaces it whole.
  vendored_reflect2="$tree/vendor/github.com/modern-go/reflect2"
  rm -f "$vendored_reflect2"/*.go "$vendored_reflect2"/*.s
  cp "$reflect2_src"/*.go "$reflect2_src"/*.s "$vendored_reflect2/"
  gopath="$work_dir/gopath"
  mkdir -p "$gopath/src/k8s.io"
  ln -sfn "$tree" "$gopath/src/k8s.io/kubernetes"
  # A failed generator run leaves a 0-byte binary behind that breaks the next build.
  rm -rf "$tree/_output"
  step='kube-apiserver build'
  say "building kube-apiserver $k8s_version with $(go version | cut -d' ' -f3) (about 5 minutes on 2 cores)"
  (cd "$gopath/src/k8s.io/kubernetes" && GOPATH="$gopath" GO111MODULE=off CGO_ENABLED=0 GOFLAGS= \
    make WHAT=cmd/kube-apiserver >"$work_dir/build.log" 2>&1) || {
    tail -n 40 "$work_dir/build.log" >&2
    say "step 'kube-apiserver build' failed; the full log is $work_dir/build.log; $retry"
    exit 1
  }
  built="$tree/_output/bin/kube-apiserver"
  [ -s "$built" ] || { say "step 'kube-apiserver build' wrote no kube-apiserver; $retry"; exit 1; }
  cp "$built" "$bin_dir/kube-apiserver.partial"
  mv -f "$bin_dir/kube-apiserver.partial" "$bin_dir/kube-apiserver"
  rm -rf "$tree/_output"
fi

say "binaries ready in $bin_dir"
printf '%s\n' "$bin_dir"
