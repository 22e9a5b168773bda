#include "auth/oidc.h"

#include "api/config_json.h"

#include <algorithm>
#include <fstream>
#include <tuple>
#include <sstream>

namespace gpupool {
namespace {

using Json = nlohmann::json;

// A key set older than this is loaded again on the next token (issuers rotate on a schedule).
constexpr auto kMaxKeyAge = std::chrono::hours(1);

Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }

Result<std::string> Text(const Json& j, const char* key, const std::string& where, bool required) {
  if (!j.contains(key)) {
    if (required) return InvalidArgument(where + ": '" + key + "' is required");
    return std::string();
  }
  if (!j[key].is_string() || (required && j[key].get<std::string>().empty())) {
    return InvalidArgument(where + ": '" + key + "' must be a non-empty string");
  }
  return j[key].get<std::string>();
}

Result<OidcIssuer> ParseIssuer(const Json& j, const std::string& where, const std::string& key_path) {
  if (!j.is_object()) return InvalidArgument(where + " must be a map");
  GP_RETURN_IF_ERROR(OnlyKeys(j, {"issuer", "audience", "username_claim", "groups_claim", "jwks_file", "ca_file",
                                  "client_id", "algorithms", "scopes", "mappings"}, key_path));
  OidcIssuer out;
  for (auto [key, field, required] :
       {std::tuple{"issuer", &out.issuer, true}, std::tuple{"audience", &out.audience, true},
        std::tuple{"username_claim", &out.username_claim, false}, std::tuple{"groups_claim", &out.groups_claim, false},
        std::tuple{"jwks_file", &out.jwks_file, false}, std::tuple{"ca_file", &out.ca_file, false},
        std::tuple{"client_id", &out.client_id, false}}) {
    Result<std::string> v = Text(j, key, where, required);
    if (!v.ok()) return v.error();
    if (!v->empty()) *field = *v;
  }
  if (out.jwks_file.empty() && out.issuer.rfind("https://", 0) != 0) {
    return InvalidArgument(where + ": the issuer must be an https:// URL (or give a jwks_file)");
  }
  for (auto [key, list] : {std::pair{"algorithms", &out.algorithms}, std::pair{"scopes", &out.scopes}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_array() || j[key].empty()) return InvalidArgument(where + ": '" + key + "' must be a list");
    list->clear();
    for (const Json& a : j[key]) {
      if (!a.is_string() || a.get<std::string>().empty() ||
          a.get<std::string>().find_first_of(" \t\r\n") != std::string::npos) {
        return InvalidArgument(where + ": '" + key + "' must be a list of names");
      }
      list->push_back(a.get<std::string>());
    }
  }
  if (Status s = CheckAlgorithmList(out.algorithms); !s.ok()) return InvalidArgument(where + ": " + s.error().message);
  if (j.contains("mappings")) {
    if (!j["mappings"].is_array()) return InvalidArgument(where + ": 'mappings' must be a list");
    for (size_t i = 0; i < j["mappings"].size(); ++i) {
      Result<OidcMapping> m = ParseOidcMapping(j["mappings"][i], where + " mapping " + std::to_string(i + 1),
                                           key_path + ".mappings[" + std::to_string(i) + "]");
      if (!m.ok()) return m.error();
      out.mappings.push_back(*m);
    }
  }
  return out;
}

// The claim `name` as a list of strings: a string is a list of one, anything else none.
std::vector<std::string> Strings(const Json& claims, const std::string& name) {
  std::vector<std::string> out;
  if (!claims.contains(name)) return out;
  const Json& v = claims[name];
  if (v.is_string()) out.push_back(v.get<std::string>());
  if (v.is_array()) {
    for (const Json& g : v) {
      if (g.is_string()) out.push_back(g.get<std::string>());
    }
  }
  return out;
}

}  // namespace

Result<OidcMapping> ParseOidcMapping(const Json& m, const std::string& where, const std::string& key_path) {
  if (!m.is_object()) return InvalidArgument(where + " must be a map");
  GP_RETURN_IF_ERROR(OnlyKeys(m, {"group", "user", "tenant", "role"}, key_path));
  OidcMapping out;
  for (auto [key, field, required] : {std::tuple{"group", &out.group, false}, std::tuple{"user", &out.user, false},
                                      std::tuple{"tenant", &out.tenant, false}, std::tuple{"role", &out.role, true}}) {
    Result<std::string> v = Text(m, key, where, required);
    if (!v.ok()) return v.error();
    *field = *v;
  }
  if (out.group.empty() == out.user.empty()) return InvalidArgument(where + ": give one of 'group' and 'user'");
  const bool tenant_role = out.role == "tenant-admin" || out.role == "member" || out.role == "viewer";
  const bool global_role = out.role == "cluster-admin" || out.role == "metrics-reader";
  if (!tenant_role && !global_role) {
    return InvalidArgument(where + ": role '" + out.role +
                           "' cannot be mapped (cluster-admin, tenant-admin, member, viewer, metrics-reader)");
  }
  if (tenant_role && out.tenant.empty()) return InvalidArgument(where + ": role " + out.role + " needs a 'tenant'");
  if (global_role && !out.tenant.empty()) return InvalidArgument(where + ": role " + out.role + " has no tenant");
  return out;
}


