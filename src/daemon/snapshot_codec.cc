// Snapshot codecs (snapshot_codec.h). The object parts and the value streams, and why readers
// throw Malformed, are described in snapshot_codec_stream.h.
#include "daemon/snapshot_codec.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "daemon/snapshot_codec_records.h"
#include "daemon/snapshot_codec_stream.h"
#include "store/codec.h"

namespace gpupool {

using namespace snapshot_stream;  // NOLINT: this file's own readers and writers

namespace {

constexpr int kFormat = 1;

// --- state: encoding ---------------------------------------------------------------------
// A GPU: [mode, healthy, health reason, MIG layout (MigLayout::Encode), max_clients, the job ids
// of its shared clients in the GPU's order], and a seventh element, true, for a dynamic GPU.
Json GpuJson(const Gpu& g) {
  Json clients = Json::array();
  for (const SharedOccupant& o : g.shared) clients.push_back(o.job.value());
  Json a = Json::array({EnumJson(g.mode, GpuModeName), g.healthy, g.health_reason, g.layout.Encode(),
                        g.max_clients, std::move(clients)});
  if (g.dynamic) a.push_back(true);
  return a;
}

Json NodeJson(const Node& n) {
  Json gpus = Json::array();
  for (const Gpu& g : n.gpus) gpus.push_back(GpuJson(g));
  return {{"name", n.name},
          {"flavor", n.flavor.value()},
          {"gpus", std::move(gpus)},
          {"nvlink_domain", n.nvlink_domain},
          {"block", n.block},
          {"condition", EnumJson(n.condition, NodeConditionName)},
          {"condition_reason", n.condition_reason},
          {"removed", n.removed},
          {"dedicated_to", IdJson(n.dedicated_to)},
          {"labels", n.labels},
          {"cpu_milli", n.cpu_milli},
          {"memory_mib", n.memory_mib}};
}

// A reservation: [id, tenant, flavor, amount units, start, end, maintenance, created].
Json ReservationJson(const Reservation& r) {
  return Json::array({r.id.value(), IdJson(r.tenant), r.flavor.value(), r.amount.units(),
                      r.start.millis(), r.end.millis(), r.maintenance, r.created.millis()});
}

// --- state: decoding (checks what later events would index or assume) ---------------------
void CheckFlavors(const Catalogue& cat, const Json& names) {
  if (Array(names).size() > cat.size()) Fail("more flavors than this catalogue has");
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& here = cat.model(FlavorId(static_cast<uint16_t>(i))).name;
    if (Str(names[i]) != here)
      Fail("flavor " + std::to_string(i) + " is " + here + " here, not " + Str(names[i]));
  }
}

FlavorId FlavorFrom(const State& s, const Json& j) {
  const FlavorId f(Int<uint16_t>(j));
  if (f.value() >= s.catalogue().size()) Fail("unknown flavor " + std::to_string(f.value()));
  return f;
}

Gpu GpuFrom(const GpuModel& model, const Json& a) {
  if (Array(a).size() != 6) Array(a, 7);
  Gpu g;
  g.dynamic = a.size() == 7 && Bool(a[6]);
  g.mode = EnumFrom(a[0], GpuMode::kShared, GpuModeName, "GPU mode");
  g.healthy = Bool(a[1]);
  g.health_reason = Str(a[2]);
  const uint64_t key = Int<uint64_t>(a[3]);
  g.layout = MigLayout::Decode(key);
  if (g.layout.Encode() != key) Fail("malformed MIG layout " + std::to_string(key));
  // AddNode validates a MIG GPU's layout; any other's must at least name real profiles.
  for (int i = 0; i < g.layout.size(); ++i) {
    if (g.layout.at(i).profile >= model.profiles.size())
      Fail("MIG layout names an unknown profile");
  }
  g.max_clients = Int<uint8_t>(a[4]);
  Array(a[5]);  // the shared clients' order, restored by RebuildOccupancy
  return g;
}

Node NodeFrom(const State& s, const Json& j) {
  Node n;
  n.name = Str(Field(j, "name"));
  n.flavor = FlavorFrom(s, Field(j, "flavor"));
  const GpuModel& model = s.catalogue().model(n.flavor);
  for (const Json& g : Array(Field(j, "gpus"))) n.gpus.push_back(GpuFrom(model, g));
  n.nvlink_domain = Str(Field(j, "nvlink_domain"));
  n.block = Str(Field(j, "block"));
  n.condition = EnumFrom(Field(j, "condition"), NodeCondition::kNotReady, NodeConditionName,
                         "node condition");
  n.condition_reason = Str(Field(j, "condition_reason"));
  n.removed = Bool(Field(j, "removed"));
  if (n.removed && n.condition != NodeCondition::kRetired) Fail("a removed node must be retired");
  n.dedicated_to = IdFrom<TenantId>(Field(j, "dedicated_to"));
  n.labels = Strings(Field(j, "labels"));
  n.cpu_milli = Int<int64_t>(Field(j, "cpu_milli"));
  n.memory_mib = Int<int64_t>(Field(j, "memory_mib"));
  return n;
}

// Grants a job's placement as Apply's GrantOne does, without the checks of the moment of
// admission (health, condition, room) that later events may have changed since.
void Occupy(std::vector<Node>& nodes, const Job& job) {
  const ReplicaShape& shape = job.spec.shape;
  for (const ReplicaPlacement& rp : job.placement) {
    if (!rp.node.valid() || rp.node.value() >= nodes.size()) Fail("placement on a missing node");
    Node& node = nodes[rp.node.value()];
    if (node.removed) Fail("placement on removed node " + node.name);
    for (const GpuGrant& g : rp.grants) {
      if (g.gpu >= node.gpus.size())
        Fail("placement on missing GPU " + std::to_string(g.gpu) + " of " + node.name);
      Gpu& gpu = node.gpus[g.gpu];
      switch (shape.kind) {
        case ShapeKind::kWholeGpus:
          if (gpu.mode != GpuMode::kWhole || g.mig_start != -1 || g.milli != 0)
            Fail("whole-GPU grant on another mode");
          if (gpu.occupant.valid()) Fail("a GPU of " + node.name + " held twice");
          gpu.occupant = job.id;
          break;
        case ShapeKind::kMigProfile: {
          const int i = gpu.mode == GpuMode::kMig ? gpu.layout.IndexOfStart(g.mig_start) : -1;
          if (i < 0)
            Fail("no MIG instance at slice " + std::to_string(g.mig_start) + " on " + node.name);
          if (gpu.instance_occupant[i].valid())
            Fail("a MIG instance of " + node.name + " held twice");
          gpu.instance_occupant[i] = job.id;
          break;
        }
        case ShapeKind::kGpuFraction:
          if (gpu.mode != GpuMode::kShared || g.milli != shape.milli ||
              g.memory_mib != shape.gpu_memory_mib) {
            Fail("fraction grant differs from the job's shape or the GPU's mode");
          }
          gpu.shared.push_back({job.id, job.spec.tenant, g.milli, g.memory_mib});
          break;
      }
    }
    node.cpu_used += shape.cpu_milli;
    node.memory_used += shape.memory_mib;
    if (shape.gpuless()) node.host_only.push_back(job.id);
  }
}

// Puts a shared GPU's clients (rebuilt in job id order) in the order the snapshot recorded.
void RestoreClientOrder(Gpu& gpu, const Json& order) {
  std::vector<SharedOccupant> rebuilt = std::move(gpu.shared);
  gpu.shared.clear();
  for (const Json& id : order) {
    const JobId job(Int<uint64_t>(id));
    auto it = std::find_if(rebuilt.begin(), rebuilt.end(),
                           [&](const SharedOccupant& o) { return o.job == job; });
    if (it == rebuilt.end())
      Fail("shared client " + std::to_string(job.value()) + " holds no part of the GPU");
    gpu.shared.push_back(*it);
    rebuilt.erase(it);
  }
  if (!rebuilt.empty())
    Fail("shared client " + std::to_string(rebuilt[0].job.value()) + " is not recorded");
}

Reservation ReservationFrom(const State& s, const Json& a) {
  Array(a, 8);
  Reservation r;
  r.id = ReservationId(Int<uint64_t>(a[0]));
  r.tenant = IdFrom<TenantId>(a[1]);
  r.flavor = FlavorFrom(s, a[2]);
  r.amount = GpuEq::Units(Int<int64_t>(a[3]));
  r.start = Ms(a[4]);
  r.end = Ms(a[5]);
  r.maintenance = Bool(a[6]);
  r.created = Ms(a[7]);
  // As Apply(ReservationCreated) checks.
  if (r.maintenance == r.tenant.valid())
    Fail("a reservation needs a tenant, a maintenance window none");
  if (r.tenant.valid() && r.tenant.value() >= s.tenants().size())
    Fail("reservation of an unknown tenant");
  if (r.amount <= GpuEq() || r.amount > Reservation::kMaxAmount ||
      r.amount.units() % GpuEq::kUnitsPerGpu != 0) {
    Fail("amount must be a whole number of GPUs");
  }
  if (!(r.start < r.end)) Fail("must start before it ends");
  return r;
}

}  // namespace

