// The full binary's own verbs, for Main (verbs.h).
#pragma once

#include <string>

#include "cli/verbs.h"

namespace gpupool::cli {

RunFn FullVerb(const std::string& name);

}  // namespace gpupool::cli
