#!/usr/bin/env bash
# The main job: the walkthrough, command by command, against the embedded local control plane. It sets up Node
# and the dependencies, builds or reuses the control-plane binaries and the CLI, then prints each corral-vdi
# command as you would type it, followed by its output. Everything it starts is stopped again, also on failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

say() { printf '\n\033[2m# %s\033[0m\n' "$*"; }
[ -t 1 ] || say() { printf '\n# %s\n' "$*"; }

bin_dir=$(bash scripts/build-control-plane.sh)
export KUBEBUILDER_ASSETS="$bin_dir"
# the test kit's guests run FreeRDP's shadow server on an Xvfb display when asked (step 5)
bash scripts/apt-install.sh freerdp2-shadow-x11 xvfb winpr-utils
# KubeVirt's own virt-api and virt-controller judge every write and run every VM of the walkthrough
CORRAL_KUBEVIRT_ASSETS=$(bash scripts/build-kubevirt.sh)
export CORRAL_KUBEVIRT_ASSETS CORRAL_KUBEVIRT=real

if [ ! -f dist/cli/main.js ] || [ -n "$(find src package.json tsup.config.ts -newer dist/cli/main.js -print -quit)" ]; then
  printf '[walkthrough] building the package (npx tsup)\n' >&2
  npx tsup --silent
fi

work=$(mktemp -d)
# The walkthrough's control plane keeps its state here, apart from one you may run yourself.
export XDG_CACHE_HOME="$work/cache"
export KUBECONFIG="$work/kubeconfig"
unset CORRAL_NAMESPACE CORRAL_VDI_BROKER_URL
cli="$PWD/dist/cli/main.js"
corral-vdi() { node "$cli" "$@"; }

background_pids=()
cluster_up=0
step='setting up'
finish() {
  status=$?
  for pid in "${background_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ "$cluster_up" = 1 ]; then corral-vdi dev-cluster down >/dev/null 2>&1 || true; fi
  rm -rf "$work"
  if [ "$status" -ne 0 ]; then printf '\nwalkthrough failed while %s (exit code %s)\n' "$step" "$status" >&2; fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

# Prints a command as you would type it: arguments with spaces or quotes in single quotes.
show() {
  local line='$' arg
  for arg in "$@"; do
    if [[ "$arg" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then line+=" $arg"; else line+=" '${arg//\'/\'\\\'\'}'"; fi
  done
  printf '%s\n' "$line"
}

# Prints a command as typed, then runs it.
run() {
  step="running: $*"
  show "$@"
  "$@"
}

# Runs a command that is expected to fail here; the walkthrough goes on.
run_may_fail() {
  step="running: $*"
  show "$@"
  "$@" || printf '(exit code %s; the walkthrough goes on)\n' "$?"
}

# A small node program against the cluster, for what kubectl would do; $1 says what it does.
prepare() {
  step="preparing: $1"
  printf '$ # %s\n' "$1"
  node --input-type=module -e "$2" "${@:3}"
}

say "0. Start the local control plane on 127.0.0.1: etcd, kube-apiserver, KubeVirt's own virt-api and virt-controller, and a stand-in for the node."
run corral-vdi dev-cluster up --kubeconfig "$KUBECONFIG"
cluster_up=1
printf '$ export KUBECONFIG=%s\n' "$KUBECONFIG"

say '1. A golden VM to clone: here a small stopped VM in the namespace corral-vms.'
prepare 'create the namespace corral-vms and the stopped VM golden-desktop (kubectl apply would do the same)' "
  import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
  const config = new KubeConfig();
  config.loadFromDefault();
  await config.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'corral-vms' } } });
  await config.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: 'kubevirt.io', version: 'v1', plural: 'virtualmachines', namespace: 'corral-vms',
    body: {
      apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine',
      metadata: { name: 'golden-desktop' },
      spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {}, memory: { guest: '1Gi' } } } } },
    },
  });
  console.log('namespace/corral-vms created');
  console.log('virtualmachine.kubevirt.io/golden-desktop created');
