#include "agent/fake_probe.h"

#include <chrono>
#include <cstdio>

namespace gpupool {
namespace {

constexpr uint32_t kDefaultTemperature = 40;

bool ValidNodeName(std::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string BusId(uint32_t gpu) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "00000000:%02X:00.0", (gpu + 1) & 0xFFu);
  return buf;
}

}  // namespace

Result<std::unique_ptr<FakeProbe>> FakeProbe::Create(std::string node_name, std::string_view spec,
                                                     Catalogue catalogue) {
  if (!ValidNodeName(node_name)) {
    return InvalidArgument("fake probe node name '" + node_name +
                           "' must be 1-64 characters of [A-Za-z0-9._-]");
  }
  auto gpus = ParseFakeGpuSpec(catalogue, spec);
  if (!gpus.ok()) return gpus.error();
  return std::unique_ptr<FakeProbe>(
      new FakeProbe(std::move(node_name), std::move(catalogue), std::move(*gpus)));
}

FakeProbe::FakeProbe(std::string node, Catalogue catalogue, std::vector<FakeGpuSpec> gpus)
    : node_(std::move(node)),
      catalogue_(std::move(catalogue)),
      gpus_(std::move(gpus)),
      gi_ids_(gpus_.size()),
      next_gi_id_(gpus_.size(), 1),
      temperature_(gpus_.size(), kDefaultTemperature),
      removed_(gpus_.size(), false),
      mig_delay_(gpus_.size(), Duration::Millis(0)) {
  for (size_t i = 0; i < gpus_.size(); ++i) {
    uuid_.push_back("GPU-fake-" + node_ + "-" + std::to_string(i));
  }
  for (size_t i = 0; i < gpus_.size(); ++i) {
    for (int k = 0; gpus_[i].mig && k < gpus_[i].layout.size(); ++k) {
      gi_ids_[i].push_back(next_gi_id_[i]++);
    }
  }
}

std::string FakeProbe::Uuid(uint32_t gpu) const { return uuid_[gpu]; }

Result<std::vector<GpuInfo>> FakeProbe::Discover() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<GpuInfo> out;
  const uint32_t n = static_cast<uint32_t>(gpus_.size());
  for (uint32_t i = 0; i < n; ++i) {
    if (removed_[i]) continue;
    const FakeGpuSpec& spec = gpus_[i];
    const GpuModel& model = catalogue_.model(*catalogue_.Find(spec.model));
    GpuInfo g;
    g.index = i;
    g.uuid = Uuid(i);
    g.name = std::string(ProductNameFor(spec.model));
    if (g.name.empty()) g.name = "Fake " + spec.model;  // a catalogue added by a test
    g.model = spec.model;
    g.memory_mib = model.memory_mib;
    g.pci_bus_id = BusId(i);
    g.mig_current = g.mig_pending = spec.mig ? MigMode::kEnabled : MigMode::kDisabled;
    for (int k = 0; spec.mig && k < spec.layout.size(); ++k) {
      const MigInstance& inst = spec.layout.at(k);
      const MigProfile& p = model.profiles[inst.profile];
      GpuInstanceInfo gi;
      gi.id = gi_ids_[i][k];
      gi.profile_id = p.id;
      gi.profile = p.name;
      gi.start = inst.start;
      gi.size = p.memory_slices;
      gi.mig_uuids.push_back("MIG-fake-" + node_ + "-" + std::to_string(i) + "-" +
                             std::to_string(gi.id));
      g.gpu_instances.push_back(std::move(gi));
    }
    for (uint32_t peer = 0, link = 0; peer < n; ++peer) {
      if (peer == i || removed_[peer]) continue;
      g.nvlinks.push_back({link++, BusId(peer), Uuid(peer), "gpu"});
    }
    out.push_back(std::move(g));
  }
  return out;
}

