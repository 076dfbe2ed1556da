#!/usr/bin/env bash
# Runs every check and every test: the set-up on a machine without Node.js, lint, typecheck, build, package
# checks, API docs, then the unit, cluster and end-to-end tests against a real local control plane. Sets up
# Node, dependencies and binaries first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

bash scripts/build-control-plane.sh >/dev/null
# KubeVirt's own virtctl, for the USB redirection tests
bash scripts/build-virtctl.sh >/dev/null
# the browser tests drive Debian's Chromium; nothing is downloaded by the test libraries
bash scripts/apt-install.sh chromium

step() { printf '\n== %s\n' "$*"; }
step 'set-up without Node.js (scripts/test-bootstrap.sh)' && bash scripts/test-bootstrap.sh
step lint && npx biome check .
step typecheck && npx tsc --noEmit
step build && npx tsup --silent
step 'package checks (publint, attw)' && npx publint --strict && npx attw --pack . --profile node16
step 'API docs (typedoc, warnings are errors)' && npx typedoc --logLevel Warn

step tests
report=$(mktemp)
trap 'rm -f "$report"' EXIT
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
exit "$status"
