// The verbs only the full binary has (exec_full.h): serve, agent, demo, sim.
#include "cli/full_verbs.h"

#include "cli/commands.h"

namespace gpupool::cli {

RunFn FullVerb(const std::string& name) {
  if (name == "serve") return Serve;
  if (name == "agent") return Agent;
  if (name == "demo") return Demo;
  if (name == "sim") return Sim;
  return nullptr;
}

}  // namespace gpupool::cli
