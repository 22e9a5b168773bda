// FGD's model of the workload, as the paper's simulator defines it
// (docs/research/fgd-simulator-policies.md §2.6): the typical pods of a pod list, which the fgd
// and gpupool placement policies weigh in the packing experiment.
//
// Typical pods: the original trace's pods grouped by (cpu, per-GPU milli, GPU count, gpu_spec),
// most frequent first (ties: larger cpu, milli, count, spec first), the smallest prefix covering
// 95% of pods, each with probability count / kept.
#pragma once

#include <string>
#include <vector>

#include "sim/packing/openb.h"

namespace gpupool::packing {

struct TypicalPod {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;  // mean of the group (FGD itself ignores memory)
  int gpu_milli = 0;
  int num_gpu = 0;
  uint32_t models = 0;
  std::string spec;
  int64_t count = 0;
  double p = 0;
};

std::vector<TypicalPod> TypicalPods(const std::vector<OpenbPod>& original, double coverage = 0.95);

}  // namespace gpupool::packing
