#!/usr/bin/env bash
# Prints the size figures STYLE.md and issue 16 hold the daemon to: files over LINES lines and
# functions over FUNC lines in the given folders (default src/daemon src/http src/api).
# A function is a definition starting in column 0 and ending at the next "}" in column 0.
# usage: scripts/code-size.sh [--lines 500] [--func 80] [DIR...]
set -euo pipefail
cd "$(dirname "$0")/.."
lines=500 func=80 dirs=()
while [ $# -gt 0 ]; do
  case $1 in
    --lines) lines=$2; shift 2 ;;
    --func) func=$2; shift 2 ;;
    *) dirs+=("$1"); shift ;;
  esac
done
[ ${#dirs[@]} -gt 0 ] || dirs=(src/daemon src/http src/api)
python3 - "$lines" "$func" "${dirs[@]}" << 'PY'
import os, re, sys
max_lines, max_func, dirs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
files = sorted(os.path.join(d, f) for d in dirs for f in os.listdir(d) if f.endswith(('.cc', '.h')) and not f.endswith('_test.cc'))
big, long_funcs, total, nfuncs = [], [], 0, 0
for path in files:
    text = open(path).read().split('\n')
    total += len(text)
    if len(text) > max_lines: big.append((len(text), path))
    start = None
    for i, line in enumerate(text):
        if start is None and re.match(r'^[A-Za-z].*\)( const)?( override)?\s*\{\s*$', line) and not line.startswith(('namespace', 'struct', 'class', 'enum')):
            start, name = i, line.split('(')[0].split()[-1]
        elif start is not None and line.startswith('}'):
            nfuncs += 1
            n = i - start + 1
            if n > max_func: long_funcs.append((n, f'{path}:{start + 1} {name}'))
            start = None
print(f'{len(files)} files, {total} lines, {nfuncs} functions (tests excluded) in {" ".join(dirs)}')
print(f'files over {max_lines} lines: {len(big)}')
for n, p in sorted(big, reverse=True): print(f'  {n:5d}  {p}')
print(f'functions over {max_func} lines: {len(long_funcs)}')
for n, p in sorted(long_funcs, reverse=True): print(f'  {n:5d}  {p}')
PY
