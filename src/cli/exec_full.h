// The two binaries behind the one `gpupool` command (docs/design/cli.md). `gpupool` is the lean
// client: the REST API verbs, help, completion, catalogue, version; it links no daemon,
// scheduler, store, agent or simulator code and starts in a few milliseconds. The verbs that
// need those (serve, agent, demo, sim) are in `gpupool-full`, installed beside it; the lean
// binary hands them over with exec, so `gpupool serve ...` is `gpupool-full serve ...`.
#pragma once

#include <string>
#include <vector>

namespace gpupool::cli {

inline constexpr const char* kFullBinaryName = "gpupool-full";

// Replaces this process with `gpupool-full VERB ARGV...` from the directory of this binary
// (/proc/self/exe, so a symlink to gpupool works). Returns only when that fails: the error is
// printed and the exit code is 1.
int ExecFull(const std::string& verb, const std::vector<std::string>& argv);

}  // namespace gpupool::cli
