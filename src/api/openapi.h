// The OpenAPI 3 description of /v1, served at GET /v1/openapi.json. It is generated from the
// daemon's one route table (daemon/http_api.cc): each row carries its OpenApiOperation next to
// its method, path, minimum role and handler, so a route cannot be served and not documented, or
// documented and not served. This file holds the schemas and the rendering.
#pragma once

#include <string>
#include <vector>

namespace gpupool {

struct QueryParam {
  std::string name;
  std::string type = "string";  // a JSON Schema type: "string", "integer"
  std::string description;
};

// What the document says of one route, beyond its method and path.
struct OpenApiOperation {
  std::string summary;
  std::string who;      // who may call it, in words, with what the handler scopes
  std::string request;  // the schema name of the body, or "" (none)
  int success = 200;    // the 2xx status
  std::vector<QueryParam> query;
  std::string header;   // a request header the route reads ("Idempotency-Key"), or ""
  bool paged = false;   // the answer is a Page (limit and cursor parameters)
  std::string response = "Object";  // the schema of the answer when not paged
  bool open = false;    // served without a token (/healthz, /metrics, this document)
};

struct DocumentedRoute {
  std::string method;        // "GET", "POST", ...
  std::string path;          // an OpenAPI template: "/v1/jobs/{id}"
  std::string minimum_role;  // the role the router checks before the body is read
  OpenApiOperation op;
};

// The document for these routes (JSON text, indented).
std::string OpenApiDocument(const std::vector<DocumentedRoute>& routes);

}  // namespace gpupool
