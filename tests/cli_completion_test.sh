#!/usr/bin/env bash
# `gpupool completion bash` loads into bash and completes verbs, kinds, flags and flag values
# through `gpupool __complete`; `gpupool completion zsh` loads into zsh where zsh is installed.
# Usage: cli_completion_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: cli_completion_test.sh GPUPOOL_BINARY}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin" && ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$tmp/bin/gpupool"
"$bin" completion bash > "$tmp/gpupool.bash" || { echo "FAIL: gpupool completion bash: exit $?" >&2; exit 1; }

# complete WORDS...: what TAB offers for the last word, one per line (bash's COMPREPLY).
cat > "$tmp/complete.sh" << 'EOF2'
source "$1"
shift
complete -p gpupool > /dev/null || { echo "no completion registered for gpupool" >&2; exit 1; }
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
_gpupool gpupool "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
EOF2
failures=0
offers() {  # offers "WORDS" WANT...: each WANT is among what TAB offers after WORDS
  local words=$1
  shift
  read -r -a argv <<< "$words"
  [ "${words: -1}" = " " ] && argv+=("")
  PATH="$tmp/bin:$PATH" bash --norc --noprofile "$tmp/complete.sh" "$tmp/gpupool.bash" "${argv[@]}" \
    > "$tmp/reply" 2> "$tmp/err" || { echo "FAIL: '$words': $(cat "$tmp/err")" >&2; failures=$((failures + 1)); return; }
  for want in "$@"; do
    grep -qxF -- "$want" "$tmp/reply" || {
      echo "FAIL: '$words<TAB>' does not offer '$want'; it offers: $(tr '\n' ' ' < "$tmp/reply")" >&2
      failures=$((failures + 1))
    }
  done
}
lacks() {  # lacks "WORDS" NOT...: none of NOT is offered
  local words=$1
  shift
  offers "$words"
  for not in "$@"; do
    ! grep -qxF -- "$not" "$tmp/reply" || { echo "FAIL: '$words<TAB>' offers '$not'" >&2; failures=$((failures + 1)); }
  done
}

offers "gpupool ge" get
lacks "gpupool ge" describe __complete
offers "gpupool " get describe submit serve completion version
lacks "gpupool " __complete
offers "gpupool get " jobs nodes tenants reservations tokens priority-classes audit
offers "gpupool get pr" priority-classes
offers "gpupool describe " jobs nodes tenants
lacks "gpupool describe " tokens audit
offers "gpupool delete " jobs nodes tenants reservations tokens
offers "gpupool create " token tenant
offers "gpupool edit " tenant
offers "gpupool completion " bash zsh
offers "gpupool sim " replay packing
offers "gpupool get jobs --st" --state
offers "gpupool get jobs --" --tenant --state --limit --cursor --url --token --output --help
offers "gpupool get jobs --state " pending running cancelled
offers "gpupool get jobs -o " table json yaml
lacks "gpupool get jobs -o " csv
offers "gpupool usage -o " csv
offers "gpupool submit --" --selector --topology --duration --priority-class --idempotency-key
offers "gpupool submit --topology " nvlink-domain nvlink-domain:preferred
offers "gpupool create token x --role " member node-agent
offers "gpupool serve --" --listen --data-dir --demo
offers "gpupool agent --" --server --gpus
offers "gpupool --token T ge" get
offers "gpupool -o " json
offers "gpupool --" --url --token --output
# After "--" come the job's words: no verbs or flags, file names instead.
touch "$tmp/train.py"
cd "$tmp" && offers "gpupool submit --name x -- tr" train.py && cd - > /dev/null
lacks "gpupool submit -- --" --selector

if command -v zsh > /dev/null; then
  # Loaded by compinit's compdef, and what the function hands compadd (stubbed to print it).
  "$bin" completion zsh > "$tmp/_gpupool"
  PATH="$tmp/bin:$PATH" zsh -f -c "autoload -U compinit && compinit -u -d $tmp/zcompdump && source $tmp/_gpupool && \
    [ \"\${_comps[gpupool]}\" = _gpupool ] && compadd() { [[ \$1 == -a ]] && print -l -- \"\${(@P)2}\"; } && \
    words=(gpupool ge) CURRENT=2 _gpupool && words=(gpupool get '') CURRENT=3 _gpupool" > "$tmp/zsh.out" 2>&1
  [ "$(head -1 "$tmp/zsh.out")" = get ] && grep -qx priority-classes "$tmp/zsh.out" ||
    { echo "FAIL: zsh completion: $(cat "$tmp/zsh.out")" >&2; failures=$((failures + 1)); }
else
  echo "zsh not installed: its script is not loaded here"
fi

[ "$failures" -eq 0 ] || { echo "$failures failures" >&2; exit 1; }
echo "cli completion ok"
