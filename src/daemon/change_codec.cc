// ChangeCodec: each Change as a journal record (kind, JSON body), and back. The bodies are the
// ones every journal so far holds (format 1); see change.h.
#include <nlohmann/json.hpp>

#include "api/decode.h"
#include "daemon/change.h"
#include "policy/calendar/calendar.h"
#include "store/codec.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

// The kind of each alternative, by the variant's index.
const std::vector<std::string> kKinds = {"event",         "tenant",       "tenant_deleted", "class",
                                         "node",          "token",        "token_revoked",  "prices",
                                         "burst_request", "burst_node",   "burst_settings", "agent",
                                         "replica_exit",  "audit",        "archived_job",   "service_account",
                                         "oidc_mapping"};
static_assert(std::variant_size_v<Change> == 17);

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

std::string TenantName(const State& s, TenantId id) { return id.valid() ? s.tenant(id).name : ""; }

Result<TenantId> TenantNamed(const State& s, const std::string& name) { return s.FindTenant(name); }

Json EncodeBody(const State& s, const Change& change) {
  return std::visit(
      Overload{
          [&](const EventChange& c) {
            Json j = {{"event", EventToJson(c.event)}};
            if (!c.idempotency.empty()) j["idempotency"] = c.idempotency;
            return j;
          },
          [&](const TenantPut& c) { return TenantToJson(s, c.tenant); },
          [&](const TenantDeleted& c) { return Json{{"name", TenantName(s, c.tenant)}}; },
          [&](const PriorityClassAdded& c) { return PriorityClassToJson(c.cls); },
          [&](const NodeAdded& c) { return NodeToJson(s, c.node); },
          [&](const TokenIssued& c) {
            const Principal& p = c.token.principal;
            Json j{{"id", c.token.id},
                        {"sha256", c.token.sha256},
                        {"name", p.name},
                        {"role", std::string(RoleName(p.role))},
                        {"tenant", TenantName(s, p.tenant)},
                        {"created_ms", c.token.created.millis()},
                        {"expires_ms", c.token.expires == Time() ? Json(nullptr) : Json(c.token.expires.millis())}};
            if (!c.token.account.empty()) j["account"] = c.token.account;
            if (c.token.last_used != Time()) j["last_used_ms"] = c.token.last_used.millis();
            return j;
          },
          [&](const TokenRevoked& c) { return Json{{"id", c.id}}; },
          [&](const PricesSet& c) {
            Json j = Json::parse(PriceListToJson(s, c.prices));
            if (c.from) j["effective_from"] = *c.from == Time() ? Json(nullptr) : Json(Rfc3339(*c.from));
            return j;
          },
          [&](const BurstRequested& c) {
            return Json{{"request_id", c.request_id},
                        {"tenant", TenantName(s, c.tenant)},
                        {"flavor", s.catalogue().model(c.flavor).name},
                        {"gpus", c.gpus},
                        {"micros_per_gpu_hour", c.micros_per_gpu_hour},
                        {"for_job", c.for_job.value()},
                        {"requested_ms", c.requested.millis()}};
          },
          [&](const BurstNodeJoined& c) {
            return Json{{"request_id", c.request_id},
                        {"ready_ms", c.ready.millis()},
                        {"joined_ms", c.joined.millis()},
                        {"node", NodeToJson(s, c.node)}};
          },
          [&](const BurstSettingsChanged& c) {
            Json j = BurstSettingsToJson(s.catalogue(), c.settings);
            return Json{{"at_ms", c.at.millis()}, {"settings", {{"offers", j["offers"]}, {"tenants", j["tenants"]}}}};
          },
          [&](const AgentRecorded& c) {
            const Node& n = s.node(c.node);
            const GpuModel& model = s.catalogue().model(n.flavor);
            Json mig = Json::array(), layouts = Json::array();
            for (const auto& [key, uuid] : c.mig_uuid) mig.push_back({{"gpu", key.first}, {"start", key.second}, {"uuid", uuid}});
            for (const auto& [gpu, layout] : c.mig_layout) layouts.push_back({{"gpu", gpu}, {"layout", ToString(model, layout)}});
            return Json{{"node", n.name}, {"gpu_uuid", c.gpu_uuid}, {"mig_uuid", mig}, {"mig_layout", layouts}};
          },
          [&](const ReplicaExited& c) {
            return Json{{"job", c.job.value()}, {"attempt", c.attempt}, {"replica", c.replica}};
          },
          [&](const AuditEntry& c) {
            Json out{{"at_ms", c.at.millis()}, {"principal", c.principal}, {"tenant", c.tenant},
                     {"action", c.action},     {"object", c.object},       {"remote", c.remote}};
            if (!c.issuer.empty()) out["issuer"] = c.issuer;
            if (!c.subject.empty()) out["subject"] = c.subject;
            return out;
          },
          [&](const JobArchived&) { return Json(); },  // Encode keeps its body as it is
          [&](const ServiceAccountPut& c) {
            Json j{{"tenant", TenantName(s, c.account.tenant)},
                   {"name", c.account.name},
                   {"role", std::string(RoleName(c.account.role))},
                   {"created_ms", c.account.created.millis()},
                   {"created_by", c.account.created_by}};
            if (c.deleted) j["deleted"] = true;
            return j;
          },
          [&](const OidcMappingPut& c) {
            Json j{{"id", c.id}, {"issuer", c.issuer}, {"role", c.mapping.role}, {"created_ms", c.created.millis()},
                   {"created_by", c.created_by}};
            if (!c.mapping.group.empty()) j["group"] = c.mapping.group;
            if (!c.mapping.user.empty()) j["user"] = c.mapping.user;
            if (!c.mapping.tenant.empty()) j["tenant"] = c.mapping.tenant;
            if (c.deleted) j["deleted"] = true;
            return j;
          },
      },
      change);
}

