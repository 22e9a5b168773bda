#include "daemon/console_auth.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "api/decode.h"
#include "api/url.h"
#include "daemon/log.h"
#include "policy/calendar/calendar.h"

namespace gpupool {
namespace {

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Time NowTime() { return Time::FromSeconds(NowUnix()); }

http::Response JsonReply(int status, std::string body) { return {status, std::move(body), "application/json", {}, false}; }

http::Response Refusal(int status, ErrorCode code, const std::string& message) {
  return JsonReply(status, ErrorBody({code, message}));
}

// 302 to `location`, with these Set-Cookie lines; never cached.
http::Response Redirect(const std::string& location, std::vector<std::string> cookies) {
  http::Response r{302, "", "text/plain", {{"Location", location}, {"Cache-Control", "no-store"}}, false};
  for (std::string& c : cookies) r.headers.emplace_back("Set-Cookie", std::move(c));
  return r;
}

// A Host header fit to build a URL from: a name or address and a port, nothing else.
bool PlainHost(const std::string& host) {
  if (host.empty() || host.size() > 255) return false;
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                    c == ':' || c == '[' || c == ']';
    if (!ok) return false;
  }
  return true;
}

// Where the console may send the browser after signing in: one of its own paths.
std::string SafeReturn(const std::string& r) {
  if (r.empty() || r[0] != '/' || (r.size() > 1 && (r[1] == '/' || r[1] == '\\'))) return "/";
  for (char c : r) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) return "/";
  }
  return r;
}

// Back to the console with the reason the sign-in failed, in the fragment (never sent to a
// server, never logged).
http::Response Failed(const std::string& message, std::vector<std::string> cookies) {
  return Redirect("/#login-error=" + UrlEncode(message), std::move(cookies));
}

}  // namespace

ConsoleAuth::ConsoleAuth(std::shared_ptr<OidcAuthenticator> oidc, OidcCodeFlow flow, bool tls, std::string public_url)
    : oidc_(std::move(oidc)),
      flow_(std::move(flow)),
      tls_(tls),
      public_url_(std::move(public_url)),
      session_cookie_(tls ? "__Host-gpupool_session" : "gpupool_session"),
      login_cookie_(tls ? "__Secure-gpupool_login" : "gpupool_login") {}

std::string ConsoleAuth::SetCookie(const std::string& name, const std::string& value,
                                   const std::string& attributes) const {
  return name + "=" + value + "; " + attributes + "; HttpOnly" + (tls_ ? "; Secure" : "");
}

std::string ConsoleAuth::RedirectUri(const http::Request& req) const {
  if (!public_url_.empty()) return public_url_ + "/v1/auth/callback";
  const std::string host = req.Header("Host");
  return PlainHost(host) ? std::string(tls_ ? "https://" : "http://") + host + "/v1/auth/callback" : "";
}

std::optional<http::Response> ConsoleAuth::CrossOrigin(const http::Request& req) const {
  const std::string origin = req.Header("Origin");
  if (origin.empty()) return std::nullopt;  // not a browser's cross-origin request
  const std::string own = std::string(tls_ ? "https://" : "http://") + req.Header("Host");
  if (origin == own || (!public_url_.empty() && origin == public_url_)) return std::nullopt;
  return Refusal(403, ErrorCode::kPermissionDenied, "a console session's requests must come from the console's own origin");
}

bool ConsoleAuth::Route(const http::Request& req, const http::Respond& respond) {
  if (req.path.rfind("/v1/auth/", 0) != 0) return false;
  const std::string what = req.path.substr(9);
  if (req.method == "GET" && what == "login") {
    const std::string want = req.Query("issuer");
    size_t i = 0;
    const auto& issuers = oidc_->issuers();
    while (i < issuers.size() && (issuers[i].issuer != want || issuers[i].client_id.empty())) ++i;
    if (i == issuers.size()) {
      respond(Refusal(400, ErrorCode::kInvalidArgument,
                      "issuer '" + want + "' is not one the console signs in with (GET /v1/auth lists them)"));
      return true;
    }
    const std::string redirect = RedirectUri(req);
    if (redirect.empty()) {
      respond(Refusal(400, ErrorCode::kInvalidArgument, "the request's Host header cannot form a redirect URI"));
      return true;
    }
    auto begun = sessions_.Begin(i, redirect, SafeReturn(req.Query("return")), BrowserSessions::Clock::now());
    if (!begun.ok()) {
      http::Response r = Refusal(503, begun.error().code, begun.error().message);
      r.headers.emplace_back("Retry-After", "60");
      respond(std::move(r));
      return true;
    }
    Result<std::string> url = flow_.authorize_url(issuers[i], begun->second.request);
    if (!url.ok()) {
      respond(Refusal(503, ErrorCode::kUnavailable, "the provider cannot be reached: " + url.error().message));
      return true;
    }
    respond(Redirect(*url, {SetCookie(login_cookie_, begun->first, "Path=/v1/auth/callback; Max-Age=600; SameSite=Lax")}));
    return true;
  }
  if (req.method == "GET" && what == "callback") {
    respond(Callback(req));
    return true;
  }
  if (req.method == "GET" && what == "session") {
    std::optional<SessionView> s = Use(CookieValue(req.Header("Cookie"), session_cookie_));
    if (!s) {
      respond(Refusal(401, ErrorCode::kUnauthenticated, "no console session; sign in"));
      return true;
    }
    const nlohmann::json body = {{"csrf_token", s->csrf},
                                 {"issuer", oidc_->issuers()[s->issuer].issuer},
                                 {"username", s->username},
                                 {"expires", Rfc3339(Time::FromSeconds(s->expires))}};
    http::Response r = JsonReply(200, body.dump());
    r.headers.emplace_back("Cache-Control", "no-store");
    respond(std::move(r));
    return true;
  }
  if (req.method == "POST" && what == "logout") {
    const std::string cookie = CookieValue(req.Header("Cookie"), session_cookie_);
    std::optional<SessionView> s = sessions_.Find(cookie, BrowserSessions::Clock::now(), NowUnix());
    if (s && !SameSecret(req.Header("X-CSRF-Token"), s->csrf)) {
      respond(Refusal(403, ErrorCode::kPermissionDenied, "signing out needs the session's X-CSRF-Token"));
      return true;
    }
    if (s) sessions_.Close(cookie);
    http::Response r{204, "", "text/plain", {{"Cache-Control", "no-store"}}, false};
    r.headers.emplace_back("Set-Cookie", SetCookie(session_cookie_, "", "Path=/; Max-Age=0; SameSite=Strict"));
    respond(std::move(r));
    return true;
  }
  return false;
}

