// Change: every durable change the daemon makes, as one typed value per journal record.
//
// A handler builds a Change and commits it (ControlPlane::Commit: encoded, checked and applied,
// then staged for the next flush); the store keeps its encoding. A start decodes each
// record back into the same Change and applies it the same way, so a record has one meaning in
// one place (ChangeCodec) and one effect in one place (ControlPlane::Apply(const Change&)).
//
// The encoding is the record's kind and a JSON body. Bodies carry names, not ids (tenants,
// flavors, nodes), so decoding resolves them against the state the record is applied to.
// Format: a body without "v" is format 1 (every journal written so far); a later format writes
// "v", and a record of a format newer than kChangeFormat is refused with that reason, never
// misread. tests/fixtures/changes-v1 is a journal of every kind written by format 1.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "accounting/report.h"
#include "api/auth.h"
#include "auth/oidc.h"
#include "burst/settings.h"
#include "core/result.h"
#include "model/events.h"
#include "model/mig.h"
#include "model/state.h"
#include "policy/burst/burst.h"
#include "store/journal.h"

namespace gpupool {

inline constexpr int kChangeFormat = 1;

// A model event (model/events.h); a JobSubmitted may carry the submitter's idempotency key.
struct EventChange {
  Event event;
  std::string idempotency;  // token id + key, or ""
};
// A tenant, new or with new settings (matched by name); a deleted tenant put again is back.
struct TenantPut {
  Tenant tenant;
};
// A tombstone: no quota, tokens revoked, hidden; the id stays (jobs and the ledger name it).
struct TenantDeleted {
  TenantId tenant;
};
struct PriorityClassAdded {
  PriorityClass cls;
};
struct NodeAdded {
  Node node;
};
// A token, new or with a later state of the same id (a shorter expiry from a rotation, a later
// last use); a revoked token stays revoked.
struct TokenIssued {
  TokenRecord token;
};
struct TokenRevoked {
  std::string id;
};
// A price list in force from `from` on; without `from` (bootstrap, records written before price
// history) for all time.
struct PricesSet {
  PriceList prices;
  std::optional<Time> from;
};
// An on-demand node asked of the provider (billing starts when it is ready).
struct BurstRequested {
  std::string request_id;
  TenantId tenant;
  FlavorId flavor;
  int gpus = 0;
  int64_t micros_per_gpu_hour = 0;
  JobId for_job;
  Time requested;
};
// The request's node is ready and joins the cluster.
struct BurstNodeJoined {
  std::string request_id;
  Node node;
  Time ready;
  Time joined;  // idle is counted from here
};
// Offers and tenant policies from `at` on (PUT /v1/burst/settings).
struct BurstSettingsChanged {
  Time at;
  BurstSettings settings;
};
// What the daemon remembers of a node's agent across a restart: its GPUs' and MIG slices'
// UUIDs and the MIG layouts it last reported.
struct AgentRecorded {
  NodeId node;
  std::vector<std::string> gpu_uuid;                     // by GPU index
  std::map<std::pair<int, int>, std::string> mig_uuid;  // (GPU, MIG start slice) -> UUID
  std::map<int, MigLayout> mig_layout;
};
// A replica of `attempt` exited 0 (it must not run again while the attempt holds its GPUs).
struct ReplicaExited {
  JobId job;
  int64_t attempt = 0;
  int64_t replica = 0;
};
// A service account created, or (deleted) removed with every token issued for it.
struct ServiceAccountPut {
  ServiceAccount account;
  bool deleted = false;
};
// A group-or-user mapping of a trusted OIDC issuer made through the API (POST /v1/oidc-mappings),
// or (deleted) removed; it adds to the configuration's mappings of that issuer.
struct OidcMappingPut {
  std::string id;
  std::string issuer;
  OidcMapping mapping;
  Time created;
  std::string created_by;
  bool deleted = false;
};
// One line of the audit log; the store keeps it (Journal::AuditLines), memory does not.
struct AuditEntry {
  Time at;
  std::string principal, tenant, action, object, remote;
  std::string issuer, subject;  // an OIDC caller's token's `iss` and `sub` ("" for API tokens)
};
// A finished job leaves memory; `body` (its view, events and usage) stays in the store's
// history under `key`.
struct JobArchived {
  JobId id;
  std::string body;
  HistoryKey key;  // set when made (decoding a record leaves it empty: the store has it)
};

using Change = std::variant<EventChange, TenantPut, TenantDeleted, PriorityClassAdded, NodeAdded, TokenIssued,
                            TokenRevoked, PricesSet, BurstRequested, BurstNodeJoined, BurstSettingsChanged,
                            AgentRecorded, ReplicaExited, AuditEntry, JobArchived, ServiceAccountPut,
                            OidcMappingPut>;

// Every record kind, in the variant's order (for the fixture's coverage check and messages).
const std::vector<std::string>& ChangeKinds();

// The journal encoding, against the state the change is (being) applied to: names are read from
// it when encoding and resolved in it when decoding.
struct ChangeCodec {
  static Record Encode(const State& s, const Change& c);
  static Result<Change> Decode(const State& s, const Record& r);
};

}  // namespace gpupool
