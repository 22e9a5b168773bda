// Pairing: what a partly used GPU is likely to end up wasting, learned from the fractions a
// workload asks for (gpupool's pairing term; docs/design/placement.md, "The gpupool policy").
//
// The fractions (one GPU, under 1000 milli) are packed offline onto GPUs of 1000 milli, by
// minimum bin slack (MinimumBinSlack). Each packed GPU ends with some waste, and on the way there it had r milli free
// for every subset of its fractions (r = 1000 - their sum). Waste(r) is the mean final waste over
// all those (GPU, subset) pairs: how much a GPU with r milli free ended up wasting when the
// workload was paired well. A free GPU wastes nothing (whole-GPU work takes it), and a gap the
// packing never passes through counts as wasted whole.
#pragma once

#include <cstddef>
#include <vector>

namespace gpupool {

class GapWaste {
 public:
  // Nothing learned: every gap counts as wasted whole.
  GapWaste();
  // `requests`: milli-GPUs of fractions; any outside (0, 1000) are ignored.
  explicit GapWaste(std::vector<int> requests);
  // REQUIRES: 0 <= free_milli <= 1000.
  double operator()(int free_milli) const { return waste_[static_cast<size_t>(free_milli)]; }
  friend bool operator==(const GapWaste&, const GapWaste&) = default;

 private:
  std::vector<double> waste_;  // by free milli, 0..1000
};

// Best fit decreasing of per-GPU requests (milli) onto 1000-milli GPUs: the requests on each GPU.
std::vector<std::vector<int>> BestFitDecreasing(std::vector<int> requests);

// Minimum bin slack anchored on the largest item (Gupta and Ho's MBS' heuristic): each GPU is
// opened with the largest request left and filled with the subset of the others that leaves the
// least free (of equal fills, the one with the most of the largest requests). Requests come in
// few distinct sizes, so the subset is a bounded subset sum over the sizes, and a GPU's fill is
// repeated while the same requests are left for it. On the default openb list's 3,078 fractions
// it uses 1,965 GPUs, the optimum (an integer program over all patterns says so), where best
// fit decreasing uses 1,975.
std::vector<std::vector<int>> MinimumBinSlack(std::vector<int> requests);

}  // namespace gpupool
