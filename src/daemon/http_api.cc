// The HTTP API's route table (http_api.h): every /v1 route, its minimum role, handler and
// OpenAPI operation. What the listeners do with it is http_front.cc.
#include "daemon/http_api.h"

#include <memory>

#include "api/decode.h"
#include "api/openapi.h"

namespace gpupool {
namespace {

using R = const http::Request&;
using C = const CallContext&;
using P = const PathParams&;

// Who may call a route: the least role, and what a refusal says they may not do.
struct Who {
  Access access = Access::kAnyone;
  std::string action;
};

// The table, built resource by resource.
class Table {
 public:
  void Add(std::string method, std::string pattern, Who who, OpenApiOperation doc, RouteFn fn) {
    const bool body = method == "POST" || method == "PUT" || method == "PATCH";
    rows.push_back({std::move(method), std::move(pattern), std::move(fn), body && !doc.request.empty(),
                    who.access, std::move(who.action), std::move(doc)});
  }
  std::vector<Route> rows;
};

Who Writers(std::string what) { return {Access::kWriter, std::move(what)}; }
Who Admins(std::string what) { return {Access::kAdmin, std::move(what)}; }
const char* const kMembers = "cluster-admin, tenant-admin, member";
const char* const kOwn = "any token (own tenant)";

void JobRoutes(Table& t) {
  t.Add("POST", "/v1/jobs", Writers("submit jobs"),
        {.summary = "submit a job; Idempotency-Key makes retries safe", .who = kMembers, .request = "JobRequest",
         .success = 201, .header = "Idempotency-Key", .response = "Job"},
        [](ControlPlane& c, C ctx, R req, P) { return c.SubmitJob(ctx, req.body, req.Header("Idempotency-Key")); });
  t.Add("GET", "/v1/jobs", {},
        {.summary = "list jobs, newest first (filters: tenant, state; pages: limit, cursor); finished jobs past "
                    "the retention window come from the store's history",
         .who = kOwn, .query = {{"tenant"}, {"state"}}, .paged = true},
        [](ControlPlane& c, C ctx, R req, P) { return c.ListJobs(ctx, req.query); });
  t.Add("GET", "/v1/jobs/{id}", {},
        {.summary = "a job with its pending reason and placement", .who = kOwn, .response = "Job"},
        [](ControlPlane& c, C ctx, R, P p) { return c.GetJob(ctx, p[0]); });
  t.Add("DELETE", "/v1/jobs/{id}", Writers("cancel jobs"),
        {.summary = "cancel a job", .who = kMembers, .response = "Job"},
        [](ControlPlane& c, C ctx, R, P p) { return c.CancelJob(ctx, p[0]); });
  t.Add("GET", "/v1/jobs/{id}/logs", {},
        {.summary = "the last stdout and stderr of each replica, as its agent sent them", .who = kOwn},
        [](ControlPlane& c, C ctx, R, P p) { return c.JobLogs(ctx, p[0]); });
}

void TenantRoutes(Table& t) {
  t.Add("GET", "/v1/summary", {}, {.summary = "cluster summary (counts scoped to the caller)", .who = "any token"},
        [](ControlPlane& c, C ctx, R, P) { return c.Summary(ctx); });
  t.Add("GET", "/v1/tenants", {}, {.summary = "list tenants with usage", .who = kOwn},
        [](ControlPlane& c, C ctx, R, P) { return c.ListTenants(ctx); });
  t.Add("POST", "/v1/tenants", Admins("create tenants"),
        {.summary = "create a tenant", .who = "cluster-admin", .request = "TenantRequest", .success = 201},
        [](ControlPlane& c, C ctx, R req, P) { return c.CreateTenant(ctx, req.body); });
  t.Add("GET", "/v1/tenants/{name}", {}, {.summary = "a tenant with quotas and usage", .who = kOwn},
        [](ControlPlane& c, C ctx, R, P p) { return c.GetTenant(ctx, p[0]); });
  t.Add("PATCH", "/v1/tenants/{name}", Admins("change tenants"),
        {.summary = "update quotas, weight, limits", .who = "cluster-admin", .request = "TenantRequest"},
        [](ControlPlane& c, C ctx, R req, P p) { return c.UpdateTenant(ctx, p[0], req.body); });
  t.Add("DELETE", "/v1/tenants/{name}", Admins("delete tenants"),
        {.summary = "delete a tenant with no live jobs", .who = "cluster-admin"},
        [](ControlPlane& c, C ctx, R, P p) { return c.DeleteTenant(ctx, p[0]); });
  t.Add("GET", "/v1/priority-classes", {}, {.summary = "list priority classes", .who = "any token"},
        [](ControlPlane& c, C ctx, R, P) { return c.ListPriorityClasses(ctx); });
  t.Add("POST", "/v1/priority-classes", Admins("create priority classes"),
        {.summary = "create a priority class", .who = "cluster-admin", .request = "PriorityClassRequest",
         .success = 201},
        [](ControlPlane& c, C ctx, R req, P) { return c.CreatePriorityClass(ctx, req.body); });
}

void TokenRoutes(Table& t) {
  t.Add("GET", "/v1/tokens", {},
        {.summary = "list tokens (never their secrets)", .who = "cluster-admin, tenant-admin (own tenant)"},
        [](ControlPlane& c, C ctx, R, P) { return c.ListTokens(ctx); });
  t.Add("POST", "/v1/tokens", {Access::kTenantAdmin, "create this token"},
        {.summary = "create a token; the secret is returned once",
         .who = "cluster-admin; tenant-admin for member/viewer", .request = "TokenRequest", .success = 201},
        [](ControlPlane& c, C ctx, R req, P) { return c.CreateToken(ctx, req.body); });
  t.Add("DELETE", "/v1/tokens/{id}", {},
        {.summary = "revoke a token", .who = "cluster-admin, tenant-admin (own tenant)"},
        [](ControlPlane& c, C ctx, R, P p) { return c.RevokeToken(ctx, p[0]); });
  t.Add("POST", "/v1/tokens/{id}/rotate", {},
        {.summary = "a new secret for the same caller (expires_in_days); the old one stops now or after grace_s "
                    "(at most 7 days); the secret is returned once",
         .who = "cluster-admin, tenant-admin (own tenant), the token itself", .request = "Object", .success = 201},
        [](ControlPlane& c, C ctx, R req, P p) { return c.RotateToken(ctx, p[0], req.body); });
  t.Add("GET", "/v1/tenants/{name}/service-accounts", {Access::kTenantAdmin, "manage service accounts"},
        {.summary = "the tenant's service accounts, each with its live tokens and last use",
         .who = "cluster-admin, tenant-admin (own tenant)"},
        [](ControlPlane& c, C ctx, R, P p) { return c.ListServiceAccounts(ctx, p[0]); });
  t.Add("POST", "/v1/tenants/{name}/service-accounts", {Access::kTenantAdmin, "manage service accounts"},
        {.summary = "create a service account (name, role: member or viewer; tenant-admin by cluster admins)",
         .who = "cluster-admin, tenant-admin (own tenant)", .request = "Object", .success = 201},
        [](ControlPlane& c, C ctx, R req, P p) { return c.CreateServiceAccount(ctx, p[0], req.body); });
  t.Add("DELETE", "/v1/tenants/{name}/service-accounts/{account}", {Access::kTenantAdmin, "manage service accounts"},
        {.summary = "delete a service account and revoke every token issued for it",
         .who = "cluster-admin, tenant-admin (own tenant)"},
        [](ControlPlane& c, C ctx, R, P p) { return c.DeleteServiceAccount(ctx, p[0], p[1]); });
  t.Add("POST", "/v1/tenants/{name}/service-accounts/{account}/tokens", {Access::kTenantAdmin, "manage service accounts"},
        {.summary = "issue a token for the service account (expires_in_days); the secret is returned once",
         .who = "cluster-admin, tenant-admin (own tenant)", .request = "Object", .success = 201},
        [](ControlPlane& c, C ctx, R req, P p) { return c.CreateServiceAccountToken(ctx, p[0], p[1], req.body); });
  t.Add("GET", "/v1/oidc-mappings", Admins("manage OIDC mappings"),
        {.summary = "the OIDC group and user mappings made through the API, and the trusted issuers",
         .who = "cluster-admin"},
        [](ControlPlane& c, C ctx, R, P) { return c.ListOidcMappings(ctx); });
  t.Add("POST", "/v1/oidc-mappings", Admins("manage OIDC mappings"),
        {.summary = "map an issuer's group or user to a tenant and role (adds to the configuration's; audited)",
         .who = "cluster-admin", .request = "Object", .success = 201},
        [](ControlPlane& c, C ctx, R req, P) { return c.CreateOidcMapping(ctx, req.body); });
  t.Add("DELETE", "/v1/oidc-mappings/{id}", Admins("manage OIDC mappings"),
        {.summary = "remove a mapping made through the API; callers lose its grant with their next request",
         .who = "cluster-admin"},
        [](ControlPlane& c, C ctx, R, P p) { return c.DeleteOidcMapping(ctx, p[0]); });
  t.Add("GET", "/v1/audit", {Access::kTenantAdmin, "read the audit log"},
        {.summary = "the audit log, newest first (pages: limit, cursor)",
         .who = "cluster-admin, tenant-admin (own tenant)", .paged = true},
        [](ControlPlane& c, C ctx, R req, P) { return c.ListAudit(ctx, req.query); });
}

void NodeRoutes(Table& t) {
  t.Add("GET", "/v1/nodes", {},
        {.summary = "list nodes (tenants: those running their work); detail=devices adds each GPU with its MIG "
                    "slices and occupants (other tenants' work shows as taken, unnamed)",
         .who = "any token", .query = {{"detail"}}},
        [](ControlPlane& c, C ctx, R req, P) { return c.ListNodes(ctx, req.Query("detail") == "devices"); });
  t.Add("GET", "/v1/nodes/{name}", {}, {.summary = "a node with its GPUs", .who = "any token (as for the list)"},
        [](ControlPlane& c, C ctx, R, P p) { return c.GetNode(ctx, p[0]); });
  t.Add("DELETE", "/v1/nodes/{name}", Admins("delete nodes"),
        {.summary = "remove a drained, empty node for good (409 otherwise); its name may be registered again as "
                    "a new node",
         .who = "cluster-admin"},
        [](ControlPlane& c, C ctx, R, P p) { return c.DeleteNode(ctx, p[0]); });
  const std::pair<const char*, const char*> actions[] = {
      {"cordon", "no new work on the node"},
      {"uncordon", "make the node schedulable"},
      {"drain", "cordon and requeue the node's jobs"}};
  for (const auto& [verb, summary] : actions) {
    const std::string a = verb;
    t.Add("POST", "/v1/nodes/{name}/" + a, Admins(a + " nodes"), {.summary = summary, .who = "cluster-admin"},
          [a](ControlPlane& c, C ctx, R, P p) { return c.NodeAction(ctx, p[0], a); });
  }
  t.Add("POST", "/v1/agents/register", {Access::kAgent, "register node agents"},
        {.summary = "a node agent registers its node and GPUs (docs/design/agent.md)",
         .who = "cluster-admin; node-agent (the node of its name)", .request = "Object"},
        [](ControlPlane& c, C ctx, R req, P) { return c.RegisterAgent(ctx, req.body); });
  t.Add("POST", "/v1/agents/{node}/heartbeat", {Access::kAgent, "send heartbeats"},
        {.summary = "a node agent's heartbeat: replica states, logs, health; answers what to start, stop and "
                    "forget",
         .who = "cluster-admin; node-agent (the node of its name)", .request = "Object"},
        [](ControlPlane& c, C ctx, R req, P p) { return c.AgentHeartbeat(ctx, p[0], req.body); });
}

void CapacityRoutes(Table& t) {
  t.Add("POST", "/v1/reservations", Writers("reserve capacity"),
        {.summary = "reserve GPUs of a flavor for [start, end); 409 names the short interval; maintenance "
                    "windows (admins)",
         .who = kMembers, .request = "ReservationRequest", .success = 201},
        [](ControlPlane& c, C ctx, R req, P) { return c.CreateReservation(ctx, req.body); });
  t.Add("GET", "/v1/reservations", {},
        {.summary = "list reservations and maintenance windows", .who = "any token (own tenant; maintenance for all)"},
        [](ControlPlane& c, C ctx, R, P) { return c.ListReservations(ctx); });
  t.Add("GET", "/v1/reservations/{id}", {}, {.summary = "a reservation", .who = kOwn},
        [](ControlPlane& c, C ctx, R, P p) { return c.GetReservation(ctx, p[0]); });
  t.Add("DELETE", "/v1/reservations/{id}", Writers("cancel this reservation"),
        {.summary = "cancel a reservation",
         .who = "cluster-admin, tenant-admin, member (own tenant); maintenance: cluster-admin"},
        [](ControlPlane& c, C ctx, R, P p) { return c.CancelReservation(ctx, p[0]); });
  t.Add("GET", "/v1/availability", {},
        {.summary = "earliest start (flavor, gpus, duration_s[, after]) or reservable GPUs (flavor, start, end)",
         .who = "any token",
         .query = {{"flavor"}, {"gpus", "integer"}, {"duration_s", "integer"}, {"after"}, {"start"}, {"end"}}},
        [](ControlPlane& c, C ctx, R req, P) { return c.Availability(ctx, req.query); });
  t.Add("GET", "/v1/calendar", {},
        {.summary = "per bucket: capacity, guaranteed, reserved, maintenance, free (flavor, start, end, step_s)",
         .who = "any token", .query = {{"flavor"}, {"start"}, {"end"}, {"step_s", "integer"}}},
        [](ControlPlane& c, C ctx, R req, P) { return c.CalendarView(ctx, req.query); });
}

void CostRoutes(Table& t) {
  t.Add("GET", "/v1/usage", {},
        {.summary = "usage and cost per tenant, grouped by flavor and kind (from, to, tenant, group_by, "
                    "format=json|csv)",
         .who = kOwn, .query = {{"from"}, {"to"}, {"tenant"}, {"group_by"}, {"format"}}},
        [](ControlPlane& c, C ctx, R req, P) { return c.Usage(ctx, req.query); });
  t.Add("GET", "/v1/usage/reconcile", Admins("reconcile usage with an executor's accounting"),
        {.summary = "the ledger per job and admission beside an executor's accounting (Slurm: sacct), with "
                    "mismatches flagged (executor, from, to, tolerance_s)",
         .who = "cluster-admin", .query = {{"executor"}, {"from"}, {"to"}, {"tolerance_s", "integer"}}},
        [](ControlPlane& c, C ctx, R req, P) { return c.ReconcileUsage(ctx, req.query); });
  t.Add("GET", "/v1/prices", {},
        {.summary = "the price list in force per flavor per GPU-hour, with `history`: every list and when it "
                    "takes effect",
         .who = "any token"},
        [](ControlPlane& c, C ctx, R, P) { return c.GetPrices(ctx); });
  t.Add("PUT", "/v1/prices", Admins("set prices"),
        {.summary = "a new price list from `effective_from` (now if absent, never in the past) on; usage before "
                    "it keeps its prices",
         .who = "cluster-admin", .request = "PriceList"},
        [](ControlPlane& c, C ctx, R req, P) { return c.SetPrices(ctx, req.body); });
  t.Add("GET", "/v1/burst", {},
        {.summary = "on-demand nodes (provisioning, ready, released) with their cost, and each tenant's burst "
                    "policy and spend in its budget window",
         .who = kOwn},
        [](ControlPlane& c, C ctx, R, P) { return c.BurstView(ctx); });
  t.Add("GET", "/v1/burst/settings", Admins("read the burst settings"),
        {.summary = "the burst offers and tenants' policies in force, in the shape of the configuration's burst: "
                    "section, with the provider (set in the file) and when the API last changed them",
         .who = "cluster-admin"},
        [](ControlPlane& c, C ctx, R, P) { return c.GetBurstSettings(ctx); });
  t.Add("PUT", "/v1/burst/settings", Admins("change the burst settings"),
        {.summary = "replace the burst offers and tenants' policies from now on, without a restart (journaled, "
                    "audited); the provider stays the configuration file's",
         .who = "cluster-admin", .request = "Object"},
        [](ControlPlane& c, C ctx, R req, P) { return c.SetBurstSettings(ctx, req.body); });
}

std::vector<Route> BuildRoutes() {
  Table t;
  TenantRoutes(t);
  JobRoutes(t);
  TokenRoutes(t);
  NodeRoutes(t);
  CapacityRoutes(t);
  CostRoutes(t);
  return std::move(t.rows);
}

std::string RoleName(Access a) {
  switch (a) {
    case Access::kAnyone: return "any token";
    case Access::kWriter: return "member";
    case Access::kTenantAdmin: return "tenant-admin";
    case Access::kAdmin: return "cluster-admin";
    case Access::kAgent: return "node-agent";
  }
  return "";
}


}  // namespace

const std::vector<Route>& HttpRoutes() {
  static const std::vector<Route> routes = BuildRoutes();
  return routes;
}

std::vector<DocumentedRoute> DocumentedRoutes() {
  // Served by the front end's own threads, before the table.
  std::vector<DocumentedRoute> out = {
      {"GET", "/healthz", "anyone", {.summary = "liveness", .who = "anyone", .open = true}},
      {"GET", "/metrics", "anyone", {.summary = "Prometheus exposition", .who = "anyone", .open = true}},
      {"GET", "/v1/openapi.json", "anyone", {.summary = "this document", .who = "anyone", .open = true}},
      {"GET", "/v1/auth", "anyone",
       {.summary = "how to sign in: the trusted OIDC issuers, each with its public client_id and scopes",
        .who = "anyone", .open = true}},
      // The console's single sign-on (console_auth.h), where an issuer has a client_id.
      {"GET", "/v1/auth/login", "anyone",
       {.summary = "console sign-in: 302 to the issuer (?issuer=URL&return=/path) with PKCE; sets the login cookie",
        .who = "anyone", .open = true}},
      {"GET", "/v1/auth/callback", "anyone",
       {.summary = "the issuer's redirect: the code for tokens, the session cookie set, 302 to the console",
        .who = "anyone", .open = true}},
      {"GET", "/v1/auth/session", "anyone",
       {.summary = "the console session of the cookie: csrf_token, issuer, username, expires; 401 without one",
        .who = "anyone", .open = true}},
      {"POST", "/v1/auth/logout", "anyone",
       {.summary = "ends the console session (X-CSRF-Token) and clears its cookie", .who = "anyone", .open = true}}};
  for (const Route& r : HttpRoutes()) out.push_back({r.method, r.pattern, RoleName(r.access), r.doc});
  return out;
}

}  // namespace gpupool
