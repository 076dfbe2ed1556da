#!/usr/bin/env bash
# Runs every check and every test: the build, then the unit, cluster and end-to-end tests against a real local
# control plane, with the set-up on a machine without Node.js, lint, typecheck, package checks and API docs
# running beside them. Sets up Node, dependencies and binaries first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

bash scripts/build-control-plane.sh >/dev/null
# KubeVirt's own virtctl, for the USB redirection tests
bash scripts/build-virtctl.sh >/dev/null
# KubeVirt's own virt-api and virt-controller, for the tests that run on them
bash scripts/build-kubevirt.sh >/dev/null
# Helm, for the tests of the chart in deploy/helm
bash scripts/build-helm.sh >/dev/null
# the browser tests drive Debian's Chromium; nothing is downloaded by the test libraries. The test kit's RDP guest
# is FreeRDP's shadow server on an Xvfb display (winpr-hash makes its NLA account); xdotool reads and drives that display
bash scripts/apt-install.sh chromium freerdp2-shadow-x11 xvfb winpr-utils xdotool

step() { printf '\n== %s\n' "$*"; }
step build && npx tsup --silent

# The checks that need no cluster run one after another beside the tests, which leave a core idle while they
# wait on the cluster; their output is printed after the tests, in this order, and a failed one fails the run.
checks=$(mktemp -d)
report=$(mktemp)
trap 'rm -rf "$checks" "$report"' EXIT
# Takes pairs of a name and one shell command.
run_checks() {
  local index=0 began
  while [ $# -gt 1 ]; do
    index=$((index + 1))
    began=$SECONDS
    bash -c "$2" >"$checks/$index.log" 2>&1 && echo 0 >"$checks/$index.rc" || echo 1 >"$checks/$index.rc"
    printf '%s (%d s)\n' "$1" $((SECONDS - began)) >"$checks/$index.name"
    shift 2
  done
}
run_checks \
  'lint' 'npx biome check .' \
  'typecheck' 'npx tsc --noEmit' \
  'package checks (publint, attw)' 'npx publint --strict && npx attw --pack . --profile node16' \
  'API docs (typedoc, warnings are errors)' 'npx typedoc --logLevel Warn' \
  'set-up without Node.js (scripts/test-bootstrap.sh)' 'bash scripts/test-bootstrap.sh' &
checks_pid=$!

step 'tests (lint, typecheck, package checks, API docs and the set-up check run beside them)'
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json="$report" || status=$?
node -e '
  const r = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
  console.log(`vitest: ${r.numPassedTests} passed, ${r.numFailedTests} failed`);
  // where the time goes, so that the next slowdown is seen where it starts
  const root = process.cwd() + "/";
  const files = r.testResults
    .map((file) => ({ name: file.name.replace(root, ""), ms: file.endTime - file.startTime }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 10);
  console.log("the ten slowest files:");
  for (const file of files) console.log(`${(file.ms / 1000).toFixed(1).padStart(8)} s  ${file.name}`);
' "$report"
wait "$checks_pid"
for rc in "$checks"/*.rc; do
  index=$(basename "$rc" .rc)
  step "$(cat "$checks/$index.name")"
  cat "$checks/$index.log"
  [ "$(cat "$rc")" = 0 ] || {
    echo "FAILED: $(cat "$checks/$index.name")"
    status=1
  }
done
exit "$status"
