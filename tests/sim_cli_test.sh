#!/usr/bin/env bash
# `gpupool sim` end to end: the same inputs and seed give identical report bytes (JSON, CSV, SVG;
# packing with one thread and with two; replay with and without burst)
# and bad input fails with a clear message and exit code 2.
# Usage: sim_cli_test.sh GPUPOOL_BINARY SHARED_TRACES_DIR
set -u
bin=${1:?binary}; traces=${2:?traces dir}
if [ ! -d "$traces/alibaba-gpu-v2023-openb" ]; then echo "skipped: no $traces"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
O=$traces/alibaba-gpu-v2023-openb/csv
P=$traces/philly-pcs-per-vc
fail() { echo "FAIL: $*" >&2; exit 1; }
for run in a b; do
  threads=1; [ $run = b ] && threads=2
  "$bin" sim packing --nodes "$O/openb_node_list_gpu_node.csv" --pods "$O/openb_pod_list_multigpu50.csv" \
    --policy all --seeds 42-43 --threads $threads --json "$tmp/p$run.json" --csv "$tmp/p$run.csv" --svg "$tmp/p$run.svg" \
    --no-timing > "$tmp/p$run.txt" || fail "packing run $run"
  head -n 3000 "$P/philly_pcs_shared_jobs.csv" > "$tmp/jobs.csv"
  "$bin" sim replay --jobs "$tmp/jobs.csv" --tenants "$P/tenants.csv" --capacity-scale 0.25 \
    --json "$tmp/r$run.json" --csv "$tmp/r$run.csv" --svg "$tmp/r$run.svg" --no-timing > /dev/null \
    || fail "replay run $run"
done
for f in p.json p.csv p.svg r.json r.csv r.svg; do
  cmp -s "$tmp/${f%%.*}a.${f##*.}" "$tmp/${f%%.*}b.${f##*.}" || fail "$f differs between identical runs"
done
grep -q '"unallocated_gpu_pct"' "$tmp/pa.json" || fail "packing JSON lacks unallocated_gpu_pct"
grep -q '"jain_fairness"' "$tmp/ra.json" || fail "replay JSON lacks jain_fairness"
grep -q '<svg' "$tmp/pa.svg" || fail "no SVG"
# Bad input: unknown policy, missing file, malformed seeds.
"$bin" sim packing --nodes "$O/openb_node_list_gpu_node.csv" --pods "$O/openb_pod_list_default.csv" \
  --policy nope 2> "$tmp/err" >/dev/null; [ $? -eq 2 ] && grep -q "unknown policy" "$tmp/err" || fail "unknown policy"
"$bin" sim packing --nodes /nonexistent.csv --pods "$O/openb_pod_list_default.csv" 2> "$tmp/err" >/dev/null
[ $? -eq 2 ] && grep -q "cannot open" "$tmp/err" || fail "missing file"
"$bin" sim packing --nodes "$O/openb_node_list_gpu_node.csv" --pods "$O/openb_pod_list_default.csv" --seeds 9-1 \
  2> "$tmp/err" >/dev/null; [ $? -eq 2 ] || fail "bad seeds"
printf 'vc,app_id,submit_time_s,num_gpus,duration_s\nx,1,-5,1,10\n' > "$tmp/bad.csv"
"$bin" sim replay --jobs "$tmp/bad.csv" --tenants "$P/tenants.csv" 2> "$tmp/err" >/dev/null
[ $? -eq 2 ] && grep -q "out of range" "$tmp/err" || fail "bad trace row"
# Burst: the same slice with on-demand nodes; identical bytes twice, a cost in the JSON, and a
# bad burst file refused with the key it got wrong.
burst="$(dirname "$0")/../src/sim/testdata/philly_burst.yaml"
for run in a b; do
  "$bin" sim replay --jobs "$tmp/jobs.csv" --tenants "$P/tenants.csv" --capacity-scale 0.1 --burst "$burst" \
    --json "$tmp/b$run.json" --no-timing > "$tmp/b$run.txt" || fail "burst replay run $run"
done
cmp -s "$tmp/ba.json" "$tmp/bb.json" || fail "burst replay differs between identical runs"
python3 -c "import json,sys; b=json.load(open('$tmp/ba.json'))['burst']; sys.exit(0 if b['nodes'] > 0 and float(b['cost']) > 0 else 1)" \
  || fail "burst replay bought nothing: $(head -c 400 "$tmp/ba.json")"
sed 's/max_gpus: 128/max_gpus: 0/' "$burst" > "$tmp/bad-burst.yaml"
"$bin" sim replay --jobs "$tmp/jobs.csv" --tenants "$P/tenants.csv" --burst "$tmp/bad-burst.yaml" 2> "$tmp/err" >/dev/null
[ $? -eq 2 ] && grep -q "max_gpus" "$tmp/err" || fail "bad burst file: $(cat "$tmp/err")"
# Help: usage on stdout, exit 0, for both experiments; a flag without its value shows it too.
for e in packing replay; do
  for h in --help -h; do
    "$bin" sim $e $h > "$tmp/out" 2>&1 || fail "sim $e $h exits non-zero: $(cat "$tmp/out")"
    grep -q "^usage: gpupool sim $e" "$tmp/out" || fail "sim $e $h: $(cat "$tmp/out")"
  done
done
"$bin" sim packing --nodes 2> "$tmp/err" >/dev/null
[ $? -eq 2 ] && grep -q "needs a value" "$tmp/err" && grep -q "^usage:" "$tmp/err" || fail "flag without value"
echo "sim cli ok"
