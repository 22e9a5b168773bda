#include "sim/packing/gap_waste.h"

namespace gpupool::packing {

GapWaste GapWasteOf(const std::vector<OpenbPod>& pods) {
  std::vector<int> requests;
  for (const OpenbPod& p : pods) {
    if (p.num_gpu == 1 && p.gpu_milli > 0 && p.gpu_milli < kMilliPerGpu) requests.push_back(p.gpu_milli);
  }
  return GapWaste(std::move(requests));
}

}  // namespace gpupool::packing
