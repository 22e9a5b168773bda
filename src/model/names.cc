// Names of the model's enums and the human-readable shape description.
#include <algorithm>
#include <string>

#include "model/job.h"
#include "model/events.h"
#include "model/node.h"
#include "model/tenant.h"

namespace gpupool {

std::string_view GpuModeName(GpuMode m) {
  switch (m) {
    case GpuMode::kWhole: return "whole";
    case GpuMode::kMig: return "mig";
    case GpuMode::kShared: return "shared";
  }
  return "?";
}

std::string_view NodeConditionName(NodeCondition c) {
  switch (c) {
    case NodeCondition::kReady: return "ready";
    case NodeCondition::kCordoned: return "cordoned";
    case NodeCondition::kDraining: return "draining";
    case NodeCondition::kMaintenance: return "maintenance";
    case NodeCondition::kUnhealthy: return "unhealthy";
    case NodeCondition::kUnreachable: return "unreachable";
    case NodeCondition::kRetired: return "retired";
    case NodeCondition::kNotReady: return "not_ready";
  }
  return "?";
}

std::string_view QueueOrderName(QueueOrder o) {
  switch (o) {
    case QueueOrder::kFifo: return "fifo";
    case QueueOrder::kLas: return "las";
    case QueueOrder::kSrsf: return "srsf";
    case QueueOrder::kSjf: return "sjf";
  }
  return "fifo";
}

Result<QueueOrder> ParseQueueOrder(std::string_view name) {
  for (QueueOrder o : {QueueOrder::kFifo, QueueOrder::kLas, QueueOrder::kSrsf, QueueOrder::kSjf}) {
    if (QueueOrderName(o) == name) return o;
  }
  return InvalidArgument("unknown queue policy '" + std::string(name) + "' (fifo, las, srsf or sjf)");
}

std::string_view PreemptKindName(PreemptKind k) {
  switch (k) {
    case PreemptKind::kReclaim: return "reclaim";
    case PreemptKind::kPriority: return "priority";
    case PreemptKind::kQueue: return "queue";
  }
  return "?";
}

std::string_view RequeueCauseName(RequeueCause c) {
  switch (c) {
    case RequeueCause::kNodeLost: return "node_lost";
    case RequeueCause::kNodeDrained: return "node_drained";
    case RequeueCause::kNodeUnhealthy: return "node_unhealthy";
    case RequeueCause::kStartTimeout: return "start_timeout";
    case RequeueCause::kReleased: return "node_released";
    case RequeueCause::kBudget: return "budget";
  }
  return "?";
}

std::string_view SelectorOpName(SelectorOp op) {
  switch (op) {
    case SelectorOp::kIn: return "In";
    case SelectorOp::kNotIn: return "NotIn";
    case SelectorOp::kExists: return "Exists";
    case SelectorOp::kDoesNotExist: return "DoesNotExist";
  }
  return "?";
}

namespace {

// The value of `key` among sorted "key=value" labels, or nullptr.
const std::string* LabelValue(const std::vector<std::string>& labels, const std::string& key,
                              std::string& out) {
  const std::string prefix = key + "=";
  auto it = std::lower_bound(labels.begin(), labels.end(), prefix);
  if (it == labels.end() || it->compare(0, prefix.size(), prefix) != 0) return nullptr;
  out = it->substr(prefix.size());
  return &out;
}

}  // namespace

bool Matches(const std::vector<LabelRequirement>& selector, const std::vector<std::string>& labels) {
  std::string value;
  for (const LabelRequirement& r : selector) {
    const std::string* v = LabelValue(labels, r.key, value);
    const bool in = v && std::binary_search(r.values.begin(), r.values.end(), *v);
    switch (r.op) {
      case SelectorOp::kIn: if (!in) return false; break;
      case SelectorOp::kNotIn: if (in) return false; break;
      case SelectorOp::kExists: if (!v) return false; break;
      case SelectorOp::kDoesNotExist: if (v) return false; break;
    }
  }
  return true;
}

std::string Describe(const std::vector<LabelRequirement>& selector) {
  std::string out;
  for (const LabelRequirement& r : selector) {
    if (!out.empty()) out += ", ";
    std::string values;
    for (const std::string& v : r.values) values += (values.empty() ? "" : ",") + v;
    switch (r.op) {
      case SelectorOp::kIn: out += r.values.size() == 1 ? r.key + "=" + values : r.key + " in (" + values + ")"; break;
      case SelectorOp::kNotIn: out += r.values.size() == 1 ? r.key + "!=" + values : r.key + " notin (" + values + ")"; break;
      case SelectorOp::kExists: out += r.key; break;
      case SelectorOp::kDoesNotExist: out += "!" + r.key; break;
    }
  }
  return out;
}

std::string_view TopologyLevelName(TopologyLevel l) {
  switch (l) {
    case TopologyLevel::kNone: return "none";
    case TopologyLevel::kNode: return "node";
    case TopologyLevel::kNvlinkDomain: return "nvlink-domain";
    case TopologyLevel::kBlock: return "block";
  }
  return "?";
}

std::string_view JobStateName(JobState s) {
  switch (s) {
    case JobState::kPending: return "pending";
    case JobState::kAdmitted: return "admitted";
    case JobState::kRunning: return "running";
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "?";
}

std::string_view AdmissionKindName(AdmissionKind k) {
  switch (k) {
    case AdmissionKind::kGuaranteed: return "guaranteed";
    case AdmissionKind::kBorrowed: return "borrowed";
    case AdmissionKind::kDedicated: return "dedicated";
  }
  return "?";
}

std::string_view ReasonCodeName(ReasonCode c) {
  switch (c) {
    case ReasonCode::kNone: return "none";
    case ReasonCode::kNotYetConsidered: return "not_yet_considered";
    case ReasonCode::kMayNotBorrow: return "may_not_borrow";
    case ReasonCode::kBorrowLimit: return "borrow_limit";
    case ReasonCode::kNoLendableCapacity: return "no_lendable_capacity";
    case ReasonCode::kNoQuota: return "no_quota";
    case ReasonCode::kInsufficientCapacity: return "insufficient_capacity";
    case ReasonCode::kTopology: return "topology";
    case ReasonCode::kNoEligibleNodes: return "no_eligible_nodes";
    case ReasonCode::kHeldForBackfill: return "held_for_backfill";
    case ReasonCode::kNeverFits: return "never_fits";
    case ReasonCode::kPreemptionBudget: return "preemption_budget";
    case ReasonCode::kMaintenance: return "maintenance";
    case ReasonCode::kReservation: return "reservation";
  }
  return "?";
}

bool Gpu::idle() const {
  switch (mode) {
    case GpuMode::kWhole: return !occupant.valid();
    case GpuMode::kMig:
      for (int i = 0; i < layout.size(); ++i) {
        if (instance_occupant[i].valid()) return false;
      }
      return true;
    case GpuMode::kShared: return shared.empty();
  }
  return true;
}

void Gpu::AppendOccupants(std::vector<JobId>& out) const {
  switch (mode) {
    case GpuMode::kWhole:
      if (occupant.valid()) out.push_back(occupant);
      return;
    case GpuMode::kMig:
      for (int i = 0; i < layout.size(); ++i) {
        if (instance_occupant[i].valid()) out.push_back(instance_occupant[i]);
      }
      return;
    case GpuMode::kShared:
      for (const SharedOccupant& o : shared) out.push_back(o.job);
      return;
  }
}

bool Node::idle() const {
  return host_only.empty() && std::all_of(gpus.begin(), gpus.end(), [](const Gpu& g) { return g.idle(); });
}

std::vector<JobId> Node::Jobs() const {
  std::vector<JobId> out = host_only;
  for (const Gpu& g : gpus) g.AppendOccupants(out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool Node::on_demand() const {
  return std::binary_search(labels.begin(), labels.end(), kOnDemandLabel);
}

std::string_view Node::DomainAt(TopologyLevel level) const {
  switch (level) {
    case TopologyLevel::kNvlinkDomain:
      return nvlink_domain.empty() ? std::string_view(name) : std::string_view(nvlink_domain);
    case TopologyLevel::kBlock: return block.empty() ? std::string_view(name) : block;
    case TopologyLevel::kNone:
    case TopologyLevel::kNode: return name;
  }
  return name;
}

GpuEq ReplicaShape::Eq(const Catalogue& catalogue) const {
  switch (kind) {
    case ShapeKind::kWholeGpus: return GpuEq::Gpus(gpus);
    case ShapeKind::kMigProfile:
      return GpuEq::MigSlices(catalogue.model(flavor).profiles[mig_profile].compute_slices);
    case ShapeKind::kGpuFraction: return GpuEq::MilliGpus(milli);
  }
  return GpuEq();
}

std::string Describe(const Catalogue& catalogue, const ReplicaShape& shape) {
  const GpuModel& m = catalogue.model(shape.flavor);
  switch (shape.kind) {
    case ShapeKind::kWholeGpus:
      return shape.gpus == 0 ? "no GPU (CPU and memory of a " + m.name + " node)" : std::to_string(shape.gpus) + " " + m.name;
    case ShapeKind::kMigProfile: return m.name + " MIG " + m.profiles[shape.mig_profile].name;
    case ShapeKind::kGpuFraction:
      return ToString(GpuEq::MilliGpus(shape.milli)) + " of a shared " + m.name + " with " +
             std::to_string(shape.gpu_memory_mib) + " MiB";
  }
  return "?";
}

}  // namespace gpupool
