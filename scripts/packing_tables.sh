#!/usr/bin/env bash
# The packing experiment's two tables in docs/benchmarks.md, from `gpupool sim packing --policy
# all` (every policy through the daemon's Schedule()) on each pod list with published results:
#   1. fidelity: the paper's six policies, our mean / the published mean, at 100% arrived;
#   2. gpupool against FGD: at 100% (the gpuspec lists at 130%), with the published FGD.
# Means over the seeds. Prints Markdown.
#
#   scripts/packing_tables.sh [SEEDS (42-51)] [LISTS (the 13 published)]
#   GPUPOOL=path/to/gpupool skips the build; JSON_DIR=dir keeps (and reuses) each list's JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-42-51}
lists=${2:-cpu050 cpu100 cpu250 default gpushare40 gpushare60 gpushare100 gpuspec10 gpuspec20 gpuspec33 multigpu20 multigpu40 multigpu50}
csv=${GPUPOOL_TRACES:-../shared/traces}/alibaba-gpu-v2023-openb/csv
published=$csv/../fgd_published_results/summary_unallocated_gpu_pct.csv
if [ -z "${GPUPOOL:-}" ]; then
  ./scripts/build.sh >/dev/null
  GPUPOOL=./build/src/cli/gpupool
fi
dir=${JSON_DIR:-$(mktemp -d)}
mkdir -p "$dir"
for list in $lists; do
  [ -s "$dir/$list.json" ] && continue
  "$GPUPOOL" sim packing --nodes "$csv/openb_node_list_gpu_node.csv" --pods "$csv/openb_pod_list_$list.csv" \
    --policy all --seeds "$seeds" --threads 2 --json "$dir/$list.json" >/dev/null
done
python3 - "$dir" "$published" $lists <<'PY'
import csv, json, sys
d, published, lists = sys.argv[1], sys.argv[2], sys.argv[3:]
pub = {}
for r in csv.DictReader(open(published)):
    pub[(r["workload"].removeprefix("openb_pod_list_"), r["sc_policy"], int(r["arrived_pct"]))] = float(r["unalloc_gpu_pct_mean"])
six = [("random", "01-Random"), ("dotprod", "02-DotProd"), ("clustering", "03-GpuClustering"),
       ("packing", "04-GpuPacking"), ("bestfit_host", "05-BestFit"), ("fgd", "06-FGD")]
runs = {l: {r["policy"]: r for r in json.load(open(f"{d}/{l}.json"))} for l in lists}
mean = lambda l, p, level: runs[l][p]["unallocated_gpu_pct"][str(level)]
print("| pod list | " + " | ".join(n for n, _ in six) + " |")
print("|---|" + "---:|" * len(six))
worst = 0.0
for l in lists:
    cells = []
    for n, p in six:
        ours, theirs = mean(l, n, 100), pub.get((l, p, 100))
        cells.append(f"{ours:.2f} / {theirs:.2f}" if theirs is not None else f"{ours:.2f} / -")
        if theirs is not None: worst = max(worst, abs(ours - theirs))
    print(f"| {l} | " + " | ".join(cells) + " |")
print(f"\nlargest |ours - published|: {worst:.2f} pp\n")
print("| pod list | level | gpupool | FGD (ours) | FGD published | gpupool - published |")
print("|---|---:|---:|---:|---:|---:|")
below = 0
for l in lists:
    level = 130 if l.startswith("gpuspec") else 100
    g, f, p = mean(l, "gpupool", level), mean(l, "fgd", level), pub.get((l, "06-FGD", level))
    below += p is not None and g < p
    print(f"| {l} | {level}% | **{g:.2f}** | {f:.2f} | {p:.2f} | {g - p:+.2f} |")
print(f"\ngpupool below published FGD on {below} of {len(lists)} lists")
PY
