// Shell completion. `gpupool completion bash|zsh` prints a script that, on each TAB, runs
// `gpupool __complete CWORD WORDS...` (the words of the line, the program first, and the index
// of the one being completed) and offers the lines it prints: verbs, the words a verb takes
// first (kinds for get, describe, delete; bash and zsh for completion), the --flags its usage
// names, and the values of -o, --state, --role and --topology. Nothing is asked of the server.
#pragma once

#include <string>
#include <vector>

namespace gpupool::cli {

inline constexpr const char* kCompleteVerb = "__complete";

// The candidates for words[cword] (words[0] is the program), those starting with it, sorted.
std::vector<std::string> Complete(const std::vector<std::string>& words, size_t cword);

// `gpupool __complete CWORD WORDS...`: prints Complete()'s lines; exit 0, or 2 on bad input.
int CompleteCommand(const std::vector<std::string>& argv);

// The scripts `gpupool completion bash|zsh` prints.
std::string BashCompletion();
std::string ZshCompletion();

}  // namespace gpupool::cli
