// Snapshots of the journaled state (journaled_state.h; docs/design/daemon.md, "Snapshots"): a copy
// taken on the loop, its encoding on a worker thread, and a start from the newest snapshot plus
// the journal's tail.
//
// The body is one JSON object: the model, the ledger and the job history in SnapshotCodec's
// encoding; the members that have journal records of their own as those records (tokens, agents,
// replicas' exits, prices, burst settings), replayed through ApplyRecord onto the
// decoded state, so that each has one decoder; and the rest (tombstones, idempotency keys, the
// burst fleet) directly.
#include <nlohmann/json.hpp>

#include "api/decode.h"
#include "daemon/journaled_state.h"
#include "daemon/snapshot_codec.h"
#include "policy/calendar/calendar.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

Json OptionalMillis(const std::optional<Time>& t) { return t ? Json(t->millis()) : Json(nullptr); }
std::optional<Time> OptionalTime(const Json& j) {
  if (j.is_null()) return std::nullopt;
  return Time::FromMillis(j.get<int64_t>());
}

Json FleetJson(const std::vector<BurstNode>& fleet) {
  Json out = Json::array();
  for (const BurstNode& b : fleet) {
    out.push_back({b.request_id, b.tenant.value(), b.flavor.value(), b.gpus, b.micros_per_gpu_hour, b.for_job.value(),
                   b.requested.millis(), OptionalMillis(b.ready), b.node.valid() ? Json(b.node.value()) : Json(nullptr),
                   OptionalMillis(b.released), b.last_busy.millis()});
  }
  return out;
}

Result<std::vector<BurstNode>> FleetFrom(const State& s, const Json& j) {
  std::vector<BurstNode> fleet;
  for (const Json& e : j) {
    BurstNode b;
    b.request_id = e.at(0).get<std::string>();
    b.tenant = TenantId(e.at(1).get<uint32_t>());
    b.flavor = FlavorId(e.at(2).get<uint32_t>());
    if (b.tenant.value() >= s.tenants().size() || b.flavor.value() >= s.catalogue().size()) {
      return InvalidArgument("burst node " + b.request_id + ": unknown tenant or flavor");
    }
    b.gpus = e.at(3).get<int>();
    b.micros_per_gpu_hour = e.at(4).get<int64_t>();
    b.for_job = JobId(e.at(5).get<uint64_t>());
    b.requested = Time::FromMillis(e.at(6).get<int64_t>());
    b.ready = OptionalTime(e.at(7));
    if (!e.at(8).is_null()) {
      b.node = NodeId(e.at(8).get<uint32_t>());
      if (b.node.value() >= s.nodes().size()) return InvalidArgument("burst node " + b.request_id + ": unknown node");
    }
    b.released = OptionalTime(e.at(9));
    b.last_busy = Time::FromMillis(e.at(10).get<int64_t>());
    fleet.push_back(std::move(b));
  }
  return fleet;
}

}  // namespace

JournaledState JournaledState::ForSnapshot() const {
  GP_CHECK(staged_.empty()) << "a snapshot is of what is durable";
  JournaledState copy = *this;
  // Pending reasons are derived: the next cycle recomputes them. A start from the snapshot shows
  // what a fresh submit shows until then, so that the snapshot holds only what is journaled.
  for (JobId id : copy.state_.pending()) {
    (void)copy.state_.SetPendingReason(id, {ReasonCode::kNotYetConsidered, "not yet considered by the scheduler"});
  }
  return copy;
}

