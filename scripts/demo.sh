#!/usr/bin/env bash
# Builds gpupool and runs its demo: a small cluster, three tenants, a generated day of work.
# Arguments go to `gpupool demo` (e.g. --hours 24 --policy bestfit).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
exec ./build/src/cli/gpupool demo "$@"
