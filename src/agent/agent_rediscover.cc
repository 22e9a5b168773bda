// Agent: reading the GPUs again (agent_loop.h, "Rediscovery"; docs/design/agent.md,
// "Rediscovery"). A GPU reset, a device that falls off the bus or a manual `nvidia-smi mig`
// change must not leave the daemon with stale UUIDs, nor a job failed as its own fault.
#include <algorithm>
#include <mutex>

#include "agent/agent_loop.h"

namespace gpupool {

using Json = nlohmann::json;

const GpuInfo* Agent::GpuAt(uint32_t index) const {
  for (const GpuInfo& g : gpus_) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

const GpuInfo* Agent::GpuOfDevice(const std::string& device) const {
  for (const GpuInfo& g : gpus_) {
    if (g.uuid == device) return &g;
    for (const GpuInstanceInfo& gi : g.gpu_instances) {
      if (std::find(gi.mig_uuids.begin(), gi.mig_uuids.end(), device) != gi.mig_uuids.end()) {
        return &g;
      }
    }
  }
  return nullptr;
}

std::string Agent::StartBlocked(const std::vector<std::string>& devices) {
  for (const std::string& d : devices) {
    // Anything else is not a UUID at all: the executor refuses it (exit 127).
    if (d.rfind("GPU-", 0) != 0 && d.rfind("MIG-", 0) != 0) continue;
    const GpuInfo* g = GpuOfDevice(d);
    if (g == nullptr) {
      if (options_.rediscover_interval > Duration::Millis(0)) rediscover_now_ = true;
      return "device " + d + " is not on this node (any more)";
    }
    if (mig_applying(g->index)) {
      return "GPU " + std::to_string(g->index) + " is being re-partitioned";
    }
    // A replica told to stop keeps its devices until its shim has seen it gone (its cgroup
    // empty); replicas sharing a GPU by design (fractions) are not stopping.
    for (const auto& [key, r] : replicas_) {
      if (!r.stopping || !executor_.running(key)) continue;
      for (const std::string& used : r.devices) {
        const GpuInfo* u = GpuOfDevice(used);
        const bool whole = used == g->uuid || d == g->uuid;
        if (used == d || (u == g && whole)) {
          return "device " + d + " is still used by replica " + key + ", which is stopping";
        }
      }
    }
  }
  return "";
}

bool Agent::RediscoveryDue(Time now) {
  if (rediscover_now_) return true;
  if (options_.rediscover_interval <= Duration::Millis(0)) return false;
  if (!next_rediscover_) next_rediscover_ = now + options_.rediscover_interval;
  return now >= *next_rediscover_;
}

void Agent::Rediscover(Time now) {
  std::unique_lock<std::mutex> lock(probe_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // a MIG change holds the probe: at the next heartbeat
  Result<std::vector<GpuInfo>> seen = probe_.Discover();
  lock.unlock();
  // Failed exits reaped before this may go after the health poll (PollHealthEvents). A
  // MigWorker's discovery does not count: it may predate the loss that made a replica fail.
  rediscover_now_ = false;
  if (options_.rediscover_interval > Duration::Millis(0)) {
    next_rediscover_ = now + options_.rediscover_interval;
  }
  if (!seen.ok()) {
    Log("warn", "cannot rediscover the GPUs", {{"error", seen.error().message}});
    return;
  }
  TakeDiscovery(std::move(*seen));
}

void Agent::MarkDeviceLost(Replica& r, const std::string& device, const std::string& why) {
  r.device_lost = true;
  Log("error",
      "a replica's device was lost: reported as an infrastructure failure, its exit held back "
      "until the daemon has the loss",
      {{"job", r.job}, {"replica", r.index}, {"device", device}, {"reason", why}});
}

void Agent::TakeDiscovery(std::vector<GpuInfo> seen) {
  // A GPU being re-partitioned is the worker's until it finishes: keep what we knew of it.
  for (GpuInfo& g : seen) {
    if (!mig_applying_.count(g.index)) continue;
    if (const GpuInfo* old = GpuAt(g.index); old != nullptr && old->uuid == g.uuid) g = *old;
  }
  std::set<std::string> uuids_now, mig_now;
  for (const GpuInfo& g : seen) {
    uuids_now.insert(g.uuid);
    lost_uuids_.erase(g.uuid);  // back (after a reset): lost again later is reported again
    for (const GpuInstanceInfo& gi : g.gpu_instances) {
      mig_now.insert(gi.mig_uuids.begin(), gi.mig_uuids.end());
    }
  }
  // Devices gone, with the GPU index the daemon knows them under.
  std::map<std::string, uint32_t> gpus_gone, mig_gone;
  for (const GpuInfo& old : gpus_) {
    if (!uuids_now.count(old.uuid)) {
      gpus_gone[old.uuid] = old.index;
      for (const GpuInstanceInfo& gi : old.gpu_instances) {
        for (const std::string& u : gi.mig_uuids) gpus_gone[u] = old.index;
      }
      if (lost_uuids_.insert(old.uuid).second) {
        Log("error", "a GPU is no longer seen: reported lost",
            {{"gpu", old.index}, {"uuid", old.uuid}});
        pending_health_.push_back({.gpu = old.index, .kind = "gpu_lost"});
      }
      continue;
    }
    if (mig_applied_.count(old.index)) continue;  // changed by our own MIG apply
    for (const GpuInstanceInfo& gi : old.gpu_instances) {
      for (const std::string& u : gi.mig_uuids) {
        if (!mig_now.count(u)) mig_gone[u] = old.index;
      }
    }
  }
  mig_applied_.clear();
  // Replicas whose device went: their failure is the node's, not the job's.
  std::set<uint32_t> device_lost_on;
  for (auto& [key, r] : replicas_) {
    if (r.exit_sent || r.device_lost) continue;
    for (const std::string& d : r.devices) {
      if (gpus_gone.count(d)) {
        MarkDeviceLost(r, d, "GPU " + std::to_string(gpus_gone[d]) + " is no longer seen");
        break;
      }
      if (auto m = mig_gone.find(d); m != mig_gone.end()) {
        MarkDeviceLost(r, d, "MIG device of GPU " + std::to_string(m->second) + " is gone");
        device_lost_on.insert(m->second);
        break;
      }
    }
  }
  for (uint32_t gpu : device_lost_on) {
    pending_health_.push_back({.gpu = gpu, .kind = "device_lost"});
  }
  // A new GPU UUID where the daemon knows another (same GPU count, so it accepts it): register
  // again, once the heartbeat that carries the loss has been accepted.
  std::set<std::string> uuids_before;
  for (const GpuInfo& g : gpus_) uuids_before.insert(g.uuid);
  const bool new_uuid = std::any_of(seen.begin(), seen.end(),
                                    [&](const GpuInfo& g) { return !uuids_before.count(g.uuid); });
  if (new_uuid && seen.size() == gpus_.size()) reregister_after_ack_ = true;

  auto describe = [](const std::vector<GpuInfo>& gpus) {
    Json out = Json::array();
    for (const GpuInfo& g : gpus) {
      Json instances = Json::array();
      for (const GpuInstanceInfo& gi : g.gpu_instances) {
        instances.push_back(gi.profile + "@" + std::to_string(gi.start) + "=" +
                            (gi.mig_uuids.empty() ? "" : gi.mig_uuids.front()));
      }
      out.push_back({{"index", g.index},
                     {"uuid", g.uuid},
                     {"mig", g.mig_current == MigMode::kEnabled},
                     {"instances", instances}});
    }
    return out;
  };
  const Json before = describe(gpus_), after = describe(seen);
  if (before != after) Log("info", "the GPUs changed", {{"before", before}, {"after", after}});
  gpus_ = std::move(seen);
}

}  // namespace gpupool