Result<std::vector<OidcIssuer>> ParseAuthConfig(const Json& auth) {
  if (!auth.is_object()) return InvalidArgument("'auth' must be a map");
  GP_RETURN_IF_ERROR(OnlyKeys(auth, {"oidc"}, "auth"));
  std::vector<OidcIssuer> out;
  if (!auth.contains("oidc")) return out;
  if (!auth["oidc"].is_array()) return InvalidArgument("auth: 'oidc' must be a list of issuers");
  for (size_t i = 0; i < auth["oidc"].size(); ++i) {
    Result<OidcIssuer> iss = ParseIssuer(auth["oidc"][i], "auth: oidc issuer " + std::to_string(i + 1),
                                         "auth.oidc[" + std::to_string(i) + "]");
    if (!iss.ok()) return iss.error();
    for (const OidcIssuer& o : out) {
      if (o.issuer == iss->issuer) return InvalidArgument("auth: issuer " + o.issuer + " is listed twice");
    }
    out.push_back(std::move(iss).value());
  }
  return out;
}

bool LooksLikeJwt(std::string_view bearer) {
  return bearer.rfind("gp_", 0) != 0 && std::count(bearer.begin(), bearer.end(), '.') == 2;
}

OidcAuthenticator::OidcAuthenticator(std::vector<OidcIssuer> issuers, Fetch fetch,
                                     std::chrono::milliseconds refetch_interval)
    : issuers_(std::move(issuers)), fetch_(std::move(fetch)), refetch_interval_(refetch_interval),
      keys_(issuers_.size()) {}

std::vector<std::string> OidcAuthenticator::LoadAll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> errors;
  for (size_t i = 0; i < issuers_.size(); ++i) {
    if (Status s = Load(i); !s.ok()) errors.push_back(issuers_[i].issuer + ": " + s.error().message);
  }
  return errors;
}

int OidcAuthenticator::fetches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

Result<std::string> OidcAuthenticator::KeySetDocument(const OidcIssuer& iss) {
  if (!iss.jwks_file.empty()) {
    std::ifstream in(iss.jwks_file);
    if (!in) return Unavailable("cannot read jwks_file " + iss.jwks_file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string base = iss.issuer;
  while (!base.empty() && base.back() == '/') base.pop_back();
  Result<std::string> discovery = fetch_(base + "/.well-known/openid-configuration", iss.ca_file);
  if (!discovery.ok()) return Unavailable("discovery: " + discovery.error().message);
  const Json doc = Json::parse(*discovery, nullptr, false);
  if (!doc.is_object() || !doc.contains("jwks_uri") || !doc["jwks_uri"].is_string()) {
    return Unavailable("the discovery document names no jwks_uri");
  }
  if (!doc.contains("issuer") || doc["issuer"] != iss.issuer) {
    return Unavailable("the discovery document is for another issuer");  // OpenID Connect Discovery 4.3
  }
  const std::string uri = doc["jwks_uri"].get<std::string>();
  if (uri.rfind("https://", 0) != 0) return Unavailable("the jwks_uri is not https://");
  Result<std::string> jwks = fetch_(uri, iss.ca_file);
  if (!jwks.ok()) return Unavailable("jwks: " + jwks.error().message);
  return jwks;
}

Status OidcAuthenticator::Load(size_t i) {
  Keys& k = keys_[i];
  k.tried_at = Clock::now();
  ++fetches_;
  Result<std::string> doc = KeySetDocument(issuers_[i]);
  Result<KeySet> set = doc.ok() ? ParseJwks(*doc) : Result<KeySet>(doc.error());
  if (!set.ok()) {
    k.last_error = set.error().message;
    return Unavailable(k.last_error);
  }
  k.set = std::make_shared<const KeySet>(std::move(set).value());
  k.loaded_at = k.tried_at;
  k.last_error.clear();
  return Ok();
}

Result<OidcIdentity> OidcAuthenticator::Verify(std::string_view token, Time now) {
  Result<JwtParts> parts = SplitJwt(token);
  if (!parts.ok()) return parts.error();
  const Json& claims = parts->claims;
  const std::string iss = claims.contains("iss") && claims["iss"].is_string() ? claims["iss"].get<std::string>() : "";
  size_t i = 0;
  while (i < issuers_.size() && issuers_[i].issuer != iss) ++i;
  if (i == issuers_.size()) return Error{ErrorCode::kUnauthenticated, "the token's issuer is not trusted"};
  const OidcIssuer& cfg = issuers_[i];
  std::shared_ptr<const KeySet> keys;  // verified outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    Keys& k = keys_[i];
    const auto t = Clock::now();
    const bool stale = !k.loaded_at || t - *k.loaded_at > kMaxKeyAge || NamesUnknownKey(*parts, *k.set);
    if (stale && (!k.tried_at || t - *k.tried_at >= refetch_interval_)) (void)Load(i);
    if (!k.loaded_at) return Unavailable("the keys of issuer " + cfg.issuer + " cannot be loaded: " + k.last_error);
    keys = k.set;
  }
  Result<Json> verified = VerifyJwt(*parts, *keys, {cfg.issuer, cfg.audience, cfg.algorithms, Duration::Seconds(60)}, now);
  if (!verified.ok()) return verified.error();
  OidcIdentity id;
  id.issuer = cfg.issuer;
  id.subject = (*verified)["sub"].get<std::string>();
  const std::vector<std::string> names = Strings(*verified, cfg.username_claim);
  if (names.size() != 1 || names[0].empty()) {
    return Error{ErrorCode::kUnauthenticated, "the token has no '" + cfg.username_claim + "' claim to name its user"};
  }
  id.username = names[0];
  id.groups = Strings(*verified, cfg.groups_claim);
  id.expires = Time::FromMillis(static_cast<int64_t>((*verified)["exp"].get<double>() * 1000));
  id.config = &cfg;
  return id;
}

}  // namespace gpupool
