// CommandProvider: creates and deletes on-demand nodes by running the operator's scripts
// (DESIGN.md §6; the script contract is in docs/design/burst.md).
//
// Provision runs `create_command` through `/bin/sh -c` (fork + execve, its own process group,
// stdin from /dev/null) with GPUPOOL_FLAVOR, GPUPOOL_GPUS, GPUPOOL_TENANT (request.tenant_name,
// or the tenant id in decimal when it is empty), GPUPOOL_REQUEST_ID (request.request_id, or one
// of its own when empty) and GPUPOOL_INDEX added to the daemon's environment, and waits for it:
// the script returns
// once the node exists, printing one JSON object on stdout:
//   {"name": "gpu-17", "gpus": 8, "flavor": "h100-80gb", "cpu_milli": 96000, "memory_mib": 1048576}
// name, gpus and flavor are required; cpu_milli and memory_mib are optional (0 = not tracked);
// any other key is an error. The node is then ready (at `now` plus the script's run time) and
// the next Poll returns it. Release runs `delete_command` with GPUPOOL_NODE (and GPUPOOL_FLAVOR,
// GPUPOOL_TENANT when this provider created the node).
//
// A non-zero exit, a timeout (the whole process group is killed with SIGKILL) or bad output is
// a kUnavailable error naming the script, with the first 200 bytes of its stderr. When the
// output names a node but fails validation (wrong flavor, gpus out of range), the node is
// deleted again so nothing is left running unbilled.
//
// Blocking: Provision and Release block for as long as the script runs (up to `timeout`). The
// daemon therefore never calls them on its event loop: it runs this provider inside an
// AsyncProvider (burst/async_provider.h), whose worker thread is then the one owner. Everything
// it needs from the daemon comes in the request (the tenant's name), so it reads no state of the
// daemon's from that thread. Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "burst/provider.h"
#include "model/catalogue.h"

namespace gpupool {

struct CommandProviderConfig {
  std::string create_command;  // a /bin/sh command line
  std::string delete_command;
  Duration timeout = Duration::Minutes(10);  // per script run; > 0
};

class CommandProvider final : public Provider {
 public:
  // REQUIRES: both commands non-empty, timeout > 0 and finite.
  CommandProvider(const Catalogue& catalogue, CommandProviderConfig config);

  // Request ids are request.request_id, or "cmd-<now in ms>-<sequence>" when it is empty.
  Result<std::string> Provision(const ProvisionRequest& request, int index, Time now) override;
  std::vector<ProvisionedNode> Poll(Time now) override;
  // Runs the delete script for any name, known to this provider or not (after a restart it
  // knows none).
  Status Release(const std::string& node_name, Time now) override;

 private:
  struct Origin {
    FlavorId flavor;
    std::string tenant;  // GPUPOOL_TENANT as the create script had it
  };
  Result<ProvisionedNode> ParseNode(const std::string& out, const ProvisionRequest& request) const;
  Status Delete(const std::string& node_name, const std::vector<std::string>& env);

  Catalogue catalogue_;
  CommandProviderConfig config_;
  uint64_t seq_ = 0;
  std::vector<ProvisionedNode> created_;   // since the last Poll
  std::map<std::string, Origin> origins_;  // node name -> what it was created for
};

}  // namespace gpupool