"

say '2. Create a pool of 3 clones.'
run corral-vdi pool create devpool --from golden-desktop --size 3

say "3. See what's in it."
run corral-vdi pool list

say '4. Hand one to a user. This also starts it.'
show corral-vdi assign devpool alice
step='running: corral-vdi assign devpool alice'
assigned=$(corral-vdi assign devpool alice)
printf '%s\n' "$assigned"
member=$(printf '%s\n' "$assigned" | sed -n 's/^assigned \([^ ]*\) → .*/\1/p')

wait_for_ip='
  import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
  const config = new KubeConfig();
  config.loadFromDefault();
  const api = config.makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const vmi = await api
      .getNamespacedCustomObject({ group: "kubevirt.io", version: "v1", plural: "virtualmachineinstances", namespace: "corral-vms", name: process.argv[1] })
      .catch(() => undefined);
    const ip = vmi?.status?.phase === "Running" ? vmi.status.interfaces?.[0]?.ipAddress : undefined;
    if (ip) { console.log(ip); break; }
    if (Date.now() > deadline) throw new Error(`${process.argv[1]} did not run within 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
'
step="waiting for $member to run"
ip=$(node --input-type=module -e "$wait_for_ip" "$member")

say "5. Connect. The guest's RDP service answers on TCP 3389 (here the test kit's guest runs FreeRDP's shadow server on ${ip}:3389), so RDP wins."
# The test kit's knob: the VMI's guest runs a real RDP server while the annotation is there.
set_rdp_server='
  import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
  import { connect } from "node:net";
  const [member, ip, mode] = process.argv.slice(1);
  const config = new KubeConfig();
  config.loadFromDefault();
  const body = { metadata: { annotations: { "sim.kubevirt.corral.dev/rdp-server": mode === "off" ? null : mode } } };
  await config.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
    { group: "kubevirt.io", version: "v1", plural: "virtualmachineinstances", namespace: "corral-vms", name: member, body },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
  const answers = () => new Promise((resolve) => {
    const socket = connect(3389, ip);
    socket.once("connect", () => { socket.destroy(); resolve(true); });
    socket.once("error", () => resolve(false));
  });
  const deadline = Date.now() + 30_000;
  while ((await answers()) !== (mode !== "off")) {
    if (Date.now() > deadline) throw new Error(`port 3389 of ${ip} did not ${mode === "off" ? "close" : "open"} within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
'
prepare "start the guest's RDP server: annotate the VMI sim.kubevirt.corral.dev/rdp-server=tls" "$set_rdp_server" "$member" "$ip" tls
run corral-vdi connect "$member"

say 'Without an RDP service in the guest, connect falls back to VNC and says why it skipped RDP.'
prepare "stop the guest's RDP server: remove the annotation" "$set_rdp_server" "$member" "$ip" off
run corral-vdi connect "$member"

say '6. USB redirection. List the USB devices of this machine (a machine without /sys/bus/usb says so):'
run_may_fail corral-vdi usb list

say '7. The self-service broker: a user claims and releases a desktop over HTTP, without an admin.'
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
printf '$ %s\n' "CORRAL_VDI_BROKER=1 CORRAL_ADMINS=alice corral-vdi broker serve --listen 127.0.0.1:$port --trust-header X-Forwarded-User &"
step='starting the broker'
CORRAL_VDI_BROKER=1 CORRAL_ADMINS=alice node "$cli" broker serve --listen "127.0.0.1:$port" --trust-header X-Forwarded-User \
  >"$work/broker.log" 2>&1 &
broker_pid=$!
background_pids+=("$broker_pid")
for _ in $(seq 1 300); do
  grep -q 'broker listening' "$work/broker.log" 2>/dev/null && break
  kill -0 "$broker_pid" 2>/dev/null || { cat "$work/broker.log" >&2; exit 1; }
  sleep 0.2
done
cat "$work/broker.log"
printf '# (X-Forwarded-User stands in for the login that the proxy in front of the broker sets.)\n'
broker="http://127.0.0.1:$port"
run curl -sS -X POST -H 'X-Forwarded-User: bob' "$broker/api/vdi/pools/vm/corral-vms/devpool/claim"
echo
step='reading the claim'
bobs=$(curl -sS -H 'X-Forwarded-User: bob' "$broker/api/vdi/desktops" | node -e '
  let text = ""; process.stdin.on("data", (chunk) => (text += chunk)).on("end", () => console.log(JSON.parse(text).desktops[0].member));
')
run corral-vdi pool list
show curl -sS -X POST -H 'X-Forwarded-User: bob' "$broker/api/vdi/desktops/vm/corral-vms/$bobs/release"
step='releasing through the broker'
release=$(curl -sS -X POST -H 'X-Forwarded-User: bob' "$broker/api/vdi/desktops/vm/corral-vms/$bobs/release")
printf '%s\n' "$release"
task=$(printf '%s' "$release" | node -e 'let t = ""; process.stdin.on("data", (c) => (t += c)).on("end", () => console.log(JSON.parse(t).task));')
for _ in $(seq 1 150); do
  state=$(curl -sS -H 'X-Forwarded-User: bob' "$broker/api/tasks/$task")
  case "$state" in *'"status":"running"'*) sleep 0.2 ;; *) break ;; esac
