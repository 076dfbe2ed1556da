// Command kubevirt-install writes what virt-operator would install for virt-api and virt-controller on a local
// control plane: the install strategy's objects and fresh certificates, both made by KubeVirt's own operator code.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "kubevirt.io/api/core/v1"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/install"
	"kubevirt.io/kubevirt/pkg/virt-operator/util"
)

// The certificates the two controllers and a node's handler present; the export and backup CAs serve features
// the local control plane does not run.
var servedCertificates = []string{
	components.VirtApiCertSecretName,
	components.VirtControllerCertSecretName,
	components.VirtHandlerCertSecretName,
	components.VirtHandlerServerCertSecretName,
}

func main() {
	namespace := flag.String("namespace", "kubevirt", "the namespace KubeVirt is installed in")
	version := flag.String("version", "", "the KubeVirt release, as its images are tagged (v1.9.0)")
	out := flag.String("out", "", "the folder to write install.json and the certificates into")
	validFor := flag.Duration("valid-for", 7*24*time.Hour, "how long the certificates are valid")
	flag.Parse()
	if *out == "" || *version == "" {
		fail(fmt.Errorf("--out and --version are required"))
	}
	if err := run(*namespace, *version, *out, *validFor); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "kubevirt-install: %v\n", err)
	os.Exit(1)
}

func run(namespace, version, out string, validFor time.Duration) error {
	caPEM, err := writeCertificates(namespace, out, validFor)
	if err != nil {
		return err
	}
	objects, err := installObjects(namespace, version, caPEM)
	if err != nil {
		return err
	}
	encoded, err := json.Marshal(map[string]any{"version": version, "namespace": namespace, "objects": objects})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "install.json"), encoded, 0o644)
}

func installObjects(namespace, version string, caPEM []byte) ([]runtime.Object, error) {
	// the strategy reads the operator's image to name the release's images and version
	if err := os.Setenv(util.VirtOperatorImageEnvName, "quay.io/kubevirt/virt-operator:"+version); err != nil {
		return nil, err
	}
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: namespace}}
	strategy, err := install.GenerateCurrentInstallStrategy(util.GetTargetConfigFromKV(kv), namespace, namespace)
	if err != nil {
		return nil, err
	}
	kubevirtCrd, err := components.NewKubeVirtCrd()
	if err != nil {
		return nil, err
	}
	objects := []runtime.Object{kubevirtCrd}
	for _, crd := range strategy.CRDs() {
		objects = append(objects, crd)
	}
	for _, account := range strategy.ServiceAccounts() {
		objects = append(objects, account)
	}
	for _, role := range strategy.ClusterRoles() {
		objects = append(objects, role)
	}
	for _, binding := range strategy.ClusterRoleBindings() {
		objects = append(objects, binding)
	}
	for _, role := range strategy.Roles() {
		objects = append(objects, role)
	}
	for _, binding := range strategy.RoleBindings() {
		objects = append(objects, binding)
	}
	for _, webhook := range strategy.ValidatingWebhookConfigurations() {
		if servedByVirtAPI(webhook.Name) {
			for i := range webhook.Webhooks {
				webhook.Webhooks[i].ClientConfig.CABundle = caPEM
			}
			webhook.APIVersion = "admissionregistration.k8s.io/v1"
			objects = append(objects, webhook)
		}
	}
	for _, webhook := range strategy.MutatingWebhookConfigurations() {
		if servedByVirtAPI(webhook.Name) {
			for i := range webhook.Webhooks {
				webhook.Webhooks[i].ClientConfig.CABundle = caPEM
			}
			webhook.APIVersion = "admissionregistration.k8s.io/v1"
			objects = append(objects, webhook)
		}
	}
	for _, service := range strategy.APIServices() {
		if service.Spec.Service != nil && service.Spec.Service.Name == components.VirtApiServiceName {
			service.Spec.CABundle = caPEM
			objects = append(objects, service)
		}
	}
	for _, policy := range strategy.ValidatingAdmissionPolicies() {
		if servedByVirtAPI(policy.Name) {
			policy.APIVersion = "admissionregistration.k8s.io/v1"
			objects = append(objects, policy)
		}
	}
	for _, binding := range strategy.ValidatingAdmissionPolicyBindings() {
		if servedByVirtAPI(binding.Name) {
			binding.APIVersion = "admissionregistration.k8s.io/v1"
			objects = append(objects, binding)
		}
	}
	return objects, nil
}

// The operator's own webhooks and virt-template's, and virt-template's admission policy, belong to programs the
// local control plane does not run.
func servedByVirtAPI(name string) bool {
	return !strings.Contains(name, "operator") && !strings.Contains(name, "template")
}

// Writes the CA and each served pair as <out>/<secret name>/tls.{crt,key}, and returns the CA's PEM.
func writeCertificates(namespace, out string, validFor time.Duration) ([]byte, error) {
	duration := &metav1.Duration{Duration: validFor}
	var ca *k8sv1.Secret
	for _, secret := range components.NewCACertSecrets(namespace) {
		if secret.Name == components.KubeVirtCASecretName {
			ca = secret
		}
	}
	if err := components.PopulateSecretWithCertificate(ca, nil, duration); err != nil {
		return nil, err
	}
	caCert, err := components.LoadCertificates(ca)
	if err != nil {
		return nil, err
	}
	if err := writePair(out, ca); err != nil {
		return nil, err
	}
	for _, secret := range components.NewCertSecrets(namespace, namespace) {
		for _, name := range servedCertificates {
			if secret.Name != name {
				continue
			}
			if err := components.PopulateSecretWithCertificate(secret, caCert, duration); err != nil {
				return nil, err
			}
			if err := writePair(out, secret); err != nil {
				return nil, err
			}
		}
	}
	return ca.Data[k8sv1.TLSCertKey], nil
}

func writePair(out string, secret *k8sv1.Secret) error {
	folder := filepath.Join(out, secret.Name)
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return err
	}
	for key, value := range secret.Data {
		if err := os.WriteFile(filepath.Join(folder, key), value, 0o600); err != nil {
			return err
		}
	}
	return nil
}
