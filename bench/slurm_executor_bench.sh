#!/usr/bin/env bash
# The Slurm executor's figures (docs/benchmarks.md): N one-GPU jobs (`sleep 1`) submitted at once to
# gpupool over a real Slurm 22.05 (slurmctld, two slurmd with 8 h100 and 4 a100 fake GPUs,
# slurmrestd), as tests/slurm_executor_test.sh starts it. Prints, from each job's events, the time
# from admission to the start gpupool observed (Slurm RUNNING, seen at the executor's next poll;
# median and p99) and jobs per second through the executor (N over first admission to last end),
# and, as the baseline of the same run, the same jobs sbatch'd straight to Slurm.
# A job runs a second so that a poll sees it RUNNING: `true` ends between two polls, and gpupool
# then sees it COMPLETED with no start of its own to time.
# Usage: bench/slurm_executor_bench.sh GPUPOOL_BINARY [N=100] [POLL_MS=300] [SHARED_DIR]. Root.
set -u
bin=${1:?usage: slurm_executor_bench.sh GPUPOOL_BINARY [N] [POLL_MS] [SHARED_DIR]}
n=${2:-100}
poll=${3:-300}
here=$(cd "$(dirname "$0")" && pwd)
shared=${4:-$here/../../shared}
. "$here/../tests/lib/e2e.sh"
chmod 711 "$tmp"
export BASE=$tmp/slurm SLURM_CONF=$tmp/slurm/slurm.conf
trap 'BASE=$tmp/slurm "$shared/services/slurm/stop-slurm.sh" > /dev/null 2>&1; cleanup' EXIT
ACCT=0 REST=1 "$shared/services/slurm/start-slurm.sh" > "$tmp/slurm-start.log" 2>&1 || { cat "$tmp/slurm-start.log"; fail "Slurm did not start"; }
mkdir -p "$tmp/out"
# The baseline, in the same run: the same N jobs sbatch'd straight to Slurm, before gpupool starts.
t0=$(date +%s.%N)
for i in $(seq 1 "$n"); do
  type=h100; [ $((i % 3)) = 0 ] && type=a100
  sbatch --parsable -p gpu --gres=gpu:$type:1 -J base -o /dev/null --wrap 'sleep 1' > /dev/null || fail "sbatch"
done
until_ok 600 sh -c '[ -z "$(squeue -h -n base)" ]' || fail "the baseline's jobs did not end"
t1=$(date +%s.%N)
scontrol show job -o > "$tmp/base-jobs.txt" 2>&1 || true
python3 - "$tmp/base-jobs.txt" "$n" "$t0" "$t1" << 'EOF'
import datetime, statistics, sys
waits = []
for line in open(sys.argv[1]):
    f = dict(w.split('=', 1) for w in line.split() if '=' in w)
    if f.get('JobName') != 'base': continue
    a, b = (datetime.datetime.fromisoformat(f[k]).timestamp() for k in ('SubmitTime', 'StartTime'))
    waits.append(b - a)
waits.sort()
span = float(sys.argv[4]) - float(sys.argv[3])
print(f"baseline, sbatch straight to Slurm: {sys.argv[2]} jobs in {span:.1f} s ({int(sys.argv[2]) / span:.2f} jobs/s, "
      f"first sbatch to an empty queue); SubmitTime -> StartTime (whole seconds) median "
      f"{statistics.median(waits):.1f} s, p99 {waits[min(len(waits) - 1, int(round(0.99 * (len(waits) - 1))))]:.0f} s")
EOF
cat > "$tmp/config.yaml" << EOF
scheduler: {tick_ms: 100}
agents: {start_deadline_s: 120}
tenants:
  - {name: research, quotas: {h100-80gb: {guaranteed: 0}, a100-80gb: {guaranteed: 0}}}
