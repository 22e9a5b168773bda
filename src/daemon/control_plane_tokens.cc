// ControlPlane's token and audit-log routes.
#include "daemon/control_plane.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "api/config_json.h"
#include "api/decode.h"
#include "api/page.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "policy/calendar/calendars.h"
#include "policy/quota/quota.h"
#include "scheduler/schedule.h"
#include "store/codec.h"

namespace gpupool {
namespace {

using namespace reply;

// Field `key` of a request: absent (`fallback`), or a whole number from `lo` to `hi` (`unit`
// names it in the error).
Result<int64_t> WholeNumber(const Json& j, const char* key, int64_t fallback, int64_t lo, int64_t hi, const char* unit) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_number_integer() || j[key].get<int64_t>() < lo || j[key].get<int64_t>() > hi) {
    return InvalidArgument(std::string("'") + key + "' must be a whole number of " + unit + " from " +
                           std::to_string(lo) + " to " + std::to_string(hi));
  }
  return j[key].get<int64_t>();
}

}  // namespace

struct ControlPlane::Issued {
  std::string id;
  Json shown;
};

const Principal* ControlPlane::Authenticate(const std::string& token, Time now) {
  const Principal* p = js_->tokens().Authenticate(token, now);
  if (p == nullptr) return nullptr;
  token_seen_[p->token_id] = now;
  const Time journaled = js_->tokens().tokens().at(p->token_id).last_used;
  if (journaled == Time() || now - journaled >= kLastUsedStep) token_use_due_.insert(p->token_id);
  return p;
}

Time ControlPlane::LastUse(const TokenRecord& t) const {
  const auto seen = token_seen_.find(t.id);
  return seen == token_seen_.end() ? t.last_used : std::max(t.last_used, seen->second);
}

void ControlPlane::JournalTokenUse() {
  // Only the uses an hour past the journaled one (Authenticate marks them): nothing to scan per tick.
  for (auto it = token_use_due_.begin(); it != token_use_due_.end(); it = token_use_due_.erase(it)) {
    const auto t = js_->tokens().tokens().find(*it);
    if (t == js_->tokens().tokens().end() || t->second.revoked) {
      token_seen_.erase(*it);
      continue;
    }
    TokenRecord used = t->second;
    used.last_used = LastUse(t->second);
    // A commit refused here (the core is stale) or a flush that fails after it loses this record
    // only: the listing keeps the use (token_seen_) and the next use marks it due again.
    if (!Commit(TokenIssued{used}).ok()) break;
  }
}

Result<Time> ControlPlane::RequestedExpiry(const Json& j, Time now) const {
  Result<int64_t> days = WholeNumber(j, "expires_in_days", kTokenDefaultDays, 1, token_max_days_, "days");
  if (!days.ok()) return days.error();
  return now + Duration::Hours(24 * *days);
}

Result<ControlPlane::Issued> ControlPlane::Issue(const CallContext& c, Principal p, const std::string& account,
                                                 Time expires) {
  auto [record, secret] = js_->tokens().Create(std::move(p), c.now);
  record.expires = expires;
  record.account = account;
  GP_RETURN_IF_ERROR(Commit(TokenIssued{record}));
  Audit(c, "token.create", account.empty() ? record.principal.name : "service-account " + account);
  Json shown = {{"id", record.id}, {"token", secret}, {"name", record.principal.name},
                {"role", std::string(RoleName(record.principal.role))}, {"expires", Rfc3339(expires)}};
  if (record.principal.tenant.valid()) shown["tenant"] = state().tenant(record.principal.tenant).name;
  if (!account.empty()) shown["service_account"] = account;
  return Issued{record.id, std::move(shown)};
}

Reply ControlPlane::IssueAndShow(const CallContext& c, Principal p, const std::string& account, Time expires) {
  Result<Issued> issued = Issue(c, std::move(p), account, expires);
  if (!issued.ok()) return Err(issued.error());
  return JsonReply(201, issued->shown);
}

