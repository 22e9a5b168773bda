#!/usr/bin/env bash
# A data directory whose journal went missing is refused, not bootstrapped anew over the old
# admin.token (issue 16 item 7); a crash during the bootstrap (before the journal is durable)
# still bootstraps again, and one just after it keeps its admin token. Journals written by
# earlier versions (tests/fixtures/journal-v*) still replay. Every kind of damage to every file:
# daemon_journal_damage_test.sh. The data directory and its files are the owner's only (issue 18
# item 5). Usage: daemon_journal_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: daemon_journal_test.sh GPUPOOL_BINARY}
fixtures=$(cd "$(dirname "$0")/fixtures" && pwd)
. "$(dirname "$0")/lib/e2e.sh"
one_tenant_config "$tmp/config.yaml"
# serve_once [CHECK]: starts serve on $tmp/data, waits for the port file, runs CHECK (with $url
# set) if given, stops it; returns serve's status (CHECK's if that fails).
serve_once() {
  rm -f "$tmp/data/port"
  "$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 > "$tmp/daemon.log" 2>&1 &
  local pid=$! rc=0
  for _ in $(seq 100); do [ -s "$tmp/data/port" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if [ $# -gt 0 ] && [ -s "$tmp/data/port" ]; then url=http://127.0.0.1:$(cat "$tmp/data/port"); "$@" || rc=1; fi
  kill -INT $pid 2>/dev/null
  wait $pid || return
  return $rc
}
serve_once || fail "the first start failed"
[ -s "$tmp/data/bootstrapped" ] || fail "no bootstrapped marker after the bootstrap"
[ -s "$tmp/data/journal.hwm" ] || fail "no high-water mark after the bootstrap"
[ ! -e "$tmp/data/admin.token.new" ] || fail "admin.token.new left after the bootstrap"
token=$(cat "$tmp/data/admin.token")
# The data directory is the owner's only: 0700, its files 0600; also one an older version made
# readable (0755, 0644) once the daemon started on it again.
private() {
  [ "$(stat -c %a "$tmp/data")" = 700 ] || fail "$1: the data directory is $(stat -c %a "$tmp/data"), not 700"
  local f
  for f in "$tmp"/data/*; do
    [ -f "$f" ] || continue
    [ "$(stat -c %a "$f")" = 600 ] || fail "$1: $(basename "$f") is $(stat -c %a "$f"), not 600"
  done
}
private "after the bootstrap"
chmod 755 "$tmp/data"; chmod 644 "$tmp/data/journal.db" "$tmp/data/journal.hwm"
serve_once || fail "a restart on an intact journal failed"
private "after a restart on a readable data directory"
for f in journal.db journal.db-wal journal.db-shm; do rm -f "$tmp/data/$f"; done
if serve_once; then fail "started over a missing journal"; fi
grep -q "journal.db is missing or has no records, but its high-water mark .* says [0-9]* records were acknowledged" "$tmp/daemon.log" ||
  fail "the refusal does not say why: $(cat "$tmp/daemon.log")"
[ ! -e "$tmp/data/journal.db" ] || fail "the refused start created a journal"
# Without the mark too, admin.token and the marker still say a cluster lived here.
rm -f "$tmp/data/journal.hwm"
if serve_once; then fail "started over a missing journal and mark"; fi
grep -q "is empty or missing, but this data directory held a cluster" "$tmp/daemon.log" ||
  fail "the refusal does not say why: $(cat "$tmp/daemon.log")"
[ "$(cat "$tmp/data/admin.token")" = "$token" ] || fail "admin.token was overwritten"
[ ! -s "$tmp/data/journal.db" ] || python3 - "$tmp/data/journal.db" << 'EOF2' || fail "the refused start wrote a journal"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n = sum(c.execute("select count(*) from " + t).fetchone()[0] for (t,) in c.execute("select name from sqlite_master where type='table'"))
sys.exit(0 if n == 0 else 1)
EOF2
rm -f "$tmp/data/bootstrapped"
if serve_once; then fail "started a new cluster beside an old admin.token"; fi
grep -q "admin.token exists" "$tmp/daemon.log" || fail "the refusal does not name admin.token: $(cat "$tmp/daemon.log")"
echo "a missing journal is refused; admin.token kept"

# A crash between the secrets and the journal's first flush leaves admin.token.new only: it
# bootstraps again. A crash just after the flush: the next start renames it into place.
rm -rf "$tmp/data"; mkdir -p "$tmp/data"; echo old > "$tmp/data/admin.token.new"; chmod 600 "$tmp/data/admin.token.new"
serve_once || fail "a start after a crash during the bootstrap failed: $(cat "$tmp/daemon.log")"
[ -s "$tmp/data/admin.token" ] && [ "$(cat "$tmp/data/admin.token")" != old ] || fail "no new admin.token"
token=$(cat "$tmp/data/admin.token")
mv "$tmp/data/admin.token" "$tmp/data/admin.token.new"
serve_once || fail "a start after a crash just after the bootstrap's flush failed: $(cat "$tmp/daemon.log")"
[ "$(cat "$tmp/data/admin.token")" = "$token" ] || fail "admin.token.new was not put in place"
echo "a crash during the bootstrap bootstraps again; one after its flush keeps the token"

# Old journals replay: three jobs, the second cancelled; the old one gains checksums and a mark.
fixture_jobs() {
  python3 - "$url" "$(cat "$tmp/data/admin.token")" << 'EOF2'
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1] + "/v1/jobs", headers={"Authorization": "Bearer " + sys.argv[2].strip()})
jobs = sorted((j["name"], j["state"]) for j in json.load(urllib.request.urlopen(req))["items"])
want = [("fx-0", "pending"), ("fx-1", "cancelled"), ("fx-2", "pending")]
sys.exit(0 if jobs == want else f"jobs {jobs}, want {want}")
EOF2
}
for v in journal-v0 journal-v1; do
  rm -rf "$tmp/data"; cp -r "$fixtures/$v" "$tmp/data"
  serve_once fixture_jobs || fail "$v does not replay to its three jobs: $(cat "$tmp/daemon.log")"
  serve_once fixture_jobs || fail "$v does not replay after a restart: $(cat "$tmp/daemon.log")"
  [ -s "$tmp/data/journal.hwm" ] || fail "$v has no high-water mark after a start"
done
echo "the fixture journals replay"
echo "daemon journal ok"
