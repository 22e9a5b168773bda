// The records of the snapshot streams (snapshot_codec_stream.h): a job, a usage interval, a job
// history entry, each written and read field by field in the same order. Their validation goes
// as far as later events and views index (a tenant, a class, a flavor, a MIG profile); what
// needs the whole state (placements, ids) is checked by snapshot_codec.cc, which alone includes
// this header.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "accounting/ledger.h"
#include "daemon/job_history.h"
#include "daemon/snapshot_codec_stream.h"
#include "model/state.h"

namespace gpupool::snapshot_stream {

inline std::string_view ShapeKindName(ShapeKind k) {
  static constexpr std::string_view kNames[] = {"whole", "mig", "fraction"};  // enum order
  return kNames[static_cast<int>(k)];
}

// HistoryTypeName names a finished entry by its outcome; the snapshot keeps type and outcome.
inline std::string_view HistoryTypeKey(HistoryType t) {
  return t == HistoryType::kFinished ? "finished" : HistoryTypeName(t, JobState::kSucceeded);
}

// A job in the stream: id, state, submitted, admitted, started, admitted_as, attempt,
// preemptions, reason code and message, preempted_by, placement (per replica its node and
// grants, each gpu, mig_start, milli, memory_mib), then the spec: tenant, name, priority class,
// replicas, shape (kind, flavor, gpus, mig_profile, milli, gpu_memory_mib, cpu_milli,
// memory_mib), topology level and required, estimated duration, command, checkpointable,
// reservation, node selector (each key, op, values), and the accepted flavors (a stream whose
// enums list "flavors" under "spec_tail"; one from before them ends at the selector).
inline void WriteJob(StreamWriter& w, const Job& j) {
  w(j.id, j.state, j.submitted, j.admitted, j.started, j.admitted_as, j.attempt, j.preemptions,
    j.reason.code, j.reason.message);
  w.List(j.preempted_by, [&](JobId p) { w(p); });
  w.List(j.placement, [&](const ReplicaPlacement& rp) {
    w(rp.node);
    w.List(rp.grants, [&](const GpuGrant& g) { w(g.gpu, g.mig_start, g.milli, g.memory_mib); });
  });
  const JobSpec& s = j.spec;
  const ReplicaShape& sh = s.shape;
  w(s.tenant, s.name, s.priority_class, s.replicas, sh.kind, sh.flavor, sh.gpus, sh.mig_profile,
    sh.milli, sh.gpu_memory_mib, sh.cpu_milli, sh.memory_mib, s.topology.level, s.topology.required,
    s.estimated_duration.millis());
  w.List(s.command, [&](const std::string& c) { w(c); });
  w(s.checkpointable, s.reservation);
  w.List(s.node_selector, [&](const LabelRequirement& r) {
    w(r.key, r.op);
    w.List(r.values, [&](const std::string& v) { w(v); });
  });
  w.List(s.flavors, [&](FlavorId f) { w(f); });
}

inline json JobEnumNames() {
  return {{"job_state", EnumNames(JobState::kCancelled, JobStateName)},
          {"admission", EnumNames(AdmissionKind::kDedicated, AdmissionKindName)},
          {"reason", EnumNames(ReasonCode::kReservation, ReasonCodeName)},
          {"shape", EnumNames(ShapeKind::kGpuFraction, ShapeKindName)},
          {"topology", EnumNames(TopologyLevel::kBlock, TopologyLevelName)},
          {"selector", EnumNames(SelectorOp::kDoesNotExist, SelectorOpName)},
          {"spec_tail", json::array({"flavors"})}};
}

// The document's enum codes in a job stream.
struct JobEnums {
  explicit JobEnums(const json& e)
      : state(Field(e, "job_state"), JobState::kCancelled, JobStateName, "job state"),
        admission(Field(e, "admission"), AdmissionKind::kDedicated, AdmissionKindName, "kind"),
        reason(Field(e, "reason"), ReasonCode::kReservation, ReasonCodeName, "reason code"),
        shape(Field(e, "shape"), ShapeKind::kGpuFraction, ShapeKindName, "shape kind"),
        topology(Field(e, "topology"), TopologyLevel::kBlock, TopologyLevelName, "topology"),
        selector(Field(e, "selector"), SelectorOp::kDoesNotExist, SelectorOpName, "operator"),
        flavors(e.contains("spec_tail")) {
    if (flavors && Array(e["spec_tail"]) != json::array({"flavors"})) Fail("unknown fields after a job's spec");
  }
  EnumCodes<JobState> state;
  EnumCodes<AdmissionKind> admission;
  EnumCodes<ReasonCode> reason;
  EnumCodes<ShapeKind> shape;
  EnumCodes<TopologyLevel> topology;
  EnumCodes<SelectorOp> selector;
  bool flavors;  // each spec ends with its accepted flavors
};

inline std::vector<ReplicaPlacement> ReadPlacement(StreamReader& r) {
  std::vector<ReplicaPlacement> out(r.Count());
  for (ReplicaPlacement& rp : out) {
    rp.node = r.IdOf<NodeId>();
    rp.grants.resize(r.Count());
    for (GpuGrant& g : rp.grants) {
      g = {r.Int<uint16_t>(), r.Int<int8_t>(), r.Int<uint16_t>(), r.Int<uint32_t>()};
    }
  }
  return out;
}

inline std::vector<std::string> ReadStrings(StreamReader& r) {
  std::vector<std::string> out(r.Count());
  for (std::string& s : out) s = r.Str();
  return out;
}

// Checks what later events and views index: tenant, class, flavor, MIG profile.
inline JobSpec ReadSpec(StreamReader& r, const JobEnums& e, const State& s) {
  JobSpec sp;
  sp.tenant = r.IdOf<TenantId>();
  if (!sp.tenant.valid() || sp.tenant.value() >= s.tenants().size()) Fail("unknown tenant");
  sp.name = r.Str();
  sp.priority_class = r.IdOf<PriorityClassId>();
  if (!sp.priority_class.valid() || sp.priority_class.value() >= s.priority_classes().size()) {
    Fail("unknown priority class");
  }
  sp.replicas = r.Int<uint16_t>();
  if (sp.replicas < 1) Fail("replicas must be at least 1");
  ReplicaShape& sh = sp.shape;
  sh.kind = e.shape(r.Next());
  sh.flavor = r.IdOf<FlavorId>();
  if (!sh.flavor.valid() || sh.flavor.value() >= s.catalogue().size()) Fail("unknown flavor");
  sh.gpus = r.Int<uint8_t>();
  sh.mig_profile = r.Int<uint8_t>();
  if (sh.kind == ShapeKind::kMigProfile &&
      sh.mig_profile >= s.catalogue().model(sh.flavor).profiles.size()) {
    Fail("unknown MIG profile " + std::to_string(sh.mig_profile));
  }
  sh.milli = r.Int<uint16_t>();
  sh.gpu_memory_mib = r.Int<uint32_t>();
  sh.cpu_milli = r.Int<int64_t>();
  sh.memory_mib = r.Int<int64_t>();
  if (sh.cpu_milli < 0 || sh.memory_mib < 0) Fail("negative host resources");
  sp.topology.level = e.topology(r.Next());
  sp.topology.required = r.Bool();
  sp.estimated_duration = Duration::Millis(r.Int<int64_t>());
  sp.command = ReadStrings(r);
  sp.checkpointable = r.Bool();
  sp.reservation = r.IdOf<ReservationId>();
  sp.node_selector.resize(r.Count());
  for (LabelRequirement& req : sp.node_selector) {
    req.key = r.Str();
    req.op = e.selector(r.Next());
    req.values = ReadStrings(r);
  }
  if (e.flavors) {
    sp.flavors.resize(r.Count());
    for (FlavorId& f : sp.flavors) {
      f = r.IdOf<FlavorId>();
      if (!f.valid() || f.value() >= s.catalogue().size()) Fail("unknown flavor");
    }
  }
  return sp;
}

inline Job ReadJob(StreamReader& r, const JobEnums& e, const State& s) {
  Job j;
  j.id = r.IdOf<JobId>();
  j.state = e.state(r.Next());
  j.submitted = r.Ms();
  j.admitted = r.Ms();
  j.started = r.Ms();
  j.admitted_as = e.admission(r.Next());
  j.attempt = r.Int<int64_t>();
  j.preemptions = r.Int<uint32_t>();
  j.reason.code = e.reason(r.Next());
  j.reason.message = r.Str();
  j.preempted_by.resize(r.Count());
  for (JobId& p : j.preempted_by) p = r.IdOf<JobId>();
  j.placement = ReadPlacement(r);
  j.spec = ReadSpec(r, e, s);
  return j;
}

// An interval in the stream: tenant, job, flavor, shape, replicas, eq units, start, end, kind,
// reservation, open.
inline void WriteInterval(StreamWriter& w, const UsageInterval& u) {
  w(u.tenant, u.job, u.flavor, u.shape, u.replicas, u.eq.units(), u.start, u.end, u.kind,
    u.reservation, u.open);
}

inline UsageInterval ReadInterval(StreamReader& r, const EnumCodes<UsageKind>& kinds) {
  UsageInterval u;
  u.tenant = r.IdOf<TenantId>();
  u.job = r.IdOf<JobId>();
  u.flavor = r.IdOf<FlavorId>();
  u.shape = r.Str();
  u.replicas = r.Int<uint16_t>();
  u.eq = GpuEq::Units(r.Int<int64_t>());
  u.start = r.Ms();
  u.end = r.Ms();
  u.kind = kinds(r.Next());
  u.reservation = r.IdOf<ReservationId>();
  u.open = r.Bool();
  if (u.end < u.start) Fail("interval ends before it starts");
  return u;
}

// A reservation span: [id, tenant, flavor, amount units, start, end].
inline json SpanJson(const ReservationSpan& r) {
  return json::array({r.id.value(), r.tenant.value(), r.flavor.value(), r.amount.units(),
                      r.start.millis(), r.end.millis()});
}

inline ReservationSpan SpanFrom(const json& a) {
  Array(a, 6);
  return {ReservationId(Int<uint64_t>(a[0])),
          TenantId(Int<uint32_t>(a[1])),
          FlavorId(Int<uint16_t>(a[2])),
          GpuEq::Units(Int<int64_t>(a[3])),
          Ms(a[4]),
          Ms(a[5])};
}

// An entry in the stream: at, type, then the type's own fields: admitted: admitted_as, nodes;
// preempted: by, by_tenant, preempt kind; requeued: cause, detail; finished: outcome, detail.
// Observe leaves the other fields at their defaults. An entry that does not is written whole,
// its type code + kWhole, then every field in that order, so that nothing is lost.
inline constexpr int kWhole = 100;

inline bool OnlyOwnFields(const HistoryEntry& e) {
  const HistoryEntry d;
  const HistoryType t = e.type;
  return (t == HistoryType::kAdmitted || (e.admitted_as == d.admitted_as && e.nodes.empty())) &&
         (t == HistoryType::kPreempted ||
          (e.by == d.by && e.by_tenant == d.by_tenant && e.preempt_kind == d.preempt_kind)) &&
         (t == HistoryType::kRequeued || e.cause == d.cause) &&
         (t == HistoryType::kFinished || e.outcome == d.outcome) &&
         (t == HistoryType::kRequeued || t == HistoryType::kFinished || e.detail.empty());
}

inline json HistoryEnumNames() {
  return {{"type", EnumNames(HistoryType::kFinished, HistoryTypeKey)},
          {"admission", EnumNames(AdmissionKind::kDedicated, AdmissionKindName)},
          {"preempt", EnumNames(PreemptKind::kQueue, PreemptKindName)},
          {"cause", EnumNames(RequeueCause::kBudget, RequeueCauseName)},
          {"outcome", EnumNames(JobState::kCancelled, JobStateName)}};
}

inline void WriteEntry(StreamWriter& w, const HistoryEntry& e) {
  const bool whole = !OnlyOwnFields(e);
  const HistoryType t = e.type;
  w(e.at, static_cast<int>(t) + (whole ? kWhole : 0));
  if (whole || t == HistoryType::kAdmitted) {
    w(e.admitted_as);
    w.List(e.nodes, [&](NodeId n) { w(n); });
  }
  if (whole || t == HistoryType::kPreempted) w(e.by, e.by_tenant, e.preempt_kind);
  if (whole || t == HistoryType::kRequeued) w(e.cause);
  if (whole || t == HistoryType::kFinished) w(e.outcome);
  if (whole || t == HistoryType::kRequeued || t == HistoryType::kFinished) w(e.detail);
}

struct HistoryEnums {
  explicit HistoryEnums(const json& e)
      : type(Field(e, "type"), HistoryType::kFinished, HistoryTypeKey, "entry type"),
        admission(Field(e, "admission"), AdmissionKind::kDedicated, AdmissionKindName, "kind"),
        preempt(Field(e, "preempt"), PreemptKind::kQueue, PreemptKindName, "preemption"),
        cause(Field(e, "cause"), RequeueCause::kBudget, RequeueCauseName, "requeue cause"),
        outcome(Field(e, "outcome"), JobState::kCancelled, JobStateName, "outcome") {}
  EnumCodes<HistoryType> type;
  EnumCodes<AdmissionKind> admission;
  EnumCodes<PreemptKind> preempt;
  EnumCodes<RequeueCause> cause;
  EnumCodes<JobState> outcome;
};

inline HistoryEntry ReadEntry(StreamReader& r, const HistoryEnums& en) {
  HistoryEntry e;
  e.at = r.Ms();
  const int code = r.Int<int>();
  const bool whole = code >= kWhole;
  const HistoryType t = e.type = en.type(static_cast<size_t>(whole ? code - kWhole : code));
  if (whole || t == HistoryType::kAdmitted) {
    e.admitted_as = en.admission(r.Next());
    e.nodes.resize(r.Count());
    for (NodeId& n : e.nodes) n = r.IdOf<NodeId>();
  }
  if (whole || t == HistoryType::kPreempted) {
    e.by = r.IdOf<JobId>();
    e.by_tenant = r.IdOf<TenantId>();
    e.preempt_kind = en.preempt(r.Next());
  }
  if (whole || t == HistoryType::kRequeued) e.cause = en.cause(r.Next());
  if (whole || t == HistoryType::kFinished) e.outcome = en.outcome(r.Next());
  if (whole || t == HistoryType::kRequeued || t == HistoryType::kFinished) e.detail = r.Str();
  return e;
}

}  // namespace gpupool::snapshot_stream
