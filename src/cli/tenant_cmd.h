// `gpupool create tenant` (the `create` verb parses the flags and hands over) and
// `gpupool edit tenant` (commands.h).
#pragma once

#include "cli/invocation.h"

namespace gpupool::cli {

// `create tenant NAME [flags]` or `create tenant -f FILE.yaml`, with inv's flags parsed.
int CreateTenant(Invocation& inv);

}  // namespace gpupool::cli
