// The OpenAPI 3 description of /v1, served at GET /v1/openapi.json. Built from one table of
// routes (api/openapi.cc) so that a route the server has and the document lacks fails the
// integration test that compares them.
#pragma once

#include <string>
#include <vector>

namespace gpupool {

struct RouteDoc {
  const char* method;   // "get", "post", "patch", "delete"
  const char* path;     // OpenAPI template, e.g. "/v1/jobs/{id}"
  const char* summary;
  const char* roles;    // who may call it, in words
  const char* request;  // schema name of the body, or ""
  int success;          // the 2xx status
};

const std::vector<RouteDoc>& ApiRoutes();
std::string OpenApiDocument();

}  // namespace gpupool
