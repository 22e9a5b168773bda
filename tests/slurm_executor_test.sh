#!/usr/bin/env bash
# gpupool over a real Slurm 22.05 (issue 20): slurmctld, two slurmd with fake GPUs (gpu01: 8 x
# h100, gpu02: 4 x a100) and slurmrestd with JWT auth, started from ../shared/services/slurm; the
# daemon with a Slurm executor that mints its own tokens from Slurm's HS256 key.
#  1. the partition's nodes join gpupool, labelled and with "executor": "slurm";
#  2. two tenants' jobs run on the node gpupool chose with the GPU count it counted (the job
#     prints SLURM_JOB_NODELIST and CUDA_VISIBLE_DEVICES); a failing job fails with its exit code;
#  3. reclaim: research takes back its guarantee from product's borrowing Slurm job, which is
#     cancelled in Slurm and requeued in gpupool, and runs again (attempt 2) afterwards;
#  4. drain both ways: a node drained in Slurm is drained in gpupool and its job requeued; back
#     when Slurm resumes it; `gpupool drain` drains the node in Slurm, `uncordon` resumes it;
#  5. kill -9 of the daemon while a Slurm job runs: after the restart it is not submitted again;
#  6. slurmrestd down: a submission waits and goes through once it is back, once;
#  7-9. the ledger against sacct, jobs outside gpupool, a reservation on Slurm nodes;
#  10. a node agent's pool beside Slurm's in one cluster.
# Usage: slurm_executor_test.sh GPUPOOL_BINARY [SHARED_DIR]. Exits 77 (skipped) without Slurm.
set -u
bin=${1:?usage: slurm_executor_test.sh GPUPOOL_BINARY [SHARED_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
shared=${2:-$here/../../shared}
slurm_dir=$shared/services/slurm
for t in slurmctld slurmd slurmrestd munged scontrol; do
  command -v "$t" > /dev/null || [ -x "/usr/sbin/$t" ] || { echo "skipped: $t is not installed (scripts/setup.sh --test installs it)"; exit 77; }
done
[ -x "$slurm_dir/start-slurm.sh" ] || { echo "skipped: no $slurm_dir"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "skipped: Slurm's test cluster needs root"; exit 77; }
# slurmd 22.05 initialises its cgroup plugin whatever the config says, and stops without a
# cgroup filesystem (a chroot that binds /sys alone, as ../shared/tools/fresh-machine.sh does).
mountpoint -q /sys/fs/cgroup || { echo "skipped: no cgroup filesystem on /sys/fs/cgroup, which slurmd needs"; exit 77; }
. "$here/lib/e2e.sh"

# munged and slurmrestd run as their own users: they must reach $BASE (nothing else of $tmp is theirs to read).
chmod 711 "$tmp"
export BASE=$tmp/slurm SLURM_CONF=$tmp/slurm/slurm.conf
stop_slurm() { BASE=$tmp/slurm "$slurm_dir/stop-slurm.sh" > /dev/null 2>&1; }
trap 'stop_slurm; cleanup' EXIT
ACCT=1 REST=1 "$slurm_dir/start-slurm.sh" > "$tmp/slurm-start.log" 2>&1 || { cat "$tmp/slurm-start.log"; fail "Slurm did not start"; }
# The tenants are Slurm accounts (AccountingStorageEnforce=associations: a job of an unknown
# account is refused), and the user gpupool submits as may use them.
for acct in research product; do sacctmgr -i add account "$acct" > /dev/null || fail "sacctmgr add account $acct"; done
sacctmgr -i add user root Account=research,product > /dev/null || fail "sacctmgr add user root"
restd_pid=$(cat "$BASE/pids/slurmrestd")
mkdir -p "$tmp/out"

cat > "$tmp/config.yaml" << EOF
scheduler: {tick_ms: 100}
agents: {start_deadline_s: 60}
priority_classes:
  - {name: training, value: 500, preemptible: true, may_borrow: true, grace_period_s: 2, min_runtime_s: 0, default: true}
tenants:
  - {name: research, quotas: {h100-80gb: {guaranteed: 0}}}
  - {name: product, quotas: {a100-80gb: {guaranteed: 0}}}
executors:
  - name: slurm
    kind: slurm
    slurmrestd: http://127.0.0.1:16820
    user: root
    jwt_key_file: $BASE/jwt_hs256.key
    partition: gpu
    slurm_conf: $BASE/slurm.conf
    working_directory: $tmp/out
    poll_ms: 300
    accounts: true
    sacct: sacct
    accounting_poll_s: 1
    gpu_flavors: {h100: h100-80gb, a100: a100-80gb}
EOF
start_daemon() {
  "$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 >> "$tmp/daemon.log" 2>&1 &
  daemon_pid=$!
  pids+=($daemon_pid)
}
rm -f "$tmp/data/port"
start_daemon
until_ok 20 test -s "$tmp/data/port" || fail "daemon did not start"
export GPUPOOL_URL="http://127.0.0.1:$(cat "$tmp/data/port")" GPUPOOL_TOKEN="$(cat "$tmp/data/admin.token")"

node_field() { "$bin" describe node "$1" -o json | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"; }
job_field() { "$bin" describe job "$1" -o json | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"; }
job_is() { [ "$(job_field "$1" 'd["state"]')" = "$2" ]; }
submit() {  # submit TENANT FLAVOR GPUS -- COMMAND...: prints the job id
  local tenant=$1 flavor=$2 gpus=$3; shift 4
  "$bin" submit --tenant "$tenant" --name "t-$tenant" --flavor "$flavor" --gpus "$gpus" --duration 600 -o json -- "$@" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}
slurm_jobs_of() {  # slurm_jobs_of ID: the Slurm jobs gpupool submitted for it, "ID STATE COMMENT" a line
  squeue -h -a -t all -n "gpupool-$1" -o '%i %T %k'
}

# 1. The nodes join from Slurm.
until_ok 20 sh -c "'$bin' get nodes -o json | grep -q gpu02" || fail "Slurm's nodes did not join"
[ "$(node_field gpu01 'd["executor"], d["gpus"], d["flavor"], d["condition"]')" = "slurm 8 h100-80gb ready" ] ||
  fail "gpu01 joined as $(node_field gpu01 'd')"
[ "$(node_field gpu02 'd["executor"], d["gpus"], d["flavor"]')" = "slurm 4 a100-80gb" ] || fail "gpu02 joined as $(node_field gpu02 'd')"
node_field gpu01 'd["labels"]' | grep -q "gpupool.io/executor=slurm" || fail "gpu01 is not labelled"
# Guarantees can be given now that the capacity is there.
"$bin" tenant set research --quota h100-80gb=8 > /dev/null 2>&1 ||
  curl -sf -X PATCH -H "Authorization: Bearer $GPUPOOL_TOKEN" -d '{"quotas": {"h100-80gb": {"guaranteed": 8}}}' \
    "$GPUPOOL_URL/v1/tenants/research" > /dev/null || fail "could not give research its guarantee"
echo "ok 1: nodes imported"

# 2. Jobs of two tenants run where gpupool placed them, with the GPU count it counted.
show='echo "NODES=$SLURM_JOB_NODELIST CVD=$CUDA_VISIBLE_DEVICES JOB=$GPUPOOL_JOB ATTEMPT=$GPUPOOL_ATTEMPT"'
# They run until the test has read where gpupool placed them (a loaded machine is slow to ask).
hold="while [ ! -e '$tmp/out/release' ]; do sleep 0.2; done"
a=$(submit research h100-80gb 3 -- sh -c "$show; $hold")
b=$(submit product a100-80gb 2 -- sh -c "$show; $hold")
declare -A placed_on
for j in $a $b; do
  until_ok 30 job_is "$j" running || fail "job $j is $(job_field "$j" 'd["state"], d.get("events", [])[-2:]')"
  placed_on[$j]=$(job_field "$j" 'd["placement"][0]["node"]')
done
touch "$tmp/out/release"
for j in $a $b; do until_ok 30 job_is "$j" succeeded || fail "job $j is $(job_field "$j" 'd["state"], d.get("events", [])[-2:]')"; done
for j in $a $b; do
  placed=${placed_on[$j]}
  out=$(cat "$tmp/out/gpupool-$j-1.out")
  echo "job $j placed on $placed printed: $out"
  echo "$out" | grep -q "NODES=$placed " || fail "job $j ran on another node than $placed: $out"
done
grep -q "CVD=0,1,2 JOB=$a ATTEMPT=1" "$tmp/out/gpupool-$a-1.out" || fail "job $a did not see 3 GPUs"
grep -q "CVD=0,1 JOB=$b ATTEMPT=1" "$tmp/out/gpupool-$b-1.out" || fail "job $b did not see 2 GPUs"
[ "${placed_on[$a]}" = gpu01 ] || fail "an h100 job was not placed on gpu01"
bad=$(submit product a100-80gb 1 -- sh -c 'exit 3')
until_ok 30 job_is "$bad" failed || fail "job $bad should have failed"
"$bin" describe job "$bad" -o json | grep -q "exit code 3" || fail "job $bad's failure does not give its exit code"
echo "ok 2: jobs ran on the chosen nodes with the counted GPUs"

# 3. Reclaim: product borrows all of gpu01, research takes its guarantee back.
curl -sf -X PATCH -H "Authorization: Bearer $GPUPOOL_TOKEN" -d '{"quotas": {"h100-80gb": {"guaranteed": 0}, "a100-80gb": {"guaranteed": 0}}}' \
  "$GPUPOOL_URL/v1/tenants/product" > /dev/null || true
borrow=$(submit product h100-80gb 8 -- sh -c 'trap "echo got TERM; exit 143" TERM; sleep 300 & wait')
until_ok 30 sh -c "squeue -h -n gpupool-$borrow -t running | grep -q ." || fail "the borrower did not run in Slurm: $(slurm_jobs_of "$borrow")"
until_ok 10 job_is "$borrow" running || fail "the borrower is $(job_field "$borrow" 'd["state"]') in gpupool"
back=$(submit research h100-80gb 4 -- sh -c "$show")
until_ok 30 job_is "$back" succeeded || fail "research reclaiming job is $(job_field "$back" "d[\"state\"], d.get(\"reason\")"); research: $("$bin" describe tenant research -o json)"
slurm_jobs_of "$borrow" | grep -q "attempt=1" || fail "no trace of the borrower's first Slurm job"
state1=$(squeue -h -a -t all -n "gpupool-$borrow" -o '%T %k' | grep 'attempt=1$' | cut -d' ' -f1)
case "$state1" in CANCELLED|COMPLETED|FAILED) ;; *) fail "the borrower's first Slurm job is $state1";; esac
grep -q "got TERM" "$tmp/out/gpupool-$borrow-1.out" || fail "the borrower was not sent SIGTERM before its cancel"
job_field "$borrow" '[e for e in d["events"] if "preempt" in str(e).lower()]' | grep -qi preempt || fail "the borrower was not preempted"
until_ok 30 sh -c "squeue -h -n gpupool-$borrow -t running -o '%k' | grep -q 'attempt=2'" || fail "the borrower did not run again: $(slurm_jobs_of "$borrow")"
echo "ok 3: reclaim cancelled the borrower in Slurm; it requeued and runs again as attempt 2"

# 4. Drain both ways.
scontrol update NodeName=gpu01 State=DRAIN Reason=bad-fan
until_ok 20 sh -c "[ \"\$('$bin' describe node gpu01 -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"condition\"])')\" = draining ]" ||
  fail "gpu01 drained in Slurm is $(node_field gpu01 'd["condition"]') in gpupool"
node_field gpu01 'd.get("condition_reason", "")' | grep -q bad-fan || fail "gpu01's reason does not say Slurm's: $(node_field gpu01 'd')"
until_ok 10 job_is "$borrow" pending || fail "the job on the drained node is $(job_field "$borrow" 'd["state"]')"
until_ok 20 sh -c "! squeue -h -n gpupool-$borrow -t running | grep -q ." || fail "the drained node's job still runs in Slurm"
scontrol update NodeName=gpu01 State=RESUME
until_ok 20 sh -c "[ \"\$('$bin' describe node gpu01 -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"condition\"])')\" = ready ]" ||
  fail "gpu01 resumed in Slurm is $(node_field gpu01 'd["condition"]') in gpupool"
"$bin" cancel "$borrow" > /dev/null || fail "cancel $borrow"
"$bin" drain gpu02 > /dev/null || fail "gpupool drain gpu02"
until_ok 20 sh -c "sinfo -h -n gpu02 -o '%T %E' | grep -q '^drain.* gpupool:'" || fail "gpu02 is not drained in Slurm: $(sinfo -h -n gpu02 -o '%T %E')"
"$bin" uncordon gpu02 > /dev/null || fail "gpupool uncordon gpu02"
until_ok 20 sh -c "sinfo -h -n gpu02 -o '%T' | grep -qx idle" || fail "gpu02 is not resumed in Slurm: $(sinfo -h -n gpu02 -o '%T %E')"
c=$(node_field gpu02 'd["condition"], d.get("condition_reason", "")')
[ "$c" = "ready " ] || fail "gpu02 is '$c' after uncordon"
echo "ok 4: drains go both ways"

# 5. kill -9 of the daemon while a job runs in Slurm: not submitted again after the restart.
long=$(submit research h100-80gb 2 -- sh -c 'sleep 4; echo done')
until_ok 30 sh -c "squeue -h -n gpupool-$long -t running | grep -q ." || fail "job $long did not start in Slurm"
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null
rm -f "$tmp/data/port"
start_daemon
until_ok 20 test -s "$tmp/data/port" || fail "the daemon did not come back"
export GPUPOOL_URL="http://127.0.0.1:$(cat "$tmp/data/port")"
until_ok 20 curl -sf "$GPUPOOL_URL/healthz" || fail "the daemon did not come back"
until_ok 30 job_is "$long" succeeded || fail "job $long is $(job_field "$long" 'd["state"]') after the restart"
[ "$(slurm_jobs_of "$long" | wc -l)" = 1 ] || fail "job $long was submitted more than once: $(slurm_jobs_of "$long")"
echo "ok 5: a daemon killed with -9 submits nothing twice"

# 6. slurmrestd down: the submission waits, then goes through once (gpupool charges the GPUs it
# holds from admission on, so the charge is longer than Slurm's record by the wait: 7. sees it).
kill "$restd_pid"; wait "$restd_pid" 2>/dev/null
late=$(submit research h100-80gb 1 -- sh -c 'echo late')
sleep 6
job_is "$late" admitted || fail "with slurmrestd down, job $late is $(job_field "$late" 'd["state"]')"
grep -q '"msg":"executor round failed"' "$tmp/daemon.log" || fail "the daemon did not say slurmrestd is unreachable"
runuser -u slurm -- env SLURM_CONF="$SLURM_CONF" SLURM_JWT=daemon slurmrestd -a rest_auth/jwt -s openapi/v0.0.38 127.0.0.1:16820 \
  > "$BASE/log/slurmrestd-2.log" 2>&1 &
echo $! > "$BASE/pids/slurmrestd"
until_ok 30 job_is "$late" succeeded || fail "job $late is $(job_field "$late" 'd["state"]') after slurmrestd came back"
[ "$(slurm_jobs_of "$late" | wc -l)" = 1 ] || fail "job $late was submitted more than once: $(slurm_jobs_of "$late")"
echo "ok 6: slurmrestd down loses and doubles nothing"

# 7. Chargeback reconciled with Slurm's accounting (sacct from slurmdbd): every admission of the
# jobs above against its Slurm job, with the tenant as the account. A job that Slurm ran under
# gpupool's name but gpupool never charged (submitted behind its back) is flagged, and so is the
# job whose submission waited for slurmrestd while gpupool charged its GPUs.
intruder=$(sbatch --parsable -A research -p gpu --gres=gpu:h100:1 -J "gpupool-$a" -o /dev/null --wrap true) ||
  fail "sbatch of the intruder"
until_ok 30 sh -c "sacct -n -X -j $intruder -o State | grep -q COMPLETED" || fail "the intruder did not complete"
reconcile() { curl -sf -H "Authorization: Bearer $GPUPOOL_TOKEN" "$GPUPOOL_URL/v1/usage/reconcile?tolerance_s=3"; }
# The accounting read after the intruder's end: it is in the report.
until_ok 20 sh -c "'$bin' usage reconcile --tolerance-s 3 -o json | grep -q '\"id\": \"$intruder\"'" ||
  fail "the intruder never reached the report: $(reconcile)"
reconcile > "$tmp/reconcile.json" || fail "GET /v1/usage/reconcile failed"
check() {  # check PYTHON_EXPRESSION MESSAGE: the expression is true of the report (r), lines by job (by)
  python3 -c "
import json, sys
r = json.load(open('$tmp/reconcile.json'))
by = {}
for i in r['items']: by.setdefault(i['job'], []).append(i)
sys.exit(0 if ($1) else 1)" || fail "$2: $(python3 -m json.tool "$tmp/reconcile.json")"
}
for j in $a $b $bad $back; do
  check "[i['status'] for i in by['$j'] if 'ledger' in i] == ['match'] and len(by['$j'][0]['backend']) == 1" \
    "job $j does not match Slurm's record"
done
check "by['$a'][0]['backend'][0]['account'] == 'research' and by['$b'][0]['backend'][0]['account'] == 'product'" \
  "the tenants are not the jobs' Slurm accounts"
check "by['$a'][0]['ledger']['gpus'] == 3 and by['$a'][0]['backend'][0]['gpus'] == 3" "job $a's GPUs differ"
check "len(by['$borrow']) >= 3 and all(i['status'] == 'match' for i in by['$borrow'])" \
  "the borrower's admissions (reclaimed, drained, cancelled) do not each match a Slurm job"
check "[i['status'] for i in by['$a']].count('missing_in_ledger') == 1 and any(b['id'] == '$intruder' for i in by['$a'] for b in i['backend'] if i['status'] == 'missing_in_ledger')" \
  "the intruder is not flagged"
check "by['$late'][0]['status'] == 'mismatch' and 'duration' in by['$late'][0]['problems'][0] and by['$late'][0]['ledger']['charged_s'] >= 5" \
  "the charge of job $late while slurmrestd was down is not flagged"
check "r['summary']['missing_in_backend'] == 0 and r['summary']['missing_in_ledger'] == 1" "unexpected missing records"
"$bin" usage reconcile --tolerance-s 3 > "$tmp/reconcile.txt" || fail "gpupool usage reconcile"
grep -q "missing_in_ledger" "$tmp/reconcile.txt" && grep -Eq "^ *$late .*mismatch.*duration" "$tmp/reconcile.txt" ||
  fail "the table does not show the findings: $(cat "$tmp/reconcile.txt")"
# Only cluster admins see it; a tenant's member gets 403.
member=$("$bin" create token alice --role member --tenant research 2>/dev/null | sed -nE 's/.*: (gp_.*)$/\1/p')
[ -n "$member" ] || fail "no member token"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $member" "$GPUPOOL_URL/v1/usage/reconcile")
[ "$code" = 403 ] || fail "a member reading the reconciliation got HTTP $code"
echo "ok 7: the ledger reconciles with sacct; an uncharged Slurm job and a charge Slurm did not hold are flagged"
cat "$tmp/reconcile.txt"

# 8. A job outside gpupool takes 6 of gpu01's GPUs (Slurm 22.05 cannot reserve gres/gpu): gpupool
# takes 6 of its GPUs out of service with that job as the reason, places nothing there that
# does not fit the rest, and gives them back when it ends.
held() { "$bin" describe node gpu01 -o json | python3 -c 'import json,sys; print(sum(1 for g in json.load(sys.stdin)["devices"] if not g["healthy"] and "not submitted by gpupool" in g.get("health_reason", "")))'; }
outside=$(sbatch --parsable -A research -p gpu -w gpu01 --gres=gpu:h100:6 -J outside -o /dev/null --wrap 'sleep 300') ||
  fail "sbatch of the job outside gpupool"
held_is() { [ "$(held)" = "$1" ]; }
until_ok 30 held_is 6 || fail "gpupool holds $(held) of gpu01's GPUs for Slurm job $outside, not 6: $("$bin" describe node gpu01 -o json)"
"$bin" describe node gpu01 -o json | grep -q "Slurm job $outside" || fail "the reason does not name Slurm job $outside"
narrow=$(submit research h100-80gb 2 -- sh -c "$show")
wide=$(submit research h100-80gb 4 -- sh -c "$show")
until_ok 30 job_is "$narrow" succeeded || fail "the 2-GPU job that fits beside Slurm job $outside is $(job_field "$narrow" 'd["state"]')"
job_is "$wide" pending || fail "the 4-GPU job that does not fit beside Slurm job $outside is $(job_field "$wide" 'd["state"]')"
scancel "$outside"
until_ok 30 job_is "$wide" succeeded || fail "the 4-GPU job is $(job_field "$wide" 'd["state"]') after Slurm job $outside ended"
until_ok 10 held_is 0 || fail "gpupool still holds $(held) GPUs after Slurm job $outside ended"
echo "ok 8: GPUs held outside gpupool are taken out of service and come back"

# 9. A gpupool reservation on Slurm nodes: research books all 8 h100 for ten minutes. Idle, they
# are lent (DESIGN.md section 5): product's job runs there, preemptible. Research's job in the
# reservation takes them back: product's Slurm job gets SIGTERM, and research's runs on gpu01
# with all 8 GPUs. Product's job runs again after it.
# Reservations come out of the capacity no tenant is guaranteed: research gives its guarantee up.
curl -sf -X PATCH -H "Authorization: Bearer $GPUPOOL_TOKEN" -d '{"quotas": {"h100-80gb": {"guaranteed": 0}}}' \
  "$GPUPOOL_URL/v1/tenants/research" > /dev/null || fail "could not take research's guarantee back"
rfc() { python3 -c "import datetime,sys; print((datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=int(sys.argv[1]))).strftime('%Y-%m-%dT%H:%M:%SZ'))" "$1"; }
resv=$("$bin" reserve --tenant research --flavor h100-80gb --gpus 8 --start "$(rfc 2)" --end "$(rfc 600)" -o json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || fail "gpupool reserve"
sleep 3
lent=$(submit product h100-80gb 2 -- sh -c 'trap "echo got TERM; exit 143" TERM; sleep 300 & wait')
until_ok 30 sh -c "squeue -h -n gpupool-$lent -t running | grep -q ." || fail "product's job did not run on the idle reserved GPUs: $(job_field "$lent" 'd["state"], d.get("reason")')"
inside=$("$bin" submit --tenant research --name in-resv --flavor h100-80gb --gpus 8 --duration 600 --reservation "$resv" -o json -- sh -c "$show" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || fail "submit into the reservation"
until_ok 30 job_is "$inside" succeeded || fail "the job in the reservation is $(job_field "$inside" 'd["state"], d.get("reason")')"
grep -q "NODES=gpu01 CVD=0,1,2,3,4,5,6,7 " "$tmp/out/gpupool-$inside-1.out" || fail "the job in the reservation printed $(cat "$tmp/out/gpupool-$inside-1.out")"
grep -q "got TERM" "$tmp/out/gpupool-$lent-1.out" || fail "product's job on the reserved GPUs was not sent SIGTERM"
until_ok 30 sh -c "squeue -h -n gpupool-$lent -t running -o '%k' | grep -q 'attempt=2'" || fail "product's job did not run again: $(slurm_jobs_of "$lent")"
"$bin" cancel "$lent" > /dev/null
"$bin" delete reservation "$resv" > /dev/null || fail "delete reservation $resv"
echo "ok 9: a gpupool reservation on Slurm nodes lends its idle GPUs and takes them back for its holder"

# 10. Pools of two executors in one cluster: a node agent (fake GPUs) adds local01 beside the
# Slurm partition. A job held to it runs through the agent while one held to the Slurm nodes
# runs in Slurm, at the same time; nothing of the first reaches Slurm.
"$bin" agent --name local01 --token-file "$tmp/data/admin.token" --gpus fake:2xh100-80gb --work-dir "$tmp/work-local01" \
  --allow-root '*' > "$tmp/agent-local01.log" 2>&1 &
pids+=($!)
until_ok 20 sh -c "'$bin' get nodes -o json | grep -q local01" || fail "the agent's node did not join: $(tail -5 "$tmp/agent-local01.log")"
[ "$(node_field local01 'd["executor"], d["gpus"], d["flavor"]')" = "agent 2 h100-80gb" ] || fail "local01 joined as $(node_field local01 'd')"
[ "$(node_field gpu01 'd["executor"]')" = slurm ] || fail "gpu01 is no longer Slurm's"
# Each job marks that it runs and waits for go10, which the test makes once it has seen both
# run at once and read where they run.
both="touch '$tmp/out/ran-'\$GPUPOOL_JOB; while [ ! -e '$tmp/out/go10' ]; do sleep 0.2; done; $show"
on_agent=$("$bin" submit --tenant research --name via-agent --flavor h100-80gb --gpus 2 --duration 600 \
  --selector 'gpupool.io/executor!=slurm' -o json -- sh -c "$both" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
on_slurm=$("$bin" submit --tenant research --name via-slurm --flavor h100-80gb --gpus 2 --duration 600 \
  --selector 'gpupool.io/executor=slurm' -o json -- sh -c "$both" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
[ -n "$on_agent" ] && [ -n "$on_slurm" ] || fail "submissions to the two pools"
both_states() {
  for j in $on_agent $on_slurm; do echo "job $j: $(job_field "$j" 'd["state"], d.get("reason"), d.get("placement")')"; done
  echo "out: $(ls "$tmp/out" | grep '^ran-' | tr '\n' ' ') squeue: $(squeue -h -o '%i %j %T %R' | tr '\n' ';')"
}
until_ok 30 test -e "$tmp/out/ran-$on_agent" -a -e "$tmp/out/ran-$on_slurm" || fail "not both running: $(both_states)"
for j in $on_agent $on_slurm; do until_ok 10 job_is "$j" running || fail "$(both_states)"; done
[ "$(job_field "$on_agent" 'd["placement"][0]["node"]')" = local01 ] || fail "the agent's job runs on $(job_field "$on_agent" 'd["placement"]')"
[ "$(job_field "$on_slurm" 'd["placement"][0]["node"]')" = gpu01 ] || fail "the Slurm job runs on $(job_field "$on_slurm" 'd["placement"]')"
touch "$tmp/out/go10"
for j in $on_agent $on_slurm; do until_ok 30 job_is "$j" succeeded || fail "$(both_states)"; done
"$bin" logs "$on_agent" | grep -q "JOB=$on_agent ATTEMPT=1" || fail "the agent's job printed $("$bin" logs "$on_agent")"
grep -q "NODES=gpu01 CVD=0,1 JOB=$on_slurm ATTEMPT=1" "$tmp/out/gpupool-$on_slurm-1.out" || fail "the Slurm job printed $(cat "$tmp/out/gpupool-$on_slurm-1.out")"
[ -z "$(slurm_jobs_of "$on_agent")" ] || fail "the agent's job reached Slurm: $(slurm_jobs_of "$on_agent")"
echo "ok 10: an agent's pool and Slurm's in one cluster, each running its own jobs at once"
echo "PASS"
