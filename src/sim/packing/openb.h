// The Alibaba GPU cluster trace of 2023 ("openb"), as the FGD paper's experiment uses it:
// shared/traces/alibaba-gpu-v2023-openb/SOURCE.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpupool::packing {

constexpr int kMaxGpusPerNode = 8;
constexpr int kMilliPerGpu = 1000;

struct OpenbNode {
  std::string name;
  int64_t cpu_milli = 0, memory_mib = 0;
  int gpus = 0;
  int model = -1;  // index into OpenbTrace::models
};

struct OpenbPod {
  std::string name;
  int64_t cpu_milli = 0, memory_mib = 0;
  int num_gpu = 0;       // 0..8
  int gpu_milli = 0;     // per GPU: < 1000 only with num_gpu == 1
  uint32_t models = 0;   // bit m: may run on model m; 0 = any model
  std::string spec;      // gpu_spec as written, e.g. "V100M16|V100M32" (FGD's type key)
  int64_t GpuMilliTotal() const { return int64_t{num_gpu} * gpu_milli; }
};

struct OpenbTrace {
  std::vector<std::string> models;  // GPU model names, in order of first appearance in nodes
  std::vector<OpenbNode> nodes;
  std::vector<OpenbPod> pods;
  int64_t TotalGpuMilli() const;
};

// Loads the node list (sn,cpu_milli,memory_mib,gpu,model) and a pod list
// (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec],...; no gpu_spec = any model). Nodes without GPUs are dropped
// (the paper's runs use the GPU nodes only). A gpu_spec naming a model that no node has is an
// error; pods are validated (num_gpu 0..8, gpu_milli 0..1000, fractions only on one GPU).
Result<OpenbTrace> LoadOpenb(const std::string& nodes_csv, const std::string& pods_csv);

}  // namespace gpupool::packing