// A field's value of the expected type, or an error naming it.
template <class T>
T Field(const Json& j, const char* key) {
  return j.at(key).get<T>();  // Json::exception on a missing or mistyped field (caught in Decode)
}

Result<Change> DecodeToken(const State& s, const Json& j) {
  TokenRecord t;
  t.id = j.value("id", "");
  t.sha256 = j.value("sha256", "");
  t.principal.name = j.value("name", "");
  Result<Role> role = ParseRole(j.value("role", ""));
  if (!role.ok()) return role.error();
  t.principal.role = *role;
  t.principal.token_id = t.id;
  const std::string tenant = j.value("tenant", "");
  if (!tenant.empty()) {
    Result<TenantId> tid = TenantNamed(s, tenant);
    if (!tid.ok()) return tid.error();
    t.principal.tenant = *tid;
  }
  t.created = Time::FromMillis(j.value("created_ms", int64_t{0}));
  // Records from before expiry existed have none: never.
  if (j.contains("expires_ms") && j["expires_ms"].is_number_integer()) t.expires = Time::FromMillis(j["expires_ms"].get<int64_t>());
  t.account = j.value("account", "");
  if (j.contains("last_used_ms")) t.last_used = Time::FromMillis(Field<int64_t>(j, "last_used_ms"));
  return Change(TokenIssued{std::move(t)});
}

Result<Change> DecodeServiceAccount(const State& s, const Json& j) {
  ServiceAccountPut c;
  Result<TenantId> t = TenantNamed(s, Field<std::string>(j, "tenant"));
  if (!t.ok()) return t.error();
  Result<Role> role = ParseRole(Field<std::string>(j, "role"));
  if (!role.ok()) return role.error();
  c.account = {*t, Field<std::string>(j, "name"), *role, Time::FromMillis(Field<int64_t>(j, "created_ms")),
               j.value("created_by", "")};
  c.deleted = j.value("deleted", false);
  return Change(std::move(c));
}

Result<Change> DecodeBurstRequest(const State& s, const Json& j) {
  BurstRequested b;
  b.request_id = Field<std::string>(j, "request_id");
  Result<TenantId> t = TenantNamed(s, Field<std::string>(j, "tenant"));
  if (!t.ok()) return t.error();
  Result<FlavorId> f = s.catalogue().Find(Field<std::string>(j, "flavor"));
  if (!f.ok()) return f.error();
  b.tenant = *t;
  b.flavor = *f;
  b.gpus = Field<int>(j, "gpus");
  b.micros_per_gpu_hour = Field<int64_t>(j, "micros_per_gpu_hour");
  b.for_job = JobId(Field<uint64_t>(j, "for_job"));
  b.requested = Time::FromMillis(Field<int64_t>(j, "requested_ms"));
  return Change(std::move(b));
}

Result<Change> DecodeBurstNode(const State& s, const Json& j) {
  BurstNodeJoined b;
  b.request_id = Field<std::string>(j, "request_id");
  Result<Node> n = NodeFromJson(s, j.at("node"));
  if (!n.ok()) return n.error();
  b.node = std::move(n).value();
  b.ready = Time::FromMillis(Field<int64_t>(j, "ready_ms"));
  b.joined = Time::FromMillis(j.value("joined_ms", b.ready.millis()));  // older records: joined when ready
  return Change(std::move(b));
}

Result<Change> DecodeAgent(const State& s, const Json& j) {
  Result<NodeId> id = s.FindNode(j.value("node", ""));
  if (!id.ok()) return id.error();
  AgentRecorded a;
  a.node = *id;
  const GpuModel& model = s.catalogue().model(s.node(*id).flavor);
  for (const Json& u : j.value("gpu_uuid", Json::array())) a.gpu_uuid.push_back(u.get<std::string>());
  for (const Json& m : j.value("mig_uuid", Json::array())) {
    a.mig_uuid[{m.value("gpu", 0), m.value("start", 0)}] = m.value("uuid", "");
  }
  for (const Json& l : j.value("mig_layout", Json::array())) {
    Result<MigLayout> layout = ParseLayout(model, l.value("layout", ""));
    if (!layout.ok()) return layout.error();
    a.mig_layout[l.value("gpu", 0)] = *layout;
  }
  return Change(std::move(a));
}

