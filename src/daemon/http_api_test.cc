// The route table the daemon serves is the one /v1/openapi.json documents: the document is
// generated from it.
#include "daemon/http_api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <nlohmann/json.hpp>
#include <string>

#include "api/openapi.h"

namespace gpupool {
namespace {

// The document is generated from the router's own table: every served route is in it, with its
// method, minimum role and parameters, and it documents nothing that is not served.
TEST(HttpRoutes, TheDocumentIsGeneratedFromTheRouteTable) {
  const nlohmann::json doc = nlohmann::json::parse(OpenApiDocument(DocumentedRoutes()));
  EXPECT_EQ(doc["openapi"], "3.0.3");
  std::set<std::string> served, documented;
  for (const Route& r : HttpRoutes()) {
    std::string m = r.method;
    std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
    EXPECT_TRUE(served.insert(m + " " + r.pattern).second) << "served twice: " << m << " " << r.pattern;
    ASSERT_TRUE(doc["paths"].contains(r.pattern)) << r.pattern;
    const nlohmann::json& op = doc["paths"][r.pattern][m];
    ASSERT_TRUE(op.is_object()) << m << " " << r.pattern;
    EXPECT_FALSE(op["summary"].get<std::string>().empty()) << r.pattern;
    EXPECT_EQ(op.contains("requestBody"), r.takes_body) << m << " " << r.pattern;
    EXPECT_TRUE(op["responses"].contains("403")) << r.pattern;
  }
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const auto& [method, op] : ops.items()) documented.insert(method + " " + path);
  }
  for (const char* own : {"get /healthz", "get /metrics", "get /v1/openapi.json", "get /v1/auth", "get /v1/auth/login",
                          "get /v1/auth/callback", "get /v1/auth/session", "post /v1/auth/logout"}) {
    EXPECT_TRUE(documented.erase(own)) << own;
  }
  EXPECT_EQ(served, documented);
  EXPECT_GE(served.size(), 30u);
  // The role the router checks before the body is read is the one the document names.
  EXPECT_EQ(doc["paths"]["/v1/tenants"]["post"]["x-minimum-role"], "cluster-admin");
  EXPECT_EQ(doc["paths"]["/v1/jobs"]["post"]["x-minimum-role"], "member");
  EXPECT_EQ(doc["paths"]["/v1/audit"]["get"]["x-minimum-role"], "tenant-admin");
  EXPECT_EQ(doc["paths"]["/v1/agents/{node}/heartbeat"]["post"]["x-minimum-role"], "node-agent");
  EXPECT_EQ(doc["paths"]["/v1/jobs"]["get"]["x-minimum-role"], "any token");
  EXPECT_EQ(doc["paths"]["/healthz"]["get"]["security"], nlohmann::json::array());
}

TEST(HttpRoutes, TheDocumentHasParametersSchemasAndPages) {
  const nlohmann::json doc = nlohmann::json::parse(OpenApiDocument(DocumentedRoutes()));
  EXPECT_TRUE(doc["components"]["schemas"].contains("JobRequest"));
  EXPECT_EQ(doc["paths"]["/v1/jobs/{id}"]["get"]["parameters"][0]["name"], "id");
  EXPECT_EQ(doc["paths"]["/v1/nodes/{name}/drain"]["post"]["parameters"][0]["in"], "path");
  EXPECT_EQ(doc["paths"]["/v1/jobs"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/JobRequest");
  EXPECT_EQ(doc["paths"]["/v1/jobs"]["post"]["parameters"][0]["name"], "Idempotency-Key");
  for (const char* list : {"/v1/jobs", "/v1/audit"}) {
    std::set<std::string> params;
    for (const nlohmann::json& p : doc["paths"][list]["get"]["parameters"]) params.insert(p["name"]);
    EXPECT_TRUE(params.count("limit") && params.count("cursor")) << list;
    EXPECT_EQ(doc["paths"][list]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
              "#/components/schemas/Page");
  }
  std::set<std::string> availability;
  for (const nlohmann::json& p : doc["paths"]["/v1/availability"]["get"]["parameters"]) {
    availability.insert(p["name"].get<std::string>() + ":" + p["schema"]["type"].get<std::string>());
  }
  EXPECT_TRUE(availability.count("gpus:integer") && availability.count("flavor:string"));
  EXPECT_TRUE(doc["components"]["schemas"]["Page"]["properties"].contains("next_cursor"));
  // Every schema a route names is defined.
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      if (!op.contains("requestBody")) continue;
      const std::string ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"];
      EXPECT_TRUE(doc["components"]["schemas"].contains(ref.substr(ref.rfind('/') + 1))) << method << " " << path;
    }
  }
}

}  // namespace
}  // namespace gpupool
