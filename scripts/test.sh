#!/usr/bin/env bash
# Builds gpupool and runs every test (unit, scenario, property, layering, daemon over HTTP,
# crash recovery, Prometheus scrape, bounded fuzzing).
#   scripts/test.sh             the default run (CI)
#   scripts/test.sh --sanitize  the same under AddressSanitizer + UndefinedBehaviorSanitizer,
#                               in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
export GPUPOOL_SETUP_FLAGS=--test
if [ "${1:-}" = "--sanitize" ]; then
  export GPUPOOL_BUILD_DIR=build-asan
  # The fuzz target has its own clang sanitizers; two ASan runtimes cannot share a binary.
  ./scripts/build.sh -DGPUPOOL_SANITIZE=ON -DGPUPOOL_BENCH=OFF -DGPUPOOL_FUZZ=OFF
else
  # Line tables only (-g1): backtraces and sanitizer reports keep their lines, and the build
  # takes about a quarter less time than with full debug information (docs/benchmarks.md).
  ./scripts/build.sh -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
fi
build=${GPUPOOL_BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure -j "${GPUPOOL_JOBS:-$(nproc)}"
