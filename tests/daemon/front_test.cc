// The daemon's HTTP front end as an attacker without a token meets it (issue 16 item 6): the
// real `gpupool serve` with an agents' listener and small connection limits.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/daemon_process.h"
#include "support/raw_socket.h"

namespace gpupool::testing {
namespace {

int Connect(int port) { return ConnectLoopback(port); }
std::string ReadFor(int fd, int ms) { return testing::ReadFor(fd, std::chrono::milliseconds(ms)); }

TEST(FrontEnd, TheAgentsListenerAnswersWhileTheApiIsFullAndServesNothingElse) {
  const auto dir = FreshDir("front");
  std::ofstream(dir / "cluster.yaml") << "tenants:\n  - {name: a, quotas: {h100-80gb: {guaranteed: 1}}}\n"
                                         "nodes:\n  - {name: n, count: 1, flavor: h100-80gb, gpus: 1}\n";
  DaemonProcess d(dir, {"--config", (dir / "cluster.yaml").string(), "--agent-listen", "127.0.0.1:0",
                        "--max-connections", "40", "--max-connections-per-source", "40"});
  ASSERT_TRUE(d.ok()) << d.log();
  int agent_port = 0;
  std::ifstream(dir / "agent-port") >> agent_port;
  ASSERT_GT(agent_port, 0);
  httplib::Client api = d.Client();
  const Json nodes = Call(api, "GET", "/v1/nodes", d.admin_token()).body;
  ASSERT_EQ(nodes["items"].size(), 1u) << nodes.dump();
  const std::string node = nodes["items"][0]["name"];

  // The API listener, filled with silent connections: one more is refused with a 429. (On a
  // loaded machine the daemon may not have accepted all 40 yet: the 41st is then one of them, and
  // held; the next one is tried.)
  std::vector<int> held;
  for (int i = 0; i < 40; ++i) held.push_back(Connect(d.port()));
  std::string busy;
  for (int i = 0; i < 20 && busy.find("429") == std::string::npos; ++i) {
    const int over = Connect(d.port());
    busy = ReadFor(over, 500);
    if (busy.find("429") == std::string::npos) {
      held.push_back(over);
    } else {
      ::close(over);
    }
  }
  EXPECT_NE(busy.find("429"), std::string::npos) << busy;
  EXPECT_NE(busy.find("too many connections"), std::string::npos) << busy;

  // Meanwhile the node's agent registers and beats on its own listener.
  httplib::Client agents("127.0.0.1", agent_port);
  agents.set_read_timeout(5);
  const Json reg = {{"node", node}, {"flavor", "h100-80gb"}, {"gpus", {{{"index", 0}, {"uuid", "GPU-front-0"}}}}};
  // (How fast is the attack bench's figure, bench/http_attack.sh; here: that they are served.)
  EXPECT_EQ(Call(agents, "POST", "/v1/agents/register", d.admin_token(), reg.dump()).status, 200);
  EXPECT_EQ(Call(agents, "POST", "/v1/agents/" + node + "/heartbeat", d.admin_token(), "{}").status, 200);
  EXPECT_EQ(Call(agents, "GET", "/healthz", "").status, 200);
  // ... and nothing but the agents' routes: the API is not reachable around its limits.
  const Response jobs = Call(agents, "GET", "/v1/jobs", d.admin_token());
  EXPECT_EQ(jobs.status, 404);
  EXPECT_NE(jobs.body.dump().find("only the node agents"), std::string::npos) << jobs.body.dump();
  for (int fd : held) ::close(fd);

  // Freed, the API answers again (once the daemon has seen the closes); an endless chunked body
  // is cut at the body limit (1 MiB).
  int healthz = 0;
  for (int i = 0; i < 100 && healthz != 200; ++i) {
    healthz = Call(api, "GET", "/healthz", "").status;
    if (healthz != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(healthz, 200);
  const int fd = Connect(d.port());
  std::string head = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  const std::string chunk = "4000\r\n" + std::string(0x4000, 'x') + "\r\n";
  size_t sent = 0;
  while (sent < (64u << 20) && ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) > 0) sent += chunk.size();
  const std::string refused = ReadFor(fd, 2000);
  ::close(fd);
  EXPECT_LT(sent, 64u << 20) << "the daemon read a 64 MiB body to its end";
  EXPECT_NE(refused.find("413"), std::string::npos) << refused.substr(0, 300);
  EXPECT_EQ(Call(api, "GET", "/healthz", "").status, 200);
  // The connection figures in /metrics.
  httplib::Result m = api.Get("/metrics");
  ASSERT_TRUE(m);
  const std::string refused_line = "gpupool_http_connections{listener=\"api\",state=\"refused\"} ";
  const size_t at = m->body.find(refused_line);
  ASSERT_NE(at, std::string::npos);
  EXPECT_GE(std::stoi(m->body.substr(at + refused_line.size())), 1);
  EXPECT_NE(m->body.find("gpupool_http_connections{listener=\"agents\",state=\"accepted\"}"), std::string::npos);
}

// A route that exists with another method is a 405 naming the allowed ones; /v1/jobs/ (a
// trailing slash) is no route at all.
TEST(FrontEnd, MethodsAndPathsAreExact) {
  const auto dir = FreshDir("front-routes");
  std::ofstream(dir / "cluster.yaml") << "tenants:\n  - {name: a, quotas: {h100-80gb: {guaranteed: 1}}}\n"
                                         "nodes:\n  - {name: n, count: 1, flavor: h100-80gb, gpus: 1}\n";
  DaemonProcess d(dir, {"--config", (dir / "cluster.yaml").string()});
  ASSERT_TRUE(d.ok()) << d.log();
  httplib::Client c = d.Client();
  const Response put = Call(c, "PUT", "/v1/jobs", d.admin_token(), "{}");
  EXPECT_EQ(put.status, 405);
  const std::string says = put.body.dump();
  EXPECT_NE(says.find("GET"), std::string::npos) << says;
  EXPECT_NE(says.find("POST"), std::string::npos) << says;
  EXPECT_EQ(Call(c, "GET", "/v1/jobs/", d.admin_token()).status, 404);
  // The role is checked before the body is read: a viewer's malformed submission is a 403, the
  // same request from a member a 400; without a token, 401.
  const Json viewer = Call(c, "POST", "/v1/tokens", d.admin_token(), R"({"name": "v", "role": "viewer", "tenant": "a"})").body;
  const Json member = Call(c, "POST", "/v1/tokens", d.admin_token(), R"({"name": "m", "role": "member", "tenant": "a"})").body;
  ASSERT_TRUE(viewer.contains("token") && member.contains("token")) << viewer.dump() << member.dump();
  const Response refused = Call(c, "POST", "/v1/jobs", viewer["token"], "{not json");
  EXPECT_EQ(refused.status, 403) << refused.body.dump();
  EXPECT_NE(refused.body.dump().find("your role may not submit jobs"), std::string::npos) << refused.body.dump();
  EXPECT_EQ(Call(c, "POST", "/v1/jobs", member["token"], "{not json").status, 400);
  EXPECT_EQ(Call(c, "POST", "/v1/jobs", "", "{not json").status, 401);
  EXPECT_EQ(Call(c, "PUT", "/v1/prices", member["token"], "[").status, 403);
  EXPECT_EQ(Call(c, "GET", "/v1/jobs", d.admin_token()).status, 200);
}

}  // namespace
}  // namespace gpupool::testing
