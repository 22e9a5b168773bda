#!/usr/bin/env python3
"""Writes a perturbed copy of an openb pod list, to check that a packing policy was not fitted to
the published lists (docs/design/simulator.md, "Robustness"). Only the per-GPU milli of one-GPU
pods changes; everything else (CPU, memory, GPU model, multi-GPU pods) is kept.

  scripts/perturb-pod-list.py KIND IN.csv OUT.csv [--seed 7]

KIND:
  shift     810 -> 750, 650 -> 600, 470 -> 400 (the common fractions move)
  uniform   every fraction drawn uniformly from 100..990 in steps of 10
  halves    every fraction drawn from 250, 330, 500, 500, 660
  morefrac  half of the one-GPU whole pods become fractions (810, 650, 470, 320 or 230)
"""
import argparse
import csv
import random
import sys


def perturb(kind, milli, rnd):
    if kind == "shift":
        return {810: 750, 650: 600, 470: 400}.get(milli, milli)
    if kind == "uniform":
        return rnd.randrange(10, 100) * 10
    if kind == "halves":
        return rnd.choice([250, 500, 500, 330, 660])
    raise ValueError(kind)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["shift", "uniform", "halves", "morefrac"])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    with open(a.src, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit("empty pod list: " + a.src)
    for r in rows:
        milli, gpus = int(r["gpu_milli"]), int(r["num_gpu"])
        if gpus != 1:
            continue
        if a.kind == "morefrac":
            if milli == 1000 and rnd.random() < 0.5:
                r["gpu_milli"] = str(rnd.choice([810, 470, 320, 650, 230]))
        elif 0 < milli < 1000:
            r["gpu_milli"] = str(perturb(a.kind, milli, rnd))
    with open(a.dst, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
