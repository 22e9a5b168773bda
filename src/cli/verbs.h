// The gpupool command's verbs in one table: what `gpupool help` lists, what main dispatches to,
// what each verb's --help prints and what shell completion offers.
//
//   gpupool [--url URL] [--token TOKEN] [-o FORMAT] VERB [ARGS...]
//
// Connection flags before the verb are moved behind it (before a "--", whose words are a job's
// command), so `gpupool --token T get jobs` is `gpupool get jobs --token T`.
#pragma once

#include <string>
#include <vector>

namespace gpupool::cli {

using RunFn = int (*)(const std::vector<std::string>& argv);

struct Verb {
  const char* name;
  const char* summary;              // one line in `gpupool help`
  const char* usage;                // what VERB --help prints; completion offers its --flags
  std::vector<std::string> words;   // what may follow the verb as its first word (kinds, shells)
  RunFn run;                        // nullptr: built into the full binary only (serve, agent, ...)
  bool client;                      // takes --url, --token and -o
};

// The full binary's verbs by name (serve, agent, demo, sim), nullptr for others.
using FullVerbs = RunFn (*)(const std::string& name);

// Every verb, in the order `gpupool help` lists them.
const std::vector<Verb>& Verbs();
const Verb* FindVerb(const std::string& name);

// The --flags a usage text names, sorted, once each.
std::vector<std::string> FlagsIn(const std::string& usage);

// The whole command line after the program name; returns the exit code. `full` supplies the
// verbs whose `run` is nullptr; where it is nullptr (the lean client binary) they are handed to
// the full binary (exec_full.h).
int Main(const std::vector<std::string>& argv, FullVerbs full);

}  // namespace gpupool::cli
