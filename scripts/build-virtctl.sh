#!/usr/bin/env bash
# Puts KubeVirt's virtctl into the corral-vdi binary cache, building it from the Go module proxy when it is
# not there yet, so the USB redirection tests run the real client. Safe to interrupt and rerun: the binary is
# moved into the cache only after it was built completely.
set -euo pipefail

kubevirt_version=v1.9.0
source "$(dirname "${BASH_SOURCE[0]}")/kubevirt-build-module.sh"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/corral-vdi"
bin_dir="$cache_root/bin/virtctl-$kubevirt_version"
work_dir="$cache_root/build/virtctl-$kubevirt_version"

say() { printf '[virtctl] %s\n' "$*" >&2; }
retry='run "bash scripts/build-virtctl.sh" again'
step='checking the cache'
trap 'say "step '"'"'$step'"'"' failed (see above); $retry"' ERR

# Test files that start at once wait for one build instead of racing in the same folder.
mkdir -p "$cache_root/build"
exec 9>"$cache_root/build/virtctl-$kubevirt_version.lock"
flock 9

if [ -x "$bin_dir/virtctl" ]; then
  say "virtctl ready in $bin_dir"
  printf '%s\n' "$bin_dir"
  exit 0
fi

step='finding go'
# Go's own installer puts it here, off the PATH of non-login shells
command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || { say "step '$step' failed: Go 1.26 or newer is needed; $retry"; exit 1; }

mkdir -p "$bin_dir" "$work_dir"
cd "$work_dir"
rm -f ./*.go

step='kubevirt module download'
say "downloading kubevirt.io/kubevirt $kubevirt_version from the Go module proxy"
kubevirt_dir=$(GOFLAGS=-mod=mod go mod download -json "kubevirt.io/kubevirt@$kubevirt_version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -f "$kubevirt_dir/go.mod" ] || { say "step '$step' found no go.mod; $retry"; exit 1; }

# virtctl's template commands need the virt-template modules whole, so the module builds virtctl's root with the
# usbredir command alone; KubeVirt's informer factory, which that command's help templates link in but never call,
# needs only the stand-ins' names.
step='build module'
write_template_stand_ins
write_build_go_mod corral.dev/virtctl-build "$kubevirt_dir"
# KubeVirt's root command, with only usbredir added: the same client configuration, flags and command.
cat >main.go <<'GO'
package main

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"kubevirt.io/client-go/kubecli"
	"kubevirt.io/client-go/log"

	"kubevirt.io/kubevirt/pkg/virtctl/clientconfig"
	"kubevirt.io/kubevirt/pkg/virtctl/usbredir"
)

func main() {
	log.InitializeLogging("virtctl")
	// the help templates of virtctl's commands call these two
	cobra.AddTemplateFunc("ProgramName", func() string { return "virtctl" })
	cobra.AddTemplateFunc("prepare", func(s string) string { return strings.ReplaceAll(s, "{{ProgramName}}", "virtctl") })
	root := &cobra.Command{Use: "virtctl", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(os.Stdout)
	root.SetContext(clientconfig.NewContext(context.Background(), kubecli.DefaultClientConfig(root.PersistentFlags())))
	root.AddCommand(usbredir.NewCommand())
	if err := root.Execute(); err != nil {
		root.PrintErrln(err)
		os.Exit(1)
	}
}
GO

step='dependency download'
say "resolving virtctl's dependencies"
GOFLAGS=-mod=mod go mod tidy >"$work_dir/tidy.log" 2>&1 || {
  tail -n 40 "$work_dir/tidy.log" >&2
  say "step '$step' failed; the full log is $work_dir/tidy.log; $retry"
  exit 1
}

step='virtctl build'
say "building virtctl $kubevirt_version with $(go version | cut -d' ' -f3) (a few minutes on 2 cores)"
CGO_ENABLED=0 go build -trimpath -o "$bin_dir/virtctl.partial" . \
  >"$work_dir/build.log" 2>&1 || {
  tail -n 40 "$work_dir/build.log" >&2
  say "step '$step' failed; the full log is $work_dir/build.log; $retry"
  exit 1
}
mv -f "$bin_dir/virtctl.partial" "$bin_dir/virtctl"

say "virtctl ready in $bin_dir"
printf '%s\n' "$bin_dir"
