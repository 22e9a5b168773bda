// Turning the client verbs' command lines and files into API requests. All pure: no I/O beyond
// what the caller hands in, errors are kInvalidArgument (the user's usage error, exit 2), and
// what the server alone can judge (tenant names, flavors, limits) is left to the server.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/client.h"

namespace gpupool::cli {

// A command line split at the first "--" (everything after it is the job's command), with the
// short flags -o X / -oX, -f X / -fX and -h rewritten as --output, --file and --help so Args can
// parse the rest. `booleans` are the long flags that take no value (their next word is not
// skipped). Any other single-dash word is an error.
struct SplitArgs {
  std::vector<std::string> flags;
  std::vector<std::string> command;
  bool has_separator = false;
};
Result<SplitArgs> SplitCommandLine(const std::vector<std::string>& argv,
                                   const std::set<std::string>& booleans);

// Seconds from "90", "90s", "30m", "2h", "1d" or combinations such as "1h30m".
Result<int64_t> ParseDuration(const std::string& text);

// The POST /v1/jobs body from `gpupool submit` flags (--tenant --name --flavor, --gpus |
// --mig-profile | --gpu-fraction with --memory-gb, and optionally --replicas (1),
// --priority-class and --duration (else the server's defaults), --reservation, --selector
// (repeatable, selector.h) and --topology) and the words after "--". Exactly one resource form.
Result<Json> JobRequestFromArgs(const Args& args, const std::vector<std::string>& command);

// A YAML mapping as a JSON object: plain scalars that read as booleans, integers or decimals
// become those, except at the paths in `string_fields` ("name", "command[]", "a.b"), which stay
// strings, as quoted scalars do.
Result<Json> ObjectFromYaml(const std::string& yaml_text, const std::set<std::string>& string_fields);

// The same body from YAML text with the fields of the JSON body. Names, flavors, MIG profiles and
// command words are always strings (so `command: [sleep, 60]` works); duration_estimate_s may
// also be written "2h". Unknown fields are passed on for the server to reject.
Result<Json> JobRequestFromYaml(const std::string& yaml_text);

}  // namespace gpupool::cli
