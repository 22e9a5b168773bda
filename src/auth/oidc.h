// OpenID Connect bearer tokens: which issuers are trusted (`auth: {oidc: [...]}` in the daemon's
// configuration), their keys (a static `jwks_file`, or discovery and the JWKS over HTTPS,
// cached and refetched when a token names a key the cache lacks, at most once per
// `refetch_interval`), and what a verified token says about its caller. Mapping groups to
// tenants and roles needs the state and is the daemon's (ControlPlane::OidcPrincipal).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "auth/jwt.h"
#include "core/result.h"
#include "core/time.h"

namespace gpupool {

// One mapping: members of `group` get `role` in `tenant` (empty for cluster-admin and
// metrics-reader). `user` instead of `group` maps one username.
struct OidcMapping {
  std::string group, user;
  std::string tenant;
  std::string role;
};

struct OidcIssuer {
  std::string issuer;    // exactly the tokens' `iss`; discovery at issuer + /.well-known/openid-configuration
  std::string audience;  // one of the tokens' `aud`
  std::string username_claim = "sub";
  std::string groups_claim = "groups";
  std::string jwks_file;  // a static key set instead of discovery
  std::string ca_file;    // trust for discovery over HTTPS; empty: the system's store
  std::string client_id;  // the public client `gpupool login` and the console use (GET /v1/auth)
  std::vector<std::string> algorithms = {"RS256", "RS384", "ES256"};
  // What `gpupool login` and the console ask the provider for (GET /v1/auth). offline_access
  // gets a refresh token; add the scope that puts groups in the ID token where the provider
  // needs one (Okta: groups).
  std::vector<std::string> scopes = {"openid", "profile", "email", "offline_access"};
  std::vector<OidcMapping> mappings;
};

// One mapping ({group | user, tenant, role}) of the configuration or of POST /v1/oidc-mappings;
// `where` starts its errors, `key_path` names an unknown key.
Result<OidcMapping> ParseOidcMapping(const nlohmann::json& m, const std::string& where, const std::string& key_path);

// `auth:` of the configuration: {oidc: [issuer, ...]}.
Result<std::vector<OidcIssuer>> ParseAuthConfig(const nlohmann::json& auth);

// A verified token's caller.
struct OidcIdentity {
  std::string issuer, subject, username;
  std::vector<std::string> groups;
  Time expires;
  const OidcIssuer* config = nullptr;  // the issuer's entry (owned by the authenticator)
};

// Tells a JWT from a gpupool API token ("gp_<id>_<secret>") without verifying it.
bool LooksLikeJwt(std::string_view bearer);

class OidcAuthenticator {
 public:
  // GET of an HTTPS URL with the issuer's trust (`ca_file`): the body of a 200, else an error.
  using Fetch = std::function<Result<std::string>(const std::string& url, const std::string& ca_file)>;
  using Clock = std::chrono::steady_clock;

  OidcAuthenticator(std::vector<OidcIssuer> issuers, Fetch fetch,
                    std::chrono::milliseconds refetch_interval = std::chrono::seconds(10));

  // Loads every issuer's keys now (the daemon's start; failures are reported, not fatal:
  // the issuer's tokens get kUnavailable until its keys load).
  std::vector<std::string> LoadAll();

  // The caller of `token` at `now`: kUnauthenticated for a token no trusted issuer signed or
  // whose claims fail; kUnavailable while the issuer's keys cannot be had. Thread-safe; fetches
  // (blocking this thread, bounded by Fetch's timeouts) only to load keys that are missing.
  Result<OidcIdentity> Verify(std::string_view token, Time now);

  const std::vector<OidcIssuer>& issuers() const { return issuers_; }
  int fetches() const;  // key-set loads so far (tests and /metrics)

 private:
  struct Keys {
    std::shared_ptr<const KeySet> set = std::make_shared<const KeySet>();  // swapped whole on a load
    std::optional<Clock::time_point> loaded_at, tried_at;
    std::string last_error;
  };
  Status Load(size_t i);  // REQUIRES: mu_ held
  Result<std::string> KeySetDocument(const OidcIssuer& iss);

  const std::vector<OidcIssuer> issuers_;
  const Fetch fetch_;
  const std::chrono::milliseconds refetch_interval_;
  mutable std::mutex mu_;
  std::vector<Keys> keys_;
  int fetches_ = 0;
};

}  // namespace gpupool
