// gpupool, the lean client binary: every verb (verbs.h); serve, agent, demo and sim are handed
// to gpupool-full beside it (exec_full.h).
#include <string>
#include <vector>

#include "cli/verbs.h"

int main(int argc, char** argv) {
  return gpupool::cli::Main(std::vector<std::string>(argv + 1, argv + argc), nullptr);
}
