// CheckInvariants: recomputes occupancy from the jobs alone (not with Apply's code) and
// compares it with the nodes' occupant index.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "model/state.h"

namespace gpupool {
namespace {

Error Broken(const std::string& what) { return {ErrorCode::kInternal, "invariant: " + what}; }

struct GpuUse {
  std::vector<JobId> whole;                 // jobs holding the whole GPU
  std::map<int, std::vector<JobId>> mig;    // start -> jobs
  std::vector<SharedOccupant> shared;
};

}  // namespace

Status CheckInvariants(const State& state) {
  const Catalogue& cat = state.catalogue();
  std::vector<std::vector<GpuUse>> use(state.nodes().size());
  std::vector<int64_t> cpu(state.nodes().size()), mem(state.nodes().size());
  std::vector<std::vector<JobId>> host_only(state.nodes().size());  // jobs of no GPU, per replica
  for (const Node& n : state.nodes()) use[n.id.value()].resize(n.gpus.size());

  for (const auto& [id, job] : state.jobs()) {
    const std::string jn = "job " + std::to_string(id.value());
    const bool pending_listed = state.pending().count(id) > 0;
    const bool active_listed = state.active().count(id) > 0;
    if (pending_listed != (job.state == JobState::kPending)) return Broken(jn + " pending index");
    if (active_listed != HoldsResources(job.state)) return Broken(jn + " active index");
    if (!HoldsResources(job.state)) {
      if (!job.placement.empty()) return Broken(jn + " holds a placement while not admitted");
      continue;
    }
    if (job.placement.size() != job.spec.replicas) return Broken(jn + " is a partial gang");
    const ReplicaShape& shape = job.spec.shape;
    for (const ReplicaPlacement& rp : job.placement) {
      if (!rp.node.valid() || rp.node.value() >= state.nodes().size()) {
        return Broken(jn + " on an unknown node");
      }
      const Node& node = state.node(rp.node);
      if (node.flavor != shape.flavor) return Broken(jn + " on the wrong GPU model");
      const size_t want = shape.kind == ShapeKind::kWholeGpus ? shape.gpus : 1;
      if (rp.grants.size() != want) return Broken(jn + " replica has the wrong grant count");
      cpu[rp.node.value()] += shape.cpu_milli;
      mem[rp.node.value()] += shape.memory_mib;
      if (shape.gpuless()) host_only[rp.node.value()].push_back(id);
      for (const GpuGrant& g : rp.grants) {
        if (g.gpu >= node.gpus.size()) return Broken(jn + " grant on a missing GPU");
        GpuUse& u = use[rp.node.value()][g.gpu];
        switch (shape.kind) {
          case ShapeKind::kWholeGpus: u.whole.push_back(id); break;
          case ShapeKind::kMigProfile: u.mig[g.mig_start].push_back(id); break;
          case ShapeKind::kGpuFraction:
            u.shared.push_back({id, job.spec.tenant, g.milli, g.memory_mib});
            break;
        }
      }
    }
  }

  for (const Node& node : state.nodes()) {
    const GpuModel& model = cat.model(node.flavor);
    const std::string nn = "node " + node.name;
    if (node.cpu_used != cpu[node.id.value()] || node.memory_used != mem[node.id.value()]) {
      return Broken(nn + " host usage index differs from the jobs");
    }
    std::vector<JobId> listed = node.host_only, want = host_only[node.id.value()];
    std::sort(listed.begin(), listed.end());
    std::sort(want.begin(), want.end());
    if (listed != want) return Broken(nn + " index of jobs of no GPU differs from the jobs");
    if ((node.cpu_milli && node.cpu_used > node.cpu_milli) ||
        (node.memory_mib && node.memory_used > node.memory_mib)) {
      return Broken(nn + " host resources over capacity");
    }
    for (size_t gi = 0; gi < node.gpus.size(); ++gi) {
      const Gpu& gpu = node.gpus[gi];
      const GpuUse& u = use[node.id.value()][gi];
      const std::string gn = nn + " GPU " + std::to_string(gi);
      const bool other_modes_used =
          (gpu.mode != GpuMode::kWhole && !u.whole.empty()) ||
          (gpu.mode != GpuMode::kMig && !u.mig.empty()) ||
          (gpu.mode != GpuMode::kShared && !u.shared.empty());
      if (other_modes_used) return Broken(gn + " used in a mode it is not in");
      if (gpu.dynamic && gpu.mode == GpuMode::kMig) return Broken(gn + " is dynamic and in MIG mode");
      switch (gpu.mode) {
        case GpuMode::kWhole:
          if (u.whole.size() > 1) return Broken(gn + " held by two jobs");
          if (gpu.occupant != (u.whole.empty() ? JobId() : u.whole[0])) {
            return Broken(gn + " occupant index differs");
          }
          break;
        case GpuMode::kMig: {
          if (Status s = ValidateLayout(model, gpu.layout); !s.ok()) {
            return Broken(gn + " layout: " + s.error().message);
          }
          for (const auto& [start, jobs] : u.mig) {
            if (jobs.size() > 1) return Broken(gn + " MIG instance held by two jobs");
            const int i = gpu.layout.IndexOfStart(start);
            if (i < 0) return Broken(gn + " job on a MIG instance that does not exist");
            const Job* j = state.FindJob(jobs[0]);
            if (gpu.layout.at(i).profile != j->spec.shape.mig_profile) {
              return Broken(gn + " job on a MIG instance of another profile");
            }
          }
          for (int i = 0; i < gpu.layout.size(); ++i) {
            auto it = u.mig.find(gpu.layout.at(i).start);
            if (gpu.instance_occupant[i] != (it == u.mig.end() ? JobId() : it->second[0])) {
              return Broken(gn + " MIG occupant index differs");
            }
          }
          break;
        }
        case GpuMode::kShared: {
          int64_t milli = 0, gmem = 0;
          for (const SharedOccupant& o : u.shared) {
            milli += o.milli;
            gmem += o.memory_mib;
            for (const SharedOccupant& p : u.shared) {
              if (o.tenant != p.tenant && !(state.tenant(o.tenant).allow_gpu_cotenancy &&
                                            state.tenant(p.tenant).allow_gpu_cotenancy)) {
                return Broken(gn + " mixes tenants that did not both allow it");
              }
            }
          }
          if (milli > 1000 || gmem > model.memory_mib) return Broken(gn + " over capacity");
          if (gpu.max_clients && u.shared.size() > gpu.max_clients) {
            return Broken(gn + " over its client cap");
          }
          std::vector<uint64_t> a, b;
          for (const SharedOccupant& o : u.shared) a.push_back(o.job.value());
          for (const SharedOccupant& o : gpu.shared) b.push_back(o.job.value());
          std::sort(a.begin(), a.end());
          std::sort(b.begin(), b.end());
          if (a != b) return Broken(gn + " shared occupant index differs");
          break;
        }
      }
    }
  }
  return Ok();
}

}  // namespace gpupool
