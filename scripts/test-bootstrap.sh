#!/usr/bin/env bash
# Tests the set-up (scripts/env.sh) as on a machine without Node.js: runs it in a scratch HOME and project with
# a PATH that has every command but node and npm, and checks that it ends with a Node >= 22.19 and says what it
# did; then that a failing step (an unreachable registry for the Node fetch, for npm ci) is named with how to
# retry, and that without root or sudo the apt step says what to install. Nothing is uninstalled: node and npm
# are hidden with PATH and HOME only. Quick once npm's cache holds Node 24.
set -euo pipefail

scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# npm's download cache is shared so the Node 24 package is fetched once per machine, not once per run.
npm_cache=$(npm config get cache)

failures=0
pass() { printf 'ok   %s\n' "$1"; }
fail() {
  printf 'FAIL %s\n' "$1"
  [ -f "${2:-}" ] && sed 's/^/     | /' "$2"
  failures=$((failures + 1))
}

# Every command on PATH except node, npm, npx, corepack and sudo, linked into one folder.
hidden_bin="$scratch/bin"
mkdir "$hidden_bin"
IFS=: read -ra path_dirs <<<"$PATH"
for dir in "${path_dirs[@]}"; do
  for command in "$dir"/*; do
    name=${command##*/}
    case "$name" in node | nodejs | npm | npx | corepack | sudo) continue ;; esac
    [ -x "$command" ] && [ ! -d "$command" ] && [ ! -e "$hidden_bin/$name" ] && ln -s "$command" "$hidden_bin/$name"
  done
done

# A project with the set-up script and a lock without dependencies.
new_project() {
  local project="$scratch/$1"
  mkdir -p "$project/scripts"
  cp "$scripts/env.sh" "$scripts/apt-install.sh" "$project/scripts/"
  printf '{"name":"bootstrap-check","version":"1.0.0","private":true}\n' >"$project/package.json"
  printf '{"name":"bootstrap-check","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"bootstrap-check","version":"1.0.0"}}}\n' \
    >"$project/package-lock.json"
  printf '%s\n' "$project"
}

# Runs a command in a project with only the hidden PATH, a scratch HOME and the given variables.
run_hidden() {
  local project=$1 home=$2
  shift 2
  mkdir -p "$home"
  (cd "$project" && env -i PATH="$hidden_bin" HOME="$home" LANG=C.UTF-8 "$@")
}

if run_hidden "$scratch" "$scratch/home-check" bash -c 'command -v node || command -v npm' >/dev/null; then
  fail 'node and npm are hidden from PATH'
else
  pass 'node and npm are hidden from PATH'
fi

# 1. The set-up ends with a working Node >= 22.19 and says what it did.
project=$(new_project fresh)
log="$scratch/fresh.log"
if run_hidden "$project" "$scratch/home" npm_config_cache="$npm_cache" npm_config_prefer_offline=true \
  bash -c 'source scripts/env.sh && node -e "console.log(\"node \" + process.versions.node)"' >"$log" 2>&1 &&
  grep -Eq '^node (2[3-9]|[3-9][0-9])\.|^node 22\.(19|[2-9][0-9])\.' "$log" &&
  grep -q '^\[setup\] installing Node 24' "$log" &&
  grep -q '^\[setup\] using Node v' "$log" &&
  grep -q '^\[setup\] npm ci' "$log"; then
  pass 'without node and npm on PATH the set-up installs Node 24, says so, and runs npm ci'
else
  fail 'without node and npm on PATH the set-up installs Node 24, says so, and runs npm ci' "$log"
fi

# 2. A second run reuses what the first installed and is silent about installing.
log="$scratch/again.log"
if run_hidden "$project" "$scratch/home" bash -c 'source scripts/env.sh && node --version' >"$log" 2>&1 &&
  ! grep -q 'installing\|npm ci' "$log"; then
  pass 'a second run reuses the installed Node and dependencies'
else
  fail 'a second run reuses the installed Node and dependencies' "$log"
fi

# 3. An unreachable registry fails the Node fetch, which is named with how to retry.
log="$scratch/unreachable.log"
if run_hidden "$(new_project unreachable)" "$scratch/home-unreachable" npm_config_registry=http://127.0.0.1:9/ \
  npm_config_fetch_retries=0 bash -c 'source scripts/env.sh' >"$log" 2>&1; then
  fail 'an unreachable registry fails the node fetch step by name' "$log"
elif grep -q "^\[setup\] step 'node fetch' failed: .*run \"source scripts/env.sh\" again" "$log"; then
  pass 'an unreachable registry fails the node fetch step by name'
else
  fail 'an unreachable registry fails the node fetch step by name' "$log"
fi

# 4. A dependency that cannot be fetched fails npm ci, which is named with how to retry.
project=$(new_project broken-lock)
printf '{"name":"bootstrap-check","version":"1.0.0","private":true,"dependencies":{"left-pad":"1.3.0"}}\n' \
  >"$project/package.json"
printf '%s\n' '{"name":"bootstrap-check","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"bootstrap-check","version":"1.0.0","dependencies":{"left-pad":"1.3.0"}},"node_modules/left-pad":{"version":"1.3.0","resolved":"http://127.0.0.1:9/left-pad-1.3.0.tgz","integrity":"sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQEXIUjPSgZlpB6inrMqRm8sHdX58iUXBfcHyIa+z5ki6Rbzgb9A=="}}}' \
  >"$project/package-lock.json"
log="$scratch/npm-ci.log"
if run_hidden "$project" "$scratch/home" npm_config_cache="$scratch/empty-cache" npm_config_fetch_retries=0 \
  bash -c 'source scripts/env.sh' >"$log" 2>&1; then
  fail 'a dependency that cannot be fetched fails the npm ci step by name' "$log"
elif grep -q "^\[setup\] step 'npm ci' failed: .*run \"source scripts/env.sh\" again" "$log"; then
  pass 'a dependency that cannot be fetched fails the npm ci step by name'
else
  fail 'a dependency that cannot be fetched fails the npm ci step by name' "$log"
fi

# 5. Without root or sudo, the apt step says in one line exactly what to install.
chmod -R a+rX "$scratch"
# root runs these as nobody; anyone else is unprivileged already, and sudo is not on the hidden PATH
unprivileged=()
[ "$(id -u)" -ne 0 ] || unprivileged=(setpriv --reuid=65534 --regid=65534 --clear-groups)
log="$scratch/no-root.log"
if run_hidden "$scratch" "$scratch/home-nobody" "${unprivileged[@]}" \
  bash "$scratch/fresh/scripts/apt-install.sh" corral-vdi-no-such-package >"$log" 2>&1; then
  fail 'without root or sudo the apt step names the packages to install, in one line' "$log"
elif [ "$(wc -l <"$log")" -eq 1 ] &&
  grep -q 'as root, run "apt-get update && apt-get install -y corral-vdi-no-such-package"' "$log"; then
  pass 'without root or sudo the apt step names the packages to install, in one line'
else
  fail 'without root or sudo the apt step names the packages to install, in one line' "$log"
fi

# 6. Installed packages need no apt-get at all, so no root either.
log="$scratch/installed.log"
if run_hidden "$scratch" "$scratch/home-nobody" "${unprivileged[@]}" \
  bash "$scratch/fresh/scripts/apt-install.sh" bash coreutils >"$log" 2>&1 && [ ! -s "$log" ]; then
  pass 'packages that are installed already need no apt-get'
else
  fail 'packages that are installed already need no apt-get' "$log"
fi

[ "$failures" -eq 0 ] || {
  printf '%s set-up check(s) failed\n' "$failures"
  exit 1
}
