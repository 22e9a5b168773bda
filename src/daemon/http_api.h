// The daemon's HTTP surface: one route table {method, path, minimum role, handler, OpenAPI
// operation}, from which both the router and /v1/openapi.json are generated, and the handlers
// the front end's listeners run.
//
// The API listener serves /healthz, /metrics, /v1/openapi.json and the console from its own
// threads, and hands every /v1 route to the loop, where the caller is authenticated and the
// route's ControlPlane method runs; the reply goes out once the batch is durable. The agents'
// listener (serve --agent-listen) serves only /healthz and /v1/agents/..., with its own
// connection budget and thread, so that no flood of API traffic makes nodes look dead.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/openapi.h"
#include "daemon/console_auth.h"
#include "daemon/control_plane.h"
#include "daemon/loop.h"
#include "daemon/metrics.h"
#include "http/server.h"

namespace gpupool {

// A route's path parameters, in order ("/v1/jobs/{id}/logs" has one).
using PathParams = std::vector<std::string>;
using RouteFn = std::function<Reply(ControlPlane&, const CallContext&, const http::Request&, const PathParams&)>;

// The least a caller must be to reach a route's handler (which may check more: scope, the
// body's own demands). Checked on the loop, after authentication, before the body is decoded.
enum class Access {
  kAnyone,       // any valid token (the handler scopes what it shows)
  kWriter,       // members, tenant admins, cluster admins
  kTenantAdmin,  // tenant admins and cluster admins
  kAdmin,        // cluster admins
  kAgent,        // node agents and cluster admins
};

// One row of the route table: the router and /v1/openapi.json are both generated from it.
struct Route {
  std::string method;
  std::string pattern;  // "/v1/jobs/{id}": a {name} segment matches one non-empty segment
  RouteFn fn;
  bool takes_body = false;  // a request without Content-Length or a chunked body is refused
  Access access = Access::kAnyone;
  std::string action;  // what a refusal says the caller may not do ("submit jobs")
  OpenApiOperation doc;
};

// Every /v1 route the loop serves, resource by resource.
const std::vector<Route>& HttpRoutes();

// What /v1/openapi.json documents: the front end's own routes (/healthz, /metrics, the document)
// and every row of HttpRoutes, with its minimum role.
std::vector<DocumentedRoute> DocumentedRoutes();

// `connections`, if set, is called before /metrics renders, to refresh the connection gauges.
// A source address whose requests failed authentication more than `max_auth_failures` times in
// 10 s (0: no limit) gets 429 with Retry-After before authentication until the 10 s are over;
// logged once per window, never with the token.
// `metrics_require_token`: /metrics answers only a cluster admin's or a metrics-reader's token.
// `oidc`, if set, verifies bearer tokens that are JWTs (on the listener's thread, so that a
// key fetch never stalls the loop); their callers get the principal of their mappings.
// `console`, if set, serves the console's sign-in routes (/v1/auth/login, callback, session,
// logout) and lets a signed-in browser's session cookie stand for its bearer (console_auth.h).
http::Handler ApiHandler(Loop& loop, Metrics& metrics, std::function<void()> connections, int max_auth_failures = 20,
                         bool metrics_require_token = false, std::shared_ptr<OidcAuthenticator> oidc = nullptr,
                         std::shared_ptr<ConsoleAuth> console = nullptr);
http::Handler AgentHandler(Loop& loop, Metrics& metrics, int max_auth_failures = 20);

}  // namespace gpupool
