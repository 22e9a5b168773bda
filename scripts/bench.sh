#!/usr/bin/env bash
# Builds and runs the scheduler benchmark; prints medians of 5 repetitions. Arguments go to
# Google Benchmark (e.g. --benchmark_filter='fgd/10000/').
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
exec ./build/bench/schedule_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_display_aggregates_only=true "$@"