Snapshot JournaledState::EncodeSnapshot(int64_t seq) const {
  const State& s = state_;
  Json records = Json::array();
  const auto record = [&](const Change& change) {
    Record r = ChangeCodec::Encode(s, change);
    records.push_back({std::move(r.kind), std::move(r.body)});
  };
  for (const auto& [key, account] : accounts_) record(ServiceAccountPut{account});
  for (const auto& [id, mapping] : oidc_mappings_) record(mapping);
  for (const auto& [id, t] : tokens_.tokens()) {
    TokenRecord issued = t;
    issued.revoked = false;
    record(TokenIssued{issued});
    if (t.revoked) record(TokenRevoked{id});
  }
  for (const auto& [node, a] : agents_) record(a);
  for (const auto& [job, replicas] : exits_) {
    for (int r : replicas) record(ReplicaExited{job, s.FindJob(job)->attempt, r});
  }
  for (const PricedPeriod& p : prices_) {
    record(PricesSet{p.prices, p.from == Time() ? std::nullopt : std::optional<Time>(p.from)});
  }
  for (const auto& [at, settings] : burst_changes_) record(BurstSettingsChanged{at, settings});
  Json deleted = Json::array(), idempotency = Json::array();
  for (TenantId t : deleted_) deleted.push_back(t.value());
  for (const auto& [at, key] : idempotency_order_) {
    const auto it = idempotency_.find(key);
    idempotency.push_back({key, it == idempotency_.end() ? Json(nullptr) : Json(it->second.job.value()), at.millis()});
  }
  const Json body = {{"format", kSnapshotFormat},
                     {"seq", seq},
                     {"state", SnapshotCodec::EncodeState(s)},
                     {"ledger", SnapshotCodec::EncodeLedger(ledger_)},
                     {"history", SnapshotCodec::EncodeHistory(history_)},
                     {"records", std::move(records)},
                     {"deleted", std::move(deleted)},
                     {"idempotency", std::move(idempotency)},
                     {"fleet", FleetJson(fleet_)},
                     {"burst_requests_seen", burst_requests_seen_}};
  return Snapshot{seq, kSnapshotFormat, body.dump()};
}

Status JournaledState::LoadSnapshot(const Snapshot& snap) {
  const auto bad = [&](const std::string& what) {
    return FailedPrecondition("the snapshot of record " + std::to_string(snap.seq) + " cannot be loaded: " + what);
  };
  if (snap.format != kSnapshotFormat) {
    return bad("its format is " + std::to_string(snap.format) + ", this gpupool reads " +
               std::to_string(kSnapshotFormat) + " (a newer gpupool wrote it?)");
  }
  const Json j = Json::parse(snap.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("its body is not JSON");
  try {
    if (j.at("seq").get<int64_t>() != snap.seq) return bad("its body is of another record");
    Result<State> state = SnapshotCodec::DecodeState(j.at("state"));
    if (!state.ok()) return bad("the model: " + state.error().message);
    state_ = std::move(state).value();
    Result<Ledger> ledger = SnapshotCodec::DecodeLedger(j.at("ledger"));
    if (!ledger.ok()) return bad("the ledger: " + ledger.error().message);
    ledger_ = std::move(ledger).value();
    Result<JobHistory> history = SnapshotCodec::DecodeHistory(j.at("history"));
    if (!history.ok()) return bad("the job history: " + history.error().message);
    history_ = std::move(history).value();
    RebuildFinished();
    for (const Json& r : j.at("records")) {
      const Record rec{snap.seq, r.at(0).get<std::string>(), r.at(1).get<std::string>()};
      if (Status s = ApplyRecord(rec); !s.ok()) return bad("its " + rec.kind + " record: " + s.error().message);
    }
    for (const Json& t : j.at("deleted")) {
      const TenantId id(t.get<uint32_t>());
      if (id.value() >= state_.tenants().size()) return bad("a deleted tenant that does not exist");
      deleted_.insert(id);
    }
    for (const Json& e : j.at("idempotency")) {
      const Time at = Time::FromMillis(e.at(2).get<int64_t>());
      const std::string key = e.at(0).get<std::string>();
      if (!e.at(1).is_null()) idempotency_[key] = {JobId(e.at(1).get<uint64_t>()), at};
      idempotency_order_.emplace_back(at, key);
    }
    Result<std::vector<BurstNode>> fleet = FleetFrom(state_, j.at("fleet"));
    if (!fleet.ok()) return bad(fleet.error().message);
    fleet_ = std::move(fleet).value();
    burst_requests_seen_ = j.at("burst_requests_seen").get<uint64_t>();
  } catch (const Json::exception& e) {
    return bad(std::string("malformed: ") + e.what());
  }
  snapshot_seq_ = snap.seq;
  return Ok();
}

}  // namespace gpupool
