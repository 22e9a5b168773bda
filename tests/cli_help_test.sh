#!/usr/bin/env bash
# Every verb `gpupool help` lists (and the sim experiments) answers --help and -h with its usage
# on stdout and exit 0, and an unknown flag with exit 2, the flag named and the usage on stderr.
# No server is needed: nothing is sent. Usage: cli_help_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: cli_help_test.sh GPUPOOL_BINARY}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  echo "--- stdout:" >&2; head -5 "$tmp/out" >&2
  echo "--- stderr:" >&2; head -5 "$tmp/err" >&2
  failures=$((failures + 1))
}
run() { "$bin" "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null; rc=$?; }

# The verbs, from the help text itself, so a verb added there is walked here too.
run help
[ "$rc" -eq 0 ] || fail "gpupool help: exit $rc"
verbs=$(sed -n '/^commands:$/,/^$/p' "$tmp/out" | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
count=$(echo "$verbs" | wc -w)
[ "$count" -ge 20 ] || fail "only $count verbs in gpupool help: $verbs"
for v in get describe submit cancel delete create edit cordon uncordon drain reserve availability usage \
         logs serve agent demo catalogue sim completion version help; do
  echo "$verbs" | grep -qx "$v" || fail "gpupool help does not list $v"
done

walk() {  # walk WORDS...: the verb (or verb and experiment) given as words
  local name="$*"
  for h in --help -h; do
    run "$@" "$h"
    [ "$rc" -eq 0 ] || fail "gpupool $name $h: exit $rc, want 0"
    head -1 "$tmp/out" | grep -q "^usage: gpupool $name" || fail "gpupool $name $h: no 'usage: gpupool $name' line"
    [ -s "$tmp/err" ] && fail "gpupool $name $h wrote to stderr"
  done
  run "$@" --no-such-flag
  [ "$rc" -eq 2 ] || fail "gpupool $name --no-such-flag: exit $rc, want 2"
  grep -q -- "--no-such-flag" "$tmp/err" || fail "gpupool $name --no-such-flag: the flag is not named"
  grep -q "^usage: gpupool $name" "$tmp/err" || fail "gpupool $name --no-such-flag: no usage on stderr"
  [ -s "$tmp/out" ] && fail "gpupool $name --no-such-flag wrote to stdout"
}
for v in $verbs; do walk "$v"; done
walk sim replay
walk sim packing

# gpupool help VERB is VERB --help; the top level answers --help and -h, and errors with 2.
run help get
[ "$rc" -eq 0 ] && head -1 "$tmp/out" | grep -q '^usage: gpupool get' || fail "gpupool help get"
run help nosuchverb
[ "$rc" -eq 2 ] || fail "gpupool help nosuchverb: exit $rc"
for h in --help -h; do
  run "$h"
  [ "$rc" -eq 0 ] && grep -q '^commands:' "$tmp/out" || fail "gpupool $h"
done
run
[ "$rc" -eq 2 ] && grep -q '^commands:' "$tmp/err" || fail "gpupool with no verb: exit $rc"
run nosuchverb
[ "$rc" -eq 2 ] && grep -q "unknown command 'nosuchverb'" "$tmp/err" || fail "unknown verb: exit $rc"
run --bogus get jobs
[ "$rc" -eq 2 ] && grep -q "unknown flag --bogus before the command" "$tmp/err" || fail "unknown global flag"
run --token
[ "$rc" -eq 2 ] && grep -q -- "--token needs a value" "$tmp/err" || fail "global flag without a value"
run version
[ "$rc" -eq 0 ] && grep -q '^gpupool [0-9]' "$tmp/out" || fail "gpupool version"
run version extra
[ "$rc" -eq 2 ] || fail "gpupool version extra: exit $rc"

[ "$failures" -eq 0 ] || { echo "$failures failures" >&2; exit 1; }
echo "cli help ok ($count verbs)"