Result<Change> DecodeReplicaExit(const Json& j) {
  if (!j.contains("job") || !j["job"].is_number_unsigned() || !j.contains("replica") ||
      !j["replica"].is_number_integer() || !j.contains("attempt") || !j["attempt"].is_number_integer()) {
    return InvalidArgument("replica_exit: job, replica and attempt expected");
  }
  return Change(ReplicaExited{JobId(j["job"].get<uint64_t>()), j["attempt"].get<int64_t>(), j["replica"].get<int64_t>()});
}

template <class T, class R>
Result<Change> Lift(Result<R> r) {
  if (!r.ok()) return r.error();
  return Change(T{std::move(r).value()});
}

Result<Change> DecodeBody(const State& s, const std::string& kind, const std::string& body, const Json& j) {
  if (kind == "event") {
    Result<Event> e = EventFromJson(j.value("event", Json()));
    if (!e.ok()) return e.error();
    EventChange c{std::move(e).value(), j.value("idempotency", "")};
    if (!c.idempotency.empty() && !std::holds_alternative<JobSubmitted>(c.event)) {
      return InvalidArgument("an idempotency key on an event other than job_submitted");
    }
    return Change(std::move(c));
  }
  if (kind == "tenant") return Lift<TenantPut>(TenantFromJson(s, j));
  if (kind == "tenant_deleted") return Lift<TenantDeleted>(TenantNamed(s, j.value("name", "")));
  if (kind == "class") return Lift<PriorityClassAdded>(PriorityClassFromJson(j));
  if (kind == "node") return Lift<NodeAdded>(NodeFromJson(s, j));
  if (kind == "token") return DecodeToken(s, j);
  if (kind == "token_revoked") return Change(TokenRevoked{j.value("id", "")});
  if (kind == "prices") {
    PricesSet p;
    Result<PriceList> list = DecodePriceList(s, body, &p.from);
    if (!list.ok()) return list.error();
    p.prices = std::move(list).value();
    return Change(std::move(p));
  }
  if (kind == "burst_request") return DecodeBurstRequest(s, j);
  if (kind == "burst_node") return DecodeBurstNode(s, j);
  if (kind == "burst_settings") {
    BurstSettingsChanged c;
    GP_RETURN_IF_ERROR(DecodeBurstSettings(s.catalogue(), j.at("settings"), &c.settings));
    c.at = Time::FromMillis(Field<int64_t>(j, "at_ms"));
    return Change(std::move(c));
  }
  if (kind == "agent") return DecodeAgent(s, j);
  if (kind == "replica_exit") return DecodeReplicaExit(j);
  if (kind == "audit") {
    return Change(AuditEntry{Time::FromMillis(j.value("at_ms", int64_t{0})), j.value("principal", ""), j.value("tenant", ""),
                      j.value("action", ""), j.value("object", ""), j.value("remote", ""), j.value("issuer", ""),
                      j.value("subject", "")});
  }
  if (kind == "service_account") return DecodeServiceAccount(s, j);
  if (kind == "oidc_mapping") {
    OidcMappingPut c{Field<std::string>(j, "id"), Field<std::string>(j, "issuer"),
                     {j.value("group", ""), j.value("user", ""), j.value("tenant", ""), Field<std::string>(j, "role")},
                     Time::FromMillis(Field<int64_t>(j, "created_ms")), j.value("created_by", ""), j.value("deleted", false)};
    return Change(std::move(c));
  }
  if (kind == "archived_job") {
    if (!j.contains("id") || !j["id"].is_number_unsigned()) return InvalidArgument("archived_job: id expected");
    return Change(JobArchived{JobId(j["id"].get<uint64_t>()), body, {}});
  }
  return InvalidArgument("unknown record kind");
}

}  // namespace

const std::vector<std::string>& ChangeKinds() { return kKinds; }

Record ChangeCodec::Encode(const State& s, const Change& c) {
  // An archived job's body is made whole by the archiver (and may be large): kept as it is.
  if (const auto* a = std::get_if<JobArchived>(&c)) return Record{0, kKinds[c.index()], a->body, a->key};
  Record r{0, kKinds[c.index()], EncodeBody(s, c).dump(), {}};
  if (const auto* a = std::get_if<AuditEntry>(&c)) r.history = {HistoryKey::Kind::kAudit, 0, a->tenant};
  return r;
}

Result<Change> ChangeCodec::Decode(const State& s, const Record& r) {
  const Json j = Json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("'" + r.kind + "' record: not a JSON object");
  if (auto v = j.find("v"); v != j.end()) {
    if (!v->is_number_integer() || v->get<int64_t>() < 1) return InvalidArgument("'" + r.kind + "' record: bad format \"v\"");
    if (v->get<int64_t>() > kChangeFormat) {
      return FailedPrecondition("'" + r.kind + "' record of change format " + std::to_string(v->get<int64_t>()) +
                                ", written by a newer gpupool (this one reads formats up to " +
                                std::to_string(kChangeFormat) + ")");
    }
  }
  try {
    return DecodeBody(s, r.kind, r.body, j);
  } catch (const Json::exception& e) {
    return InvalidArgument("malformed '" + r.kind + "' record: " + e.what());
  }
}

}  // namespace gpupool
