#include "api/openapi.h"

#include <nlohmann/json.hpp>

namespace gpupool {
namespace {

using Json = nlohmann::json;

Json Ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

Json Schemas() {
  Json error = {{"type", "object"},
                {"required", {"error"}},
                {"properties",
                 {{"error",
                   {{"type", "object"},
                    {"required", {"code", "message", "details"}},
                    {"properties",
                     {{"code", {{"type", "string"}}},
                      {"message", {{"type", "string"}}},
                      {"details", {{"type", "string"}}}}}}}}}};
  Json resources = {
      {"type", "object"},
      {"description", "exactly one of gpus, mig_profile, gpu_fraction (with memory_gb)"},
      {"required", {"flavor"}},
      {"additionalProperties", false},
      {"properties",
       {{"flavor", {{"type", "string"}, {"example", "h100-80gb"}}},
        {"gpus", {{"type", "integer"}, {"minimum", 1}, {"maximum", 16}}},
        {"mig_profile", {{"type", "string"}, {"example", "1g.10gb"}}},
        {"gpu_fraction", {{"type", "number"}, {"exclusiveMinimum", 0}, {"maximum", 1}}},
        {"memory_gb", {{"type", "integer"}, {"minimum", 1}, {"maximum", 1024}}}}}};
  Json job_request = {
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"tenant", "name", "priority_class", "replicas", "resources",
                    "duration_estimate_s", "command"}},
      {"properties",
       {{"tenant", {{"type", "string"}}},
        {"name", {{"type", "string"}, {"maxLength", 256}}},
        {"priority_class", {{"type", "string"}}},
        {"replicas", {{"type", "integer"}, {"minimum", 1}, {"maximum", 1024}}},
        {"resources", Ref("Resources")},
        {"duration_estimate_s", {{"type", "integer"}, {"minimum", 1}, {"maximum", 31536000}}},
        {"command", {{"type", "array"}, {"minItems", 1}, {"maxItems", 256}, {"items", {{"type", "string"}}}}},
        {"topology",
         {{"type", "object"},
          {"properties",
           {{"level", {{"type", "string"}, {"enum", {"node", "nvlink-domain", "block"}}}},
            {"required", {{"type", "boolean"}}}}}}},
        {"cpu_milli", {{"type", "integer"}, {"minimum", 0}}},
        {"memory_mib", {{"type", "integer"}, {"minimum", 0}}},
        {"checkpointable", {{"type", "boolean"}}},
        {"reservation", {{"type", "string"}, {"description", "id of a reservation of the job's tenant and flavor to run in"}}}}}};
  Json job = {{"type", "object"},
              {"properties",
               {{"id", {{"type", "string"}}},
                {"name", {{"type", "string"}}},
                {"tenant", {{"type", "string"}}},
                {"state", {{"type", "string"},
                           {"enum", {"pending", "admitted", "running", "succeeded", "failed",
                                     "cancelled", "preempted"}}}},
                {"reason", {{"type", "object"}, {"description", "why a pending job waits"}}},
                {"placement", {{"type", "array"}, {"items", {{"type", "object"}}}}}}}};
  Json page = {{"type", "object"},
               {"description", "a page of a list, newest first"},
               {"required", {"items", "next_cursor"}},
               {"properties",
                {{"items", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                 {"next_cursor", {{"type", "string"}, {"nullable", true},
                                  {"description", "pass as cursor for the next (older) page; null at the end"}}}}}};
  Json quota = {{"type", "object"},
                {"additionalProperties", false},
                {"required", {"guaranteed"}},
                {"properties",
                 {{"guaranteed", {{"type", "number"}, {"minimum", 0}, {"description", "GPUs"}}},
                  {"borrow_limit", {{"type", "number"}, {"minimum", 0}}},
                  {"lend_limit", {{"type", "number"}, {"minimum", 0}}}}}};
  Json tenant_request = {
      {"type", "object"},
      {"additionalProperties", false},
      {"properties",
       {{"name", {{"type", "string"}, {"pattern", "^[a-z0-9][a-z0-9-]{0,62}$"}}},
        {"weight", {{"type", "number"}, {"exclusiveMinimum", 0}}},
        {"quotas", {{"type", "object"}, {"additionalProperties", Ref("Quota")}}},
        {"limits",
         {{"type", "object"},
          {"properties",
           {{"max_replicas", {{"type", "integer"}}},
            {"max_job_gpus", {{"type", "number"}}},
            {"default_duration_s", {{"type", "integer"}}},
            {"max_duration_s", {{"type", "integer"}}},
            {"max_pending_jobs", {{"type", "integer"}, {"minimum", 0}}}}}}},
        {"allow_gpu_cotenancy", {{"type", "boolean"}}}}}};
  Json token_request = {{"type", "object"},
                        {"additionalProperties", false},
                        {"required", {"name", "role"}},
                        {"properties",
                         {{"name", {{"type", "string"}}},
                          {"role", {{"type", "string"},
                                    {"enum", {"cluster-admin", "tenant-admin", "member", "viewer", "node-agent"}}}},
                          {"tenant", {{"type", "string"}}}}}};
  Json class_request = {{"type", "object"},
                        {"additionalProperties", false},
                        {"required", {"name", "value"}},
                        {"properties",
                         {{"name", {{"type", "string"}}},
                          {"value", {{"type", "integer"}}},
                          {"preemptible", {{"type", "boolean"}}},
                          {"may_borrow", {{"type", "boolean"}}},
                          {"grace_period_s", {{"type", "integer"}, {"minimum", 0}}}}}};
  Json rfc3339 = {{"type", "string"}, {"format", "date-time"}};
  Json reservation_request = {{"type", "object"},
                              {"additionalProperties", false},
                              {"required", {"flavor", "gpus", "start", "end"}},
                              {"properties",
                               {{"tenant", {{"type", "string"}}},
                                {"flavor", {{"type", "string"}}},
                                {"gpus", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100000}}},
                                {"start", rfc3339},
                                {"end", rfc3339},
                                {"maintenance", {{"type", "boolean"}}}}}};
  Json price = {{"oneOf", {{{"type", "string"}, {"pattern", "^[0-9]{1,7}(\\.[0-9]{1,6})?$"}}, {{"type", "number"}, {"minimum", 0}}}}};
  Json price_list = {{"type", "object"},
                     {"additionalProperties", false},
                     {"required", {"flavors"}},
                     {"properties",
                      {{"flavors", {{"type", "object"},
                                    {"additionalProperties",
                                     {{"type", "object"},
                                      {"additionalProperties", false},
                                      {"required", {"per_gpu_hour"}},
                                      {"properties", {{"per_gpu_hour", price}, {"on_demand_per_gpu_hour", price}}}}}}},
                       {"bill_reserved_idle", {{"type", "boolean"}}},
                       {"effective_from", {{"oneOf", {rfc3339, {{"type", "null"}}}}}}}}};
  return {{"Error", error},
          {"PriceList", price_list},
          {"ReservationRequest", reservation_request},
          {"Resources", resources},
          {"JobRequest", job_request},
          {"Job", job},
          {"Quota", quota},
          {"TenantRequest", tenant_request},
          {"TokenRequest", token_request},
          {"PriorityClassRequest", class_request},
          {"Page", page},
          {"Object", {{"type", "object"}}}};
}

}  // namespace

