// Health: the pure mapping from a probe's HealthEvent to what the control plane should do with
// the GPU (DESIGN.md §7; shared/reference/gpu-partitioning.md §4.2). No I/O, no clock: the same
// event gives the same verdict. The table and the reasons for each row are in
// docs/design/agent.md ("Health table").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agent/gpu_probe.h"

namespace gpupool {

// Ordered by severity: a later action includes what the earlier ones do (Worse picks it).
enum class HealthAction : uint8_t {
  kNone,             // application error or a normal reading: nothing to do
  kWatch,            // count it and alert on repeats; the GPU stays in service
  kCordon,           // no new work; running work stays
  kDrain,            // no new work; running work is moved off (requeued)
  kNvlinkProcedure,  // drain, then the NVLink procedure (decode, check links, reset or reboot)
  kDrainResetGpu,    // drain, then reset the GPU
  kDrainReboot,      // drain, then reboot the node
};
std::string_view HealthActionName(HealthAction a);

struct HealthVerdict {
  HealthAction action = HealthAction::kNone;
  bool replacement_candidate = false;  // evidence for an RMA / replacement
  std::string reason;                  // e.g. "XID 48 (double-bit ECC error)"

  friend bool operator==(const HealthVerdict&, const HealthVerdict&) = default;
};

// Temperature thresholds in degrees Celsius. The defaults sit just below and at the typical
// data-centre slowdown point (A100/H100 max operating ~85-87 C, slowdown ~87-90 C, shutdown
// ~92 C); per-board thresholds are not read from NVML (not in the reference).
// REQUIRES: watch_celsius <= cordon_celsius.
struct HealthThresholds {
  uint32_t watch_celsius = 85;   // >= this: kWatch
  uint32_t cordon_celsius = 90;  // >= this: kCordon (the GPU throttles; keep new work away)
};

// XID code -> verdict: 13/31/43 nothing; 48/95 drain and reset; 79 drain and reboot; 64 drain,
// replacement candidate; 74 NVLink procedure; 63/92 watch; anything else (999 included) watch.
HealthVerdict ClassifyXid(uint64_t xid);

// Any event -> verdict. ECC uncorrectable (value > 0): drain. Row-remap failure: drain,
// replacement candidate. Row-remap pending: cordon (reset when idle). GPU lost: drain and
// reboot. Device lost (a MIG device gone under a replica): drain. Temperature: by the thresholds.
HealthVerdict Classify(const HealthEvent& event, const HealthThresholds& thresholds = {});

// Combines two verdicts for one GPU: the more severe action (the first on a tie),
// replacement_candidate OR-ed, and the reasons of both (winner first, joined by "; ") unless one
// of them is kNone.
HealthVerdict Worse(const HealthVerdict& a, const HealthVerdict& b);

}  // namespace gpupool
