#!/usr/bin/env bash
# Installs the named Debian/Ubuntu packages that are not installed yet, as root or through sudo, after an
# apt-get update. Returns at once when all are installed. Without root or sudo it says in one line what to run.
# Usage: bash scripts/apt-install.sh <package>...
set -euo pipefail

missing=()
for package in "$@"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  printf '[setup] step %s failed: needs the packages %s, and installing them needs root or sudo; as root, run "apt-get update && apt-get install -y %s", then run the same command again\n' \
    "'apt install'" "${missing[*]}" "${missing[*]}" >&2
  exit 1
fi

printf '[setup] installing %s with apt-get\n' "${missing[*]}" >&2
"${as_root[@]}" apt-get update -qq >&2 || {
  printf "[setup] step 'apt-get update' failed (see above): check the network and the apt sources, then run the same command again\n" >&2
  exit 1
}
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null || {
  printf "[setup] step 'apt-get install %s' failed (see above): fix what apt reports, then run the same command again\n" "${missing[*]}" >&2
  exit 1
}
