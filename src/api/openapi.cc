#include "api/openapi.h"

#include <nlohmann/json.hpp>

namespace gpupool {
namespace {

using Json = nlohmann::json;

Json Ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

Json Rfc3339() { return {{"type", "string"}, {"format", "date-time"}}; }

// The shapes every answer shares: errors and pages.
void CommonSchemas(Json& out) {
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
  Json page = {{"type", "object"},
               {"description", "a page of a list, newest first"},
               {"required", {"items", "next_cursor"}},
               {"properties",
                {{"items", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                 {"next_cursor", {{"type", "string"}, {"nullable", true},
                                  {"description", "pass as cursor for the next (older) page; null at the end"}}}}}};
  out["Error"] = error;
  out["Page"] = page;
  out["Object"] = {{"type", "object"}};
}

void JobSchemas(Json& out) {
  Json resources = {
      {"type", "object"},
      {"description", "exactly one of gpus, mig_profile, gpu_fraction (with memory_gb); one of flavor, flavors"},
      {"additionalProperties", false},
      {"properties",
       {{"flavor", {{"type", "string"}, {"example", "h100-80gb"}, {"description", "the GPU model; while pending, the one tried first"}}},
        {"flavors",
         {{"type", "array"},
          {"items", {{"type", "string"}}},
          {"minItems", 1},
          {"maxItems", 8},  // kMaxFlavorsPerJob (model/job.h)
          {"description", "GPU models the job accepts, by preference: it runs on the first with room (not with mig_profile)"}}},
        {"gpus", {{"type", "integer"}, {"minimum", 0}, {"maximum", 16}, {"description", "0: no GPU, only cpu_milli and memory_mib on a node of the flavor"}}},
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
                {"placement", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                {"service",
                 {{"type", "object"},
                  {"description", "pending or running jobs: the service queue policies order by"},
                  {"properties",
                   {{"attained_gpu_s", {{"type", "integer"}, {"description", "GPUs x time run, every attempt"}}},
                    {"ran_s", {{"type", "integer"}}},
                    {"remaining_gpu_s",
                     {{"type", "integer"}, {"description", "GPUs x (estimate - time run); absent without an estimate"}}}}}}}}}};
  out["Resources"] = resources;
  out["JobRequest"] = job_request;
  out["Job"] = job;
}

void TenantSchemas(Json& out) {
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
        {"allow_gpu_cotenancy", {{"type", "boolean"}}},
        {"queue_policy", {{"type", "string"}, {"enum", {"", "fifo", "las", "srsf", "sjf"}}}}}}};
  Json token_request = {{"type", "object"},
                        {"additionalProperties", false},
                        {"required", {"name", "role"}},
                        {"properties",
                         {{"name", {{"type", "string"}}},
                          {"role", {{"type", "string"},
                                    {"enum", {"cluster-admin", "tenant-admin", "member", "viewer", "node-agent",
                                              "metrics-reader"}}}},
                          {"tenant", {{"type", "string"}}},
                          {"expires_in_days", {{"type", "integer"}, {"minimum", 1}}}}}};
  Json class_request = {{"type", "object"},
                        {"additionalProperties", false},
                        {"required", {"name", "value"}},
                        {"properties",
                         {{"name", {{"type", "string"}}},
                          {"value", {{"type", "integer"}}},
                          {"preemptible", {{"type", "boolean"}}},
                          {"may_borrow", {{"type", "boolean"}}},
                          {"grace_period_s", {{"type", "integer"}, {"minimum", 0}}}}}};
  out["Quota"] = quota;
  out["TenantRequest"] = tenant_request;
  out["TokenRequest"] = token_request;
  out["PriorityClassRequest"] = class_request;
}

void CapacitySchemas(Json& out) {
  const Json rfc3339 = Rfc3339();
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
  out["ReservationRequest"] = reservation_request;
  out["PriceList"] = price_list;
}

Json Schemas() {
  Json out = Json::object();
  CommonSchemas(out);
  JobSchemas(out);
  TenantSchemas(out);
  CapacitySchemas(out);
  return out;
}

Json Parameter(const std::string& name, const std::string& in, Json schema, const std::string& description = "") {
  Json p = {{"name", name}, {"in", in}, {"schema", std::move(schema)}};
  if (in == "path") p["required"] = true;
  if (!description.empty()) p["description"] = description;
  return p;
}

Json Parameters(const DocumentedRoute& r) {
  Json params = Json::array();
  for (size_t open = r.path.find('{'); open != std::string::npos; open = r.path.find('{', open + 1)) {
    const size_t close = r.path.find('}', open);
    params.push_back(Parameter(r.path.substr(open + 1, close - open - 1), "path", {{"type", "string"}}));
  }
  for (const QueryParam& q : r.op.query) params.push_back(Parameter(q.name, "query", {{"type", q.type}}, q.description));
  if (r.op.paged) {
    params.push_back(Parameter("limit", "query", {{"type", "integer"}, {"minimum", 1}, {"maximum", 1000}},
                               "items per page; without it, the whole list (next_cursor null)"));
    params.push_back(Parameter("cursor", "query", {{"type", "string"}, {"maxLength", 64}},
                               "the next_cursor of the previous page, unchanged (opaque; a position, valid for "
                               "this list only)"));
  }
  if (!r.op.header.empty()) {
    params.push_back(Parameter(r.op.header, "header", {{"type", "string"}, {"maxLength", 128}}));
  }
  return params;
}

Json Responses(const OpenApiOperation& op) {
  Json responses = {{std::to_string(op.success),
                     {{"description", "success"},
                      {"content", {{"application/json", {{"schema", Ref(op.paged ? "Page" : op.response)}}}}}}}};
  if (op.open) return responses;
  const Json err = {{"content", {{"application/json", {{"schema", Ref("Error")}}}}}};
  for (auto [code, what] : {std::pair{"400", "bad input"}, {"401", "no or invalid token"}, {"403", "role may not"},
                            {"404", "not found or not yours"}, {"409", "conflict"}, {"413", "body too large"},
                            {"429", "too many connections"}, {"503", "journal unavailable"}}) {
    Json e = err;
    e["description"] = what;
    responses[code] = std::move(e);
  }
  return responses;
}

Json Operation(const DocumentedRoute& r) {
  Json op = {{"summary", r.op.summary},
             {"description", "Who: " + r.op.who},
             {"x-minimum-role", r.minimum_role},
             {"responses", Responses(r.op)}};
  if (Json params = Parameters(r); !params.empty()) op["parameters"] = std::move(params);
  if (!r.op.request.empty()) {
    op["requestBody"] = {{"required", true}, {"content", {{"application/json", {{"schema", Ref(r.op.request)}}}}}};
  }
  if (r.op.open) op["security"] = Json::array();
  return op;
}

}  // namespace

std::string OpenApiDocument(const std::vector<DocumentedRoute>& routes) {
  Json paths = Json::object();
  for (const DocumentedRoute& r : routes) {
    std::string method = r.method;
    for (char& ch : method) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    paths[r.path][method] = Operation(r);
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