done
run curl -sS -H 'X-Forwarded-User: bob' "$broker/api/tasks/$task"
echo
printf '$ %s
' 'kill %1   # stop the broker'
kill "$broker_pid"
wait "$broker_pid" 2>/dev/null || true

say "8. When alice is done, take the desktop back. This stops the VM too."
run corral-vdi unassign "$member"

say '9. Container desktops: a pool of Pods from an image, each a shell, made again from the image on release.'
run corral-vdi ct-pool apply devbox --image ghcr.io/acme/devbox:1.4 --size 2
run corral-vdi ct-pool reconcile devbox
step='waiting for the devbox members to be Ready'
ready=no
for _ in $(seq 1 120); do
  ready=$(corral-vdi ct-pool get devbox -o json | node -e '
    let text = ""; process.stdin.on("data", (chunk) => (text += chunk)).on("end", () => {
      const { members } = JSON.parse(text).pool;
      console.log(members.length > 0 && members.every((member) => member.power === "running") ? "yes" : "no");
    });')
  [ "$ready" = yes ] && break
  sleep 0.5
done
[ "$ready" = yes ] || { printf 'the devbox members did not become Ready\n' >&2; exit 1; }
run corral-vdi ct-pool get devbox
show corral-vdi assign devbox alice --kind ct
step='running: corral-vdi assign devbox alice --kind ct'
ct_assigned=$(corral-vdi assign devbox alice --kind ct)
printf '%s\n' "$ct_assigned"
ct_member=$(printf '%s\n' "$ct_assigned" | grep -o 'devbox-[0-9]*' | head -n 1)
run corral-vdi connect "$ct_member" --kind ct
say 'With --open the CLI attaches to the shell; here a script types into it instead of a person.'
printf '$ corral-vdi connect %s --kind ct --open <<< %s\n' "$ct_member" "'echo \"hello from \$HOSTNAME\"'"
step="running: corral-vdi connect $ct_member --kind ct --open"
corral-vdi connect "$ct_member" --kind ct --open <<<'echo "hello from $HOSTNAME"'
run corral-vdi unassign "$ct_member" --kind ct
run corral-vdi ct-pool delete devbox

say '10. Tear the VM pool down, then the local control plane.'
run corral-vdi pool delete devpool
run corral-vdi dev-cluster down
cluster_up=0
step='finishing'
printf '\nThe walkthrough ran to the end.\n'