Reply ControlPlane::CreateToken(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<Json> parsed = ParseTokenRequest(body);
  if (!parsed.ok()) return Err(parsed.error());
  const Json& j = *parsed;
  for (const auto& [k, v] : j.items()) {
    if (k != "name" && k != "role" && k != "tenant" && k != "expires_in_days") {
      return Err(InvalidArgument("unknown field '" + k + "'"));
    }
  }
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty() ||
      !j.contains("role") || !j["role"].is_string()) {
    return Err(InvalidArgument("'name' and 'role' are required strings"));
  }
  if (j["name"].get<std::string>().size() > 128) return Err(InvalidArgument("'name' is longer than 128 characters"));
  Result<Role> role = ParseRole(j["role"].get<std::string>());
  if (!role.ok()) return Err(role.error());
  Principal p{j["name"].get<std::string>(), *role, TenantId(), ""};
  if (*role == Role::kNodeAgent && j.contains("tenant")) {
    return Err(InvalidArgument("a node-agent token has no tenant; its name is the node it acts for"));
  }
  if (*role == Role::kMetricsReader && j.contains("tenant")) {
    return Err(InvalidArgument("a metrics-reader token has no tenant; it reads /metrics only"));
  }
  if (*role != Role::kClusterAdmin && *role != Role::kNodeAgent && *role != Role::kMetricsReader) {
    if (!j.contains("tenant") || !j["tenant"].is_string()) return Err(InvalidArgument("'tenant' is required"));
    Result<TenantId> t = state().FindTenant(j["tenant"].get<std::string>());
    if (!t.ok() || !c.principal->Sees(*t) || js_->deleted().count(*t)) return Err(NotFound("unknown tenant"));
    p.tenant = *t;
  }
  // Cluster admins make any token (node-agent ones too); tenant admins make member and viewer
  // tokens of their tenant.
  const bool allowed = c.principal->admin() ||
                       (c.principal->AdministersTenant(p.tenant) && (*role == Role::kMember || *role == Role::kViewer));
  if (!allowed) return Forbidden("create this token");
  Result<Time> expires = RequestedExpiry(j, c.now);
  if (!expires.ok()) return Err(expires.error());
  return IssueAndShow(c, std::move(p), "", *expires);
}

namespace {

// What GET /v1/tokens and a service account's listing show of a token.
Json TokenView(const TokenRecord& t, Time last_used) {
  return {{"id", t.id},
          {"name", t.principal.name},
          {"role", std::string(RoleName(t.principal.role))},
          {"created", Rfc3339(t.created)},
          {"expires", t.expires == Time() ? Json(nullptr) : Json(Rfc3339(t.expires))},
          {"last_used", last_used == Time() ? Json(nullptr) : Json(Rfc3339(last_used))},
          {"service_account", t.account.empty() ? Json(nullptr) : Json(t.account)},
          {"revoked", t.revoked}};
}

}  // namespace

Reply ControlPlane::ListTokens(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  for (const auto& [id, t] : js_->tokens().tokens()) {
    const bool mine = c.principal->admin() ||
                      (t.principal.tenant.valid() && c.principal->AdministersTenant(t.principal.tenant));
    if (!mine) continue;
    Json view = TokenView(t, LastUse(t));
    view["tenant"] = t.principal.tenant.valid() ? state().tenant(t.principal.tenant).name : "";
    items.push_back(std::move(view));
  }
  return JsonReply(200, {{"items", items}});
}

Reply ControlPlane::RevokeToken(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  auto it = js_->tokens().tokens().find(id);
  const bool mine = it != js_->tokens().tokens().end() &&
                    (c.principal->admin() || (it->second.principal.tenant.valid() &&
                                              c.principal->AdministersTenant(it->second.principal.tenant)));
  if (!mine) return Err(NotFound("no token '" + id + "'"));
  if (Status s = Commit(TokenRevoked{id}); !s.ok()) return Err(s.error());
  Audit(c, "token.revoke", id);
  return JsonReply(200, {{"id", id}, {"revoked", true}});
}