const std::vector<RouteDoc>& ApiRoutes() {
  static const std::vector<RouteDoc> routes = {
      {"get", "/healthz", "liveness", "anyone", "", 200},
      {"get", "/metrics", "Prometheus exposition", "anyone", "", 200},
      {"get", "/v1/openapi.json", "this document", "anyone", "", 200},
      {"get", "/v1/summary", "cluster summary (counts scoped to the caller)", "any token", "", 200},
      {"post", "/v1/jobs", "submit a job; Idempotency-Key makes retries safe", "cluster-admin, tenant-admin, member", "JobRequest", 201},
      {"get", "/v1/jobs", "list jobs, newest first (filters: tenant, state; pages: limit, cursor)", "any token (own tenant)", "", 200},
      {"get", "/v1/jobs/{id}", "a job with its pending reason and placement", "any token (own tenant)", "", 200},
      {"delete", "/v1/jobs/{id}", "cancel a job", "cluster-admin, tenant-admin, member", "", 200},
      {"get", "/v1/tenants", "list tenants with usage", "any token (own tenant)", "", 200},
      {"post", "/v1/tenants", "create a tenant", "cluster-admin", "TenantRequest", 201},
      {"get", "/v1/tenants/{name}", "a tenant with quotas and usage", "any token (own tenant)", "", 200},
      {"patch", "/v1/tenants/{name}", "update quotas, weight, limits", "cluster-admin", "TenantRequest", 200},
      {"delete", "/v1/tenants/{name}", "delete a tenant with no live jobs", "cluster-admin", "", 200},
      {"get", "/v1/priority-classes", "list priority classes", "any token", "", 200},
      {"post", "/v1/priority-classes", "create a priority class", "cluster-admin", "PriorityClassRequest", 201},
      {"get", "/v1/tokens", "list tokens (never their secrets)", "cluster-admin, tenant-admin (own tenant)", "", 200},
      {"post", "/v1/tokens", "create a token; the secret is returned once", "cluster-admin; tenant-admin for member/viewer", "TokenRequest", 201},
      {"delete", "/v1/tokens/{id}", "revoke a token", "cluster-admin, tenant-admin (own tenant)", "", 200},
      {"get", "/v1/nodes", "list nodes (tenants: those running their work); detail=devices adds each GPU with its MIG slices and occupants (other tenants' work shows as taken, unnamed)", "any token", "", 200},
      {"get", "/v1/nodes/{name}", "a node with its GPUs", "any token (as for the list)", "", 200},
      {"delete", "/v1/nodes/{name}", "remove a drained, empty node for good (409 otherwise); its name may be registered again as a new node", "cluster-admin", "", 200},
      {"post", "/v1/nodes/{name}/cordon", "no new work on the node", "cluster-admin", "", 200},
      {"post", "/v1/nodes/{name}/uncordon", "make the node schedulable", "cluster-admin", "", 200},
      {"post", "/v1/nodes/{name}/drain", "cordon and requeue the node's jobs", "cluster-admin", "", 200},
      {"get", "/v1/audit", "the audit log, newest first (pages: limit, cursor)", "cluster-admin, tenant-admin (own tenant)", "", 200},
      {"post", "/v1/reservations", "reserve GPUs of a flavor for [start, end); 409 names the short interval; maintenance windows (admins)", "cluster-admin, tenant-admin, member", "ReservationRequest", 201},
      {"get", "/v1/reservations", "list reservations and maintenance windows", "any token (own tenant; maintenance for all)", "", 200},
      {"get", "/v1/reservations/{id}", "a reservation", "any token (own tenant)", "", 200},
      {"delete", "/v1/reservations/{id}", "cancel a reservation", "cluster-admin, tenant-admin, member (own tenant); maintenance: cluster-admin", "", 200},
      {"get", "/v1/availability", "earliest start (flavor, gpus, duration_s[, after]) or reservable GPUs (flavor, start, end)", "any token", "", 200},
      {"get", "/v1/calendar", "per bucket: capacity, guaranteed, reserved, maintenance, free (flavor, start, end, step_s)", "any token", "", 200},
      {"get", "/v1/usage", "usage and cost per tenant, grouped by flavor and kind (from, to, tenant, group_by, format=json|csv)", "any token (own tenant)", "", 200},
      {"post", "/v1/agents/register", "a node agent registers its node and GPUs (docs/design/agent.md)", "cluster-admin; node-agent (the node of its name)", "Object", 200},
      {"post", "/v1/agents/{node}/heartbeat", "a node agent's heartbeat: replica states, logs, health; answers what to start, stop and forget", "cluster-admin; node-agent (the node of its name)", "Object", 200},
      {"get", "/v1/jobs/{id}/logs", "the last stdout and stderr of each replica, as its agent sent them", "any token (own tenant)", "", 200},
      {"get", "/v1/burst", "on-demand nodes (provisioning, ready, released) with their cost, and each tenant's burst policy and spend in its budget window", "any token (own tenant)", "", 200},
      {"get", "/v1/burst/settings", "the burst offers and tenants' policies in force, in the shape of the configuration's burst: section, with the provider (set in the file) and when the API last changed them", "cluster-admin", "", 200},
      {"put", "/v1/burst/settings", "replace the burst offers and tenants' policies from now on, without a restart (journaled, audited); the provider stays the configuration file's", "cluster-admin", "Object", 200},
      {"get", "/v1/prices", "the price list in force per flavor per GPU-hour, with `history`: every list and when it takes effect", "any token", "", 200},
      {"put", "/v1/prices", "a new price list from `effective_from` (now if absent, never in the past) on; usage before it keeps its prices", "cluster-admin", "PriceList", 200},
  };
  return routes;
}

