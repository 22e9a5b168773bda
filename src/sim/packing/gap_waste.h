// What a partly used GPU is likely to end up wasting, learned from the workload: gpupool's
// pairing term (docs/design/simulator.md, "Our policy").
//
// The fractional pods of the original list (one GPU, under 1000 milli) are packed offline by best
// fit decreasing onto GPUs of 1000 milli. Each packed GPU ends with some waste, and on the way
// there it had r milli free for every subset of its pods (r = 1000 - their sum). Waste(r) is the
// mean final waste over all those (GPU, subset) pairs: how much a GPU that has r milli free
// ended up wasting, when the workload was paired well. A free GPU wastes nothing (whole-GPU pods
// take it), and a gap the packing never passes through is taken as wasted whole.
#pragma once

#include <vector>

#include "sim/packing/openb.h"

namespace gpupool::packing {

class GapWaste {
 public:
  explicit GapWaste(const std::vector<OpenbPod>& pods);
  // REQUIRES: 0 <= free_milli <= 1000.
  double operator()(int free_milli) const { return waste_[static_cast<size_t>(free_milli)]; }

 private:
  std::vector<double> waste_;  // by free milli, 0..1000
};

// Best fit decreasing of per-GPU requests onto 1000-milli GPUs: the requests on each GPU.
std::vector<std::vector<int>> BestFitDecreasing(std::vector<int> requests);

}  // namespace gpupool::packing
