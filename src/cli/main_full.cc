// gpupool-full: every verb in one binary, the daemon, agent and simulator included (exec_full.h).
#include <string>
#include <vector>

#include "cli/full_verbs.h"

int main(int argc, char** argv) {
  return gpupool::cli::Main(std::vector<std::string>(argv + 1, argv + argc), gpupool::cli::FullVerb);
}
