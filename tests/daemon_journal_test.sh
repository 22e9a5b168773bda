#!/usr/bin/env bash
# A data directory whose journal went missing is refused, not bootstrapped anew over the old
# admin.token (issue 16 item 7, first part); a crash during the bootstrap (admin.token written,
# journal not yet) still bootstraps again. Usage: daemon_journal_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: daemon_journal_test.sh GPUPOOL_BINARY}
. "$(dirname "$0")/lib/e2e.sh"
cat > "$tmp/config.yaml" << 'EOF2'
tenants:
  - {name: a, quotas: {h100-80gb: {guaranteed: 8}}}
nodes:
  - {name: n, count: 1, flavor: h100-80gb, gpus: 8}
EOF2
serve_once() {  # starts serve on $tmp/data, waits for the port file, stops it; returns serve's status
  rm -f "$tmp/data/port"
  "$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 > "$tmp/daemon.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do [ -s "$tmp/data/port" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  kill -INT $pid 2>/dev/null
  wait $pid
}
serve_once || fail "the first start failed"
[ -s "$tmp/data/bootstrapped" ] || fail "no bootstrapped marker after the bootstrap"
token=$(cat "$tmp/data/admin.token")
serve_once || fail "a restart on an intact journal failed"
for f in journal.db journal.db-wal journal.db-shm; do rm -f "$tmp/data/$f"; done
if serve_once; then fail "started over a missing journal"; fi
grep -q "is empty or missing, but this data directory held a cluster" "$tmp/daemon.log" ||
  fail "the refusal does not say why: $(cat "$tmp/daemon.log")"
[ "$(cat "$tmp/data/admin.token")" = "$token" ] || fail "admin.token was overwritten"
[ ! -s "$tmp/data/journal.db" ] || python3 - "$tmp/data/journal.db" << 'EOF2' || fail "the refused start wrote a journal"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n = sum(c.execute("select count(*) from " + t).fetchone()[0] for (t,) in c.execute("select name from sqlite_master where type='table'"))
sys.exit(0 if n == 0 else 1)
EOF2
echo "a missing journal is refused; admin.token kept"
# A crash between admin.token and the journal's first flush: no marker yet, so it bootstraps again.
rm -rf "$tmp/data"; mkdir -p "$tmp/data"; echo old > "$tmp/data/admin.token"; chmod 600 "$tmp/data/admin.token"
serve_once || fail "a start after a crash during the bootstrap failed: $(cat "$tmp/daemon.log")"
[ "$(cat "$tmp/data/admin.token")" != old ] || fail "no new admin.token"
echo "daemon journal ok"