Json SnapshotCodec::EncodeState(const State& s) {
  Json flavors = Json::array(), tenants = Json::array(), classes = Json::array(),
       nodes = Json::array();
  for (const GpuModel& m : s.catalogue().models()) flavors.push_back(m.name);
  for (const Tenant& t : s.tenants()) {
    Json j = TenantToJson(s, t);  // every configured field; the usage history is state
    j["decayed_usage"] = t.decayed_usage;
    j["decayed_usage_at_ms"] = t.decayed_usage_at.millis();
    tenants.push_back(std::move(j));
  }
  for (const PriorityClass& pc : s.priority_classes()) classes.push_back(PriorityClassToJson(pc));
  for (const Node& n : s.nodes()) nodes.push_back(NodeJson(n));
  Json reservations = Json::array();
  Json jobs = Stream([&](StreamWriter& w) {
    for (const auto& [id, job] : s.jobs()) WriteJob(w, job);
  });
  for (const auto& [id, r] : s.reservations()) reservations.push_back(ReservationJson(r));
  // Run time of earlier attempts, beside the stream (whose layout older readers know): [id, ms]
  // for the jobs that have some.
  Json ran = Json::array();
  for (const auto& [id, job] : s.jobs()) {
    if (job.ran > Duration()) ran.push_back(Json::array({id.value(), job.ran.millis()}));
  }
  return {{"format", kFormat},
          {"flavors", std::move(flavors)},
          {"usage_half_life_ms", s.usage_half_life().millis()},
          {"next_job_id", s.NextJobId().value()},
          {"next_reservation_id", s.NextReservationId().value()},
          {"tenants", std::move(tenants)},
          {"classes", std::move(classes)},
          {"nodes", std::move(nodes)},
          {"reservations", std::move(reservations)},
          {"jobs", {{"enums", JobEnumNames()}, {"stream", std::move(jobs)}, {"ran_ms", std::move(ran)}}}};
}

