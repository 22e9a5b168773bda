#include "daemon/http_api.h"

#include <chrono>
#include <memory>

#include "api/decode.h"
#include "api/openapi.h"
#include "daemon/web_assets.h"

namespace gpupool {
namespace {

using R = const http::Request&;
using C = const CallContext&;
using P = const PathParams&;

bool Allows(Access a, const Principal& p) {
  switch (a) {
    case Access::kAnyone: return true;
    case Access::kWriter: return p.Writes();
    case Access::kTenantAdmin: return p.admin() || p.role == Role::kTenantAdmin;
    case Access::kAdmin: return p.admin();
    case Access::kAgent: return p.admin() || p.role == Role::kNodeAgent;
  }
  return false;
}

std::vector<Route> BuildRoutes() {
  std::vector<Route> r;
  // Who may call a route is part of its row: checked before its body is decoded.
  Access access = Access::kAnyone;
  std::string action;
  const auto add = [&r, &access, &action](std::string method, std::string pattern, RouteFn fn) {
    const bool body = method == "POST" || method == "PUT" || method == "PATCH";
    r.push_back({std::move(method), std::move(pattern), std::move(fn), body, access, action});
    access = Access::kAnyone;
    action.clear();
  };
  // The next add's access: who, and what the refusal says they may not do.
  const auto only = [&access, &action](Access a, std::string what) {
    access = a;
    action = std::move(what);
  };
  add("GET", "/v1/summary", [](DaemonCore& c, C ctx, R, P) { return c.Summary(ctx); });
  only(Access::kWriter, "submit jobs");
  add("POST", "/v1/jobs", [](DaemonCore& c, C ctx, R req, P) {
    return c.SubmitJob(ctx, req.body, req.Header("Idempotency-Key"));
  });
  add("GET", "/v1/jobs", [](DaemonCore& c, C ctx, R req, P) { return c.ListJobs(ctx, req.query); });
  add("GET", "/v1/jobs/{id}", [](DaemonCore& c, C ctx, R, P p) { return c.GetJob(ctx, p[0]); });
  only(Access::kWriter, "cancel jobs");
  add("DELETE", "/v1/jobs/{id}", [](DaemonCore& c, C ctx, R, P p) { return c.CancelJob(ctx, p[0]); });
  add("GET", "/v1/jobs/{id}/logs", [](DaemonCore& c, C ctx, R, P p) { return c.JobLogs(ctx, p[0]); });
  add("GET", "/v1/tenants", [](DaemonCore& c, C ctx, R, P) { return c.ListTenants(ctx); });
  only(Access::kAdmin, "create tenants");
  add("POST", "/v1/tenants", [](DaemonCore& c, C ctx, R req, P) { return c.CreateTenant(ctx, req.body); });
  add("GET", "/v1/tenants/{name}", [](DaemonCore& c, C ctx, R, P p) { return c.GetTenant(ctx, p[0]); });
  only(Access::kAdmin, "change tenants");
  add("PATCH", "/v1/tenants/{name}", [](DaemonCore& c, C ctx, R req, P p) { return c.UpdateTenant(ctx, p[0], req.body); });
  only(Access::kAdmin, "delete tenants");
  add("DELETE", "/v1/tenants/{name}", [](DaemonCore& c, C ctx, R, P p) { return c.DeleteTenant(ctx, p[0]); });
  add("GET", "/v1/priority-classes", [](DaemonCore& c, C ctx, R, P) { return c.ListPriorityClasses(ctx); });
  only(Access::kAdmin, "create priority classes");
  add("POST", "/v1/priority-classes", [](DaemonCore& c, C ctx, R req, P) { return c.CreatePriorityClass(ctx, req.body); });
  add("GET", "/v1/tokens", [](DaemonCore& c, C ctx, R, P) { return c.ListTokens(ctx); });
  only(Access::kTenantAdmin, "create this token");
  add("POST", "/v1/tokens", [](DaemonCore& c, C ctx, R req, P) { return c.CreateToken(ctx, req.body); });
  add("DELETE", "/v1/tokens/{id}", [](DaemonCore& c, C ctx, R, P p) { return c.RevokeToken(ctx, p[0]); });
  add("GET", "/v1/nodes", [](DaemonCore& c, C ctx, R req, P) { return c.ListNodes(ctx, req.Query("detail") == "devices"); });
  add("GET", "/v1/nodes/{name}", [](DaemonCore& c, C ctx, R, P p) { return c.GetNode(ctx, p[0]); });
  only(Access::kAdmin, "delete nodes");
  add("DELETE", "/v1/nodes/{name}", [](DaemonCore& c, C ctx, R, P p) { return c.DeleteNode(ctx, p[0]); });
  for (const char* verb : {"cordon", "uncordon", "drain"}) {
    const std::string a = verb;
    only(Access::kAdmin, a + " nodes");
    add("POST", "/v1/nodes/{name}/" + a, [a](DaemonCore& c, C ctx, R, P p) { return c.NodeAction(ctx, p[0], a); });
    r.back().takes_body = false;
  }
  only(Access::kWriter, "reserve capacity");
  add("POST", "/v1/reservations", [](DaemonCore& c, C ctx, R req, P) { return c.CreateReservation(ctx, req.body); });
  add("GET", "/v1/reservations", [](DaemonCore& c, C ctx, R, P) { return c.ListReservations(ctx); });
  add("GET", "/v1/reservations/{id}", [](DaemonCore& c, C ctx, R, P p) { return c.GetReservation(ctx, p[0]); });
  only(Access::kWriter, "cancel this reservation");
  add("DELETE", "/v1/reservations/{id}", [](DaemonCore& c, C ctx, R, P p) { return c.CancelReservation(ctx, p[0]); });
  only(Access::kTenantAdmin, "read the audit log");
  add("GET", "/v1/audit", [](DaemonCore& c, C ctx, R req, P) { return c.ListAudit(ctx, req.query); });
  add("GET", "/v1/availability", [](DaemonCore& c, C ctx, R req, P) { return c.Availability(ctx, req.query); });
  add("GET", "/v1/calendar", [](DaemonCore& c, C ctx, R req, P) { return c.CalendarView(ctx, req.query); });
  add("GET", "/v1/usage", [](DaemonCore& c, C ctx, R req, P) { return c.Usage(ctx, req.query); });
  only(Access::kAgent, "register node agents");
  add("POST", "/v1/agents/register", [](DaemonCore& c, C ctx, R req, P) { return c.RegisterAgent(ctx, req.body); });
  only(Access::kAgent, "send heartbeats");
  add("POST", "/v1/agents/{node}/heartbeat", [](DaemonCore& c, C ctx, R req, P p) {
    return c.AgentHeartbeat(ctx, p[0], req.body);
  });
  add("GET", "/v1/burst", [](DaemonCore& c, C ctx, R, P) { return c.BurstView(ctx); });
  only(Access::kAdmin, "read the burst settings");
  add("GET", "/v1/burst/settings", [](DaemonCore& c, C ctx, R, P) { return c.GetBurstSettings(ctx); });
  only(Access::kAdmin, "change the burst settings");
  add("PUT", "/v1/burst/settings", [](DaemonCore& c, C ctx, R req, P) { return c.SetBurstSettings(ctx, req.body); });
  add("GET", "/v1/prices", [](DaemonCore& c, C ctx, R, P) { return c.GetPrices(ctx); });
  only(Access::kAdmin, "set prices");
  add("PUT", "/v1/prices", [](DaemonCore& c, C ctx, R req, P) { return c.SetPrices(ctx, req.body); });
  return r;
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

// Finds the route, checks what can be checked without the state (method, framing), and hands
// the rest to the loop.
void ToLoop(Loop& loop, Metrics& metrics, http::Request req, http::Respond respond) {
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
  const auto start = std::chrono::steady_clock::now();
  const std::string name = req.method + " " + route->pattern;
  auto shared = std::make_shared<const http::Request>(std::move(req));
  loop.Post(
      [route, shared, params = std::move(params)](DaemonCore& core, Time now) {
        const CallContext c{core.Authenticate(Bearer(*shared)), shared->remote, now};
        if (c.principal == nullptr) return Reply{401, ErrorBody({ErrorCode::kUnauthenticated, "missing or invalid bearer token"})};
        // A node agent's credential opens the agents' routes and nothing else.
        if (c.principal->role == Role::kNodeAgent && route->access != Access::kAgent) {
          return Reply{403, ErrorBody({ErrorCode::kPermissionDenied, "a node-agent token may only register and heartbeat its node"})};
        }
        if (!Allows(route->access, *c.principal)) {
          return Reply{403, ErrorBody({ErrorCode::kPermissionDenied, "your role may not " + route->action})};
        }
        return route->fn(core, c, *shared, params);
      },
      [respond, &metrics, name, start](Reply r) {
        metrics.ObserveRequest(name, r.status, SecondsSince(start));
        respond(FromReply(std::move(r)));
      });
}

bool Healthz(const http::Request& req, const http::Respond& respond) {
  if (req.path != "/healthz") return false;
  if (req.method != "GET" && req.method != "HEAD") {
    respond(Json(405, ErrorBody({ErrorCode::kInvalidArgument, "method not allowed; this path takes GET"})));
  } else {
    respond(Json(200, R"({"status":"ok"})"));
  }
  return true;
}

}  // namespace

const std::vector<Route>& HttpRoutes() {
  static const std::vector<Route> routes = BuildRoutes();
  return routes;
}

http::Handler ApiHandler(Loop& loop, Metrics& metrics, std::function<void()> connections) {
  return [&loop, &metrics, connections](http::Request req, http::Respond respond) {
    if (Healthz(req, respond)) return;
    if (req.method == "GET") {
      if (req.path == "/v1/openapi.json") return respond(Json(200, OpenApiDocument()));
      if (req.path == "/metrics") {
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
    ToLoop(loop, metrics, std::move(req), std::move(respond));
  };
}

http::Handler AgentHandler(Loop& loop, Metrics& metrics) {
  return [&loop, &metrics](http::Request req, http::Respond respond) {
    if (Healthz(req, respond)) return;
    if (req.segments.size() < 2 || req.segments[0] != "v1" || req.segments[1] != "agents") {
      return respond(Json(404, ErrorBody({ErrorCode::kNotFound,
                                          "no such route: this listener serves only the node agents' /v1/agents/ "
                                          "routes and /healthz"})));
    }
    ToLoop(loop, metrics, std::move(req), std::move(respond));
  };
}

}  // namespace gpupool
