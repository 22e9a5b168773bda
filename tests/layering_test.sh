#!/usr/bin/env bash
# The layering rule of STYLE.md: core, model, policy, scheduler and accounting
# include no thread, file, socket, HTTP or JSON headers, read no clock and draw no unseeded
# randomness. The single exception is core/check.cc, which prints a failed check to stderr
# before aborting.
#
# Usage: layering_test.sh SRC_DIR. Exits non-zero and lists the offending lines on a violation.
set -u
src=${1:?usage: layering_test.sh SRC_DIR}

forbidden_includes='#include[[:space:]]*[<"](thread|mutex|shared_mutex|condition_variable|future|atomic|chrono|ctime|time\.h|fstream|iostream|cstdio|stdio\.h|filesystem|unistd\.h|fcntl\.h|sys/[a-z_]+\.h|netinet/[a-z_]+\.h|arpa/[a-z_]+\.h|netdb\.h|httplib\.h|nlohmann/[a-z_]+\.hpp|sqlite3\.h|libpq-fe\.h|curl/curl\.h|random)[>"]'
forbidden_calls='(system_clock|steady_clock|high_resolution_clock|random_device|[^a-z_]rand\(|[^a-z_]srand\(|[^a-z_]time\(|gettimeofday|clock_gettime|std::thread|std::async)'

scan() {  # scan DIR... : prints offending lines
  grep -rnE --include='*.h' --include='*.cc' "$forbidden_includes|$forbidden_calls" "$@" 2>/dev/null |
    grep -v -E '(^|/)core/check\.cc:[0-9]+:#include <cstdio>' |
    grep -v -E '_test\.cc:'
}

# Self-test: the scan must catch a planted violation, or this test proves nothing.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scheduler"
printf '#include <thread>\nint x = std::chrono::system_clock::now();\n' > "$tmp/scheduler/bad.cc"
if [ -z "$(scan "$tmp")" ]; then
  echo "layering_test: the scan missed a planted violation" >&2
  exit 2
fi

dirs=()
for d in core model policy scheduler accounting; do
  [ -d "$src/$d" ] && dirs+=("$src/$d")
done
bad=$(scan "${dirs[@]}")
if [ -n "$bad" ]; then
  echo "layering violations (pure layers must not do I/O, threads, clocks or randomness):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "layering ok: ${dirs[*]}"
