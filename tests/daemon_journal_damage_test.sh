#!/usr/bin/env bash
# Every file of a data directory damaged in turn (a byte flipped in the middle and near the end,
# truncation to half, deletion), each on a fresh copy: each start either refuses, naming what is
# damaged, or has every acknowledged job (issue 16 item 7). Then --recover on a damaged WAL
# starts and says how many records it dropped. Then the history file (journal-history.db) and
# the newest snapshot, damaged the same way. Usage: daemon_journal_damage_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: daemon_journal_damage_test.sh GPUPOOL_BINARY}
. "$(dirname "$0")/lib/e2e.sh"
one_tenant_config "$tmp/config.yaml"
cat > "$tmp/jobs.py" << 'EOF2'
# jobs.py submit URL TOKEN N PREFIX: prints the ids of N acknowledged jobs.
# jobs.py check URL TOKEN IDS_FILE: exits 1 and names what is missing unless every job is there.
# jobs.py cancel URL TOKEN IDS_FILE: cancels each job.
# jobs.py check-history URL TOKEN IDS_FILE: as check, but a job the store cannot read (500,
# "cannot be read") is counted apart and printed, not missing: damage said, never hidden.
import http.client, json, sys, urllib.parse
mode, url, token = sys.argv[1], sys.argv[2], sys.argv[3]
u = urllib.parse.urlparse(url)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
if mode == "submit":
    for i in range(int(sys.argv[4])):
        body = {"tenant": "a", "name": f"{sys.argv[5]}-{i}", "priority_class": "batch", "replicas": 1,
                "resources": {"flavor": "h100-80gb", "gpus": 1}, "duration_estimate_s": 60, "command": ["true"]}
        c.request("POST", "/v1/jobs", json.dumps(body), h)
        r = c.getresponse(); d = r.read()
        if r.status != 201: sys.exit(f"submit: {r.status} {d!r}")
        print(json.loads(d)["id"])
elif mode == "cancel":
    for i in open(sys.argv[4]).read().split():
        c.request("DELETE", "/v1/jobs/" + i, headers=h)
        r = c.getresponse(); d = r.read()
        if r.status != 200: sys.exit(f"cancel {i}: {r.status} {d!r}")
else:
    ids = open(sys.argv[4]).read().split()
    missing, unreadable = [], []
    for i in ids:
        c.request("GET", "/v1/jobs/" + i, headers=h)
        r = c.getresponse(); d = r.read()
        if r.status == 500 and mode == "check-history" and b"cannot be read" in d: unreadable.append(i)
        elif r.status != 200: missing.append(f"{i}: {r.status}")
    if missing: sys.exit(f"{len(missing)} of {len(ids)} acknowledged jobs missing, e.g. {missing[:5]}")
    if unreadable: print(f"{len(unreadable)} of {len(ids)} jobs answered that the history cannot read them")
EOF2
# start DIR [FLAGS...]: starts serve on DIR; sets $pid, and $url once it serves; returns 1 if it exited.
start() {
  local dir=$1; shift
  rm -f "$dir/port"
  "$bin" serve --config "$tmp/config.yaml" --data-dir "$dir" --listen 127.0.0.1:0 "$@" > "$tmp/daemon.log" 2>&1 &
  pid=$!
  pids+=($pid)  # killed by e2e.sh's cleanup if a check fails while it runs
  for _ in $(seq 100); do
    [ -s "$dir/port" ] && { url="http://127.0.0.1:$(cat "$dir/port")"; return 0; }
    kill -0 $pid 2>/dev/null || return 1
    sleep 0.05
  done
  fail "serve neither started nor exited in 5 s"
}
stop() { kill -INT $pid 2>/dev/null; wait $pid; }

# --- a data directory with 300 acknowledged jobs: 150 checkpointed into journal.db by a clean
# stop, 150 more in the WAL when the daemon is killed.
data=$tmp/pristine
start "$data" || fail "the first start failed"
token=$(cat "$data/admin.token")
python3 "$tmp/jobs.py" submit "$url" "$token" 150 first > "$tmp/ids" || fail "submitting"
stop
start "$data" || fail "the restart failed"
python3 "$tmp/jobs.py" submit "$url" "$token" 150 second >> "$tmp/ids" || fail "submitting"
kill -9 $pid; wait $pid 2>/dev/null
[ "$(wc -l < "$tmp/ids")" = 300 ] || fail "not 300 acknowledged jobs"
[ "$(stat -c %s "$data/journal.db-wal")" -gt 100000 ] || fail "the WAL holds too little to damage: $(ls -l "$data")"
rm -f "$data/port"

damage() {  # damage FILE KIND
  local f=$1 size; size=$(stat -c %s "$f")
  case $2 in
    flip-middle|flip-end)
      local at=$(( size / 2 )); [ $2 = flip-end ] && at=$(( size > 8 ? size - 8 : 0 ))
      python3 -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^0xff]) if b else b"")' "$f" $at ;;
    truncate) truncate -s $(( size / 2 )) "$f" ;;
    delete) rm -f "$f" ;;
  esac
}
# The damage that must be refused (detection, not luck): the journal's tail or a file of it gone.
must_refuse="journal.db-wal/flip-middle journal.db-wal/flip-end journal.db-wal/truncate journal.db-wal/delete
             journal.db/delete journal.hwm/delete"
