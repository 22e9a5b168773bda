#include "api/auth.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdio>

namespace gpupool {

std::string_view RoleName(Role r) {
  switch (r) {
    case Role::kClusterAdmin: return "cluster-admin";
    case Role::kTenantAdmin: return "tenant-admin";
    case Role::kMember: return "member";
    case Role::kViewer: return "viewer";
    case Role::kNodeAgent: return "node-agent";
    case Role::kMetricsReader: return "metrics-reader";
  }
  return "?";
}

Result<Role> ParseRole(std::string_view s) {
  for (Role r : {Role::kClusterAdmin, Role::kTenantAdmin, Role::kMember, Role::kViewer, Role::kNodeAgent,
                 Role::kMetricsReader}) {
    if (RoleName(r) == s) return r;
  }
  return InvalidArgument("unknown role '" + std::string(s) +
                         "' (cluster-admin, tenant-admin, member, viewer, node-agent)");
}

std::string Sha256Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::string out;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    out += buf;
  }
  return out;
}

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  GP_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) == 1)
      << "no randomness from the OS";
  std::string out;
  char buf[3];
  for (unsigned char c : raw) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

std::pair<TokenRecord, std::string> TokenStore::Create(Principal p, Time now) const {
  TokenRecord r;
  do {
    r.id = RandomHex(6);
  } while (by_id_.count(r.id));
  const std::string secret = "gp_" + r.id + "_" + RandomHex(24);
  r.sha256 = Sha256Hex(secret);
  p.token_id = r.id;
  r.principal = std::move(p);
  r.created = now;
  return {r, secret};
}

void TokenStore::Add(const TokenRecord& r) {
  bool revoked = r.revoked;
  if (auto old = by_id_.find(r.id); old != by_id_.end()) {
    revoked = revoked || old->second.revoked;
    id_by_hash_.erase(old->second.sha256);
  }
  TokenRecord& t = by_id_[r.id] = r;
  t.revoked = revoked;
  t.principal.expires = r.expires;
  if (!revoked) id_by_hash_[t.sha256] = t.id;
}

Status TokenStore::Revoke(const std::string& id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return NotFound("no token " + id);
  it->second.revoked = true;
  id_by_hash_.erase(it->second.sha256);
  return Ok();
}

const Principal* TokenStore::Authenticate(const std::string& token, Time now) const {
  auto it = id_by_hash_.find(Sha256Hex(token));
  if (it == id_by_hash_.end()) return nullptr;
  const TokenRecord& r = by_id_.at(it->second);
  if (r.expires != Time() && now >= r.expires) return nullptr;
  return &r.principal;
}

}  // namespace gpupool
