// The route table the daemon serves and the one /v1/openapi.json documents are the same set.
#include "daemon/http_api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "api/openapi.h"

namespace gpupool {
namespace {

TEST(HttpRoutes, AreExactlyTheDocumentedOnes) {
  std::set<std::string> served, documented;
  for (const Route& r : HttpRoutes()) {
    std::string m = r.method;
    std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
    EXPECT_TRUE(served.insert(m + " " + r.pattern).second) << "served twice: " << m << " " << r.pattern;
  }
  for (const RouteDoc& d : ApiRoutes()) {
    const std::string key = std::string(d.method) + " " + d.path;
    // Served by the front end's own threads, outside the table.
    if (key == "get /healthz" || key == "get /metrics" || key == "get /v1/openapi.json") continue;
    documented.insert(key);
  }
  for (const std::string& s : served) EXPECT_TRUE(documented.count(s)) << "served, not documented: " << s;
  for (const std::string& d : documented) EXPECT_TRUE(served.count(d)) << "documented, not served: " << d;
  EXPECT_GE(served.size(), 30u);
}

}  // namespace
}  // namespace gpupool
