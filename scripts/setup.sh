#!/usr/bin/env bash
# Installs what building and testing gpupool needs, from Debian packages. Idempotent: does
# nothing when everything is present. Needs root (or sudo) only when something is missing.
#   setup.sh          what building gpupool needs
#   setup.sh --test   and what the tests drive: a real Prometheus, clang's libFuzzer, curl
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config git
          googletest libgtest-dev libgmock-dev libbenchmark-dev
          libsqlite3-dev libssl-dev libcpp-httplib-dev nlohmann-json3-dev
          prometheus-cpp-dev libyaml-cpp-dev)
if [ "${1:-}" = "--test" ]; then
  packages+=(prometheus clang-14 libclang-rt-14-dev curl)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
