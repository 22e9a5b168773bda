// The front end's side of the HTTP API (http_api.h): what the listeners' threads do before a
// request reaches the loop (/healthz, /metrics, the console's files, the route match, the
// limit on failed authentication, a follower's redirect), and the step on the loop that
// authenticates the caller and runs the route's handler. The route table is http_api.cc.
#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "api/decode.h"
#include "api/openapi.h"
#include "api/url.h"
#include "daemon/http_api.h"
#include "daemon/log.h"
#include "daemon/web_assets.h"

namespace gpupool {
namespace {

bool Allows(Access a, const Principal& p) {
  switch (a) {
    case Access::kAnyone: return true;
    case Access::kWriter: return p.Writes();
    case Access::kTenantAdmin: return p.AdministersAny();
    case Access::kAdmin: return p.admin();
    case Access::kAgent: return p.admin() || p.role == Role::kNodeAgent;
  }
  return false;
}

// A route pattern, split once: literal segments and {name} holes.
struct CompiledRoute {
  const Route* route;
  std::vector<std::string> segments;  // "" for a hole
};

const std::vector<CompiledRoute>& Compiled() {
  static const std::vector<CompiledRoute> compiled = [] {
    std::vector<CompiledRoute> out;
    for (const Route& r : HttpRoutes()) {
      CompiledRoute c{&r, {}};
      for (size_t start = 1; start <= r.pattern.size();) {
        const size_t end = std::min(r.pattern.find('/', start), r.pattern.size());
        const std::string seg = r.pattern.substr(start, end - start);
        c.segments.push_back(seg.front() == '{' ? "" : seg);
        start = end + 1;
      }
      out.push_back(std::move(c));
    }
    return out;
  }();
  return compiled;
}

bool Matches(const CompiledRoute& c, const std::vector<std::string>& segments, PathParams* params) {
  if (c.segments.size() != segments.size()) return false;
  PathParams p;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (c.segments[i].empty()) {
      if (segments[i].empty()) return false;
      p.push_back(segments[i]);
    } else if (c.segments[i] != segments[i]) {
      return false;
    }
  }
  *params = std::move(p);
  return true;
}

http::Response Json(int status, std::string body) { return {status, std::move(body), "application/json", {}, false}; }

http::Response FromReply(Reply r) { return {r.status, std::move(r.body), std::move(r.content_type), {}, false}; }

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string Bearer(const http::Request& req) {
  const std::string h = req.Header("Authorization");
  return h.rfind("Bearer ", 0) == 0 ? h.substr(7) : "";
}

// Failed authentications per source address: a source that fails more than `max_failures` times
// (0: no limit) within kWindow is answered 429 before authentication until its window ends, and logged once
// per window (its address and count, never a token). Bounded: past kMaxSources addresses the
// expired windows go, and if that is not enough all of them (the limit fails open rather than
// locking everyone out).
class AuthFailures {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kWindow{10};
  explicit AuthFailures(int max_failures) : max_failures_(max_failures) {}
  static constexpr size_t kMaxSources = 10000;

  // Seconds until `source` may try again; 0: now.
  int64_t RetryAfter(const std::string& source, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = by_source_.find(source);
    if (max_failures_ <= 0 || it == by_source_.end() || it->second.failures <= max_failures_ ||
        now - it->second.start >= kWindow) {
      return 0;
    }
    return std::chrono::ceil<std::chrono::seconds>(it->second.start + kWindow - now).count();
  }