Status FakeProbe::ApplyMigLayout(uint32_t gpu, const GpuModel& model, const MigLayout& layout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (gpu >= gpus_.size()) return InvalidArgument("no fake GPU " + std::to_string(gpu));
  ++mig_in_progress_;
  // Waits out the delay with mu_ released (Discover and PollHealth answer meanwhile).
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(mig_delay_[gpu].millis());
  mig_delay_cv_.wait_until(lock, until, [&] { return mig_delay_[gpu] == Duration::Millis(0); });
  --mig_in_progress_;
  if (removed_[gpu]) {
    return InvalidArgument("no fake GPU " + std::to_string(gpu));
  }
  FakeGpuSpec& spec = gpus_[gpu];
  if (model.name != spec.model) {
    return InvalidArgument("fake GPU " + std::to_string(gpu) + " is a " + spec.model + ", not a " +
                           model.name);
  }
  if (!spec.mig)
    return FailedPrecondition("fake GPU " + std::to_string(gpu) + " is not in MIG mode");
  GP_RETURN_IF_ERROR(ValidateLayout(model, layout));
  if (spec.layout == layout) return Ok();
  std::vector<uint32_t> ids;
  for (int k = 0; k < layout.size(); ++k) {
    const int old = spec.layout.IndexOfStart(layout.at(k).start);
    const bool kept = old >= 0 && spec.layout.at(old).profile == layout.at(k).profile;
    ids.push_back(kept ? gi_ids_[gpu][old] : next_gi_id_[gpu]++);
  }
  spec.layout = layout;
  gi_ids_[gpu] = std::move(ids);
  ++mig_changes_;
  return Ok();
}

SystemInfo FakeProbe::System() {
  std::lock_guard<std::mutex> lock(mu_);
  return system_;
}

void FakeProbe::SetSystem(SystemInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  system_ = std::move(info);
}

int FakeProbe::mig_changes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mig_changes_;
}

Result<std::vector<HealthEvent>> FakeProbe::PollHealth() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HealthEvent> out;
  out.swap(pending_);
  for (uint32_t i = 0; i < gpus_.size(); ++i) {
    if (removed_[i]) continue;
    out.push_back({i, Uuid(i), HealthEventKind::kTemperature, temperature_[i], kUnknownU32});
  }
  return out;
}

void FakeProbe::Push(uint32_t gpu, HealthEventKind kind, uint64_t value, uint32_t gi) {
  GP_CHECK(gpu < gpus_.size()) << "fake GPU " << gpu << " of " << gpus_.size();
  std::lock_guard<std::mutex> lock(mu_);
  pending_.push_back({gpu, Uuid(gpu), kind, value, gi});
}

void FakeProbe::InjectXid(uint32_t gpu, uint64_t code, uint32_t gpu_instance_id) {
  Push(gpu, HealthEventKind::kXid, code, gpu_instance_id);
}
void FakeProbe::InjectEcc(uint32_t gpu, uint64_t uncorrectable_count) {
  Push(gpu, HealthEventKind::kEccUncorrectable, uncorrectable_count, kUnknownU32);
}
void FakeProbe::InjectRowRemapFailure(uint32_t gpu) {
  Push(gpu, HealthEventKind::kRowRemapFailure, 1, kUnknownU32);
}
void FakeProbe::InjectRowRemapPending(uint32_t gpu) {
  Push(gpu, HealthEventKind::kRowRemapPending, 1, kUnknownU32);
}
void FakeProbe::InjectGpuLost(uint32_t gpu) {
  Push(gpu, HealthEventKind::kGpuLost, 0, kUnknownU32);
}

void FakeProbe::SetTemperature(uint32_t gpu, uint32_t celsius) {
  GP_CHECK(gpu < gpus_.size()) << "fake GPU " << gpu << " of " << gpus_.size();
  std::lock_guard<std::mutex> lock(mu_);
  temperature_[gpu] = celsius;
}

void FakeProbe::RemoveGpu(uint32_t gpu) {
  GP_CHECK(gpu < gpus_.size()) << "fake GPU " << gpu << " of " << gpus_.size();
  std::lock_guard<std::mutex> lock(mu_);
  removed_[gpu] = true;
}

void FakeProbe::SetGpuUuid(uint32_t gpu, std::string uuid) {
  GP_CHECK(gpu < gpus_.size()) << "fake GPU " << gpu << " of " << gpus_.size();
  std::lock_guard<std::mutex> lock(mu_);
  uuid_[gpu] = std::move(uuid);
}

void FakeProbe::SetMigDelay(Duration delay) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    mig_delay_.assign(gpus_.size(), delay);
  }
  mig_delay_cv_.notify_all();
}

void FakeProbe::SetMigDelay(uint32_t gpu, Duration delay) {
  GP_CHECK(gpu < gpus_.size()) << "fake GPU " << gpu << " of " << gpus_.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    mig_delay_[gpu] = delay;
  }
  mig_delay_cv_.notify_all();
}

int FakeProbe::mig_applies_in_progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mig_in_progress_;
}

void FakeProbe::SetHeartbeatLost(bool lost) {
  std::lock_guard<std::mutex> lock(mu_);
  heartbeat_lost_ = lost;
}

bool FakeProbe::heartbeat_lost() const {
  std::lock_guard<std::mutex> lock(mu_);
  return heartbeat_lost_;
}

}  // namespace gpupool
