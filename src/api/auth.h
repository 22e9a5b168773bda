// Principals and API tokens. A token is "gp_<id>_<secret>"; only its SHA-256 is kept (in memory
// and in the journal), so a leaked journal leaks no usable token. Roles, widest first:
// cluster-admin (everything), tenant-admin (its tenant: jobs, tokens, usage), member (its
// tenant's jobs), viewer (reads its tenant). Apart from them, node-agent: the credential of one
// node's agent, which may register and heartbeat the node named like the token, and nothing
// else (no reads either).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ids.h"
#include "core/result.h"
#include "core/time.h"

namespace gpupool {

// kMetricsReader: reads /metrics and nothing else (serve --metrics-require-token), no tenant.
enum class Role { kClusterAdmin, kTenantAdmin, kMember, kViewer, kNodeAgent, kMetricsReader };
std::string_view RoleName(Role r);
Result<Role> ParseRole(std::string_view s);

// One tenant's role for a caller who has several (an OIDC user in several mapped groups).
struct Grant {
  TenantId tenant;
  Role role = Role::kViewer;
};

struct Principal {
  std::string name;
  Role role = Role::kViewer;
  TenantId tenant;  // invalid for cluster admins
  std::string token_id;  // an API token's id; for an OIDC caller "oidc:" + issuer + " " + subject
  // Further tenants, each with the widest role the caller's mappings give it there; `tenant`
  // and `role` are the first (the default tenant). Empty for API tokens.
  std::vector<Grant> more;
  std::string issuer, subject;  // an OIDC caller's `iss` and `sub`; empty for API tokens
  Time expires;                 // when the credential stops working; Time() (0): never
  // An OIDC caller whose mappings give it metrics-reader as well as a tenant (the union of its
  // mappings); see ReadsMetrics.
  bool metrics_reader = false;

  bool admin() const { return role == Role::kClusterAdmin; }
  // May read /metrics when it needs a token: cluster admins and metrics readers.
  bool ReadsMetrics() const { return admin() || role == Role::kMetricsReader || metrics_reader; }
  // The caller's role in tenant `t`, if it has one there (cluster admins: everywhere).
  std::optional<Role> RoleIn(TenantId t) const {
    if (admin() || tenant == t) return role;
    for (const Grant& g : more) {
      if (g.tenant == t) return g.role;
    }
    return std::nullopt;
  }
  // May read (and, for writers, change) objects of tenant `t`.
  bool Sees(TenantId t) const { return RoleIn(t).has_value(); }
  // May change objects of tenant `t` (submit, cancel, reserve).
  bool WritesIn(TenantId t) const {
    const std::optional<Role> r = RoleIn(t);
    return r && (*r == Role::kClusterAdmin || *r == Role::kTenantAdmin || *r == Role::kMember);
  }
  // Administers tenant `t` (its tokens, service accounts and members).
  bool AdministersTenant(TenantId t) const {
    const std::optional<Role> r = RoleIn(t);
    return r && (*r == Role::kClusterAdmin || *r == Role::kTenantAdmin);
  }
  // Writes in some tenant: what a writer's route needs before the handler checks the tenant.
  bool Writes() const {
    return AnyTenant([this](TenantId t) { return WritesIn(t); });
  }
  // Administers some tenant.
  bool AdministersAny() const {
    return AnyTenant([this](TenantId t) { return AdministersTenant(t); });
  }
  // Whether `f` holds for the default tenant or one of `more`.
  template <class F>
  bool AnyTenant(F f) const {
    if (f(tenant)) return true;
    for (const Grant& g : more) {
      if (f(g.tenant)) return true;
    }
    return false;
  }
  // May speak for node `node` as its agent: cluster admins for any node, a node-agent token
  // for the node of its own name.
  bool ActsForNode(std::string_view node) const {
    return admin() || (role == Role::kNodeAgent && name == node);
  }
};

struct TokenRecord {
  std::string id;
  std::string sha256;  // hex of the whole token
  Principal principal;
  Time created;
  Time expires;  // from then on it authenticates nothing; Time() (0): never
  bool revoked = false;
  std::string account;  // the service account of principal.tenant it belongs to; "" for none
  Time last_used;       // as journaled (an hour apart at most: ControlPlane); Time(): never used
};

// A tenant's non-human caller (a CI pipeline, a notebook service): a name and a role in one
// tenant that outlives the tokens issued for it; deleting it revokes them all. Tokens of an
// account carry its name and role; rotating one keeps the account.
struct ServiceAccount {
  TenantId tenant;
  std::string name;
  Role role = Role::kMember;
  Time created;
  std::string created_by;
};

std::string Sha256Hex(const std::string& data);
// 32 random bytes as hex, from the OS (the daemon's edge, not the core).
std::string RandomHex(size_t bytes);

class TokenStore {
 public:
  // Makes a token for `p` (id chosen here); returns the record to journal and the secret to
  // hand out once.
  std::pair<TokenRecord, std::string> Create(Principal p, Time now) const;
  // From Create or from the journal; a record of a known id replaces it (a new expiry, a later
  // last use), except that a revoked token stays revoked.
  void Add(const TokenRecord& r);
  Status Revoke(const std::string& id);
  // The principal of a token that is known, not revoked and not expired at `now`.
  const Principal* Authenticate(const std::string& token, Time now) const;
  const std::map<std::string, TokenRecord>& tokens() const { return by_id_; }

 private:
  std::map<std::string, TokenRecord> by_id_;
  std::map<std::string, std::string> id_by_hash_;
};

}  // namespace gpupool