void SnapshotCodec::InstallTenants(State& s, const Json& tenants) {
  for (size_t i = 0; i < Array(tenants).size(); ++i) {
    In("tenant #", i, [&] {
      Result<Tenant> t = TenantFromJson(s, tenants[i]);
      if (!t.ok()) Fail(t.error().message);
      if (Result<TenantId> id = s.AddTenant(*t); !id.ok()) Fail(id.error().message);
      s.tenants_.back().decayed_usage = Real(Field(tenants[i], "decayed_usage"));
      s.tenants_.back().decayed_usage_at = Ms(Field(tenants[i], "decayed_usage_at_ms"));
    });
  }
}

void SnapshotCodec::InstallNodes(State& s, const Json& nodes) {
  for (size_t i = 0; i < Array(nodes).size(); ++i) {
    In("node #", i, [&] {
      Node n = NodeFrom(s, nodes[i]);
      const bool removed = n.removed;
      // AddNode validates as at registration and indexes the name; a removed node's name is free
      // again (NodeRemoved), so that a later node may carry it.
      if (Result<NodeId> id = s.AddNode(std::move(n)); !id.ok()) Fail(id.error().message);
      if (removed) {
        s.nodes_.back().removed = true;
        s.node_by_name_.erase(s.nodes_.back().name);
      }
    });
  }
}

void SnapshotCodec::InstallReservations(State& s, const Json& reservations) {
  for (size_t i = 0; i < Array(reservations).size(); ++i) {
    Reservation r = In("reservation #", i, [&] { return ReservationFrom(s, reservations[i]); });
    const bool after_last = s.reservations_.empty() || s.reservations_.rbegin()->first < r.id;
    if (r.id.value() == 0 || r.id.value() >= s.next_reservation_id_ || !after_last) {
      Fail("reservation id " + std::to_string(r.id.value()) +
           " is duplicated, out of order or not below the next id");
    }
    s.reservations_.emplace_hint(s.reservations_.end(), r.id, r);
  }
}