executors:
  - {name: slurm, kind: slurm, slurmrestd: "http://127.0.0.1:16820", user: root, jwt_key_file: $BASE/jwt_hs256.key,
     partition: gpu, slurm_conf: $BASE/slurm.conf, working_directory: $tmp/out, poll_ms: $poll,
     gpu_flavors: {h100: h100-80gb, a100: a100-80gb}}
EOF
"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 >> "$tmp/daemon.log" 2>&1 &
pids+=($!)
until_ok 20 test -s "$tmp/data/port" || fail "daemon did not start"
export GPUPOOL_URL="http://127.0.0.1:$(cat "$tmp/data/port")" GPUPOOL_TOKEN="$(cat "$tmp/data/admin.token")"
until_ok 20 sh -c "'$bin' get nodes -o json | grep -q gpu02" || fail "Slurm's nodes did not join"
ids=()
for i in $(seq 1 "$n"); do
  flavor=h100-80gb; [ $((i % 3)) = 0 ] && flavor=a100-80gb
  ids+=("$("$bin" submit --tenant research --name "b$i" --flavor $flavor --gpus 1 --duration 60 -o json -- sleep 1 |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')")
done
all_done() {
  "$bin" get jobs -o json | python3 -c "
import json, sys
d = json.load(sys.stdin)
items = d['items'] if isinstance(d, dict) else d
sys.exit(0 if sum(1 for j in items if j['state'] in ('succeeded', 'failed')) >= $n else 1)"
}
until_ok 600 all_done || fail "not all $n jobs ended"
for id in "${ids[@]}"; do "$bin" describe job "$id" -o json; echo; done > "$tmp/jobs.jsonl"
# Slurm's own part: its jobs' SubmitTime to StartTime (whole seconds; kept for MinJobAge, 300 s).
scontrol show job -o > "$tmp/slurm-jobs.txt" 2>&1 || true
python3 - "$tmp/jobs.jsonl" "$n" "$poll" "$tmp/slurm-jobs.txt" << 'EOF'
import datetime, json, statistics, sys
def t(s): return datetime.datetime.fromisoformat(s.replace('Z', '+00:00')).timestamp()
lat, first, last, failed = [], None, None, 0
text, at, dec, jobs = open(sys.argv[1]).read(), 0, json.JSONDecoder(), []
while True:  # one JSON document per job, each over several lines
    while at < len(text) and text[at].isspace(): at += 1
    if at == len(text): break
    j, at = dec.raw_decode(text, at)
    jobs.append(j)
for j in jobs:
    ev = {}
    for e in j.get('events', []): ev.setdefault(e['type'], t(e['at']))
    a, s = ev.get('admitted'), ev.get('started')
    end = ev.get('succeeded', ev.get('failed'))
    if j['state'] != 'succeeded': failed += 1
    if a is None or s is None: continue
    lat.append(s - a)
    first = a if first is None else min(first, a)
    last = end if last is None else max(last, end or last)
lat.sort()
p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
print(f"jobs {sys.argv[2]} (failed {failed}), poll {sys.argv[3]} ms: admission -> observed RUNNING median "
      f"{statistics.median(lat):.3f} s, p99 {p99:.3f} s, max {lat[-1]:.3f} s; "
      f"{len(lat) / (last - first):.2f} jobs/s through the executor ({last - first:.1f} s)")
slurm = []
for line in open(sys.argv[4]):
    f = dict(w.split('=', 1) for w in line.split() if '=' in w)
    if not f.get('JobName', '').startswith('gpupool-'): continue
    try:
        a, b = (datetime.datetime.fromisoformat(f[k]).timestamp() for k in ('SubmitTime', 'StartTime'))
    except (KeyError, ValueError):
        continue
    slurm.append(b - a)
if slurm:
    slurm.sort()
    print(f"of which Slurm's own SubmitTime -> StartTime (whole seconds, {len(slurm)} jobs): median "
          f"{statistics.median(slurm):.1f} s, p99 {slurm[min(len(slurm) - 1, int(round(0.99 * (len(slurm) - 1))))]:.0f} s")
EOF