  void Failed(const std::string& source, Clock::time_point now) {
    if (max_failures_ <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (by_source_.size() >= kMaxSources && by_source_.find(source) == by_source_.end()) {
      std::erase_if(by_source_, [&](const auto& w) { return now - w.second.start >= kWindow; });
      if (by_source_.size() >= kMaxSources) by_source_.clear();
    }
    Window& w = by_source_[source];
    if (w.failures == 0 || now - w.start >= kWindow) w = Window{now, 0, false};
    if (++w.failures > max_failures_ && !w.logged) {
      w.logged = true;
      Log("warn", "repeated failed authentication: the source is refused until its window ends",
          {{"source", source}, {"failures", std::to_string(w.failures)},
           {"window_s", std::to_string(kWindow.count())}});
    }
  }

 private:
  struct Window {
    Clock::time_point start;
    int failures = 0;
    bool logged = false;
  };
  const int max_failures_;
  std::mutex mu_;
  std::unordered_map<std::string, Window> by_source_;
};

// A source past its failed authentications gets 429 before any token is looked at.
bool RefusedAfterFailures(AuthFailures& failures, const http::Request& req, const http::Respond& respond) {
  const int64_t wait = failures.RetryAfter(req.remote, AuthFailures::Clock::now());
  if (wait <= 0) return false;
  http::Response r = Json(429, ErrorBody({ErrorCode::kResourceExhausted,
                                          "too many failed authentications from this address; retry in " +
                                              std::to_string(wait) + " s"}));
  r.headers.emplace_back("Retry-After", std::to_string(wait));
  respond(std::move(r));
  return true;
}

// Finds the route, checks what can be checked without the state (method, framing), and hands
// the rest to the loop.
// A JWT bearer's verified caller: nullopt for other bearers, or an error reply (401, 503).
Result<std::optional<OidcIdentity>> VerifiedOidc(OidcAuthenticator* oidc, const http::Request& req) {
  const std::string bearer = Bearer(req);
  if (oidc == nullptr || !LooksLikeJwt(bearer)) return std::optional<OidcIdentity>();
  const Time now = Time::FromMillis(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
  Result<OidcIdentity> id = oidc->Verify(bearer, now);
  if (!id.ok()) return id.error();
  return std::optional<OidcIdentity>(std::move(id).value());
}

// Answers a bearer JWT that did not verify: 503 with Retry-After while the issuer's keys cannot
// be fetched, else 401, counted against the source address. False when `caller` verified (or
// was no JWT) and nothing was sent.
bool RefusedJwt(const Result<std::optional<OidcIdentity>>& caller, AuthFailures& failures, const std::string& remote,
                const http::Respond& respond) {
  if (caller.ok()) return false;
  const bool down = caller.error().code == ErrorCode::kUnavailable;
  if (!down) failures.Failed(remote, AuthFailures::Clock::now());
  http::Response r = Json(down ? 503 : 401, ErrorBody(caller.error()));
  if (down) r.headers.emplace_back("Retry-After", "5");
  respond(std::move(r));
  return true;
}

// On the loop: the caller a request speaks for, from its verified JWT's mappings (into
// `storage`), its API token, or, with no bearer at all, its verified client certificate (a
// node agent); a JWT whose mappings grant nothing is refused (403).
Result<const Principal*> Caller(ControlPlane& core, const std::optional<OidcIdentity>& id, const std::string& bearer,
                                const std::vector<std::string>& client_names, Time now, std::optional<Principal>* storage) {
  if (bearer.empty() && !client_names.empty()) {
    storage->emplace(core.CertificatePrincipal(client_names));
    return &**storage;
  }
  if (!id) return core.Authenticate(bearer, now);
  Result<Principal> p = core.OidcPrincipal(*id);
  if (!p.ok()) return p.error();
  storage->emplace(std::move(p).value());
  return &**storage;
}

void ToLoop(Loop& loop, Metrics& metrics, AuthFailures& failures, OidcAuthenticator* oidc, http::Request req,
            http::Respond respond) {
  if (RefusedAfterFailures(failures, req, respond)) return;
  PathParams params;
  const Route* route = nullptr;
  std::string allowed;
  for (const CompiledRoute& c : Compiled()) {
    PathParams p;
    if (!Matches(c, req.segments, &p)) continue;
    if (c.route->method == req.method) {
      route = c.route;
      params = std::move(p);
      break;
    }
    allowed += (allowed.empty() ? "" : ", ") + c.route->method;
  }
  if (route == nullptr) {
    if (allowed.empty()) return respond(Json(404, ErrorBody({ErrorCode::kNotFound, "no such route"})));
    http::Response r = Json(405, ErrorBody({ErrorCode::kInvalidArgument, "method not allowed; this path takes " + allowed}));
    r.headers.emplace_back("Allow", allowed);
    return respond(std::move(r));
  }
  if (route->takes_body && !req.has_body) {
    return respond(Json(400, ErrorBody({ErrorCode::kInvalidArgument, EmptyBodyMessage(req.method, req.path)})));
  }
  const bool read = req.method == "GET";
  if (!read) {
    // A replica that does not lead sends writes to the one that does (307 keeps the method and
    // the body; the clients follow it), or, while none is known, asks for a retry.
    if (const ReplicaRole role = loop.role(); !role.leader) {
      if (role.leader_url.empty()) {
        http::Response r = Json(503, ErrorBody({ErrorCode::kUnavailable, "no replica leads the store yet; retry"}));
        r.headers.emplace_back("Retry-After", "1");
        return respond(std::move(r));
      }
      std::string target = role.leader_url + req.path;
      char sep = '?';
      for (const auto& [k, v] : req.query) {
        target += sep + UrlEncode(k) + "=" + UrlEncode(v);
        sep = '&';
      }
      http::Response r = Json(307, ErrorBody({ErrorCode::kUnavailable, "this replica follows; the leader is " + role.leader_url}));
      r.headers.emplace_back("Location", target);
      return respond(std::move(r));
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string name = req.method + " " + route->pattern;
  Result<std::optional<OidcIdentity>> oidc_caller = VerifiedOidc(oidc, req);
  if (RefusedJwt(oidc_caller, failures, req.remote, [&](http::Response r) {
        metrics.ObserveRequest(name, r.status, SecondsSince(start));
        respond(std::move(r));
      })) {
    return;
  }
  auto shared = std::make_shared<const http::Request>(std::move(req));
  loop.Post(
      [route, shared, params = std::move(params), id = std::move(oidc_caller).value()](ControlPlane& core, Time now) {
        std::optional<Principal> storage;
        Result<const Principal*> caller = Caller(core, id, Bearer(*shared), shared->client_names, now, &storage);
        if (!caller.ok()) return Reply{403, ErrorBody(caller.error())};
        const CallContext c{*caller, shared->remote, now};
        if (c.principal == nullptr) return Reply{401, ErrorBody({ErrorCode::kUnauthenticated, "missing or invalid bearer token"})};
        // A node agent's credential opens the agents' routes and nothing else.
        if (c.principal->role == Role::kMetricsReader) {
          return Reply{403, ErrorBody({ErrorCode::kPermissionDenied, "a metrics-reader token may only read /metrics"})};
        }
        if (c.principal->role == Role::kNodeAgent && route->access != Access::kAgent) {
          return Reply{403, ErrorBody({ErrorCode::kPermissionDenied, "a node-agent token may only register and heartbeat its node"})};
        }
        if (!Allows(route->access, *c.principal)) {
          return Reply{403, ErrorBody({ErrorCode::kPermissionDenied, "your role may not " + route->action})};
        }
        return route->fn(core, c, *shared, params);
      },
      [respond, &metrics, &failures, remote = shared->remote, name, start](Reply r) {
        metrics.ObserveRequest(name, r.status, SecondsSince(start));
        if (r.status == 401) failures.Failed(remote, AuthFailures::Clock::now());
        respond(FromReply(std::move(r)));
      },
      read);
}

// {"status":"ok"}, and a replica's role: {"role": "leader"|"follower", "leader": URL, "epoch": N,
// "seq": the last record its state holds}.
bool Healthz(const Loop& loop, const http::Request& req, const http::Respond& respond) {
  if (req.path != "/healthz") return false;
  if (req.method != "GET" && req.method != "HEAD") {
    respond(Json(405, ErrorBody({ErrorCode::kInvalidArgument, "method not allowed; this path takes GET"})));
    return true;
  }
  const ReplicaRole role = loop.role();
  if (!role.replica) {
    respond(Json(200, R"({"status":"ok"})"));
    return true;
  }
  const nlohmann::json body = {{"status", "ok"},
                               {"role", role.leader ? "leader" : "follower"},
                               {"leader", role.leader_url},
                               {"epoch", role.epoch},
                               {"seq", role.seq}};
  respond(Json(200, body.dump()));
  return true;
}

// GET /metrics behind a token (serve --metrics-require-token): a cluster admin's or a
// metrics-reader's, an API token or an OIDC caller's (its JWT verified here, off the loop, as
// for any route), checked on the loop like any other.
void MetricsWithToken(Loop& loop, Metrics& metrics, const std::function<void()>& connections, AuthFailures& failures,
                      OidcAuthenticator* oidc, const http::Request& req, const http::Respond& respond) {
  if (RefusedAfterFailures(failures, req, respond)) return;
  Result<std::optional<OidcIdentity>> oidc_caller = VerifiedOidc(oidc, req);
  if (RefusedJwt(oidc_caller, failures, req.remote, respond)) return;
  loop.Post(
      [&metrics, connections, bearer = Bearer(req), names = req.client_names,
       id = std::move(oidc_caller).value()](ControlPlane& core, Time now) {
        std::optional<Principal> storage;
        Result<const Principal*> caller = Caller(core, id, bearer, names, now, &storage);
        if (!caller.ok()) return Reply{403, ErrorBody(caller.error())};
        const Principal* p = *caller;
        if (p == nullptr) return Reply{401, ErrorBody({ErrorCode::kUnauthenticated, "missing or invalid bearer token"})};
        if (!p->ReadsMetrics()) {
          return Reply{403, ErrorBody({ErrorCode::kPermissionDenied, "/metrics needs a metrics-reader or cluster-admin token"})};
        }
        if (connections) connections();
        return Reply{200, metrics.Render(), "text/plain; version=0.0.4"};
      },
      [respond, &failures, remote = req.remote](Reply r) {
        if (r.status == 401) failures.Failed(remote, AuthFailures::Clock::now());
        respond(FromReply(std::move(r)));
      },
      /*read=*/true);
}

// GET /v1/auth: how to sign in, for `gpupool login` and the console, before they hold a token:
// each trusted issuer with the public client and scopes to ask it for. Nothing secret.
std::string AuthDocument(const OidcAuthenticator* oidc, bool console_login) {
  nlohmann::json issuers = nlohmann::json::array();
  if (oidc != nullptr) {
    for (const OidcIssuer& i : oidc->issuers()) {
      issuers.push_back({{"issuer", i.issuer}, {"audience", i.audience}, {"client_id", i.client_id}, {"scopes", i.scopes}});
    }
  }
  return nlohmann::json{{"oidc", issuers}, {"api_tokens", true}, {"console_login", console_login}}.dump();
}
}  // namespace

http::Handler ApiHandler(Loop& loop, Metrics& metrics, std::function<void()> connections, int max_auth_failures,
                         bool metrics_require_token, std::shared_ptr<OidcAuthenticator> oidc,
                         std::shared_ptr<ConsoleAuth> console) {
  auto failures = std::make_shared<AuthFailures>(max_auth_failures);
  return [&loop, &metrics, connections, failures, metrics_require_token, oidc, console,
          auth_document = AuthDocument(oidc.get(), console != nullptr)](http::Request req, http::Respond respond) {
    if (Healthz(loop, req, respond)) return;
    if (console) {
      // Sign-in routes and session cookies: behind the same limit on failed authentication.
      if (RefusedAfterFailures(*failures, req, respond)) return;
      if (console->Route(req, respond)) return;
      if (std::optional<http::Response> refused = console->AttachSession(req)) {
        if (refused->status == 401) failures->Failed(req.remote, AuthFailures::Clock::now());
        return respond(std::move(*refused));
      }
    }
    if (req.method == "GET") {
      if (req.path == "/v1/auth") {
        return respond(Json(200, auth_document));
      }
      if (req.path == "/v1/openapi.json") {
        static const std::string document = OpenApiDocument(DocumentedRoutes());
        return respond(Json(200, document));
      }
      if (req.path == "/metrics") {
        if (metrics_require_token) return MetricsWithToken(loop, metrics, connections, *failures, oidc.get(), req, respond);
        if (connections) connections();
        return respond({200, metrics.Render(), "text/plain; version=0.0.4", {}, false});
      }
      // The console: static files from memory. The policy lets the page load only its own
      // script and style and talk only to this daemon.
      for (const WebAsset& a : WebAssets()) {
        if (req.path != a.url) continue;
        return respond({200, std::string(a.bytes), std::string(a.content_type),
                        {{"Content-Security-Policy",
                          "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                          "img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"},
                         {"X-Content-Type-Options", "nosniff"},
                         {"Referrer-Policy", "no-referrer"},
                         {"Cache-Control", "no-cache"}},
                        false});
      }
    }
    ToLoop(loop, metrics, *failures, oidc.get(), std::move(req), std::move(respond));
  };
}

http::Handler AgentHandler(Loop& loop, Metrics& metrics, int max_auth_failures) {
  auto failures = std::make_shared<AuthFailures>(max_auth_failures);
  return [&loop, &metrics, failures](http::Request req, http::Respond respond) {
    if (Healthz(loop, req, respond)) return;
    if (req.segments.size() < 2 || req.segments[0] != "v1" || req.segments[1] != "agents") {
      return respond(Json(404, ErrorBody({ErrorCode::kNotFound,
                                          "no such route: this listener serves only the node agents' /v1/agents/ "
                                          "routes and /healthz"})));
    }
    ToLoop(loop, metrics, *failures, nullptr, std::move(req), std::move(respond));
  };
}

}  // namespace gpupool
