#include "agent/health.h"

#include <array>

namespace gpupool {
namespace {

// DESIGN.md §7; meanings from shared/reference/gpu-partitioning.md §4.2.
struct XidRow {
  uint64_t xid;
  HealthAction action;
  bool replace;
  const char* meaning;
};
constexpr std::array<XidRow, 10> kXidTable = {{
    {13, HealthAction::kNone, false, "graphics engine exception (application)"},
    {31, HealthAction::kNone, false, "GPU memory page fault (application)"},
    {43, HealthAction::kNone, false, "GPU stopped processing after an application fault"},
    {48, HealthAction::kDrainResetGpu, false, "double-bit ECC error"},
    {63, HealthAction::kWatch, false, "row remapping event"},
    {64, HealthAction::kDrain, true, "row remapping failure"},
    {74, HealthAction::kNvlinkProcedure, false, "NVLink error"},
    {79, HealthAction::kDrainReboot, false, "GPU has fallen off the bus"},
    {92, HealthAction::kWatch, false, "high single-bit ECC error rate"},
    {95, HealthAction::kDrainResetGpu, false, "uncontained ECC error"},
}};

HealthVerdict Verdict(HealthAction a, bool replace, std::string reason) {
  return HealthVerdict{a, replace, std::move(reason)};
}

}  // namespace

std::string_view HealthActionName(HealthAction a) {
  switch (a) {
    case HealthAction::kNone: return "none";
    case HealthAction::kWatch: return "watch";
    case HealthAction::kCordon: return "cordon";
    case HealthAction::kDrain: return "drain";
    case HealthAction::kNvlinkProcedure: return "nvlink-procedure";
    case HealthAction::kDrainResetGpu: return "drain-reset-gpu";
    case HealthAction::kDrainReboot: return "drain-reboot";
  }
  return "?";
}

HealthVerdict ClassifyXid(uint64_t xid) {
  const std::string label = "XID " + std::to_string(xid);
  for (const XidRow& row : kXidTable) {
    if (row.xid == xid) return Verdict(row.action, row.replace, label + " (" + row.meaning + ")");
  }
  // Unknown codes (and 999, an XID NVML could not decode) are watched, not ignored: an operator
  // sees them and the table grows.
  return Verdict(HealthAction::kWatch, false, label + " (not in the table)");
}

HealthVerdict Classify(const HealthEvent& e, const HealthThresholds& t) {
  switch (e.kind) {
    case HealthEventKind::kXid: return ClassifyXid(e.value);
    case HealthEventKind::kEccUncorrectable:
      if (e.value == 0) return Verdict(HealthAction::kNone, false, "");
      return Verdict(HealthAction::kDrain, false,
                     "uncorrectable ECC errors: " + std::to_string(e.value));
    case HealthEventKind::kRowRemapFailure:
      return Verdict(HealthAction::kDrain, true, "row remapping failed (no spare rows)");
    case HealthEventKind::kRowRemapPending:
      return Verdict(HealthAction::kCordon, false, "row remap pending: reset the GPU when idle");
    case HealthEventKind::kGpuLost:
      return Verdict(HealthAction::kDrainReboot, false, "GPU lost (fell off the bus)");
    case HealthEventKind::kDeviceLost:
      return Verdict(HealthAction::kDrain, false,
                     "a MIG device disappeared under a replica (GPU reset or a MIG change outside "
                     "gpupool)");
    case HealthEventKind::kTemperature: {
      const std::string reading = "temperature " + std::to_string(e.value) + " C";
      if (e.value >= t.cordon_celsius) {
        return Verdict(HealthAction::kCordon, false,
                       reading + " >= " + std::to_string(t.cordon_celsius) + " C");
      }
      if (e.value >= t.watch_celsius) {
        return Verdict(HealthAction::kWatch, false,
                       reading + " >= " + std::to_string(t.watch_celsius) + " C");
      }
      return Verdict(HealthAction::kNone, false, "");
    }
  }
  return Verdict(HealthAction::kWatch, false, "unknown health event");
}

HealthVerdict Worse(const HealthVerdict& a, const HealthVerdict& b) {
  const bool b_wins = static_cast<int>(b.action) > static_cast<int>(a.action);
  const HealthVerdict& win = b_wins ? b : a;
  const HealthVerdict& lose = b_wins ? a : b;
  HealthVerdict out = win;
  out.replacement_candidate = a.replacement_candidate || b.replacement_candidate;
  if (win.action != HealthAction::kNone && lose.action != HealthAction::kNone &&
      !lose.reason.empty()) {
    out.reason += "; " + lose.reason;
  }
  return out;
}

}  // namespace gpupool
