// Snapshot codecs: the daemon's whole journaled state (the model's State, the usage Ledger and
// the JobHistory) as JSON, and back. A snapshot stands in for the journal's head: the daemon
// starts by decoding it and replaying the journal's tail, so Decode(Encode(x)) must behave
// exactly like x for every later event.
//
// What is written and what is rebuilt. Everything that cannot be derived is written: every
// field of tenants (decayed usage as a double, which nlohmann writes with round-trip
// precision), priority classes, nodes (runtime condition, removal, GPU modes, health, MIG
// layouts), jobs, reservations, the id counters and the usage half-life. The indexes are
// rebuilt from the jobs, as CheckInvariants recomputes them: the GPUs' occupants, the nodes'
// host usage, the name index, the id index, the pending and active sets and the per-tenant
// pending counts. The one ordering an index adds, the order of a shared GPU's clients, is
// written beside the GPU and restored.
//
// Format: one JSON object per structure with a "format" number. Configuration-sized parts
// (tenants, classes, nodes, reservations) are objects with names and short rows; the large
// parts (jobs, ledger intervals, history entries) are value streams, flat arrays of their
// fields, for size and speed (snapshot_codec_stream.h; each record's layout is in
// snapshot_codec_records.h). Times and durations are integer milliseconds (Time::Never() and
// Duration::Infinite() as INT64_MAX), quantities GpuEq units, invalid ids null; enums are names,
// or in a stream small codes with the names listed once in the document.
//
// Jobs may be missing: a state whose oldest finished jobs were dropped from memory decodes with
// gaps in its ids; State::FindJob returns nullptr for them and NextJobId stays.
//
// Errors: decoding validates types, ranges, enum names and references (a placement on a missing
// node or GPU, a MIG instance that does not exist, a duplicated id, a job index that disagrees
// with the job's state) and then CheckInvariants; anything wrong is kInvalidArgument with a
// message that says where, never an exception or a crash.
//
// Thread-safety: stateless; each call reads only its arguments.
#pragma once

#include <nlohmann/json.hpp>

#include "accounting/ledger.h"
#include "core/result.h"
#include "daemon/job_history.h"
#include "model/state.h"

namespace gpupool {

struct SnapshotCodec {
  static nlohmann::json EncodeState(const State& s);
  // Builds the state on Catalogue::BuiltIn(); the snapshot's flavors must be a prefix of it
  // (ids index the catalogue). The usage half-life comes from the document.
  static Result<State> DecodeState(const nlohmann::json& j);
  static nlohmann::json EncodeLedger(const Ledger& l);
  static Result<Ledger> DecodeLedger(const nlohmann::json& j);
  static nlohmann::json EncodeHistory(const JobHistory& h);
  static Result<JobHistory> DecodeHistory(const nlohmann::json& j);
  // One usage interval as a self-describing object (named fields, the kind by name), for a
  // record kept apart from any snapshot (an archived job's usage).
  static nlohmann::json EncodeInterval(const UsageInterval& u);
  static Result<UsageInterval> DecodeInterval(const nlohmann::json& j);

 private:
  // Steps of DecodeState that fill State's private members; they throw the codec's internal
  // error type, which DecodeState turns into a Result (snapshot_codec.cc).
  static void InstallTenants(State& s, const nlohmann::json& tenants);
  static void InstallNodes(State& s, const nlohmann::json& nodes);
  static void InstallJobs(State& s, const nlohmann::json& jobs);
  static void RebuildOccupancy(State& s, const nlohmann::json& nodes);
  static void InstallReservations(State& s, const nlohmann::json& reservations);
};

}  // namespace gpupool
