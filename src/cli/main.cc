// gpupool: one command with verbs (verbs.h): the client verbs of the REST API, the daemon
// (serve), the node agent, the simulator and the demo.
#include <string>
#include <vector>

#include "cli/full_verbs.h"

int main(int argc, char** argv) {
  return gpupool::cli::Main(std::vector<std::string>(argv + 1, argv + argc), gpupool::cli::FullVerb);
}
