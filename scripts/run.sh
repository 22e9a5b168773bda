#!/usr/bin/env bash
# Runs gpupool: installs what it needs, builds, and starts the daemon on the embedded demo
# cluster (ten nodes: H100 whole, H100 in MIG, A100 time-shared; three tenants; a simulated
# executor and a trickle of demo jobs). State lives in ./gpupool-data (SQLite journal); the
# admin token and the tenants' tokens are written there. Arguments go to `gpupool serve`
# (e.g. --data-dir DIR; --listen 0.0.0.0:8080 with --tls-cert FILE --tls-key FILE, or
# --insecure-listen for plain HTTP beyond loopback).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
exec ./build/src/cli/gpupool serve --demo "$@"
