// The console's single sign-on (issue 18 item 4; docs/design/auth.md, "The console"): the
// routes that sign a browser in by the authorization code with PKCE and out again, and the
// session cookie a signed-in browser sends instead of a bearer token.
//
//   GET  /v1/auth/login?issuer=URL&return=/path  302 to the provider; sets the login cookie
//   GET  /v1/auth/callback?code&state            the provider's redirect: the code for tokens,
//                                                the ID token verified, the session cookie set,
//                                                302 back to the console
//   GET  /v1/auth/session                        {csrf_token, issuer, username, expires}; 401
//   POST /v1/auth/logout                         ends the session (needs X-CSRF-Token); 204
//
// Cookies: the session's is HttpOnly, SameSite=Strict, Path=/, and under TLS Secure with the
// __Host- prefix; the login's is SameSite=Lax (the provider's redirect is a cross-site
// navigation) on /v1/auth/callback only, for 10 minutes. A request that carries a bearer token
// is never read for cookies. A cookie-authenticated write must send the session's CSRF token in
// X-CSRF-Token (another origin cannot read it, nor send the header without a CORS preflight
// this daemon never grants), and an Origin header, if sent, must be this daemon's.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "auth/browser_sessions.h"
#include "auth/oidc.h"
#include "http/server.h"

namespace gpupool {

class ConsoleAuth {
 public:
  // `public_url`: this daemon's address as browsers use it (serve --advertise-url), for the
  // redirect URI; empty: the scheme and Host of the request that begins the login.
  ConsoleAuth(std::shared_ptr<OidcAuthenticator> oidc, OidcCodeFlow flow, bool tls, std::string public_url);

  // Answers the four routes above; false (nothing sent) for any other request.
  bool Route(const http::Request& req, const http::Respond& respond);

  // An API request (/v1/..., /metrics) with no Authorization header but this daemon's session cookie gets the session's
  // ID token as its bearer (refreshed first when it is about to expire). The refusal to send
  // when the session is unknown or over (401), or a write lacks its CSRF token or comes from
  // another origin (403); nullopt to go on.
  std::optional<http::Response> AttachSession(http::Request& req);

  const BrowserSessions& sessions() const { return sessions_; }

 private:
  http::Response Callback(const http::Request& req);
  // The session of `cookie`, its ID token refreshed first when due; nullopt: none or over.
  std::optional<SessionView> Use(const std::string& cookie);
  std::string RedirectUri(const http::Request& req) const;
  std::string SetCookie(const std::string& name, const std::string& value, const std::string& attributes) const;
  std::optional<http::Response> CrossOrigin(const http::Request& req) const;

  const std::shared_ptr<OidcAuthenticator> oidc_;
  const OidcCodeFlow flow_;
  const bool tls_;
  const std::string public_url_;
  const std::string session_cookie_, login_cookie_;
  BrowserSessions sessions_;
};

}  // namespace gpupool