http::Response ConsoleAuth::Callback(const http::Request& req) {
  const std::vector<std::string> clear_login = {SetCookie(login_cookie_, "", "Path=/v1/auth/callback; Max-Age=0; SameSite=Lax")};
  Result<PendingLogin> login =
      sessions_.Take(CookieValue(req.Header("Cookie"), login_cookie_), req.Query("state"), BrowserSessions::Clock::now());
  if (!login.ok()) return Failed(login.error().message, clear_login);
  if (!req.Query("error").empty()) {
    const std::string why = req.Query("error_description");
    return Failed("the provider refused: " + req.Query("error") + (why.empty() ? "" : ": " + why), clear_login);
  }
  if (req.Query("code").empty()) return Failed("the provider's redirect carries no code", clear_login);
  const OidcIssuer& issuer = oidc_->issuers()[login->issuer];
  Result<CodeTokens> tokens = flow_.exchange(issuer, login->request, req.Query("code"));
  if (!tokens.ok()) return Failed("the provider did not give tokens: " + tokens.error().message, clear_login);
  Result<OidcIdentity> id = oidc_->Verify(tokens->id_token, NowTime());
  if (!id.ok()) return Failed("the provider's ID token was refused: " + id.error().message, clear_login);
  const std::string cookie = sessions_.Open(login->issuer, std::move(tokens).value(), id->username,
                                            id->expires.millis() / 1000, BrowserSessions::Clock::now());
  Log("info", "console session opened", {{"issuer", id->issuer}, {"subject", id->subject}, {"user", id->username}});
  std::vector<std::string> cookies = clear_login;
  cookies.push_back(SetCookie(session_cookie_, cookie, "Path=/; SameSite=Strict"));
  return Redirect(login->return_to, std::move(cookies));
}

std::optional<http::Response> ConsoleAuth::AttachSession(http::Request& req) {
  // Only the API's routes: the console's own files and the public documents load without one
  // (a cookie that outlived its session must not keep the sign-in page from loading).
  const bool api = (req.path.rfind("/v1/", 0) == 0 && req.path != "/v1/auth" && req.path != "/v1/openapi.json") ||
                   req.path == "/metrics";
  if (!api || !req.Header("Authorization").empty()) return std::nullopt;
  const std::string cookie = CookieValue(req.Header("Cookie"), session_cookie_);
  if (cookie.empty()) return std::nullopt;
  std::optional<SessionView> s = Use(cookie);
  if (!s) return Refusal(401, ErrorCode::kUnauthenticated, "your console session has ended; sign in again");
  if (req.method != "GET" && req.method != "HEAD") {
    if (std::optional<http::Response> r = CrossOrigin(req)) return r;
    if (!SameSecret(req.Header("X-CSRF-Token"), s->csrf)) {
      return Refusal(403, ErrorCode::kPermissionDenied, "a console session's write needs its X-CSRF-Token header");
    }
  }
  req.headers.emplace_back("Authorization", "Bearer " + s->id_token);
  return std::nullopt;
}

std::optional<SessionView> ConsoleAuth::Use(const std::string& cookie) {
  std::optional<SessionView> s = sessions_.Find(cookie, BrowserSessions::Clock::now(), NowUnix());
  if (!s || !s->refresh_due) return s;
  const OidcIssuer& issuer = oidc_->issuers()[s->issuer];
  Result<CodeTokens> fresh = flow_.refresh(issuer, s->refresh_token);
  Result<OidcIdentity> id = fresh.ok() ? oidc_->Verify(fresh->id_token, NowTime()) : Result<OidcIdentity>(fresh.error());
  if (!id.ok()) {
    Log("warn", "a console session's refresh failed; it ends when its ID token expires", {{"error", id.error().message}});
    sessions_.Refreshed(cookie, std::nullopt, 0);
    if (s->expires <= NowUnix()) return std::nullopt;
    return s;
  }
  s->id_token = fresh->id_token;
  s->expires = id->expires.millis() / 1000;
  sessions_.Refreshed(cookie, std::move(fresh).value(), s->expires);
  return s;
}

}  // namespace gpupool
