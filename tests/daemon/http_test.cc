// The daemon over real HTTP: the isolation matrix (every endpoint x every role x own and other
// tenant), the bad-input table, the OpenAPI document against the routes, and /metrics.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "daemon/daemon_process.h"

namespace gpupool::testing {
namespace {

constexpr const char* kConfig = R"(
scheduler: {tick_ms: 20}
tenants:
  - {name: alpha, quotas: {h100-80gb: {guaranteed: 12}}}
  - {name: beta, quotas: {h100-80gb: {guaranteed: 12}}}
nodes:
  - {name: n, count: 4, flavor: h100-80gb, gpus: 8}
prices:
  flavors: {h100-80gb: {per_gpu_hour: "4.00", on_demand_per_gpu_hour: "9.00"}}
burst:
  offers: {h100-80gb: {gpus_per_node: 8, per_gpu_hour: "9.00", provisioning_delay_s: 60, max_nodes: 2}}
)";
constexpr const char* kPrices = R"({"flavors": {"h100-80gb": {"per_gpu_hour": "4.00", "on_demand_per_gpu_hour": 9}}})";
// The burst section of kConfig, as PUT /v1/burst/settings takes it (no tenant bursts).
constexpr const char* kBurst =
    R"({"offers": {"h100-80gb": {"gpus_per_node": 8, "per_gpu_hour": "9.00", "provisioning_delay_s": 60, "max_nodes": 2}}})";

std::string JobBody(const std::string& tenant, const std::string& name, int gpus = 8) {
  return Json({{"tenant", tenant}, {"name", name}, {"priority_class", "training"}, {"replicas", 1},
               {"resources", {{"flavor", "h100-80gb"}, {"gpus", gpus}}},
               {"duration_estimate_s", 3600}, {"command", {"python", "train.py"}}})
      .dump();
}

// Sends `request` as it is on a new connection to 127.0.0.1:port and returns all it reads back.
std::string RawRequest(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

class DaemonHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto dir = FreshDir("http");
    std::ofstream(dir / "cluster.yaml") << kConfig;
    // The simulated executor runs what is placed: these tests are of the API, not of agents (a
    // node without an agent would be not_ready).
    // The matrix makes hundreds of unauthenticated calls from one address on purpose.
    daemon_ = new DaemonProcess(dir, {"--config", (dir / "cluster.yaml").string(), "--simulate-executor",
                                      "--max-auth-failures", "0"});
    ASSERT_TRUE(daemon_->ok()) << daemon_->log();
    httplib::Client c = daemon_->Client();
    tokens_["admin"] = daemon_->admin_token();
    auto make = [&](const std::string& who, const std::string& role, const std::string& tenant) {
      Response r = Call(c, "POST", "/v1/tokens", tokens_["admin"],
                        Json({{"name", who}, {"role", role}, {"tenant", tenant}}).dump());
      ASSERT_EQ(r.status, 201) << r.body.dump();
      tokens_[who] = r.body["token"];
    };
    make("alpha-admin", "tenant-admin", "alpha");
    make("alpha-member", "member", "alpha");
    make("alpha-viewer", "viewer", "alpha");
    make("beta-admin", "tenant-admin", "beta");
    make("beta-member", "member", "beta");
    // The agent of node iso-node: no tenant, its name is its node. And the agent token of a
    // node the cluster does not have (ghost-node), which may not create it.
    for (const auto& [who, node] : {std::pair<std::string, std::string>{"node-agent", "iso-node"}, {"ghost-agent", "ghost-node"}}) {
      Response r = Call(c, "POST", "/v1/tokens", tokens_["admin"], Json({{"name", node}, {"role", "node-agent"}}).dump());
      ASSERT_EQ(r.status, 201) << r.body.dump();
      tokens_[who] = r.body["token"];
    }
    tokens_["anonymous"] = "";
    tokens_["forged"] = "gp_000000000000_" + std::string(48, 'a');
    for (const std::string t : {"alpha", "beta"}) {
      Response r = Call(c, "POST", "/v1/jobs", tokens_[t + "-member"], JobBody(t, t + "-job"));
      ASSERT_EQ(r.status, 201) << r.body.dump();
      jobs_[t] = r.body["id"];
    }
    // Both 8-GPU jobs are placed, each on a node of its own.
    for (int i = 0; i < 200; ++i) {
      Response a = Call(c, "GET", "/v1/jobs/" + jobs_["alpha"], tokens_["admin"]);
      Response b = Call(c, "GET", "/v1/jobs/" + jobs_["beta"], tokens_["admin"]);
      if (a.body["state"] == "running" && b.body["state"] == "running") {
        nodes_["alpha"] = a.body["placement"][0]["node"];
        nodes_["beta"] = b.body["placement"][0]["node"];
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_FALSE(nodes_["alpha"].empty());
    ASSERT_NE(nodes_["alpha"], nodes_["beta"]);
    for (const char* n : {"n-0", "n-1", "n-2", "n-3"}) {
      if (n != nodes_["alpha"] && n != nodes_["beta"]) nodes_["spare"] = n;
    }
    // A node-agent token registers only a node the cluster has: a cluster admin adds iso-node
    // (one GPU), after the fixture's jobs are placed.
    Response r = Call(c, "POST", "/v1/agents/register", tokens_["admin"],
                      Json({{"node", "iso-node"}, {"flavor", "h100-80gb"}, {"gpus", {{{"index", 0}, {"uuid", "GPU-iso-node"}}}}}).dump());
    ASSERT_EQ(r.status, 200) << r.body.dump();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  static DaemonProcess* daemon_;
  static std::map<std::string, std::string> tokens_, jobs_, nodes_;
};
DaemonProcess* DaemonHttp::daemon_ = nullptr;
std::map<std::string, std::string> DaemonHttp::tokens_, DaemonHttp::jobs_, DaemonHttp::nodes_;

// GET, returning one member of the body by value (a range-for over a member of a temporary
// would dangle).
Json Get(httplib::Client& c, const std::string& path, const std::string& token, const std::string& key) {
  return Call(c, "GET", path, token).body[key];
}

// One row of the matrix: a request made by `who` against tenant `target` ("alpha" is the
// callers' own tenant for alpha-*, "beta" the other one), and the status expected.
struct Case {
  std::string route;  // the OpenAPI route this row covers, "METHOD /path"
  std::string who, target;
  int expect;
};

const std::vector<std::string> kCallers = {"admin", "alpha-admin", "alpha-member", "alpha-viewer", "node-agent",
                                           "anonymous", "forged"};

// The expected status for a caller, from the rules: 401 without a valid token; a node agent's
// token is refused everywhere but the agent routes; another tenant's objects are 404; then the
// role decides.
int Expect(const std::string& who, const std::string& target, int admin, int tenant_admin, int member, int viewer,
           bool other_is_404 = true) {
  if (who == "anonymous" || who == "forged") return 401;
  if (who == "node-agent") return 403;
  if (who == "admin") return admin;
  const int mine = who == "alpha-admin" ? tenant_admin : who == "alpha-member" ? member : viewer;
  // A role the route refuses is refused before the target is looked up (so before the body is
  // read): 403 whoever's object it is, which says nothing about whether it exists.
  if (mine == 403) return 403;
  if (target == "beta" && other_is_404) return 404;
  return mine;
}

TEST_F(DaemonHttp, IsolationMatrix) {
  httplib::Client c = daemon_->Client();
  std::set<std::string> covered;
  int checked = 0, serial = 0;
  auto check = [&](const std::string& route, const std::string& who, const std::string& target, int expect,
                   const std::string& method, const std::string& path, const std::string& body = "") {
    covered.insert(route);
    Response r = Call(c, method, path, tokens_[who], body);
    EXPECT_EQ(r.status, expect) << route << " as " << who << " on " << target << " (" << method << " " << path
                                << "): " << r.body.dump();
    if (r.status >= 400) {
      EXPECT_TRUE(r.body.contains("error") && r.body["error"].contains("code") &&
                  r.body["error"].contains("message") && r.body["error"].contains("details"))
          << route << ": " << r.body.dump();
    }
    ++checked;
    return r;
  };
  // A fresh job of `tenant`, made by the admin, for a mutation that consumes it.
  auto fresh_job = [&](const std::string& tenant) {
    Response r = Call(c, "POST", "/v1/jobs", tokens_["admin"], JobBody(tenant, "f" + std::to_string(++serial), 1));
    EXPECT_EQ(r.status, 201);
    return r.body["id"].get<std::string>();
  };
  // Reservations of 1 GPU, each in an hour of its own in 2030 (8 GPUs are reservable).
  auto reservation = [&](const std::string& tenant) {
    const int64_t start = 1893456000 + 3600 * ++serial;  // 2030-01-01T00:00:00Z + serial hours
    auto rfc = [](int64_t s) {
      const int64_t h = (s - 1893456000) / 3600;
      char buf[32];
      std::snprintf(buf, sizeof buf, "2030-%02d-%02dT%02d:00:00Z", 1 + static_cast<int>(h / 24 / 28),
                    1 + static_cast<int>(h / 24 % 28), static_cast<int>(h % 24));
      return std::string(buf);
    };
    return Json({{"tenant", tenant}, {"flavor", "h100-80gb"}, {"gpus", 1}, {"start", rfc(start)},
                 {"end", rfc(start + 3600)}}).dump();
  };
  auto fresh_reservation = [&](const std::string& tenant) {
    Response r = Call(c, "POST", "/v1/reservations", tokens_["admin"], reservation(tenant));
    EXPECT_EQ(r.status, 201) << r.body.dump();
    return r.body["id"].get<std::string>();
  };
  auto fresh_token = [&](const std::string& tenant) {
    Response r = Call(c, "POST", "/v1/tokens", tokens_["admin"],
                      Json({{"name", "t" + std::to_string(++serial)}, {"role", "viewer"}, {"tenant", tenant}}).dump());
    EXPECT_EQ(r.status, 201);
    return r.body["id"].get<std::string>();
  };

  auto fresh_account = [&](const std::string& tenant) {
    const std::string name = "sa-" + std::to_string(++serial);
    Response r = Call(c, "POST", "/v1/tenants/" + tenant + "/service-accounts", tokens_["admin"],
                      Json({{"name", name}, {"role", "member"}}).dump());
    EXPECT_EQ(r.status, 201) << r.body.dump();
    return name;
  };

  for (const std::string& who : kCallers) {
    for (const std::string target : {"alpha", "beta"}) {
      const std::string job = "/v1/jobs/" + jobs_[target];
      check("get /v1/jobs/{id}", who, target, Expect(who, target, 200, 200, 200, 200), "GET", job);
      check("delete /v1/jobs/{id}", who, target, Expect(who, target, 200, 200, 200, 403), "DELETE",
            "/v1/jobs/" + fresh_job(target));
      check("post /v1/jobs", who, target, Expect(who, target, 201, 201, 201, 403), "POST", "/v1/jobs",
            JobBody(target, "p" + std::to_string(++serial), 1));
      check("get /v1/jobs", who, target, Expect(who, target, 200, 200, 200, 200), "GET", "/v1/jobs?tenant=" + target);
      check("get /v1/jobs", who, target, Expect(who, target, 200, 200, 200, 200), "GET",
            "/v1/jobs?limit=1&tenant=" + target);
      // A cursor from a listing of the target's jobs is only a position: whoever presents it
      // gets their own jobs below it, never the target's.
      const Json cursor = Call(c, "GET", "/v1/jobs?limit=1&tenant=" + target, tokens_["admin"]).body["next_cursor"];
      EXPECT_TRUE(cursor.is_string()) << target << " has more than one job here";
      Response paged = check("get /v1/jobs", who, target, Expect(who, target, 200, 200, 200, 200, false), "GET",
                             "/v1/jobs?limit=5&cursor=" + (cursor.is_string() ? cursor.get<std::string>() : ""));
      if (who.rfind("alpha-", 0) == 0) {
        for (const Json& j : paged.body["items"]) EXPECT_EQ(j["tenant"], "alpha") << who << " with " << target << "'s cursor";
      }
      check("get /v1/tenants/{name}", who, target, Expect(who, target, 200, 200, 200, 200), "GET", "/v1/tenants/" + target);
      check("patch /v1/tenants/{name}", who, target, Expect(who, target, 200, 403, 403, 403), "PATCH",
            "/v1/tenants/" + target, R"({"weight": 1})");
      check("post /v1/tokens", who, target, Expect(who, target, 201, 201, 403, 403), "POST", "/v1/tokens",
            Json({{"name", "k" + std::to_string(++serial)}, {"role", "member"}, {"tenant", target}}).dump());
      check("delete /v1/tokens/{id}", who, target, Expect(who, target, 200, 200, 404, 404), "DELETE",
            "/v1/tokens/" + fresh_token(target));
      check("post /v1/tokens/{id}/rotate", who, target, Expect(who, target, 201, 201, 404, 404), "POST",
            "/v1/tokens/" + fresh_token(target) + "/rotate", R"({"grace_s": 60})");
      const std::string accounts = "/v1/tenants/" + target + "/service-accounts";
      check("get /v1/tenants/{name}/service-accounts", who, target, Expect(who, target, 200, 200, 403, 403), "GET",
            accounts);
      check("post /v1/tenants/{name}/service-accounts", who, target, Expect(who, target, 201, 201, 403, 403), "POST",
            accounts, Json({{"name", "sa-" + std::to_string(++serial)}, {"role", "viewer"}}).dump());
      check("post /v1/tenants/{name}/service-accounts/{account}/tokens", who, target,
            Expect(who, target, 201, 201, 403, 403), "POST", accounts + "/" + fresh_account(target) + "/tokens", "{}");
      check("delete /v1/tenants/{name}/service-accounts/{account}", who, target, Expect(who, target, 200, 200, 403, 403),
            "DELETE", accounts + "/" + fresh_account(target));
      check("post /v1/reservations", who, target, Expect(who, target, 201, 201, 201, 403), "POST",
            "/v1/reservations", reservation(target));
      check("get /v1/reservations/{id}", who, target, Expect(who, target, 200, 200, 200, 200), "GET",
            "/v1/reservations/" + fresh_reservation(target));
      check("delete /v1/reservations/{id}", who, target, Expect(who, target, 200, 200, 200, 403), "DELETE",
            "/v1/reservations/" + fresh_reservation(target));
      check("get /v1/jobs/{id}/logs", who, target, Expect(who, target, 200, 200, 200, 200), "GET", job + "/logs");
      check("get /v1/usage", who, target, Expect(who, target, 200, 200, 200, 200), "GET",
            "/v1/usage?from=2020-01-01T00:00:00Z&tenant=" + target);
      const std::string node = "/v1/nodes/" + nodes_[target];
      check("get /v1/nodes/{name}", who, target, Expect(who, target, 200, 200, 200, 200), "GET", node);
      // Deleting: the admin removes a drained one-GPU node made for it; the others try the
      // target's node (their own: 403; the other tenant's: 404).
      std::string doomed = node;
      if (who == "admin") {
        const std::string name = "del-" + std::to_string(++serial);
        EXPECT_EQ(Call(c, "POST", "/v1/agents/register", tokens_["admin"],
                       Json({{"node", name}, {"flavor", "h100-80gb"}, {"gpus", {{{"index", 0}, {"uuid", "GPU-" + name}}}}}).dump())
                      .status, 200);
        EXPECT_EQ(Call(c, "POST", "/v1/nodes/" + name + "/drain", tokens_["admin"]).status, 200);
        doomed = "/v1/nodes/" + name;
      }
      check("delete /v1/nodes/{name}", who, target, Expect(who, target, 200, 403, 403, 403), "DELETE", doomed);
      // The admin acts on the spare node (so the fixture's jobs stay put) and undoes it.
      for (const std::string action : {"cordon", "drain", "uncordon"}) {
        check("post /v1/nodes/{name}/" + action, who, target, Expect(who, target, 200, 403, 403, 403), "POST",
              (who == "admin" ? "/v1/nodes/" + nodes_["spare"] : node) + "/" + action);
      }
    }
    // Routes without a tenant in the path.
    check("get /v1/summary", who, "-", Expect(who, "alpha", 200, 200, 200, 200), "GET", "/v1/summary");
    check("get /v1/tenants", who, "-", Expect(who, "alpha", 200, 200, 200, 200), "GET", "/v1/tenants");
    check("post /v1/tenants", who, "-", Expect(who, "alpha", 201, 403, 403, 403), "POST", "/v1/tenants",
          Json({{"name", "t" + std::to_string(++serial)}}).dump());
    check("delete /v1/tenants/{name}", who, "-", Expect(who, "alpha", 200, 403, 403, 403), "DELETE",
          "/v1/tenants/" + (who == "admin" ? "t" + std::to_string(serial) : std::string("alpha")));
    check("get /v1/priority-classes", who, "-", Expect(who, "alpha", 200, 200, 200, 200), "GET", "/v1/priority-classes");
    check("post /v1/priority-classes", who, "-", Expect(who, "alpha", 201, 403, 403, 403), "POST",
          "/v1/priority-classes", Json({{"name", "c" + std::to_string(++serial)}, {"value", 5}}).dump());
    check("get /v1/tokens", who, "-", Expect(who, "alpha", 200, 200, 200, 200), "GET", "/v1/tokens");
    check("get /v1/nodes", who, "-", Expect(who, "alpha", 200, 200, 200, 200), "GET", "/v1/nodes");
    check("get /v1/audit", who, "-", Expect(who, "alpha", 200, 200, 403, 403), "GET", "/v1/audit");
    // The admin's cursor (a position among every tenant's entries) in a tenant admin's hands.
    const Json audit_cursor = Call(c, "GET", "/v1/audit?limit=1", tokens_["admin"]).body["next_cursor"];
    ASSERT_TRUE(audit_cursor.is_string());
    Response audit = check("get /v1/audit", who, "-", Expect(who, "alpha", 200, 200, 403, 403), "GET",
                           "/v1/audit?limit=3&cursor=" + audit_cursor.get<std::string>());
    if (who == "alpha-admin") {
      for (const Json& a : audit.body["items"]) EXPECT_EQ(a["tenant"], "alpha") << a.dump();
    }
    check("get /v1/reservations", who, "-", Expect(who, "alpha", 200, 200, 200, 200), "GET", "/v1/reservations");
    check("get /v1/availability", who, "-", Expect(who, "alpha", 200, 200, 200, 200), "GET",
          "/v1/availability?flavor=h100-80gb&gpus=2&duration_s=3600");
    check("get /v1/calendar", who, "-", Expect(who, "alpha", 200, 200, 200, 200), "GET",
          "/v1/calendar?flavor=h100-80gb&start=2030-01-01T00:00:00Z&end=2030-01-02T00:00:00Z&step_s=3600");
    // A node-agent token speaks for the node of its name (iso-node, registered by the admin in
    // the fixture) and no other.
    const bool agent_token = who == "node-agent";
    const std::string agent = agent_token ? "iso-node" : "iso-agent-" + std::to_string(++serial);
    const int as_agent = agent_token ? 200 : Expect(who, "alpha", 200, 403, 403, 403);
    check("post /v1/agents/register", who, "-", as_agent, "POST", "/v1/agents/register",
          Json({{"node", agent}, {"flavor", "h100-80gb"}, {"gpus", {{{"index", 0}, {"uuid", "GPU-" + agent}}}}}).dump());
    check("post /v1/agents/{node}/heartbeat", who, "-", as_agent, "POST", "/v1/agents/" + agent + "/heartbeat", "{}");
    if (agent_token) {
      check("post /v1/agents/register", who, "-", 403, "POST", "/v1/agents/register",
            Json({{"node", "n-0"}, {"flavor", "h100-80gb"}, {"gpus", {{{"index", 0}, {"uuid", "GPU-x"}}}}}).dump());
      check("post /v1/agents/{node}/heartbeat", who, "-", 403, "POST", "/v1/agents/n-0/heartbeat", "{}");
      // The token of a node that does not exist cannot create it.
      Response ghost = check("post /v1/agents/register", "ghost-agent", "-", 403, "POST", "/v1/agents/register",
                             Json({{"node", "ghost-node"}, {"flavor", "h100-80gb"},
                                   {"gpus", {{{"index", 0}, {"uuid", "GPU-ghost"}}}}}).dump());
      EXPECT_NE(ghost.body.dump().find("node-agent token may only register a node that already exists"), std::string::npos)
          << ghost.body.dump();
      EXPECT_EQ(Call(c, "GET", "/v1/nodes/ghost-node", tokens_["admin"]).status, 404);
    }
    // This daemon trusts no OIDC issuer: the admin's mapping is refused for naming one it does
    // not trust (daemon_oidc_test makes them), and there is none to delete.
    check("get /v1/oidc-mappings", who, "-", Expect(who, "alpha", 200, 403, 403, 403), "GET", "/v1/oidc-mappings");
    check("post /v1/oidc-mappings", who, "-", Expect(who, "alpha", 400, 403, 403, 403), "POST", "/v1/oidc-mappings",
          R"({"issuer": "https://idp.example", "group": "g", "tenant": "alpha", "role": "member"})");
    check("delete /v1/oidc-mappings/{id}", who, "-", Expect(who, "alpha", 404, 403, 403, 403), "DELETE",
          "/v1/oidc-mappings/0123456789ab");
    check("get /v1/burst", who, "-", Expect(who, "alpha", 200, 200, 200, 200), "GET", "/v1/burst");
    check("get /v1/prices", who, "-", Expect(who, "alpha", 200, 200, 200, 200), "GET", "/v1/prices");
    check("put /v1/prices", who, "-", Expect(who, "alpha", 200, 403, 403, 403), "PUT", "/v1/prices", kPrices);
    // Cluster admins only; this daemon has no executor, so the admin's answer is 400 (said so).
    check("get /v1/usage/reconcile", who, "-", Expect(who, "alpha", 400, 403, 403, 403), "GET", "/v1/usage/reconcile");
    check("get /v1/burst/settings", who, "-", Expect(who, "alpha", 200, 403, 403, 403), "GET", "/v1/burst/settings");
    check("put /v1/burst/settings", who, "-", Expect(who, "alpha", 200, 403, 403, 403), "PUT", "/v1/burst/settings",
          kBurst);
  }
  for (const char* route : {"get /healthz", "get /metrics", "get /v1/openapi.json", "get /v1/auth"}) covered.insert(route);
  // The console's sign-in routes exist only where an issuer names a client_id (console_oidc_test
  // covers them there). Here, with none, they are no route at all (the router answers an unknown
  // route before it authenticates): 404 for every caller, never a session or a redirect.
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/auth/login"}, {"GET", "/v1/auth/callback"}, {"GET", "/v1/auth/session"}, {"POST", "/v1/auth/logout"}}) {
    std::string route = method + " " + path;
    std::transform(route.begin(), route.end(), route.begin(), [](unsigned char ch) { return std::tolower(ch); });
    covered.insert(route);
    for (const std::string& who : kCallers) {
      Response r = Call(c, method, path, tokens_[who], method == "POST" ? "{}" : "");
      EXPECT_EQ(r.status, 404) << route << " as " << who << ": " << r.body.dump();
    }
  }
  // The sign-in document is public: a client reads it before it has any token.
  EXPECT_EQ(Call(c, "GET", "/v1/auth", "").status, 200);
  EXPECT_EQ(Call(c, "GET", "/v1/auth", tokens_["forged"]).status, 200);
  // Every route the served document names (it is generated from the router's table).
  const Json doc = Call(c, "GET", "/v1/openapi.json", "").body;
  ASSERT_TRUE(doc.contains("paths"));
  size_t documented = 0;
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      ++documented;
      EXPECT_TRUE(covered.count(method + " " + path)) << "the matrix misses " << method << " " << path;
    }
  }
  EXPECT_GE(documented, 33u);
  EXPECT_EQ(checked, 7 * (2 * 25 + 24) + 3)
      << "7 callers x (2 targets x 25 tenant-scoped + 24 cluster-wide requests), the node agent for another node "
         "(register, heartbeat), and a node agent for a node that does not exist (register)";
}

// What the lists show each caller: never another tenant's jobs, tokens, usage, nodes or audit.
TEST_F(DaemonHttp, ListsNeverShowAnotherTenant) {
  httplib::Client c = daemon_->Client();
  for (const std::string who : {"alpha-admin", "alpha-member", "alpha-viewer"}) {
    const std::string t = tokens_[who];
    for (const Json& j : Get(c, "/v1/jobs", t, "items")) EXPECT_EQ(j["tenant"], "alpha") << who;
    EXPECT_EQ(Call(c, "GET", "/v1/jobs?tenant=beta", t).status, 404);
    const Json tenants = Call(c, "GET", "/v1/tenants", t).body["items"];
    ASSERT_EQ(tenants.size(), 1u) << who;
    EXPECT_EQ(tenants[0]["name"], "alpha");
    for (const Json& tok : Get(c, "/v1/tokens", t, "items")) EXPECT_EQ(tok["tenant"], "alpha") << who;
    for (const Json& r : Get(c, "/v1/reservations", t, "items")) {
      EXPECT_TRUE(r["maintenance"] == true || r["tenant"] == "alpha") << who << ": " << r.dump();
    }
    std::set<std::string> nodes;
    for (const Json& n : Get(c, "/v1/nodes", t, "items")) nodes.insert(n["name"]);
    EXPECT_TRUE(nodes.count(nodes_["alpha"])) << who;
    EXPECT_FALSE(nodes.count(nodes_["beta"])) << who;
    for (const Json& id : Get(c, "/v1/nodes/" + nodes_["alpha"], t, "jobs")) {
      EXPECT_EQ(Call(c, "GET", "/v1/jobs/" + id.get<std::string>(), t).status, 200) << "node shows a foreign job";
    }
    const Json summary = Call(c, "GET", "/v1/summary", t).body;
    const Json all = Call(c, "GET", "/v1/summary", tokens_["admin"]).body;
    EXPECT_LT(summary["pending_jobs"].get<int>() + summary["active_jobs"].get<int>(),
              all["pending_jobs"].get<int>() + all["active_jobs"].get<int>());
  }
  for (const Json& a : Get(c, "/v1/audit", tokens_["alpha-admin"], "items")) EXPECT_EQ(a["tenant"], "alpha");
  // The admin sees both tenants.
  std::set<std::string> tenants;
  for (const Json& j : Get(c, "/v1/jobs", tokens_["admin"], "items")) tenants.insert(j["tenant"]);
  EXPECT_TRUE(tenants.count("alpha") && tenants.count("beta"));
}

// Usage: a tenant sees its own rows only, the admin every tenant's; the CSV carries the same
// numbers; bad queries are 400 and another tenant is 404.
TEST_F(DaemonHttp, UsageIsScopedToTheCallersTenant) {
  httplib::Client c = daemon_->Client();
  const std::string q = "/v1/usage?from=2020-01-01T00:00:00Z&group_by=flavor,kind";
  Response all = Call(c, "GET", q, tokens_["admin"]);
  ASSERT_EQ(all.status, 200) << all.body.dump();
  std::set<std::string> tenants;
  for (const Json& row : all.body["items"]) tenants.insert(row["tenant"]);
  EXPECT_TRUE(tenants.count("alpha") && tenants.count("beta")) << all.body.dump();
  for (const std::string who : {"alpha-admin", "alpha-member", "alpha-viewer"}) {
    Response mine = Call(c, "GET", q, tokens_[who]);
    ASSERT_EQ(mine.status, 200) << mine.body.dump();
    ASSERT_FALSE(mine.body["items"].empty());
    for (const Json& row : mine.body["items"]) {
      EXPECT_EQ(row["tenant"], "alpha") << who;
      EXPECT_EQ(row["flavor"], "h100-80gb");
      EXPECT_TRUE(row.contains("kind") && row.contains("cost") && row.contains("unit_ms"));
    }
    EXPECT_EQ(Call(c, "GET", q + "&tenant=beta", tokens_[who]).status, 404) << who;
  }
  // CSV: a header and one line per row, same tenants.
  httplib::Headers h = {{"Authorization", "Bearer " + tokens_["alpha-member"]}};
  httplib::Result csv = c.Get(q + "&format=csv&to=2100-01-01T00:00:00Z", h);
  ASSERT_TRUE(csv);
  EXPECT_EQ(csv->status, 200);
  EXPECT_NE(csv->get_header_value("Content-Type").find("text/csv"), std::string::npos);
  EXPECT_EQ(csv->body.rfind("tenant,flavor,kind,gpu_hours,unit_ms,billed_unit_ms,cost,priced_cost,unpriced_unit_ms\n", 0), 0u) << csv->body;
  EXPECT_NE(csv->body.find("\nalpha,h100-80gb,"), std::string::npos) << csv->body;
  EXPECT_EQ(csv->body.find("beta"), std::string::npos) << csv->body;
  for (const std::string bad : {"/v1/usage", "/v1/usage?from=yesterday", "/v1/usage?from=2020-01-01T00:00:00Z&group_by=team",
                                "/v1/usage?from=2020-01-01T00:00:00Z&format=xml",
                                "/v1/usage?from=2020-01-02T00:00:00Z&to=2020-01-01T00:00:00Z",
                                "/v1/usage?from=2020-01-01T00:00:00Z&colour=red"}) {
    EXPECT_EQ(Call(c, "GET", bad, tokens_["admin"]).status, 400) << bad;
  }
  // Prices: bad lists are refused and change nothing.
  const Json before = Call(c, "GET", "/v1/prices", tokens_["admin"]).body;
  for (const std::string bad : {R"({"flavors": {"h100-80gb": {"per_gpu_hour": "-1"}}})",
                                R"({"flavors": {"h100-80gb": {"per_gpu_hour": "1.0000001"}}})",
                                R"({"flavors": {"b300": {"per_gpu_hour": 1}}})",
                                R"({"flavors": {"h100-80gb": {"per_hour": 1}}})", R"({"flavours": {}})"}) {
    EXPECT_EQ(Call(c, "PUT", "/v1/prices", tokens_["admin"], bad).status, 400) << bad;
  }
  EXPECT_EQ(Call(c, "GET", "/v1/prices", tokens_["admin"]).body, before);
  EXPECT_EQ(before["flavors"]["h100-80gb"]["per_gpu_hour"], "4.000000");
}

TEST_F(DaemonHttp, AuditRecordsPrincipalActionObjectTimeAndRemote) {
  httplib::Client c = daemon_->Client();
  Response r = Call(c, "POST", "/v1/jobs", tokens_["alpha-member"], JobBody("alpha", "audited", 1));
  ASSERT_EQ(r.status, 201);
  const Json items = Call(c, "GET", "/v1/audit", tokens_["admin"]).body["items"];
  ASSERT_FALSE(items.empty());
  const Json& last = items.front();  // newest first
  EXPECT_EQ(last["principal"], "alpha-member");
  EXPECT_EQ(last["action"], "job.submit");
  EXPECT_EQ(last["object"], r.body["id"]);
  EXPECT_EQ(last["remote"], "127.0.0.1");
  EXPECT_GT(last["at_ms"].get<int64_t>(), 1700000000000);
}

TEST_F(DaemonHttp, BadInputIsA4xxAndChangesNothing) {
  httplib::Client c = daemon_->Client();
  const std::string admin = tokens_["admin"];
  auto count = [&] {
    return std::make_pair(Call(c, "GET", "/v1/jobs", admin).body["items"].size(),
                          Call(c, "GET", "/v1/audit", admin).body["items"].size());
  };
  const auto before = count();
  Json valid = Json::parse(JobBody("alpha", "x", 1));
  auto with = [&](const std::function<void(Json&)>& edit) {
    Json j = valid;
    edit(j);
    return j.dump();
  };
  struct Bad {
    std::string what, method, path, body;
    int status;
  };
  const std::vector<Bad> table = {
      {"malformed JSON", "POST", "/v1/jobs", "{\"tenant\": ", 400},
      {"not an object", "POST", "/v1/jobs", "[1, 2]", 400},
      {"empty body", "POST", "/v1/jobs", "", 400},
      {"wrong type", "POST", "/v1/jobs", with([](Json& j) { j["replicas"] = "two"; }), 400},
      {"unknown field", "POST", "/v1/jobs", with([](Json& j) { j["gpu"] = 1; }), 400},
      {"out of range", "POST", "/v1/jobs", with([](Json& j) { j["duration_estimate_s"] = 0; }), 400},
      {"negative gpus", "POST", "/v1/jobs", with([](Json& j) { j["resources"]["gpus"] = -1; }), 400},
      {"unknown flavor", "POST", "/v1/jobs", with([](Json& j) { j["resources"]["flavor"] = "tpu-v5"; }), 400},
      {"unknown profile", "POST", "/v1/jobs",
       with([](Json& j) { j["resources"] = {{"flavor", "h100-80gb"}, {"mig_profile", "5g.5gb"}}; }), 400},
      {"fraction out of range", "POST", "/v1/jobs",
       with([](Json& j) { j["resources"] = {{"flavor", "h100-80gb"}, {"gpu_fraction", 0}, {"memory_gb", 1}}; }), 400},
      {"huge number", "POST", "/v1/jobs", with([](Json& j) { j["replicas"] = 1e300; }), 400},
      {"deep nesting", "POST", "/v1/jobs", std::string(5000, '[') + std::string(5000, ']'), 400},
      {"idempotency key too long", "POST", "/v1/jobs", valid.dump(), 400},
      {"body too large", "POST", "/v1/jobs", std::string(2 << 20, ' '), 413},
      {"bad tenant body", "POST", "/v1/tenants", R"({"name": "UPPER"})", 400},
      {"bad quota", "PATCH", "/v1/tenants/alpha", R"({"quotas": {"h100-80gb": {"guaranteed": "lots"}}})", 400},
      {"bad class", "POST", "/v1/priority-classes", R"({"name": "x", "value": 1.5})", 400},
      {"bad role", "POST", "/v1/tokens", R"({"name": "x", "role": "god", "tenant": "alpha"})", 400},
      {"unknown job", "GET", "/v1/jobs/999999", "", 404},
      {"non-numeric job id", "GET", "/v1/jobs/abc", "", 404},
      {"unknown node", "POST", "/v1/nodes/nope/cordon", "", 404},
      {"unknown route", "GET", "/v1/nothing", "", 404},
      {"limit 0", "GET", "/v1/jobs?limit=0", "", 400},
      {"limit above the maximum", "GET", "/v1/audit?limit=1001", "", 400},
      {"forged cursor", "GET", "/v1/jobs?limit=5&cursor=am9iczox%21", "", 400},
      {"unknown burst key", "PUT", "/v1/burst/settings", R"({"offer": {}})", 400},
      {"burst budget not a price", "PUT", "/v1/burst/settings",
       R"({"offers": {"h100-80gb": {}}, "tenants": {"alpha": {"flavors": ["h100-80gb"], "budget": "lots"}}})", 400},
      {"burst policy of an unknown tenant", "PUT", "/v1/burst/settings",
       R"({"offers": {"h100-80gb": {}}, "tenants": {"gamma": {"flavors": ["h100-80gb"], "budget": "10"}}})", 400},
      {"burst provider from the API", "PUT", "/v1/burst/settings",
       R"({"provider": "command", "create_command": "/bin/true", "delete_command": "/bin/true"})", 400},
  };
  const Json burst = Call(c, "GET", "/v1/burst/settings", admin).body;
  for (const Bad& b : table) {
    httplib::Headers h;
    if (b.what == "idempotency key too long") h.emplace("Idempotency-Key", std::string(200, 'k'));
    Response r = Call(c, b.method, b.path, admin, b.body, h);
    EXPECT_EQ(r.status, b.status) << b.what << ": " << r.body.dump();
    ASSERT_TRUE(r.body.is_object() && r.body.contains("error")) << b.what;
    EXPECT_TRUE(r.body["error"]["code"].is_string()) << b.what;
    EXPECT_FALSE(r.body["error"]["message"].get<std::string>().empty()) << b.what;
    EXPECT_TRUE(r.body["error"].contains("details")) << b.what;
  }
  // An empty body says what the request needs, never just "bad request", with or without a
  // Content-Length (the HTTP server refuses a POST without one before any handler).
  const std::string empty = Call(c, "POST", "/v1/jobs", admin, "").body["error"]["message"];
  EXPECT_NE(empty.find("the request body is empty: a job needs 'tenant', 'name', 'resources'"), std::string::npos) << empty;
  const std::string raw = RawRequest(daemon_->port(), "POST /v1/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                                         admin + "\r\nConnection: close\r\n\r\n");
  EXPECT_NE(raw.find("400"), std::string::npos) << raw;
  EXPECT_NE(raw.find("the request has no body (no Content-Length): a token needs 'name' and 'role'"), std::string::npos) << raw;
  EXPECT_EQ(count(), before) << "a rejected request must change nothing (jobs, audit)";
  EXPECT_EQ(Call(c, "GET", "/v1/burst/settings", admin).body, burst);
  EXPECT_EQ(Call(c, "GET", "/healthz", "").status, 200) << "still alive";
}

// Pages over HTTP: each job once while new ones arrive (on top), the limit's bounds, refused
// cursors, and another tenant's cursors, which are positions and nothing more.
TEST_F(DaemonHttp, PagesCoverTheListOnceAndCursorsAreOnlyPositions) {
  httplib::Client c = daemon_->Client();
  const std::string member = tokens_["alpha-member"];
  for (int i = 0; i < 7; ++i) {
    ASSERT_EQ(Call(c, "POST", "/v1/jobs", member, JobBody("alpha", "page-" + std::to_string(i), 1)).status, 201);
  }
  const Json all = Call(c, "GET", "/v1/jobs?tenant=alpha", member).body;
  ASSERT_TRUE(all["next_cursor"].is_null()) << "no limit: the whole list";
  std::vector<std::string> want;
  for (const Json& j : all["items"]) want.push_back(j["id"]);
  ASSERT_GE(want.size(), 8u);
  for (size_t i = 1; i < want.size(); ++i) EXPECT_GT(std::stoull(want[i - 1]), std::stoull(want[i])) << "newest first";
  std::vector<std::string> got;
  std::string cursor;
  int pages = 0;
  do {
    Response r = Call(c, "GET", "/v1/jobs?limit=3" + (cursor.empty() ? "" : "&cursor=" + cursor), member);
    ASSERT_EQ(r.status, 200) << r.body.dump();
    ASSERT_LE(r.body["items"].size(), 3u);
    for (const Json& j : r.body["items"]) got.push_back(j["id"]);
    cursor = r.body["next_cursor"].is_null() ? "" : r.body["next_cursor"].get<std::string>();
    ++pages;
    ASSERT_EQ(Call(c, "POST", "/v1/jobs", member, JobBody("alpha", "between", 1)).status, 201);
  } while (!cursor.empty() && pages < 1000);
  EXPECT_EQ(got, want) << "every job once, in order, none of those submitted between pages";
  EXPECT_EQ(pages, static_cast<int>((want.size() + 2) / 3));
  const Json head = Call(c, "GET", "/v1/jobs?limit=" + std::to_string(pages), member).body;
  for (const Json& j : head["items"]) EXPECT_EQ(j["name"], "between") << "new jobs are on top";
  EXPECT_EQ(Call(c, "GET", "/v1/jobs?limit=1000", member).status, 200);

  // beta's cursors, of jobs and of the audit log, in alpha's hands: alpha's own items below
  // that position, nothing of beta's.
  for (int i = 0; i < 2; ++i) ASSERT_EQ(Call(c, "POST", "/v1/jobs", tokens_["beta-member"], JobBody("beta", "b", 1)).status, 201);
  const Json beta_jobs = Call(c, "GET", "/v1/jobs?limit=1", tokens_["beta-member"]).body;
  const Json beta_audit = Call(c, "GET", "/v1/audit?limit=1", tokens_["beta-admin"]).body;
  ASSERT_TRUE(beta_jobs["next_cursor"].is_string() && beta_audit["next_cursor"].is_string());
  const uint64_t beta_newest = std::stoull(beta_jobs["items"][0]["id"].get<std::string>());
  Response mine = Call(c, "GET", "/v1/jobs?limit=50&cursor=" + beta_jobs["next_cursor"].get<std::string>(), member);
  ASSERT_EQ(mine.status, 200);
  ASSERT_FALSE(mine.body["items"].empty());
  for (const Json& j : mine.body["items"]) {
    EXPECT_EQ(j["tenant"], "alpha");
    EXPECT_LT(std::stoull(j["id"].get<std::string>()), beta_newest);
  }
  Response log = Call(c, "GET", "/v1/audit?limit=50&cursor=" + beta_audit["next_cursor"].get<std::string>(), tokens_["alpha-admin"]);
  ASSERT_EQ(log.status, 200);
  ASSERT_FALSE(log.body["items"].empty());
  for (const Json& a : log.body["items"]) EXPECT_EQ(a["tenant"], "alpha") << a.dump();
  EXPECT_EQ(log.body.dump().find("beta"), std::string::npos) << log.body.dump();

  // Refusals: 400 with the error shape, whatever the list.
  const std::string jobs_cursor = beta_jobs["next_cursor"], audit_cursor = beta_audit["next_cursor"];
  for (const std::string& bad : std::vector<std::string>{"/v1/jobs?limit=0", "/v1/jobs?limit=1001", "/v1/jobs?limit=abc", "/v1/jobs?limit=",
                                "/v1/jobs?cursor=not-a-cursor", "/v1/jobs?limit=2&cursor=" + audit_cursor,
                                "/v1/audit?cursor=" + jobs_cursor, "/v1/audit?limit=-3", "/v1/jobs?limit=2&colour=red"}) {
    Response r = Call(c, "GET", bad, tokens_["alpha-admin"]);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body.dump();
    EXPECT_EQ(r.body["error"]["code"], "invalid_argument") << bad;
    EXPECT_FALSE(r.body["error"]["message"].get<std::string>().empty()) << bad;
  }
}

TEST_F(DaemonHttp, IdempotencyKeyOverHttp) {
  httplib::Client c = daemon_->Client();
  const httplib::Headers h = {{"Idempotency-Key", "retry-42"}};
  Response a = Call(c, "POST", "/v1/jobs", tokens_["alpha-member"], JobBody("alpha", "once", 1), h);
  Response b = Call(c, "POST", "/v1/jobs", tokens_["alpha-member"], JobBody("alpha", "once", 1), h);
  ASSERT_EQ(a.status, 201);
  ASSERT_EQ(b.status, 201);
  EXPECT_EQ(a.body["id"], b.body["id"]);
  int named = 0;
  for (const Json& j : Get(c, "/v1/jobs", tokens_["admin"], "items")) named += j["name"] == "once";
  EXPECT_EQ(named, 1);
}

TEST_F(DaemonHttp, JobShowsPendingReasonAndPlacement) {
  httplib::Client c = daemon_->Client();
  Response r = Call(c, "POST", "/v1/jobs", tokens_["beta-member"],
                    Json::parse(JobBody("beta", "too-big", 8)).dump());
  ASSERT_EQ(r.status, 201);
  Json body = Json::parse(JobBody("beta", "gang", 8));
  body["replicas"] = 16;  // 128 GPUs: more than the cluster has
  Response g = Call(c, "POST", "/v1/jobs", tokens_["beta-member"], body.dump());
  ASSERT_EQ(g.status, 201);
  Json job;
  for (int i = 0; i < 100; ++i) {
    job = Call(c, "GET", "/v1/jobs/" + g.body["id"].get<std::string>(), tokens_["beta-member"]).body;
    if (job.contains("reason") && job["reason"]["code"] != "not_yet_considered") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(job["state"], "pending");
  ASSERT_TRUE(job.contains("reason"));
  EXPECT_FALSE(job["reason"]["message"].get<std::string>().empty());
  const Json placed = Call(c, "GET", "/v1/jobs/" + jobs_["alpha"], tokens_["alpha-viewer"]).body;
  EXPECT_EQ(placed["placement"][0]["gpus"].size(), 8u);
}

TEST_F(DaemonHttp, OpenApiAndMetrics) {
  httplib::Client c = daemon_->Client();
  Response doc = Call(c, "GET", "/v1/openapi.json", "");
  ASSERT_EQ(doc.status, 200);
  EXPECT_EQ(doc.body["openapi"], "3.0.3");
  EXPECT_TRUE(doc.body["paths"].contains("/v1/jobs/{id}"));
  httplib::Result m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("gpupool_tenant_guaranteed_gpu_eq{flavor=\"h100-80gb\",tenant=\"alpha\"} 12"), std::string::npos)
      << m->body.substr(0, 2000);
  EXPECT_NE(m->body.find("gpupool_api_request_seconds_bucket"), std::string::npos);
  EXPECT_NE(m->body.find("gpupool_scheduling_cycle_seconds_count"), std::string::npos);
}

// The console: its files come from the daemon with a policy that allows only its own script,
// style and API; the summary says who the caller is.
TEST_F(DaemonHttp, ConsoleIsServedWithItsPolicy) {
  httplib::Client c = daemon_->Client();
  const struct {
    const char* path;
    const char* type;
    const char* needle;
  } files[] = {{"/", "text/html", "<script type=\"module\" src=\"/app.js\">"},
               {"/app.js", "text/javascript", "sessionStorage"},
               {"/app.css", "text/css", ":focus-visible"}};
  for (const auto& f : files) {
    httplib::Result r = c.Get(f.path);
    ASSERT_TRUE(r) << f.path;
    EXPECT_EQ(r->status, 200) << f.path;
    EXPECT_EQ(r->get_header_value("Content-Type").rfind(f.type, 0), 0u) << f.path;
    EXPECT_NE(r->body.find(f.needle), std::string::npos) << f.path;
    const std::string csp = r->get_header_value("Content-Security-Policy");
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << f.path;
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << f.path;
    EXPECT_EQ(csp.find("unsafe"), std::string::npos) << f.path;
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  }
  // A path the console does not have is the API's 404, not the page.
  httplib::Result missing = c.Get("/app.jsx");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  Json me = Call(c, "GET", "/v1/summary", tokens_["alpha-member"]).body["me"];
  EXPECT_TRUE(me["expires"].is_string()) << me;  // an API token's expiry
  me.erase("expires");
  EXPECT_EQ(me, Json({{"name", "alpha-member"},
                      {"role", "member"},
                      {"tenant", "alpha"},
                      {"grants", Json::array({{{"tenant", "alpha"}, {"role", "member"}}})}}));
  const Json admin = Call(c, "GET", "/v1/summary", tokens_["admin"]).body["me"];
  EXPECT_EQ(admin["role"], "cluster-admin");
  EXPECT_TRUE(admin["tenant"].is_null());
}

// The cluster map's data: each GPU with its occupant. On a node two tenants share, a tenant
// sees its own job and tenant and, for the other's GPU, only that it is taken.
TEST(ConsoleHttp, DevicesNameOnlyTheCallersOwnWork) {
  const auto dir = FreshDir("devices");
  std::ofstream(dir / "cluster.yaml") << R"(
scheduler: {tick_ms: 20}
tenants:
  - {name: alpha, quotas: {h100-80gb: {guaranteed: 1}, a100-40gb: {guaranteed: 1}}}
  - {name: beta, quotas: {h100-80gb: {guaranteed: 1}}}
nodes:
  - {name: n, count: 1, flavor: h100-80gb, gpus: 2}
  - {name: m, count: 1, flavor: a100-40gb, gpus: 1, mig_gpus: 1}
)";
  DaemonProcess d(dir, {"--config", (dir / "cluster.yaml").string(), "--simulate-executor"});
  ASSERT_TRUE(d.ok()) << d.log();
  httplib::Client c = d.Client();
  std::map<std::string, std::string> token, job;
  for (const std::string t : {"alpha", "beta"}) {
    Response r = Call(c, "POST", "/v1/tokens", d.admin_token(),
                      Json({{"name", t + "-m"}, {"role", "member"}, {"tenant", t}}).dump());
    ASSERT_EQ(r.status, 201);
    token[t] = r.body["token"];
    Response j = Call(c, "POST", "/v1/jobs", token[t], JobBody(t, t + "-job", 1));
    ASSERT_EQ(j.status, 201) << j.body.dump();
    job[t] = j.body["id"];
  }
  const std::string mig = Json({{"tenant", "alpha"}, {"name", "nb"}, {"priority_class", "training"}, {"replicas", 1},
                                {"resources", {{"flavor", "a100-40gb"}, {"mig_profile", "1g.5gb"}}},
                                {"duration_estimate_s", 600}, {"command", {"true"}}}).dump();
  Response m = Call(c, "POST", "/v1/jobs", token["alpha"], mig);
  ASSERT_EQ(m.status, 201) << m.body.dump();
  Json nodes;
  for (int i = 0; i < 300; ++i) {
    nodes = Call(c, "GET", "/v1/nodes?detail=devices", d.admin_token()).body["items"];
    int held = 0;
    for (const Json& n : nodes) {
      for (const Json& g : n["devices"]) {
        held += g.contains("occupant") && !g["occupant"].is_null();
        if (g.contains("slices")) {
          for (const Json& s : g["slices"]) held += !s["occupant"].is_null();
        }
      }
    }
    if (held == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(nodes.size(), 2u) << nodes.dump();
  // The admin sees both tenants on n-0.
  std::set<std::string> on_n;
  for (const Json& g : nodes[0]["devices"]) on_n.insert(g["occupant"]["tenant"].get<std::string>());
  EXPECT_EQ(on_n, (std::set<std::string>{"alpha", "beta"})) << nodes.dump();
  // alpha: its own GPU named, beta's taken but anonymous; its MIG slice with its profile.
  const Json seen = Call(c, "GET", "/v1/nodes?detail=devices", token["alpha"]).body["items"];
  ASSERT_EQ(seen.size(), 2u) << seen.dump();
  int own = 0, anonymous = 0;
  for (const Json& g : seen[0]["devices"]) {
    EXPECT_EQ(g["mode"], "whole");
    const Json& o = g["occupant"];
    ASSERT_FALSE(o.is_null());
    if (o["tenant"] == "alpha") {
      ++own;
      EXPECT_EQ(o["job"], job["alpha"]);
    } else {
      ++anonymous;
      EXPECT_TRUE(o["tenant"].is_null() && o["job"].is_null()) << o.dump();
    }
  }
  EXPECT_EQ(own, 1);
  EXPECT_EQ(anonymous, 1);
  EXPECT_EQ(seen.dump().find("beta"), std::string::npos) << seen.dump();
  const Json& mig_gpu = seen[1]["devices"][0];
  EXPECT_EQ(mig_gpu["mode"], "mig");
  int held = 0;
  for (const Json& sl : mig_gpu["slices"]) {
    if (sl["occupant"].is_null()) continue;
    ++held;
    EXPECT_EQ(sl["profile"], "1g.5gb");
    EXPECT_EQ(sl["memory_slices"], 1);
    EXPECT_EQ(sl["occupant"]["tenant"], "alpha");
  }
  EXPECT_EQ(held, 1) << mig_gpu.dump();
  // The node detail carries the same devices; beta's own view names its job, never alpha's.
  const Json detail = Call(c, "GET", "/v1/nodes/n-0", token["beta"]).body;
  EXPECT_EQ(detail["devices"].size(), 2u);
  EXPECT_EQ(detail.dump().find("alpha"), std::string::npos) << detail.dump();
}

}  // namespace
}  // namespace gpupool::testing
