// `gpupool sim packing`: the FGD paper's packing experiment.
#include <iostream>

#include "cli/commands.h"

namespace gpupool::cli {

int Packing(const std::vector<std::string>&) {
  std::cerr << "gpupool sim packing: not built yet\n";
  return 2;
}

}  // namespace gpupool::cli
