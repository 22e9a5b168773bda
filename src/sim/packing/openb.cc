#include "sim/packing/openb.h"

#include <algorithm>

#include "sim/csv.h"

namespace gpupool::packing {

int64_t OpenbTrace::TotalGpuMilli() const {
  int64_t total = 0;
  for (const OpenbNode& n : nodes) total += int64_t{n.gpus} * kMilliPerGpu;
  return total;
}

Result<OpenbTrace> LoadOpenb(const std::string& nodes_csv, const std::string& pods_csv) {
  OpenbTrace t;
  Result<CsvTable> nodes = CsvTable::Read(nodes_csv, {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!nodes.ok()) return nodes.error();
  for (size_t r = 0; r < nodes->rows(); ++r) {
    Result<int64_t> cpu = nodes->Int(r, "cpu_milli"), mem = nodes->Int(r, "memory_mib"),
                    gpu = nodes->Int(r, "gpu");
    for (const Result<int64_t>* v : {&cpu, &mem, &gpu}) {
      if (!v->ok()) return v->error();
    }
    if (*gpu < 0 || *gpu > kMaxGpusPerNode || *cpu < 0 || *mem < 0) {
      return InvalidArgument(nodes->Where(r) + ": resources out of range");
    }
    if (*gpu == 0) continue;
    const std::string& model = nodes->Field(r, "model");
    auto it = std::find(t.models.begin(), t.models.end(), model);
    if (it == t.models.end()) {
      if (t.models.size() == 32) return InvalidArgument(nodes_csv + ": more than 32 GPU models");
      t.models.push_back(model);
      it = t.models.end() - 1;
    }
    t.nodes.push_back({nodes->Field(r, "sn"), *cpu, *mem, static_cast<int>(*gpu),
                       static_cast<int>(it - t.models.begin())});
  }
  Result<CsvTable> pods =
      CsvTable::Read(pods_csv, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!pods.ok()) return pods.error();
  for (size_t r = 0; r < pods->rows(); ++r) {
    Result<int64_t> cpu = pods->Int(r, "cpu_milli"), mem = pods->Int(r, "memory_mib"),
                    ng = pods->Int(r, "num_gpu"), gm = pods->Int(r, "gpu_milli");
    for (const Result<int64_t>* v : {&cpu, &mem, &ng, &gm}) {
      if (!v->ok()) return v->error();
    }
    if (*ng < 0 || *ng > kMaxGpusPerNode || *gm < 0 || *gm > kMilliPerGpu || *cpu < 0 || *mem < 0 ||
        (*ng > 1 && *gm != kMilliPerGpu) || (*ng == 0 && *gm != 0) || (*ng > 0 && *gm == 0)) {
      return InvalidArgument(pods->Where(r) + ": GPU request out of range");
    }
    static const std::string kNoSpec;  // some pod lists have no gpu_spec column
    const std::string& spec = pods->Has("gpu_spec") ? pods->Field(r, "gpu_spec") : kNoSpec;
    OpenbPod p{pods->Field(r, "name"), *cpu, *mem, static_cast<int>(*ng), static_cast<int>(*gm), 0,
               spec};
    size_t start = 0;
    while (!spec.empty() && start <= spec.size()) {
      const size_t bar = spec.find('|', start);
      const std::string m = spec.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
      auto it = std::find(t.models.begin(), t.models.end(), m);
      if (it == t.models.end()) return InvalidArgument(pods->Where(r) + ": unknown GPU model '" + m + "'");
      p.models |= 1u << (it - t.models.begin());
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
    t.pods.push_back(std::move(p));
  }
  return t;
}

}  // namespace gpupool::packing