Reply ControlPlane::RotateToken(const CallContext& c, const std::string& id, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  const auto it = js_->tokens().tokens().find(id);
  if (it == js_->tokens().tokens().end()) return Err(NotFound("no token '" + id + "'"));
  const TokenRecord old = it->second;
  const Role role = old.principal.role;
  const bool own = c.principal->token_id == id;
  const bool administers = c.principal->admin() ||
                           (old.principal.tenant.valid() && c.principal->AdministersTenant(old.principal.tenant));
  // Who may not see it learns nothing of it; a tenant admin rotates only what it could create.
  if (!own && !administers) return Err(NotFound("no token '" + id + "'"));
  if (!own && !c.principal->admin() && role != Role::kMember && role != Role::kViewer) return Forbidden("rotate this token");
  Result<Json> parsed = ParseTokenRequest(body);
  if (!parsed.ok()) return Err(parsed.error());
  const Json& j = *parsed;
  if (Status s = OnlyKeys(j, {"expires_in_days", "grace_s"}, ""); !s.ok()) return Err(s.error());
  const Result<int64_t> grace = WholeNumber(j, "grace_s", 0, 0, kMaxRotationGrace.seconds(), "seconds");
  if (!grace.ok()) return Err(grace.error());
  const int64_t grace_s = *grace;
  Result<Time> expires = RequestedExpiry(j, c.now);
  if (!expires.ok()) return Err(expires.error());
  if (old.revoked || (old.expires != Time() && old.expires <= c.now)) {
    return Err({ErrorCode::kFailedPrecondition, "token '" + id + "' is " + (old.revoked ? "revoked" : "expired") +
                                                    "; create a new one instead"});
  }
  if (!old.account.empty() && !js_->service_accounts().count({old.principal.tenant, old.account})) {
    return Err({ErrorCode::kFailedPrecondition, "the service account of token '" + id + "' is gone"});
  }
  Principal p = old.principal;
  p.token_id.clear();
  Result<Issued> issued = Issue(c, std::move(p), old.account, *expires);
  if (!issued.ok()) return Err(issued.error());
  // Both records go out in the request's one flush: a failed write loses both, never one.
  Time stops = c.now;
  if (grace_s == 0) {
    if (Status s = Commit(TokenRevoked{id}); !s.ok()) return Err(s.error());
  } else {
    TokenRecord retiring = old;
    const Time until = c.now + Duration::Seconds(grace_s);
    retiring.expires = stops = old.expires == Time() ? until : std::min(old.expires, until);
    if (Status s = Commit(TokenIssued{retiring}); !s.ok()) return Err(s.error());
  }
  Audit(c, "token.rotate", id + " -> " + issued->id);
  issued->shown["replaces"] = id;
  issued->shown["replaced_expires"] = Rfc3339(stops);
  return JsonReply(201, issued->shown);
}

Result<TenantId> ControlPlane::AdministeredTenant(const CallContext& c, const std::string& name) const {
  Result<TenantId> t = state().FindTenant(name);
  if (!t.ok() || !c.principal->Sees(*t) || js_->deleted().count(*t)) return NotFound("no tenant '" + name + "'");
  if (!c.principal->AdministersTenant(*t)) {
    return Error{ErrorCode::kPermissionDenied, "only the tenant's admins manage its service accounts"};
  }
  return *t;
}

Reply ControlPlane::ListServiceAccounts(const CallContext& c, const std::string& tenant) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<TenantId> t = AdministeredTenant(c, tenant);
  if (!t.ok()) return Err(t.error());
  Json items = Json::array();
  for (const auto& [key, a] : js_->service_accounts()) {
    if (key.first != *t) continue;
    Json tokens = Json::array();
    Time last_used;
    for (const auto& [id, tok] : js_->tokens().tokens()) {
      if (tok.principal.tenant != *t || tok.account != a.name || tok.revoked) continue;
      if (tok.expires != Time() && tok.expires <= c.now) continue;
      const Time used = LastUse(tok);
      last_used = std::max(last_used, used);
      tokens.push_back(TokenView(tok, used));
    }
    items.push_back({{"name", a.name},
                     {"tenant", tenant},
                     {"role", std::string(RoleName(a.role))},
                     {"created", Rfc3339(a.created)},
                     {"created_by", a.created_by},
                     {"last_used", last_used == Time() ? Json(nullptr) : Json(Rfc3339(last_used))},
                     {"tokens", std::move(tokens)}});
  }
  return JsonReply(200, {{"items", items}});
}

Reply ControlPlane::CreateServiceAccount(const CallContext& c, const std::string& tenant, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<TenantId> t = AdministeredTenant(c, tenant);
  if (!t.ok()) return Err(t.error());
  Result<Json> parsed = ParseTokenRequest(body);
  if (!parsed.ok()) return Err(parsed.error());
  const Json& j = *parsed;
  if (Status s = OnlyKeys(j, {"name", "role"}, ""); !s.ok()) return Err(s.error());
  if (!j.contains("name") || !j["name"].is_string() || !j.contains("role") || !j["role"].is_string()) {
    return Err(InvalidArgument("'name' and 'role' are required strings"));
  }
  const std::string name = j["name"].get<std::string>();
  const bool plain = !name.empty() && name.size() <= 63 && name.front() != '-' && name.back() != '-' &&
                     name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
  if (!plain) {
    return Err(InvalidArgument("a service account's name is 1 to 63 of a-z, 0-9 and '-', not starting or ending "
                               "with '-'"));
  }
  Result<Role> role = ParseRole(j["role"].get<std::string>());
  if (!role.ok()) return Err(role.error());
  if (*role != Role::kTenantAdmin && *role != Role::kMember && *role != Role::kViewer) {
    return Err(InvalidArgument("a service account's role is tenant-admin, member or viewer (of its tenant)"));
  }
  if (*role == Role::kTenantAdmin && !c.principal->admin()) return Forbidden("create a tenant-admin service account");
  if (js_->service_accounts().count({*t, name})) {
    return Err(AlreadyExists("tenant " + tenant + " has a service account '" + name + "'"));
  }
  const ServiceAccount a{*t, name, *role, c.now, c.principal->name};
  if (Status s = Commit(ServiceAccountPut{a}); !s.ok()) return Err(s.error());
  Audit(c, "service_account.create", tenant + "/" + name);
  return JsonReply(201, {{"name", name}, {"tenant", tenant}, {"role", std::string(RoleName(a.role))},
                         {"created", Rfc3339(a.created)}, {"created_by", a.created_by}});
}

