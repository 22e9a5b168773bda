#!/usr/bin/env bash
# Configures and builds gpupool into build/ (or $GPUPOOL_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh ${GPUPOOL_SETUP_FLAGS:-}
build=${GPUPOOL_BUILD_DIR:-build}
jobs=${GPUPOOL_JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${GPUPOOL_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
cmake --build "$build" -j "$jobs"