std::string OpenApiDocument() {
  Json paths = Json::object();
  for (const RouteDoc& r : ApiRoutes()) {
    Json op = {{"summary", r.summary}, {"description", std::string("Who: ") + r.roles}};
    const std::string path = r.path;
    Json params = Json::array();
    for (size_t open = path.find('{'); open != std::string::npos; open = path.find('{', open + 1)) {
      const size_t close = path.find('}', open);
      params.push_back({{"name", path.substr(open + 1, close - open - 1)}, {"in", "path"}, {"required", true},
                        {"schema", {{"type", "string"}}}});
    }
    if (path == "/v1/jobs" && std::string(r.method) == "get") {
      params.push_back({{"name", "tenant"}, {"in", "query"}, {"schema", {{"type", "string"}}}});
      params.push_back({{"name", "state"}, {"in", "query"}, {"schema", {{"type", "string"}}}});
    }
    const auto query = [&](const char* name, const char* type) {
      params.push_back({{"name", name}, {"in", "query"}, {"schema", {{"type", type}}}});
    };
    if (path == "/v1/availability") {
      for (const char* n : {"flavor", "gpus", "duration_s", "after", "start", "end"}) {
        query(n, std::string(n) == "gpus" || std::string(n) == "duration_s" ? "integer" : "string");
      }
    }
    if (path == "/v1/usage") {
      for (const char* n : {"from", "to", "tenant", "group_by", "format"}) query(n, "string");
    }
    if (path == "/v1/nodes") query("detail", "string");
    const bool paged = (path == "/v1/jobs" || path == "/v1/audit") && std::string(r.method) == "get";
    if (paged) {
      params.push_back({{"name", "limit"}, {"in", "query"},
                        {"description", "items per page; without it, the whole list (next_cursor null)"},
                        {"schema", {{"type", "integer"}, {"minimum", 1}, {"maximum", 1000}}}});
      params.push_back({{"name", "cursor"}, {"in", "query"},
                        {"description", "the next_cursor of the previous page, unchanged (opaque; a position, "
                                        "valid for this list only)"},
                        {"schema", {{"type", "string"}, {"maxLength", 64}}}});
    }
    if (path == "/v1/calendar") {
      for (const char* n : {"flavor", "start", "end", "step_s"}) query(n, std::string(n) == "step_s" ? "integer" : "string");
    }
    if (path == "/v1/jobs" && std::string(r.method) == "post") {
      params.push_back({{"name", "Idempotency-Key"}, {"in", "header"}, {"schema", {{"type", "string"}, {"maxLength", 128}}}});
    }
    if (!params.empty()) op["parameters"] = params;
    if (*r.request) {
      op["requestBody"] = {{"required", true},
                           {"content", {{"application/json", {{"schema", Ref(r.request)}}}}}};
    }
    const bool open = path == "/healthz" || path == "/metrics" || path == "/v1/openapi.json";
    Json responses = {{std::to_string(r.success),
                       {{"description", "success"},
                        {"content", {{"application/json", {{"schema", Ref(paged ? "Page" : path.rfind("/v1/jobs/", 0) == 0 ? "Job" : "Object")}}}}}}}};
    if (!open) {
      Json err = {{"content", {{"application/json", {{"schema", Ref("Error")}}}}}};
      for (auto [code, what] : {std::pair{"400", "bad input"}, {"401", "no or invalid token"},
                                {"403", "role may not"}, {"404", "not found or not yours"},
                                {"409", "conflict"}, {"413", "body too large"},
                                {"503", "journal unavailable"}}) {
        Json e = err;
        e["description"] = what;
        responses[code] = e;
      }
    } else {
      op["security"] = Json::array();
    }
    op["responses"] = responses;
    paths[path][r.method] = op;
  }
  const Json doc = {
      {"openapi", "3.0.3"},
      {"info", {{"title", "gpupool"}, {"version", "0.1.0"},
                {"description", "Multi-tenant GPU cluster control plane. Errors are {\"error\": "
                                "{code, message, details}}; another tenant's objects are 404."}}},
      {"servers", Json::array({{{"url", "/"}}})},
      {"security", Json::array({{{"bearer", Json::array()}}})},
      {"paths", paths},
      {"components",
       {{"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}},
        {"schemas", Schemas()}}}};
  return doc.dump(2);
}

}  // namespace gpupool
