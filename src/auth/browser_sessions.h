// Console sign-in: the daemon is an OpenID Connect client of the issuers it trusts and signs a
// browser in by the authorization code with PKCE (RFC 7636), then keeps the tokens itself and
// gives the browser only an opaque session cookie (HttpOnly, so no script reads it). A login
// waits for the provider's redirect as a PendingLogin, named by a `state` and bound to the
// browser that started it by a login cookie; a finished one is a BrowserSession whose ID token
// the daemon sends on the browser's behalf, with a CSRF token the page must echo on writes.
//
// This file keeps both tables and nothing else: bounded, expiring, keyed by a hash of the
// cookie (a lookup's time says nothing about another session's value). What talks to the
// provider (OidcCodeFlow) is given by whoever links a client (serve: the CLI's, cli/login.h).
// docs/design/auth.md, "The console".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "auth/oidc.h"
#include "core/result.h"

namespace gpupool {

// One login's secrets, as sent to the provider and checked on its return.
struct CodeRequest {
  std::string redirect_uri;
  std::string state, nonce, code_verifier;
};

struct CodeTokens {
  std::string id_token, refresh_token;
};

// The provider's side, by network (thread-safe, blocking, bounded by its own timeouts).
struct OidcCodeFlow {
  // The URL to send the browser to (the issuer's authorization_endpoint with the request).
  std::function<Result<std::string>(const OidcIssuer&, const CodeRequest&)> authorize_url;
  // The code for tokens; the ID token's nonce is the request's.
  std::function<Result<CodeTokens>(const OidcIssuer&, const CodeRequest&, const std::string& code)> exchange;
  // New tokens for a refresh token (kept when the provider does not rotate it).
  std::function<Result<CodeTokens>(const OidcIssuer&, const std::string& refresh_token)> refresh;
};

struct PendingLogin {
  size_t issuer = 0;  // index into the authenticator's issuers
  CodeRequest request;
  std::string return_to;  // the console's path to land on
};

// What a request with a session cookie acts with.
struct SessionView {
  size_t issuer = 0;
  std::string id_token, refresh_token, csrf;
  std::string username;  // for the console's header and the log
  int64_t expires = 0;   // the ID token's exp (Unix seconds)
  bool refresh_due = false;  // the ID token expires soon and no refresh runs: this caller refreshes
};

class BrowserSessions {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxPending = 1024;
  static constexpr size_t kMaxSessions = 10000;
  static constexpr auto kLoginTtl = std::chrono::minutes(10);
  static constexpr auto kMaxAge = std::chrono::hours(12);
  static constexpr int64_t kRefreshAheadS = 60;
  static constexpr auto kRefreshWait = std::chrono::seconds(10);

  // A new pending login with fresh state, nonce and verifier, and the value of its login cookie.
  // kResourceExhausted when kMaxPending unexpired logins wait (unauthenticated callers must
  // not grow this table without bound).
  Result<std::pair<std::string, PendingLogin>> Begin(size_t issuer, std::string redirect_uri, std::string return_to,
                                                     Clock::time_point now);
  // The pending login `state` names, once, if `login_cookie` is the one it was begun with.
  Result<PendingLogin> Take(const std::string& login_cookie, const std::string& state, Clock::time_point now);

  // Opens a session; returns its cookie value. The oldest session goes when the table is full.
  std::string Open(size_t issuer, CodeTokens tokens, std::string username, int64_t expires_unix, Clock::time_point now);
  // The session of `cookie`; nullopt when unknown, past kMaxAge, or its ID token expired
  // (`now_unix`) with no refresh token. At most one caller at a time sees refresh_due; while it
  // refreshes an expired token, the others wait for it (up to kRefreshWait).
  std::optional<SessionView> Find(const std::string& cookie, Clock::time_point now, int64_t now_unix);
  // After a refresh: new tokens, or (nullopt) the refresh failed and the session ends when its
  // token does.
  void Refreshed(const std::string& cookie, std::optional<CodeTokens> tokens, int64_t expires_unix);
  bool Close(const std::string& cookie);

  size_t sessions() const;
  size_t pending() const;

 private:
  struct Pending {
    PendingLogin login;
    std::string cookie_hash;
    Clock::time_point expires;
  };
  struct Session {
    SessionView view;
    Clock::time_point opened;
    bool refreshing = false;
    bool refresh_failed = false;
  };
  mutable std::mutex mu_;
  std::condition_variable refreshed_;
  std::map<std::string, Pending> pending_;   // by state
  std::map<std::string, Session> sessions_;  // by the cookie's hash
};

// The cookie header's value of `name` ("" when absent): "a=1; gpupool_session=xyz".
std::string CookieValue(const std::string& cookie_header, const std::string& name);
// Equal strings, in time that does not depend on where they differ.
bool SameSecret(const std::string& a, const std::string& b);

}  // namespace gpupool
