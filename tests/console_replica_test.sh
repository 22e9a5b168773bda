#!/usr/bin/env bash
# The web console on a daemon with replicas (issue 17 item 2), in headless Chromium: two
# `gpupool serve` on the tests' PostgreSQL; the console opened on the follower's URL moves to
# the leader's, signs in there and writes (tests/console/console_replica_test.mjs).
# Usage: console_replica_test.sh GPUPOOL_BINARY
# Exits 77 (skipped) only when Chromium or the npm packages are missing, as console_test.sh.
set -u
bin=${1:?usage: console_replica_test.sh GPUPOOL_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
command -v chromium > /dev/null || { echo "skip: no chromium (scripts/setup.sh --test installs it)"; exit 77; }
[ -d "$here/console/node_modules/playwright-core" ] || { echo "skip: run npm ci in tests/console (scripts/setup.sh --test does)"; exit 77; }
. "$here/lib/e2e.sh"
pg_url=$("$here/../scripts/test-postgres.sh" start) || fail "the tests' PostgreSQL did not start"
store="$pg_url&gpupool_schema=console_$$_$RANDOM"
one_tenant_config "$tmp/config.yaml"
declare -A port
for r in 1 2; do
  port[$r]=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$bin" serve --config "$tmp/config.yaml" --store "$store" --data-dir "$tmp/data-$r" --listen "127.0.0.1:${port[$r]}" \
    >> "$tmp/daemon.log" 2>&1 &
  pids+=($!)
done
role_of() { curl -sf -m 1 "http://127.0.0.1:${port[$1]}/healthz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["role"])' 2>/dev/null; }
both_up() { [ -n "$(role_of 1)" ] && [ -n "$(role_of 2)" ] && { [ "$(role_of 1)" = leader ] || [ "$(role_of 2)" = leader ]; }; }
until_ok 30 both_up || fail "the replicas did not start"
leader=1 follower=2
[ "$(role_of 1)" = leader ] || { leader=2; follower=1; }
until_ok 10 test -s "$tmp/data-$leader/admin.token" || fail "the leader wrote no admin.token"
node "$here/console/console_replica_test.mjs" "http://127.0.0.1:${port[$follower]}" "http://127.0.0.1:${port[$leader]}" \
  "$(cat "$tmp/data-$leader/admin.token")" || fail "browser test failed"
echo "console replica ok"
