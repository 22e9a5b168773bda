#!/bin/sh
# Bounded libFuzzer run for ctest (fuzz_decoders). Copies the seed corpus to a temporary
# directory (the source tree is never written), fuzzes for SECONDS with a fixed seed, and fails
# on any finding: crash, uncaught exception, ASan error, leak, UB, OOM or timeout. Findings are
# kept in ARTIFACT_DIR (crash-*, leak-*, oom-*, timeout-*) for reproduction:
#   DECODE_FUZZ ARTIFACT_DIR/crash-...
#
# usage: run_fuzz.sh DECODE_FUZZ SEED_DIR DICT SECONDS ARTIFACT_DIR
set -u

if [ $# -ne 5 ]; then
  echo "usage: $0 DECODE_FUZZ SEED_DIR DICT SECONDS ARTIFACT_DIR" >&2
  exit 2
fi
bin=$1 seeds=$2 dict=$3 secs=$4 artifacts=$5

if [ ! -x "$bin" ]; then
  echo "run_fuzz: $bin is not built (ninja decode_fuzz)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/corpus" || exit 1
cp "$seeds"/* "$work/corpus/" || exit 1
rm -rf "$artifacts"
mkdir -p "$artifacts" || exit 1

# Leaks are reported at exit of each input's process state by libFuzzer (-detect_leaks=1 is
# its default with ASan); UBSan aborts on the first report (-fno-sanitize-recover=all).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:abort_on_error=0" \
UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1" \
"$bin" \
  -seed=1 \
  -max_total_time="$secs" \
  -rss_limit_mb=2048 \
  -timeout=10 \
  -max_len=4096 \
  -dict="$dict" \
  -artifact_prefix="$artifacts/" \
  -print_final_stats=1 \
  "$work/corpus"
rc=$?

found=$(ls -A "$artifacts")
if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
  echo "run_fuzz: FAILED (exit $rc); findings in $artifacts:" >&2
  for f in "$artifacts"/*; do
    [ -f "$f" ] || continue
    echo "--- $f ($(wc -c <"$f") bytes); reproduce: $bin $f" >&2
    od -c "$f" | head -n 20 >&2
  done
  exit 1
fi
echo "run_fuzz: no findings in ${secs} s"
exit 0
