// ControlPlane's token and audit-log routes.
#include "daemon/control_plane.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

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

}  // namespace

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
  int64_t days = kTokenDefaultDays;
  if (j.contains("expires_in_days")) {
    if (!j["expires_in_days"].is_number_integer() || j["expires_in_days"].get<int64_t>() < 1 ||
        j["expires_in_days"].get<int64_t>() > token_max_days_) {
      return Err(InvalidArgument("'expires_in_days' must be a whole number of days from 1 to " +
                                 std::to_string(token_max_days_)));
    }
    days = j["expires_in_days"].get<int64_t>();
  }
  const Time expires = c.now + Duration::Hours(24 * std::min(days, token_max_days_));
  Result<std::string> secret = IssueToken(p, c.now, expires);
  if (!secret.ok()) return Err(secret.error());
  Audit(c, "token.create", p.name);
  const std::string id = secret->substr(3, secret->find('_', 3) - 3);  // gp_<id>_<secret>
  return JsonReply(201, {{"id", id}, {"token", *secret}, {"name", p.name}, {"role", std::string(RoleName(p.role))},
                         {"expires", Rfc3339(expires)}});
}

Reply ControlPlane::ListTokens(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  for (const auto& [id, t] : js_->tokens().tokens()) {
    const bool mine = c.principal->admin() ||
                      (t.principal.tenant.valid() && c.principal->AdministersTenant(t.principal.tenant));
    if (!mine) continue;
    items.push_back({{"id", id},
                     {"name", t.principal.name},
                     {"role", std::string(RoleName(t.principal.role))},
                     {"tenant", t.principal.tenant.valid() ? state().tenant(t.principal.tenant).name : ""},
                     {"created", Rfc3339(t.created)},
                     {"expires", t.expires == Time() ? Json(nullptr) : Json(Rfc3339(t.expires))},
                     {"revoked", t.revoked}});
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
