# Sourced by the scripts that build KubeVirt's programs (build-kubevirt.sh, build-virtctl.sh): the build module they
# share. KubeVirt's go.mod pins its dependencies with replace directives, which apply only in its own module: a
# module of our own repeats them and takes kubevirt.io/api and client-go from the proxy instead of KubeVirt's
# staging tree. The proxy does not serve the virt-template modules (1.9 and newer need them); three KubeVirt files
# of these programs name a few of their types, used only with the Template and OCIExport feature gates on, which
# small stand-ins provide. The caller defines say and kubevirt_version, and runs in its build folder.

template_modules=(virt-template-api virt-template-client-go virt-template-engine)

# Writes the virt-template stand-in modules into ./stand-ins.
write_template_stand_ins() {
  local name
  rm -rf stand-ins
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
}

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

# Writes ./go.mod of module $1 that requires kubevirt.io/kubevirt at $kubevirt_version, whose go.mod is in folder $2.
write_build_go_mod() {
  local name
  {
    printf 'module %s\n\ngo 1.26.0\n\n' "$1"
    printf 'require kubevirt.io/kubevirt %s\n\n' "$kubevirt_version"
    sed -n '/^replace (/,/^)/p' "$2/go.mod" | grep -v 'staging/src'
    for name in "${template_modules[@]}"; do printf 'replace kubevirt.io/%s => ./stand-ins/%s\n' "$name" "$name"; done
    printf 'replace kubevirt.io/api => kubevirt.io/api %s\n' "$(staging_version kubevirt.io/api)"
    printf 'replace kubevirt.io/client-go => kubevirt.io/client-go %s\n' "$(staging_version kubevirt.io/client-go)"
  } >go.mod
}
