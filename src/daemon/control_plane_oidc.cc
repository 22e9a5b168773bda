// ControlPlane::OidcPrincipal: from a verified OIDC token's user and groups to the tenants and
// roles its issuer's mappings grant (docs/design/auth.md).
#include <algorithm>

#include "daemon/control_plane.h"

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
  for (const OidcMapping& m : id.config->mappings) {
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
                     (groups.empty() ? "none" : groups) + "); a cluster admin adds one under auth: oidc: mappings"};
  }
  p.metrics_reader = metrics_reader;
  p.tenant = grants[0].tenant;
  p.role = grants[0].role;
  p.more.assign(grants.begin() + 1, grants.end());
  return p;
}

}  // namespace gpupool
