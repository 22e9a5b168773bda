// `gpupool sim replay --burst FILE.yaml`: the `burst:` section of the daemon's configuration
// (daemon/config.h; docs/design/burst.md) read against the replay's catalogue, so that offers can
// name `philly-gpu`. Same keys, defaults, bounds and messages as the daemon's parser; other
// top-level keys of a daemon configuration (scheduler, tenants, nodes, ...) are accepted and
// ignored, so a daemon's file can be replayed as it is. `provider: command` and its keys are
// accepted too: the replay always provisions through the simulated provider (each offer's
// provisioning_delay_s, max_nodes).
#pragma once

#include <string>

#include "core/result.h"
#include "model/catalogue.h"
#include "sim/replay.h"

namespace gpupool {

// Errors are kInvalidArgument and name the key.
Result<ReplayBurst> ParseReplayBurst(const std::string& yaml_text, const Catalogue& catalogue);
// The same from a file; kNotFound when it cannot be read.
Result<ReplayBurst> LoadReplayBurst(const std::string& path, const Catalogue& catalogue);

}  // namespace gpupool
