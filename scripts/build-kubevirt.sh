#!/usr/bin/env bash
# Puts KubeVirt's own virt-api and virt-controller, and kubevirt-install (virt-operator's install strategy and
# certificate code in a small command of ours, scripts/kubevirt-install), into the corral-vdi binary cache,
# building them from the Go module proxy when they are not there yet. Safe to interrupt and rerun: the binaries
# are moved into the cache only once all three were built. CORRAL_KUBEVIRT_VERSION picks another release (a folder
# of its own in the cache). Prints the folder.
set -euo pipefail

kubevirt_version=${CORRAL_KUBEVIRT_VERSION:-v1.9.0}
scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
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
rm -rf ./*.go stand-ins

step='kubevirt module download'
say "downloading kubevirt.io/kubevirt $kubevirt_version from the Go module proxy"
kubevirt_dir=$(GOFLAGS=-mod=mod go mod download -json "kubevirt.io/kubevirt@$kubevirt_version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -f "$kubevirt_dir/go.mod" ] || { say "step '$step' found no go.mod; $retry"; exit 1; }

# KubeVirt's go.mod pins its dependencies with replace directives, which apply only in its own module: a module of
# our own repeats them and takes kubevirt.io/api and client-go from the proxy instead of KubeVirt's staging tree.
# The proxy does not serve the virt-template modules (1.9 and newer need them); three KubeVirt files of these
# programs name a few of their types, used only with the Template and OCIExport feature gates on, which small
# stand-ins provide.
step='build module'
template_modules=(virt-template-api virt-template-client-go virt-template-engine)
for name in "${template_modules[@]}"; do
  mkdir -p "stand-ins/$name"
  printf 'module kubevirt.io/%s\n\ngo 1.26.0\n' "$name" >"stand-ins/$name/go.mod"
done
printf '\nrequire k8s.io/apimachinery v0.34.2\n' >>stand-ins/virt-template-api/go.mod
printf '\nrequire k8s.io/client-go v0.34.2\n' >>stand-ins/virt-template-client-go/go.mod
mkdir -p stand-ins/virt-template-api/core/v1beta1 stand-ins/virt-template-client-go/virttemplate
cat >stand-ins/virt-template-api/core/names.go <<'GO'
package core

const (
	GroupName            = "template.kubevirt.io"
	SingularResourceName = "virtualmachinetemplate"
	PluralResourceName   = "virtualmachinetemplates"
)
GO
cat >stand-ins/virt-template-api/core/v1beta1/types.go <<'GO'
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const ConditionReady = "Ready"

type Parameter struct {
	Name  string
	Value string
}

type VirtualMachineTemplateSpec struct {
	VirtualMachine *runtime.RawExtension
	Parameters     []Parameter
}

type VirtualMachineTemplateStatus struct {
	Conditions []metav1.Condition
}

type VirtualMachineTemplate struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec   VirtualMachineTemplateSpec
	Status VirtualMachineTemplateStatus
}

func (t *VirtualMachineTemplate) DeepCopy() *VirtualMachineTemplate {
	copied := *t
	return &copied
}

func (t *VirtualMachineTemplate) DeepCopyObject() runtime.Object { return t.DeepCopy() }
GO
cat >stand-ins/virt-template-client-go/virttemplate/client.go <<'GO'
package virttemplate

import (
	"errors"

	"k8s.io/client-go/rest"
)

type Clientset struct{}

type TemplateV1beta1Client struct{}

func NewForConfig(*rest.Config) (*Clientset, error) {
	return nil, errors.New("virt-template is not part of this build")
}

func (*Clientset) TemplateV1beta1() *TemplateV1beta1Client { return nil }

func (*TemplateV1beta1Client) RESTClient() rest.Interface { return nil }
GO
# The release's tag of a staging module, or its minor release's .0 when the proxy does not serve that tag
# (kubevirt.io/client-go v1.6.1 is missing there; the staging modules rarely change within a minor release).
staging_version() {
  if GOFLAGS=-mod=mod go mod download "$1@$kubevirt_version" >/dev/null 2>&1; then
    printf '%s\n' "$kubevirt_version"
  else
    say "the Go module proxy does not serve $1 $kubevirt_version; using ${kubevirt_version%.*}.0"
    printf '%s\n' "${kubevirt_version%.*}.0"
  fi
}
{
  printf 'module corral.dev/kubevirt-build\n\ngo 1.26.0\n\n'
  printf 'require kubevirt.io/kubevirt %s\n\n' "$kubevirt_version"
  sed -n '/^replace (/,/^)/p' "$kubevirt_dir/go.mod" | grep -v 'staging/src'
  for name in "${template_modules[@]}"; do printf 'replace kubevirt.io/%s => ./stand-ins/%s\n' "$name" "$name"; done
  printf 'replace kubevirt.io/api => kubevirt.io/api %s\n' "$(staging_version kubevirt.io/api)"
  printf 'replace kubevirt.io/client-go => kubevirt.io/client-go %s\n' "$(staging_version kubevirt.io/client-go)"
} >go.mod
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
