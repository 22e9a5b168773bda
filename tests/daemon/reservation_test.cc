// Reservations against the real daemon: hundreds of concurrent, overlapping requests from
// several tenants. The accepted set must be feasible (reserved capacity never exceeds what the
// guarantees leave, at any instant), every refusal must say which interval is short, the
// availability answers must agree with the accepted set, and all of it must survive a restart.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "daemon/daemon_process.h"

namespace gpupool::testing {
namespace {

// 16 H100: guarantees 2 + 2, so 12 GPUs can be reserved at any instant.
constexpr const char* kConfig = R"(
scheduler: {tick_ms: 50}
tenants:
  - {name: alpha, quotas: {h100-80gb: {guaranteed: 2}}}
  - {name: beta, quotas: {h100-80gb: {guaranteed: 2}}}
nodes:
  - {name: n, count: 2, flavor: h100-80gb, gpus: 8}
)";
constexpr int kReservable = 12;

std::string Hour(int h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2031-01-%02dT%02d:00:00Z", 1 + h / 24, h % 24);
  return buf;
}

TEST(Reservations, ConcurrentOverlappingRequestsNeverDoubleBook) {
  const auto dir = FreshDir("reservations");
  std::ofstream(dir / "cluster.yaml") << kConfig;
  std::vector<std::string> args = {"--config", (dir / "cluster.yaml").string(), "--simulate-executor"};
  auto daemon = std::make_unique<DaemonProcess>(dir, args);
  ASSERT_TRUE(daemon->ok()) << daemon->log();
  const std::string admin = daemon->admin_token();
  std::map<std::string, std::string> tokens;
  {
    httplib::Client c = daemon->Client();
    for (const std::string t : {"alpha", "beta"}) {
      Response r = Call(c, "POST", "/v1/tokens", admin, Json({{"name", t + "-m"}, {"role", "member"}, {"tenant", t}}).dump());
      ASSERT_EQ(r.status, 201);
      tokens[t] = r.body["token"];
    }
  }

  // 16 clients x 25 requests: 1-6 GPUs over 1-8 hours inside a 24-hour span, so most overlap.
  struct Outcome {
    int status;
    std::string tenant, message, id;
    int gpus, from, to;
  };
  std::mutex mu;
  std::vector<Outcome> outcomes;
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      std::mt19937 rng(1000 + i);
      const std::string tenant = i % 2 ? "beta" : "alpha";
      httplib::Client c = daemon->Client();
      c.set_keep_alive(true);
      for (int n = 0; n < 25; ++n) {
        const int gpus = std::uniform_int_distribution<int>(1, 6)(rng);
        const int from = std::uniform_int_distribution<int>(0, 20)(rng);
        const int to = std::min(24, from + std::uniform_int_distribution<int>(1, 8)(rng));
        const Json body = {{"tenant", tenant}, {"flavor", "h100-80gb"}, {"gpus", gpus},
                           {"start", Hour(from)}, {"end", Hour(to)}};
        Response r = Call(c, "POST", "/v1/reservations", tokens[tenant], body.dump());
        Outcome o{r.status, tenant, "", "", gpus, from, to};
        if (r.status == 201) o.id = r.body["id"];
        if (r.status == 409) o.message = r.body["error"]["message"];
        std::lock_guard<std::mutex> lock(mu);
        outcomes.push_back(o);
      }
    });
  }
  for (std::thread& t : threads) t.join();

  int accepted = 0, refused = 0;
  std::vector<int> load(24, 0);
  for (const Outcome& o : outcomes) {
    ASSERT_TRUE(o.status == 201 || o.status == 409) << o.status;
    if (o.status == 201) {
      ++accepted;
      for (int h = o.from; h < o.to; ++h) load[h] += o.gpus;
    } else {
      ++refused;
      EXPECT_NE(o.message.find("short by"), std::string::npos) << o.message;
      EXPECT_NE(o.message.find("2031-01-01T"), std::string::npos) << o.message;
    }
  }
  // Feasible at every instant (the windows are whole hours, so hours are the instants that matter).
  for (int h = 0; h < 24; ++h) EXPECT_LE(load[h], kReservable) << "hour " << h;
  // Contention was real: both outcomes happened, and the busiest hour is full or nearly so.
  EXPECT_GT(accepted, 10);
  EXPECT_GT(refused, 100);
  EXPECT_GE(*std::max_element(load.begin(), load.end()), kReservable - 5);
  std::printf("400 concurrent requests: %d accepted, %d refused; peak hour %d of %d GPUs\n", accepted, refused,
              *std::max_element(load.begin(), load.end()), kReservable);

  // The daemon's own view agrees: the list holds exactly the accepted ones, and availability per
  // hour is what the accepted set leaves.
  auto verify = [&](DaemonProcess& d, const char* when) {
    httplib::Client c = d.Client();
    Response list = Call(c, "GET", "/v1/reservations", admin);
    ASSERT_EQ(list.status, 200);
    std::set<std::string> ids;
    for (const Json& r : list.body["items"]) ids.insert(r["id"].get<std::string>());
    EXPECT_EQ(static_cast<int>(ids.size()), accepted) << when;
    for (const Outcome& o : outcomes) {
      if (o.status == 201) {
        EXPECT_TRUE(ids.count(o.id)) << when << ": reservation " << o.id;
      }
    }
    for (int h = 0; h < 24; ++h) {
      Response a = Call(c, "GET", "/v1/availability?flavor=h100-80gb&start=" + Hour(h) + "&end=" + Hour(h + 1),
                        tokens["alpha"]);
      ASSERT_EQ(a.status, 200) << a.body.dump();
      EXPECT_EQ(a.body["reservable_gpus"], kReservable - load[h]) << when << " hour " << h;
    }
    // Beta's member never sees alpha's reservations.
    const Response beta = Call(c, "GET", "/v1/reservations", tokens["beta"]);  // kept alive for the loop
    for (const Json& r : beta.body["items"]) {
      EXPECT_EQ(r["tenant"], "beta") << when;
    }
  };
  verify(*daemon, "before restart");
  daemon->Kill();
  daemon = std::make_unique<DaemonProcess>(dir, args);
  ASSERT_TRUE(daemon->ok()) << daemon->log();
  verify(*daemon, "after kill -9 and restart");
}

}  // namespace
}  // namespace gpupool::testing