// Jobs in id order, possibly with gaps; the id index, the pending and active sets and the
// pending counts follow from them.
void SnapshotCodec::InstallJobs(State& s, const Json& jobs) {
  s.by_id_.clear();
  const JobEnums enums(Field(jobs, "enums"));
  StreamReader r(Field(jobs, "stream"));
  uint64_t last = 0;
  for (size_t i = 0; !r.done(); ++i) {
    Job job = In("job #", i, [&] { return ReadJob(r, enums, s); });
    const JobId id = job.id;
    if (id.value() <= last || id.value() >= s.next_job_id_) {
      Fail("job id " + std::to_string(id.value()) +
           " is duplicated, out of order or not below next_job_id");
    }
    last = id.value();
    auto it = s.jobs_.emplace_hint(s.jobs_.end(), id, std::move(job));
    s.by_id_.emplace(id.value(), &it->second);
    if (it->second.state == JobState::kPending) {
      s.pending_.emplace_hint(s.pending_.end(), id);
      s.CountPending(it->second.spec.tenant, +1);
    } else if (HoldsResources(it->second.state)) {
      s.active_.emplace_hint(s.active_.end(), id);
    }
  }
  if (jobs.contains("ran_ms")) {  // absent in snapshots written before attained service
    for (const Json& e : Array(Field(jobs, "ran_ms"))) {
      const Json& pair = Array(e);
      if (pair.size() != 2) Fail("ran_ms entries are [job id, milliseconds]");
      const uint64_t id = Int<uint64_t>(pair[0]);
      const int64_t ms = Int<int64_t>(pair[1]);
      auto it = s.by_id_.find(id);
      if (it == s.by_id_.end() || ms < 0) Fail("ran_ms names job " + std::to_string(id) + ", which is not in the snapshot");
      it->second->ran = Duration::Millis(ms);
    }
  }
}

void SnapshotCodec::RebuildOccupancy(State& s, const Json& nodes) {
  for (JobId id : s.active_) {
    In("job ", id.value(), [&] { Occupy(s.nodes_, *s.by_id_.at(id.value())); });
  }
  for (Node& n : s.nodes_) {
    const Json& gpus = nodes[n.id.value()]["gpus"];
    for (size_t g = 0; g < n.gpus.size(); ++g) {
      In("node ", n.id.value(),
         [&] { In("GPU ", g, [&] { RestoreClientOrder(n.gpus[g], gpus[g][5]); }); });
    }
  }
}

Result<State> SnapshotCodec::DecodeState(const Json& j) {
  State s;  // the built-in catalogue
  try {
    if (Int<int>(Field(j, "format")) != kFormat) Fail("unknown format");
    CheckFlavors(s.catalogue(), Field(j, "flavors"));
    s.usage_half_life_ = Duration::Millis(Int<int64_t>(Field(j, "usage_half_life_ms")));
    s.next_job_id_ = Int<uint64_t>(Field(j, "next_job_id"));
    s.next_reservation_id_ = Int<uint64_t>(Field(j, "next_reservation_id"));
    if (s.next_job_id_ == 0 || s.next_reservation_id_ == 0) Fail("ids start at 1");
    InstallTenants(s, Field(j, "tenants"));
    for (const Json& c : Array(Field(j, "classes"))) {
      Result<PriorityClass> pc = PriorityClassFromJson(c);
      if (!pc.ok()) Fail(pc.error().message);
      if (Result<PriorityClassId> id = s.AddPriorityClass(*pc); !id.ok()) Fail(id.error().message);
    }
    InstallNodes(s, Field(j, "nodes"));
    InstallReservations(s, Field(j, "reservations"));
    InstallJobs(s, Field(j, "jobs"));
    RebuildOccupancy(s, Field(j, "nodes"));
  } catch (const Malformed& e) {
    return InvalidArgument("state snapshot: " + e.what);
  } catch (const std::exception& e) {  // nlohmann's, or an allocation a corrupt count asked for
    return InvalidArgument(std::string("state snapshot: ") + e.what());
  }
  if (Status inv = CheckInvariants(s); !inv.ok())
    return InvalidArgument("state snapshot: " + inv.error().message);
  return s;
}

// --- ledger --------------------------------------------------------------------------------
Json SnapshotCodec::EncodeLedger(const Ledger& l) {
  Json open = Stream([&](StreamWriter& w) {
    for (const auto& [job, u] : l.open_) WriteInterval(w, u);
  });
  Json closed = Stream([&](StreamWriter& w) {
    for (const UsageInterval& u : l.closed_) WriteInterval(w, u);
  });
  Json reservations = Json::array();
  for (const auto& [id, r] : l.reservations_) reservations.push_back(SpanJson(r));
  return {{"format", kFormat},
          {"enums", {{"usage_kind", EnumNames(UsageKind::kInfrastructureFailure, UsageKindName)}}},
          {"open", std::move(open)},
          {"closed", std::move(closed)},
          {"reservations", std::move(reservations)}};
}