refused=0; complete=0
for file in journal.db journal.db-wal journal.db-shm journal.hwm bootstrapped admin.token lock; do
  [ -e "$data/$file" ] || fail "no $file in the data directory: $(ls "$data")"
  for kind in flip-middle flip-end truncate delete; do
    case_dir=$tmp/case; rm -rf "$case_dir"; cp -a "$data" "$case_dir"
    damage "$case_dir/$file" $kind
    if start "$case_dir"; then
      python3 "$tmp/jobs.py" check "$url" "$token" "$tmp/ids" > "$tmp/check.log" 2>&1 ||
        fail "$file/$kind: started with less data: $(cat "$tmp/check.log")"
      stop
      case " $must_refuse " in *" $file/$kind "*) fail "$file/$kind: started (with every job) although it must be refused";; esac
      echo "$file/$kind: started, every acknowledged job present"; complete=$((complete + 1))
    else
      wait $pid; rc=$?
      [ $rc != 0 ] || fail "$file/$kind: exited 0 without serving"
      name=$file; [ $file = journal.db-shm ] && name=journal.db
      grep -q "gpupool serve: .*$name" "$tmp/daemon.log" || fail "$file/$kind: the refusal does not name $name: $(cat "$tmp/daemon.log")"
      echo "$file/$kind: refused: $(grep -o 'gpupool serve: .*' "$tmp/daemon.log" | cut -c1-160)"; refused=$((refused + 1))
    fi
  done
done
echo "$refused refused, $complete started complete"

# --- --recover on a WAL damaged in the middle: starts, says how many records it dropped, keeps
# the damaged files, and the next plain start is clean.
case_dir=$tmp/recover; rm -rf "$case_dir"; cp -a "$data" "$case_dir"
damage "$case_dir/journal.db-wal" flip-middle
if start "$case_dir"; then fail "started on a damaged WAL"; fi
start "$case_dir" --recover || fail "--recover did not start: $(cat "$tmp/daemon.log")"
dropped=$(grep -o '"--recover: kept records 1\.\.[0-9]*, dropped [0-9]*' "$tmp/daemon.log" | grep -o '[0-9]*$')
[ -n "$dropped" ] && [ "$dropped" -gt 0 ] || fail "--recover does not say how many records it dropped: $(cat "$tmp/daemon.log")"
python3 "$tmp/jobs.py" check "$url" "$token" <(head -n 150 "$tmp/ids") || fail "--recover lost the checkpointed jobs"
stop
ls "$case_dir"/journal.db.damaged-1-wal > /dev/null || fail "the damaged WAL was not kept"
start "$case_dir" || fail "a plain start after --recover failed: $(cat "$tmp/daemon.log")"
stop
echo "--recover dropped $dropped records and started"

# --- the history file: 200 jobs cancelled, archived at once (--retention-s 0) and moved by the
# compactions of frequent snapshots into journal-history.db. Each damage to it is refused
# (naming the file), or every job is served, or a job the history cannot read answers so (500)
# and is never "not found".
hist=$tmp/hist
start "$hist" --retention-s 0 --snapshot-every-records 40 || fail "the history start failed"
htoken=$(cat "$hist/admin.token")
python3 "$tmp/jobs.py" submit "$url" "$htoken" 200 old > "$tmp/hids" || fail "submitting"
python3 "$tmp/jobs.py" cancel "$url" "$htoken" "$tmp/hids" || fail "cancelling"
python3 "$tmp/jobs.py" submit "$url" "$htoken" 40 pad >> "$tmp/hids" || fail "submitting"  # records for a snapshot
sleep 1
stop
grep -q '"history scrub: clean"' "$tmp/daemon.log" || fail "the scrub of an undamaged history did not say clean"
[ "$(stat -c %s "$hist/journal-history.db")" -gt 100000 ] || fail "too little history moved: $(ls -l "$hist")"
rm -f "$hist/port"
snap=$(cd "$hist" && ls snapshot-*.snap | tail -1)
[ -n "$snap" ] || fail "no snapshot was written: $(ls "$hist")"
# The newest snapshot too: each start refuses (naming it) or has every job.
for file in journal-history.db "$snap"; do
  for kind in flip-middle flip-end truncate delete; do
    case_dir=$tmp/case; rm -rf "$case_dir"; cp -a "$hist" "$case_dir"
    damage "$case_dir/$file" $kind
    if start "$case_dir"; then
      python3 "$tmp/jobs.py" check-history "$url" "$htoken" "$tmp/hids" > "$tmp/check.log" 2>&1 ||
        fail "$file/$kind: started with less data: $(cat "$tmp/check.log")"
      # The background scrub reads the whole history a second after the start: damage a read met
      # is damage it reports.
      until_ok 10 grep -q '"history scrub' "$tmp/daemon.log" || fail "$file/$kind: no history scrub ran"
      scrub=$(grep -o '"msg":"history scrub[^"]*"' "$tmp/daemon.log" | head -1)
      if [ -s "$tmp/check.log" ] && [ "$file" = journal-history.db ]; then
        case $scrub in *damaged*) ;; *) fail "$file/$kind: jobs unreadable, yet the scrub said: $scrub";; esac
      fi
      stop
      echo "$file/$kind: started; $(tr -d '\n' < "$tmp/check.log")" | sed 's/; $/; every job served/'
      echo "  scrub: $scrub"
      case $file/$kind in
        journal-history.db/truncate|journal-history.db/delete) fail "$file/$kind: started although it must be refused";;
      esac
    else
      wait $pid; rc=$?
      [ $rc != 0 ] || fail "$file/$kind: exited 0 without serving"
      name=$file; [ "$file" = "$snap" ] && name=snapshot
      grep -q "gpupool serve: .*$name" "$tmp/daemon.log" || fail "$file/$kind: the refusal does not name $name: $(cat "$tmp/daemon.log")"
      echo "$file/$kind: refused: $(grep -o 'gpupool serve: .*' "$tmp/daemon.log" | cut -c1-160)"
    fi
  done
done
echo "daemon journal damage ok"
