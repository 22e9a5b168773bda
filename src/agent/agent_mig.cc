// Agent: applying the daemon's MIG layouts (agent_loop.h, "MIG"; docs/design/agent.md, "MIG
// layouts"). The applies themselves run on the MigWorker's thread.
#include <algorithm>

#include "agent/agent_loop.h"
#include "agent/mig_worker.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

// The layout a GPU holds now, in the catalogue's terms; an error when an instance has no known
// profile or placement (it then differs from any target).
Result<MigLayout> CurrentLayout(const GpuModel& model, const GpuInfo& g) {
  std::string text;
  for (const GpuInstanceInfo& gi : g.gpu_instances) {
    if (gi.profile.empty() || gi.start == kUnknownU32) {
      return FailedPrecondition("an instance of unknown profile or placement");
    }
    text += (text.empty() ? "" : ",") + gi.profile + "@" + std::to_string(gi.start);
  }
  return ParseLayout(model, text);
}

}  // namespace

bool Agent::GpuBusy(const GpuInfo& g) const {
  for (const auto& [key, r] : replicas_) {
    if (r.exited) continue;
    for (const std::string& d : r.devices) {
      if (d == g.uuid) return true;
      for (const GpuInstanceInfo& gi : g.gpu_instances) {
        if (std::find(gi.mig_uuids.begin(), gi.mig_uuids.end(), d) != gi.mig_uuids.end()) {
          return true;
        }
      }
    }
  }
  return false;
}

void Agent::MigRefused(uint32_t gpu, const std::string& layout, const std::string& why) {
  const MigRefusalReport e{.gpu = gpu, .layout = layout, .error = why};
  auto it = mig_errors_.find(gpu);
  if (it == mig_errors_.end() || it->second != e) {
    Log("warn", "MIG layout not applied", {{"gpu", gpu}, {"layout", layout}, {"error", why}});
  }
  mig_errors_[gpu] = e;
}

void Agent::ApplyMig(const MigTarget& m) {
  const std::string& text = m.layout;
  const int64_t index = m.gpu;
  const GpuInfo* seen = index < kUnknownU32 ? GpuAt(static_cast<uint32_t>(index)) : nullptr;
  if (seen == nullptr) {
    Log("warn", "MIG entry for a GPU this node lacks: skipped", {{"gpu", index}, {"layout", text}});
    return;
  }
  const uint32_t gpu = static_cast<uint32_t>(index);
  // In progress, or its result not yet rediscovered: the daemon asks until it sees the result.
  if (mig_applying(gpu)) return;
  const GpuInfo& g = *seen;
  Result<FlavorId> flavor = catalogue_.Find(g.model);
  if (!flavor.ok() || g.mig_current != MigMode::kEnabled) {
    MigRefused(gpu, text, "GPU " + std::to_string(gpu) + " is not in MIG mode");
    return;
  }
  const GpuModel& model = catalogue_.model(*flavor);
  Result<MigLayout> target = ParseLayout(model, text);
  if (!target.ok()) {
    MigRefused(gpu, text, target.error().message);
    return;
  }
  if (Result<MigLayout> now = CurrentLayout(model, g); now.ok() && *now == *target) {
    mig_errors_.erase(gpu);  // applied; the daemon has not seen the report yet
    return;
  }
  if (!options_.allow_mig_changes) {
    MigRefused(gpu, text, "MIG changes are off on this agent (start it with --allow-mig-changes)");
    return;
  }
  if (GpuBusy(g)) {  // a replica still runs there (e.g. in its stop grace): wait
    if (mig_waiting_[gpu] != text) {
      Log("info", "MIG layout waits for the GPU's replicas to exit",
          {{"gpu", gpu}, {"layout", text}});
    }
    mig_waiting_[gpu] = text;
    return;
  }
  mig_waiting_.erase(gpu);
  if (!mig_worker_) mig_worker_ = std::make_unique<MigWorker>(probe_, probe_mu_);
  mig_applying_.insert(gpu);
  Log("info", "MIG layout being applied", {{"gpu", gpu}, {"layout", text}});
  mig_worker_->Submit({gpu, &model, *target, text});
}

void Agent::TakeMigResults() {
  if (!mig_worker_) return;
  for (MigWorker::Done& d : mig_worker_->TakeDone()) {
    mig_applying_.erase(d.gpu);
    mig_applied_.insert(d.gpu);  // its old MIG UUIDs are gone by our hand, not lost
    // Whatever happened, report what the GPUs hold now. The worker read them under the probe's
    // lock right after the apply: a rediscovery here would be skipped while it applies the next
    // GPU, and this GPU's stale layout would then be applied again (the daemon still asks for
    // it) and its stale MIG UUIDs admitted for starts. Until a discovery is taken, the GPU stays
    // in mig_applied_, which blocks starts and applies like mig_applying_.
    if (d.seen.ok()) {
      TakeDiscovery(std::move(*d.seen));
    } else {
      Log("warn", "cannot discover the GPUs after a MIG change",
          {{"gpu", d.gpu}, {"error", d.seen.error().message}});
      rediscover_now_ = true;
    }
    if (!d.status.ok()) {
      MigRefused(d.gpu, d.text, d.status.error().message);
      continue;
    }
    mig_errors_.erase(d.gpu);
    Log("info", "MIG layout applied", {{"gpu", d.gpu}, {"layout", d.text}});
  }
}

}  // namespace gpupool
