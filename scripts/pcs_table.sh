#!/usr/bin/env bash
# Queue policies against the published PCS table (issue 19): each of the four VCs the PCS
# artifact published per-job results for, alone on a 64-GPU cluster (8 nodes of 8), replayed
# through gpupool's scheduler under fifo, las, srsf and sjf, with exact estimates and with
# estimates off by up to NOISE x either way (log-uniform, seeded). Prints avg / p50 / p99 JCT and
# preemptions beside the published FIFO, SRSF, AFS, THEMIS and PCS rows.
#
#   scripts/pcs_table.sh [NOISE (3)] [SEED (1)]     (GPUPOOL=path/to/gpupool to skip the build)
#
# The jobs are those of the published runs: for 0e4a51, 6c71a0 and b436b2 the first 1,001 apps
# (the app ids of the published FIFO result file), for ee9e8c all 5,452. PCS models elastic jobs
# (a job's runtime shrinks with the GPUs it gets); gpupool's are rigid (a job runs on the GPUs it
# asked for, its Philly run time), so the published rows are a yardstick, not the same experiment.
set -euo pipefail
cd "$(dirname "$0")/.."
noise=${1:-3}
seed=${2:-1}
traces=${GPUPOOL_TRACES:-../shared/traces}/philly-pcs-per-vc
if [ -z "${GPUPOOL:-}" ]; then
  ./scripts/build.sh >/dev/null
  GPUPOOL=./build/src/cli/gpupool
fi
runs="fifo:exact:168 srsf:exact:168 srsf:exact:720 srsf:exact:8784 srsf:noisy:8784 sjf:exact:8784 sjf:noisy:8784
      las:exact:168 las:exact:8784"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for vc in 0e4a51 6c71a0 b436b2 ee9e8c; do
  fifo=$(ls "$traces"/pcs_published_results/FIFO_"$vc"*.csv)
  # The app ids of the published run, then those rows of the shared jobs file.
  awk -F, 'NR > 1 {print $1}' "$fifo" | sort -u >"$work/$vc.ids"
  awk -F, -v vc="$vc" 'NR == FNR {want[$1] = 1; next}
                       FNR == 1 {print; next}
                       $1 == vc && ($2 in want)' "$work/$vc.ids" "$traces/philly_pcs_shared_jobs.csv" >"$work/$vc.csv"
  printf 'tenant,guaranteed_gpus\n%s,64\n' "$vc" >"$work/$vc.tenants"
  # policy:estimates:starvation bound (h): the default bound (7 days), 30 days and the longest
  # (366 days). These VCs queue for weeks to months (FIFO's p99 JCT is 35 to 300 days), and a
  # starved job goes first in FIFO order, so the bound is what a site pays for.
  for run in $runs; do
    IFS=: read -r policy mode starve <<<"$run"
    extra=()
    [ "$mode" = noisy ] && extra=(--estimate-noise "$noise" --seed "$seed")
    "$GPUPOOL" sim replay --jobs "$work/$vc.csv" --tenants "$work/$vc.tenants" --queue-policy "$policy" \
      --starvation-after-h "$starve" --no-timing --json "$work/$vc-$policy-$mode-$starve.json" "${extra[@]}" >/dev/null &
  done
  wait
done

python3 - "$work" "$traces/pcs_published_results/summary_jct.csv" "$noise" "$runs" <<'EOF'
import csv, json, os, sys
work, summary, noise = sys.argv[1], sys.argv[2], sys.argv[3]
published = {}
for row in csv.DictReader(open(summary)):
    published.setdefault(row["vc"], []).append(row)
def days(s): return f"{float(s) / 86400:.2f}"
for vc in ["0e4a51", "6c71a0", "b436b2", "ee9e8c"]:
    pub = {r["policy"]: r for r in published[vc]}
    srsf = float(pub["SRSF"]["avg_jct_s"])
    print(f"\n{vc}: {pub['FIFO']['n_apps']} jobs, 64 GPUs (JCT in days; ratio = avg JCT / published SRSF)")
    print("| run | avg JCT | p50 JCT | p99 JCT | preemptions | ratio to SRSF |")
    print("|---|---:|---:|---:|---:|---:|")
    for run in sys.argv[4].split():
        policy, mode, starve = run.split(":")
        o = json.load(open(os.path.join(work, f"{vc}-{policy}-{mode}-{starve}.json")))["overall"]
        label = f"gpupool {policy}" + ("" if mode == "exact" else f", estimates off by up to {noise}x")
        label += "" if policy == "fifo" else f", starved after {int(starve) // 24} d"
        print(f"| {label} | {days(o['avg_jct_s'])} | {days(o['p50_jct_s'])} | {days(o['p99_jct_s'])} | "
              f"{o['preemptions']} | {o['avg_jct_s'] / srsf:.3f} |")
    for name in ["FIFO", "SRSF", "AFS", "THEMIS", "PCS-jct", "PCS-bal", "PCS-pred"]:
        if name not in pub: continue
        r = pub[name]
        print(f"| published {name} (elastic) | {days(r['avg_jct_s'])} | {days(r['p50_jct_s'])} | "
              f"{days(r['p99_jct_s'])} | | {float(r['avg_jct_s']) / srsf:.3f} |")
EOF
