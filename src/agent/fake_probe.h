// FakeProbe: a GpuProbe whose GPUs come from a spec string, with fault injection, for tests and
// for running the agent on machines without GPUs.
//
// Spec grammar (positions in error messages count characters from 1):
//
//   spec     := group ("," group)*
//   group    := count "x" model [":mig" ["=" instance ("+" instance)*]]
//   count    := 1..64 (all groups together: at most 64 GPUs)
//   model    := a Catalogue::BuiltIn() name, e.g. h100-80gb
//   instance := profile ["@" start]   profile: the model's MIG profile name, e.g. 3g.40gb or
//               1g.10gb+me ("+me" belongs to the profile name; a new instance starts with a digit)
//
// Examples: "8xh100-80gb", "2xa100-40gb:mig" (MIG on, no instances),
// "4xa100-80gb:mig=3g.40gb+3g.40gb", "1xh100-80gb:mig=3g.40gb@4+1g.10gb,1xh100-80gb".
// All groups must name the same model (a node has one GPU model). Instances without a start are
// placed by a deterministic search (largest first, highest free start first); the layout is
// validated with ValidateLayout against the catalogue's MIG geometry.
//
// Identities are deterministic: GPU i is "GPU-fake-<node>-<i>", PCI bus id "00000000:<i+1>:00.0"
// (hex), GPU instance ids are 1.. in start order, and the single MIG device of GI g is
// "MIG-fake-<node>-<i>-<g>". ApplyMigLayout keeps the instances the new layout shares with the
// old one (same profile and start: same GI id and MIG UUID) and gives each new instance the next
// GI id of that GPU, never reused, so a re-created slice has a new MIG UUID as on real hardware.
// Every GPU has one NVLink link to every other GPU (an all-to-all, NVSwitch-like node), link k
// going to the k-th other GPU.
//
// PollHealth returns the injected events in injection order and clears them, then one
// temperature reading per GPU (40 C unless set).
//
// Runtime changes, as hardware or an operator would make them behind the agent's back:
// RemoveGpu (the GPU falls off the bus: Discover no longer lists it; the others keep their
// index), SetGpuUuid (another board, or a renumbering, at that index), and ApplyMigLayout called
// directly (a manual `nvidia-smi mig` change). SetMigDelay makes each ApplyMigLayout take that
// long (as re-partitioning does on real GPUs) without holding the probe's mutex, so Discover and
// PollHealth still answer meanwhile; setting it to 0 ends the waits in progress. It may be set for
// every GPU or for one.
//
// Thread-safety: all methods may be called from any thread (one mutex).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <condition_variable>

#include "agent/gpu_probe.h"
#include "core/time.h"
#include "model/catalogue.h"
#include "model/mig.h"

namespace gpupool {

struct FakeGpuSpec {
  std::string model;  // catalogue name
  bool mig = false;
  MigLayout layout;  // when mig
};

// Parses and validates a spec against the catalogue; one FakeGpuSpec per GPU.
Result<std::vector<FakeGpuSpec>> ParseFakeGpuSpec(const Catalogue& catalogue,
                                                  std::string_view spec);

class FakeProbe : public GpuProbe {
 public:
  // node_name: [A-Za-z0-9._-]+, used in the UUIDs.
  static Result<std::unique_ptr<FakeProbe>> Create(std::string node_name, std::string_view spec,
                                                   Catalogue catalogue = Catalogue::BuiltIn());

  Result<std::vector<GpuInfo>> Discover() override;
  Result<std::vector<HealthEvent>> PollHealth() override;
  // FailedPrecondition for a GPU not in MIG mode, InvalidArgument for a GPU index out of range,
  // another model or an invalid layout (nothing changes then).
  Status ApplyMigLayout(uint32_t gpu, const GpuModel& model, const MigLayout& layout) override;

  // Driver 550.54.15 with CUDA 12.4, as the fake libnvidia-ml reports, unless set.
  SystemInfo System() override;
  void SetSystem(SystemInfo info);

  size_t gpu_count() const { return gpus_.size(); }
  // How many ApplyMigLayout calls changed something (for tests).
  int mig_changes() const;

  // Fault injection. REQUIRES: gpu < gpu_count().
  void InjectXid(uint32_t gpu, uint64_t code, uint32_t gpu_instance_id = kUnknownU32);
  void InjectEcc(uint32_t gpu, uint64_t uncorrectable_count);
  void InjectRowRemapFailure(uint32_t gpu);
  void InjectRowRemapPending(uint32_t gpu);
  void InjectGpuLost(uint32_t gpu);
  void SetTemperature(uint32_t gpu, uint32_t celsius);

  // Runtime changes (see the file comment). REQUIRES: gpu < gpu_count().
  void RemoveGpu(uint32_t gpu);
  void SetGpuUuid(uint32_t gpu, std::string uuid);
  void SetMigDelay(Duration delay);                // every GPU
  void SetMigDelay(uint32_t gpu, Duration delay);  // one GPU
  // ApplyMigLayout calls in progress (waiting out the delay or applying).
  int mig_applies_in_progress() const;

  // A flag the agent loop reads to simulate a node whose heartbeats stop (the probe itself
  // keeps answering).
  void SetHeartbeatLost(bool lost);
  bool heartbeat_lost() const;

 private:
  FakeProbe(std::string node, Catalogue catalogue, std::vector<FakeGpuSpec> gpus);
  void Push(uint32_t gpu, HealthEventKind kind, uint64_t value, uint32_t gi);
  std::string Uuid(uint32_t gpu) const;  // REQUIRES: mu_ held

  const std::string node_;
  const Catalogue catalogue_;
  mutable std::mutex mu_;
  SystemInfo system_{"550.54.15", "12.4"};
  std::vector<FakeGpuSpec> gpus_;              // the count never changes; layouts guarded by mu_
  std::vector<std::vector<uint32_t>> gi_ids_;  // guarded by mu_: per GPU, per layout instance
  std::vector<uint32_t> next_gi_id_;           // guarded by mu_: per GPU
  int mig_changes_ = 0;                        // guarded by mu_
  std::vector<uint32_t> temperature_;          // guarded by mu_
  std::vector<HealthEvent> pending_;           // guarded by mu_
  bool heartbeat_lost_ = false;                // guarded by mu_
  std::vector<bool> removed_;                  // guarded by mu_: per GPU
  std::vector<std::string> uuid_;              // guarded by mu_: per GPU
  std::vector<Duration> mig_delay_;            // guarded by mu_: per GPU
  int mig_in_progress_ = 0;                    // guarded by mu_
  std::condition_variable mig_delay_cv_;       // signalled when mig_delay_ changes
};

}  // namespace gpupool
