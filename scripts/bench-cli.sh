#!/usr/bin/env bash
# The CLI's start time (docs/benchmarks.md, "CLI start"): median user+sys CPU of RUNS (200)
# one-after-the-other runs of `gpupool version`, the lean client against the full binary, and of
# a do-nothing process, the floor of this machine. With GPUPOOL_URL and GPUPOOL_TOKEN set (a
# running daemon), also of one request, `gpupool get nodes`, by each binary.
#   scripts/bench-cli.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
cmake --build build -j "${GPUPOOL_JOBS:-$(nproc)}" --target gpupool start_bench >/dev/null
commands=("build/src/cli/gpupool version" "build/src/cli/gpupool-full version" "/bin/true")
if [ -n "${GPUPOOL_URL:-}" ] && [ -n "${GPUPOOL_TOKEN:-}" ]; then
  commands+=("build/src/cli/gpupool get nodes" "build/src/cli/gpupool-full get nodes")
fi
for cmd in "${commands[@]}"; do
  # shellcheck disable=SC2086
  ./build/bench/start_bench "$runs" $cmd
done
