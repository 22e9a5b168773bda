// `gpupool login`'s side of OpenID Connect: the provider's endpoints (discovery), the two ways a
// terminal gets tokens (the OAuth 2.0 device authorization grant, RFC 8628; the authorization
// code with PKCE, RFC 7636, on a loopback redirect, RFC 8252), refresh and revocation, and the
// cache that keeps the tokens between commands (docs/design/auth.md, "Signing in").
//
// The ID token is what the CLI sends as its bearer: its `aud` is the client id the daemon
// publishes, and the daemon verifies it (auth/oidc.h). The CLI verifies nothing of its signature;
// it reads `exp` to know when to refresh and checks `nonce` against the one it sent.
//
// Errors: kUnavailable for a provider that cannot be reached; kUnauthenticated for a refusal
// (access_denied, an expired code or refresh token); kInvalidArgument for a provider document
// or reply that is not what the standards say. Nothing here throws.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace gpupool::cli {

// What discovery (/.well-known/openid-configuration) says, and the trust to reach it with.
struct OidcEndpoints {
  std::string issuer;
  std::string authorization_endpoint, token_endpoint;
  std::string device_authorization_endpoint;  // "" when the provider has no device grant
  std::string revocation_endpoint;            // "" when it has no revocation
  std::string ca_file;                        // PEM trusted besides the system's ("" for none)
};
Result<OidcEndpoints> Discover(const std::string& issuer, const std::string& ca_file);

// The public client gpupool signs in as, at one provider.
struct LoginClient {
  OidcEndpoints endpoints;
  std::string client_id;
  std::vector<std::string> scopes;
};

struct Tokens {
  std::string id_token, refresh_token;
  int64_t expires = 0;  // the ID token's exp (Unix seconds)
  std::string username;  // email, preferred_username or sub, for messages
};

// Shows the user what to do: the URL to open and, for the device grant, the code to enter.
// Returns nothing; `$BROWSER` (when set) is run with `url` besides.
using Prompt = std::function<void(const std::string& url, const std::string& user_code)>;

// RFC 8628: asks for a device code, shows it, and polls the token endpoint (at the interval the
// provider asks, slower on slow_down) until the user approves, refuses, the code expires or
// `timeout_s` passes.
Result<Tokens> DeviceLogin(const LoginClient& client, const Prompt& prompt, int timeout_s);

// RFC 7636 + RFC 8252: listens on 127.0.0.1 (a port of the system's choice), shows the
// authorization URL, and waits for the browser to come back to /callback with the code and the
// same state; requests to other paths or with another state are answered 400 and ignored.
Result<Tokens> BrowserLogin(const LoginClient& client, const Prompt& prompt, int timeout_s);

// The two halves of BrowserLogin, also the daemon's for the console (serve_cmd.cc): the URL
// that sends a browser to the provider (PKCE S256, prompt=consent when offline_access is
// asked), and the code for tokens at the token endpoint (the ID token's nonce checked).
std::string AuthorizationUrl(const LoginClient& client, const std::string& redirect_uri, const std::string& state,
                             const std::string& nonce, const std::string& verifier);
Result<Tokens> ExchangeCode(const LoginClient& client, const std::string& code, const std::string& redirect_uri,
                            const std::string& verifier, const std::string& nonce);

// A new ID token for `refresh_token`. The reply's refresh token replaces the old one when the
// provider rotates them (most do for public clients).
Result<Tokens> Refresh(const LoginClient& client, const std::string& refresh_token);

// RFC 7009, best effort: OK, or why the provider did not take it.
Status Revoke(const LoginClient& client, const std::string& refresh_token);

// Exposed for tests.
std::string PkceChallenge(const std::string& verifier);  // BASE64URL(SHA256(verifier))
std::string RandomToken(size_t bytes);                    // BASE64URL of `bytes` random bytes
std::string FormEncode(const std::vector<std::pair<std::string, std::string>>& fields);
// "/callback?code=x&state=y" split into the path and its decoded parameters.
Result<std::pair<std::string, std::map<std::string, std::string>>> SplitTarget(const std::string& target);
// The payload of a JWT, not verified; kInvalidArgument when it is not a JWT.
Result<nlohmann::json> UnverifiedClaims(const std::string& jwt);
// What a token endpoint's JSON reply gives (id_token required).
Result<Tokens> TokensFromReply(const nlohmann::json& reply, const std::string& nonce);

// The cache: $GPUPOOL_CREDENTIALS, else ~/.config/gpupool/credentials.json, a JSON document
// {"logins": {SERVER_URL: {issuer, client_id, scopes, token_endpoint, revocation_endpoint,
// ca_file, id_token, refresh_token, expires, username}}}. The directory is made 0700 and the
// file written 0600 whole (a temporary file renamed over it); a file others may read is refused.
struct StoredLogin {
  LoginClient client;
  Tokens tokens;
};
using GetEnvFn = std::function<const char*(const char*)>;
std::string CredentialsPath(const GetEnvFn& getenv);  // "" without $HOME
Result<std::map<std::string, StoredLogin>> ReadCredentials(const std::string& path);  // absent: empty
Status WriteCredentials(const std::string& path, const std::map<std::string, StoredLogin>& logins);

// The ID token for `server_url` at `now` (Unix seconds): kNotFound with no login for it. A token
// that expires within a minute is refreshed first, under an exclusive lock on PATH.lock so that
// two commands never spend the same rotating refresh token; the file is read again under the
// lock, and rewritten with what the refresh gave.
Result<std::string> CachedToken(const std::string& path, const std::string& server_url, int64_t now);

// Runs $BROWSER with `url` (not waited for), when it is set. False when it is not.
bool OpenBrowser(const std::string& url);

}  // namespace gpupool::cli
