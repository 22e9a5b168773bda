#include "cli/completion.h"

#include <algorithm>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/verbs.h"

namespace gpupool::cli {

const char* const kCompletionUsage =
    "usage: gpupool completion bash|zsh   (prints a shell completion script)\n"
    "  bash: source <(gpupool completion bash)   (or save it under /etc/bash_completion.d/)\n"
    "  zsh:  source <(gpupool completion zsh)    (or save it as _gpupool in a directory of $fpath)\n";

namespace {

constexpr const char* kBash = R"SH(# bash completion for gpupool: source <(gpupool completion bash)
_gpupool() {
  local cur="${COMP_WORDS[COMP_CWORD]}" IFS=$'\n'
  COMPREPLY=($("${COMP_WORDS[0]}" __complete "$COMP_CWORD" "${COMP_WORDS[@]}" 2>/dev/null))
  # Nothing to offer (a file name, a job's command): fall back to file names.
  [ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- "$cur"))
  return 0
}
complete -F _gpupool gpupool
)SH";

constexpr const char* kZsh = R"SH(#compdef gpupool
# zsh completion for gpupool: source <(gpupool completion zsh), or save as _gpupool in $fpath
_gpupool() {
  local -a candidates
  candidates=("${(@f)$("${words[1]}" __complete "$((CURRENT - 1))" "${words[@]}" 2>/dev/null)}")
  candidates=(${candidates:#})
  if (( ${#candidates} )); then
    compadd -a candidates
  else
    _files
  fi
}
if [ "$funcstack[1]" = "_gpupool" ]; then
  _gpupool "$@"
else
  compdef _gpupool gpupool
fi
)SH";

// The values a flag takes, where there is a short list of them.
std::vector<std::string> FlagValues(const std::string& verb, const std::string& flag) {
  if (flag == "-o" || flag == "--output") {
    std::vector<std::string> out = {"table", "json", "yaml"};
    if (verb == "usage") out.push_back("csv");
    return out;
  }
  if (flag == "--state") return {"pending", "admitted", "running", "succeeded", "failed", "cancelled"};
  if (flag == "--role") return {"cluster-admin", "tenant-admin", "member", "viewer", "node-agent"};
  if (flag == "--topology") return {"node", "nvlink-domain", "block", "node:preferred", "nvlink-domain:preferred",
                                    "block:preferred"};
  if (flag == "--allow-gpu-cotenancy") return {"true", "false"};
  return {};
}

bool TakesValue(const std::string& flag) {
  return flag == "-o" || flag == "--output" || flag == "--url" || flag == "--token";
}

}  // namespace

std::vector<std::string> Complete(const std::vector<std::string>& words, size_t cword) {
  if (cword == 0 || cword >= words.size() + 1) return {};
  const std::string cur = cword < words.size() ? words[cword] : "";
  // The verb: the first word that is not a connection flag or its value.
  size_t v = 1;
  while (v < cword && !words[v].empty() && words[v][0] == '-') v += TakesValue(words[v]) && words[v].find('=') == std::string::npos ? 2 : 1;
  std::vector<std::string> out;
  const Verb* verb = v < cword ? FindVerb(words[v]) : nullptr;
  if (v > cword) {
    out = FlagValues("", words[cword - 1]);  // the value of a connection flag before the verb
  } else if (v == cword) {
    for (const Verb& verb_entry : Verbs()) out.push_back(verb_entry.name);
    if (!cur.empty() && cur[0] == '-') out = {"--url", "--token", "--output", "--help"};
  } else if (verb == nullptr || std::find(words.begin() + 1, words.begin() + cword, "--") != words.begin() + cword) {
    return {};  // an unknown verb, or a job's command after "--"
  } else if (std::vector<std::string> values = FlagValues(verb->name, words[cword - 1]); !values.empty()) {
    out = values;
  } else if (!cur.empty() && cur[0] == '-') {
    out = FlagsIn(verb->usage);
    if (verb->client) out.insert(out.end(), {"--url", "--token", "--output"});
  } else if (cword == v + 1) {
    out = verb->words;
  }
  std::vector<std::string> matching;
  for (const std::string& c : out) {
    if (c.rfind(cur, 0) == 0) matching.push_back(c);
  }
  std::sort(matching.begin(), matching.end());
  matching.erase(std::unique(matching.begin(), matching.end()), matching.end());
  return matching;
}

int CompleteCommand(const std::vector<std::string>& argv) {
  if (argv.size() < 2 || argv[0].empty() || argv[0].find_first_not_of("0123456789") != std::string::npos ||
      argv[0].size() > 4) {
    std::cerr << "usage: gpupool __complete CWORD PROGRAM WORDS...   (for the completion scripts)\n";
    return 2;
  }
  const std::vector<std::string> words(argv.begin() + 1, argv.end());
  for (const std::string& c : Complete(words, static_cast<size_t>(std::stoi(argv[0])))) std::cout << c << "\n";
  return 0;
}

std::string BashCompletion() { return kBash; }
std::string ZshCompletion() { return kZsh; }

int Completion(const std::vector<std::string>& argv) {
  Result<Args> args = Args::Parse(argv, {"help"}, {"help"});
  if (args.ok() && args->Has("help")) {
    std::cout << kCompletionUsage;
    return 0;
  }
  const std::string shell = args.ok() && args->positional().size() == 1 ? args->positional()[0] : "";
  if (shell == "bash" || shell == "zsh") {
    std::cout << (shell == "bash" ? kBash : kZsh);
    return 0;
  }
  std::cerr << "gpupool completion: " << (args.ok() ? "which shell: bash or zsh" : args.error().message) << "\n"
            << kCompletionUsage;
  return 2;
}

}  // namespace gpupool::cli