Result<const ServiceAccount*> ControlPlane::AdministeredAccount(const CallContext& c, const std::string& tenant,
                                                                const std::string& name) const {
  Result<TenantId> t = AdministeredTenant(c, tenant);
  if (!t.ok()) return t.error();
  const auto it = js_->service_accounts().find({*t, name});
  if (it == js_->service_accounts().end()) return NotFound("tenant " + tenant + " has no service account '" + name + "'");
  // A tenant admin holds no more than it could create.
  if (it->second.role == Role::kTenantAdmin && !c.principal->admin()) {
    return Error{ErrorCode::kPermissionDenied, "only cluster admins manage a tenant-admin service account"};
  }
  return &it->second;
}

Reply ControlPlane::DeleteServiceAccount(const CallContext& c, const std::string& tenant, const std::string& name) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<const ServiceAccount*> a = AdministeredAccount(c, tenant, name);
  if (!a.ok()) return Err(a.error());
  int revoked = 0;
  for (const auto& [id, tok] : js_->tokens().tokens()) {
    revoked += tok.principal.tenant == (*a)->tenant && tok.account == name && !tok.revoked;
  }
  if (Status s = Commit(ServiceAccountPut{**a, true}); !s.ok()) return Err(s.error());
  Audit(c, "service_account.delete", tenant + "/" + name);
  return JsonReply(200, {{"name", name}, {"tenant", tenant}, {"deleted", true}, {"revoked_tokens", revoked}});
}

Reply ControlPlane::CreateServiceAccountToken(const CallContext& c, const std::string& tenant, const std::string& name,
                                              const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<const ServiceAccount*> a = AdministeredAccount(c, tenant, name);
  if (!a.ok()) return Err(a.error());
  const ServiceAccount account = **a;
  Result<Json> parsed = ParseTokenRequest(body);
  if (!parsed.ok()) return Err(parsed.error());
  if (Status s = OnlyKeys(*parsed, {"expires_in_days"}, ""); !s.ok()) return Err(s.error());
  Result<Time> expires = RequestedExpiry(*parsed, c.now);
  if (!expires.ok()) return Err(expires.error());
  return IssueAndShow(c, Principal{name, account.role, account.tenant, ""}, name, *expires);
}

Reply ControlPlane::ListAudit(const CallContext& c, const std::map<std::string, std::string>& query) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->AdministersAny()) {
    return Forbidden("read the audit log");
  }
  Result<PageQuery> page = DecodePageQuery(query, "audit");
  if (!page.ok()) return Err(page.error());
  // The audit log is the store's (every "audit" record, kept past compaction), newest first; a
  // tenant admin reads its tenant's entries. An entry's id is its record's seq.
  const std::string tenant = c.principal->admin() ? "" : state().tenant(c.principal->tenant).name;
  Result<std::vector<std::pair<int64_t, std::string>>> lines = journal_->AuditLines(
      static_cast<int64_t>(page->before.value_or(0)), tenant, page->limit ? *page->limit + 1 : 0);
  if (!lines.ok()) return Err(lines.error());
  Json items = Json::array();
  uint64_t last = 0;
  bool more = false;
  for (const auto& [seq, line] : *lines) {
    if (page->limit && items.size() == static_cast<size_t>(*page->limit)) {
      more = true;
      break;
    }
    Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    j["id"] = std::to_string(seq);
    items.push_back(std::move(j));
    last = static_cast<uint64_t>(seq);
  }
  return JsonReply(200, {{"items", items}, {"next_cursor", more ? Json(EncodeCursor("audit", last)) : Json(nullptr)}});
}

}  // namespace gpupool
