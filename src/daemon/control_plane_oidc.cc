// ControlPlane::OidcPrincipal: from a verified OIDC token's user and groups to the tenants and
// roles its issuer's mappings grant (docs/design/auth.md).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "api/decode.h"
#include "daemon/control_plane.h"
#include "daemon/reply.h"
#include "policy/calendar/calendar.h"

namespace gpupool {

Result<Principal> ControlPlane::OidcPrincipal(const OidcIdentity& id) const {
  Principal p;
  p.name = id.username;
  p.issuer = id.issuer;
  p.subject = id.subject;
  p.expires = id.expires;
  p.token_id = "oidc:" + id.issuer + " " + id.subject;
  bool cluster_admin = false, metrics_reader = false;
  std::vector<Grant> grants;  // in the order of the mappings; the first is the default tenant
  std::vector<OidcMapping> mappings = id.config->mappings;  // the configuration's, then the API's
  for (const auto& [mid, put] : js_->oidc_mappings()) {
    if (put.issuer == id.issuer) mappings.push_back(put.mapping);
  }
  for (const OidcMapping& m : mappings) {
    const bool applies = m.user.empty() ? std::find(id.groups.begin(), id.groups.end(), m.group) != id.groups.end()
                                        : m.user == id.username;
    if (!applies) continue;
    if (m.role == "cluster-admin") cluster_admin = true;
    if (m.role == "metrics-reader") metrics_reader = true;
    if (m.tenant.empty()) continue;
    Result<TenantId> t = state().FindTenant(m.tenant);
    if (!t.ok() || js_->deleted().count(*t)) continue;
    const Role role = *ParseRole(m.role);
    auto g = std::find_if(grants.begin(), grants.end(), [&](const Grant& x) { return x.tenant == *t; });
    if (g == grants.end()) {
      grants.push_back({*t, role});
    } else if (role < g->role) {  // Role lists the widest first
      g->role = role;
    }
  }
  if (cluster_admin) {
    p.role = Role::kClusterAdmin;
    return p;
  }
  if (grants.empty()) {
    if (metrics_reader) {
      p.role = Role::kMetricsReader;
      return p;
    }
    std::string groups;
    for (const std::string& g : id.groups) groups += (groups.empty() ? "" : ", ") + g;
    return Error{ErrorCode::kPermissionDenied,
                 "no mapping of issuer " + id.issuer + " grants " + id.username + " a role (groups: " +
                     (groups.empty() ? "none" : groups) + "); a cluster admin adds one (POST /v1/oidc-mappings, or auth: oidc: mappings)"};
  }
  p.metrics_reader = metrics_reader;
  p.tenant = grants[0].tenant;
  p.role = grants[0].role;
  p.more.assign(grants.begin() + 1, grants.end());
  return p;
}

namespace {

using Json = nlohmann::json;
using namespace reply;

Json MappingView(const std::string& issuer, const OidcMapping& m) {
  Json j{{"issuer", issuer}, {"role", m.role}};
  j[m.group.empty() ? "user" : "group"] = m.group.empty() ? m.user : m.group;
  if (!m.tenant.empty()) j["tenant"] = m.tenant;
  return j;
}

std::string Describe(const OidcMappingPut& p) {
  return p.issuer + " " + (p.mapping.group.empty() ? "user " + p.mapping.user : "group " + p.mapping.group) + " -> " +
         (p.mapping.tenant.empty() ? "" : p.mapping.tenant + " ") + p.mapping.role;
}

}  // namespace

Reply ControlPlane::ListOidcMappings(const CallContext& c) const {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("manage OIDC mappings");
  Json items = Json::array();
  for (const auto& [id, put] : js_->oidc_mappings()) {
    Json j = MappingView(put.issuer, put.mapping);
    j["id"] = id;
    j["source"] = "api";
    j["created"] = Rfc3339(put.created);
    j["created_by"] = put.created_by;
    items.push_back(std::move(j));
  }
  return JsonReply(200, {{"items", items}, {"issuers", oidc_issuers_}});
}

Reply ControlPlane::CreateOidcMapping(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("manage OIDC mappings");
  Result<Json> parsed = ParseTokenRequest(body);
  if (!parsed.ok()) return Err(parsed.error());
  Json j = *parsed;
  if (!j.contains("issuer") || !j["issuer"].is_string()) return Err(InvalidArgument("'issuer' is a required string"));
  const std::string issuer = j["issuer"].get<std::string>();
  if (std::find(oidc_issuers_.begin(), oidc_issuers_.end(), issuer) == oidc_issuers_.end()) {
    std::string known;
    for (const std::string& i : oidc_issuers_) known += (known.empty() ? "" : ", ") + i;
    return Err(InvalidArgument("issuer '" + issuer + "' is not trusted here (auth: oidc: lists " +
                               (known.empty() ? std::string("none") : known) + ")"));
  }
  j.erase("issuer");
  Result<OidcMapping> m = ParseOidcMapping(j, "the mapping", "");
  if (!m.ok()) return Err(m.error());
  if (m->group.size() > 256 || m->user.size() > 256) return Err(InvalidArgument("a group or user is at most 256 bytes"));
  if (!m->tenant.empty()) {
    Result<TenantId> t = state().FindTenant(m->tenant);
    if (!t.ok() || js_->deleted().count(*t)) return Err(NotFound("unknown tenant '" + m->tenant + "'"));
  }
  for (const auto& [id, put] : js_->oidc_mappings()) {
    if (put.issuer == issuer && put.mapping.group == m->group && put.mapping.user == m->user &&
        put.mapping.tenant == m->tenant && put.mapping.role == m->role) {
      return Err(AlreadyExists("mapping " + id + " is the same"));
    }
  }
  std::string id;
  do id = RandomHex(6);
  while (js_->oidc_mappings().count(id));
  const OidcMappingPut put{id, issuer, *m, c.now, c.principal->name};
  if (Status s = Commit(put); !s.ok()) return Err(s.error());
  Audit(c, "oidc_mapping.create", Describe(put));
  Json out = MappingView(issuer, *m);
  out["id"] = id;
  out["source"] = "api";
  out["created"] = Rfc3339(c.now);
  out["created_by"] = put.created_by;
  return JsonReply(201, out);
}

Reply ControlPlane::DeleteOidcMapping(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("manage OIDC mappings");
  const auto it = js_->oidc_mappings().find(id);
  if (it == js_->oidc_mappings().end()) return Err(NotFound("no OIDC mapping '" + id + "' (those of the configuration change there)"));
  OidcMappingPut gone = it->second;
  gone.deleted = true;
  if (Status s = Commit(gone); !s.ok()) return Err(s.error());
  Audit(c, "oidc_mapping.delete", Describe(gone));  // `it` is gone with the mapping
  return JsonReply(200, {{"id", id}, {"deleted", true}});
}

}  // namespace gpupool
