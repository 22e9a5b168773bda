#!/usr/bin/env bash
# Installs what building and testing gpupool needs, from Debian packages. Idempotent: does
# nothing when everything is present. Needs root (or sudo) only when something is missing.
#   setup.sh          what building gpupool needs
#   setup.sh --test   and what the tests drive: a real PostgreSQL 15, a real Prometheus, clang's libFuzzer, curl,
#                     Debian's Chromium, zsh (the completion test), Node.js with npm, and the
#                     tests' npm packages (playwright-core, pinned in tests/console/package-lock.json,
#                     no browser download; oidc-provider, pinned in tests/oidc/package-lock.json),
#                     and Slurm (slurmctld, slurmd, slurmrestd, slurmdbd, MariaDB, munge) for the Slurm executor's test
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config git
          googletest libgtest-dev libgmock-dev libbenchmark-dev
          libsqlite3-dev libssl-dev libcpp-httplib-dev nlohmann-json3-dev
          prometheus-cpp-dev libyaml-cpp-dev libboost-dev libpq-dev)
test=0
if [ "${1:-}" = "--test" ]; then
  test=1
  packages+=(postgresql-15 prometheus clang-14 libclang-rt-14-dev curl chromium fonts-liberation zsh)
  # A real Slurm 22.05 for the Slurm executor's test (slurmctld, slurmd, slurmrestd with JWT auth;
  # slurmdbd over MariaDB for the accounting reconciliation).
  packages+=(slurm-wlm munge slurmrestd slurm-wlm-jwt-plugin slurmdbd mariadb-server bc)  # bc: start-slurm.sh's timings
  # Node.js and npm: the machine's own if it has them (e.g. NodeSource's, which bundles npm),
  # else Debian's.
  command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
fi

# The npm packages of the browser and OIDC tests, once Node.js is there: playwright-core in
# tests/console, oidc-provider in tests/oidc (each pinned in its package-lock.json).
npm_packages() {
  [ $test -eq 1 ] || return 0
  local root dir
  root="$(cd "$(dirname "$0")/.." && pwd)/tests"
  local ca=""
  [ -r /etc/ssl/certs/ca-certificates.crt ] && ca=/etc/ssl/certs/ca-certificates.crt
  for dir in console:playwright-core oidc:oidc-provider; do
    [ -d "$root/${dir%%:*}/node_modules/${dir#*:}" ] && continue
    echo "setup: npm ci in tests/${dir%%:*}" >&2
    # Not fatal: without the npm registry (or its TLS chain) these tests are skipped, loudly,
    # and every other test still runs.
    # Node bundles its own CA list; the system's store may hold more (a site's TLS-inspecting
    # proxy: without it a fresh Debian chroot got SELF_SIGNED_CERT_IN_CHAIN from the registry).
    if ! (cd "$root/${dir%%:*}" && NODE_EXTRA_CA_CERTS=$ca npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
      echo "setup: WARNING: npm ci failed in tests/${dir%%:*}; its tests will be skipped" >&2
    fi
  done
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  npm_packages
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
npm_packages