Result<Ledger> SnapshotCodec::DecodeLedger(const Json& j) {
  Ledger l;
  try {
    if (Int<int>(Field(j, "format")) != kFormat) Fail("unknown format");
    const EnumCodes<UsageKind> kinds(Field(Field(j, "enums"), "usage_kind"),
                                     UsageKind::kInfrastructureFailure, UsageKindName, "kind");
    StreamReader open(Field(j, "open")), closed(Field(j, "closed"));
    for (size_t i = 0; !open.done(); ++i) {
      UsageInterval u = In("open interval #", i, [&] { return ReadInterval(open, kinds); });
      const JobId job = u.job;
      if (!l.open_.emplace(job, std::move(u)).second) {
        Fail("job " + std::to_string(job.value()) + " has two open intervals");
      }
    }
    for (size_t i = 0; !closed.done(); ++i) {
      l.closed_.push_back(In("closed interval #", i, [&] { return ReadInterval(closed, kinds); }));
    }
    for (const Json& a : Array(Field(j, "reservations"))) {
      const ReservationSpan r = SpanFrom(a);
      if (!l.reservations_.emplace(r.id, r).second) Fail("reservation listed twice");
    }
  } catch (const Malformed& e) {
    return InvalidArgument("ledger snapshot: " + e.what);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("ledger snapshot: ") + e.what());
  }
  return l;
}

Json SnapshotCodec::EncodeInterval(const UsageInterval& u) {
  return {{"tenant", IdJson(u.tenant)},
          {"job", IdJson(u.job)},
          {"flavor", IdJson(u.flavor)},
          {"shape", u.shape},
          {"replicas", u.replicas},
          {"eq_units", u.eq.units()},
          {"start_ms", u.start.millis()},
          {"end_ms", u.end.millis()},
          {"kind", EnumJson(u.kind, UsageKindName)},
          {"reservation", IdJson(u.reservation)},
          {"open", u.open}};
}

Result<UsageInterval> SnapshotCodec::DecodeInterval(const Json& j) {
  try {
    UsageInterval u;
    u.tenant = IdFrom<TenantId>(Field(j, "tenant"));
    u.job = IdFrom<JobId>(Field(j, "job"));
    u.flavor = IdFrom<FlavorId>(Field(j, "flavor"));
    u.shape = Str(Field(j, "shape"));
    u.replicas = Int<uint16_t>(Field(j, "replicas"));
    u.eq = GpuEq::Units(Int<int64_t>(Field(j, "eq_units")));
    u.start = Ms(Field(j, "start_ms"));
    u.end = Ms(Field(j, "end_ms"));
    u.kind = EnumFrom(Field(j, "kind"), UsageKind::kInfrastructureFailure, UsageKindName, "kind");
    u.reservation = IdFrom<ReservationId>(Field(j, "reservation"));
    u.open = Bool(Field(j, "open"));
    if (u.end < u.start) Fail("interval ends before it starts");
    return u;
  } catch (const Malformed& e) {
    return InvalidArgument("usage interval: " + e.what);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("usage interval: ") + e.what());
  }
}

// --- job history ---------------------------------------------------------------------------
// The history's stream: per job in job order, its id, dropped count and entries.
Json SnapshotCodec::EncodeHistory(const JobHistory& h) {
  Json stream = Stream([&](StreamWriter& w) {
    for (const auto& [job, log] : h.jobs_) {
      w(job, log.dropped);
      w.List(log.entries, [&](const HistoryEntry& e) { WriteEntry(w, e); });
    }
  });
  return {{"format", kFormat}, {"enums", HistoryEnumNames()}, {"stream", std::move(stream)}};
}

Result<JobHistory> SnapshotCodec::DecodeHistory(const Json& j) {
  JobHistory h;
  try {
    if (Int<int>(Field(j, "format")) != kFormat) Fail("unknown format");
    const HistoryEnums enums(Field(j, "enums"));
    StreamReader r(Field(j, "stream"));
    while (!r.done()) {
      const JobId job = r.IdOf<JobId>();
      In("job ", job.value(), [&] {
        JobHistory::Log log;
        log.dropped = r.Int<uint64_t>();
        // Add keeps a log at kMaxEntries once full; a longer one would grow without end.
        const size_t n = r.Count();
        if (n > JobHistory::kMaxEntries) Fail("more entries than a job keeps");
        log.entries.resize(n);
        for (HistoryEntry& e : log.entries) e = ReadEntry(r, enums);
        if (!h.jobs_.emplace(job, std::move(log)).second) Fail("listed twice");
      });
    }
  } catch (const Malformed& e) {
    return InvalidArgument("job history snapshot: " + e.what);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("job history snapshot: ") + e.what());
  }
  return h;
}

}  // namespace gpupool
