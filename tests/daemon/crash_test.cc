// Crash recovery: kill -9 the daemon in the middle of a submission storm, restart it on the same
// data directory, and check that every job acknowledged with 201 is there, none twice, and that
// retrying with the same Idempotency-Key never makes a second job.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "daemon/daemon_process.h"

namespace gpupool::testing {
namespace {

constexpr const char* kConfig = R"(
scheduler: {tick_ms: 10}
tenants:
  - {name: alpha, quotas: {h100-80gb: {guaranteed: 64}}}
nodes:
  - {name: n, count: 8, flavor: h100-80gb, gpus: 8}
)";

std::string Body(const std::string& name) {
  return Json({{"tenant", "alpha"}, {"name", name}, {"priority_class", "training"}, {"replicas", 1},
               {"resources", {{"flavor", "h100-80gb"}, {"gpus", 1}}},
               {"duration_estimate_s", 1}, {"command", {"sleep", "1"}}})
      .dump();
}

struct Storm {
  std::mutex mu;
  std::map<std::string, std::string> acked;  // key -> id
  std::set<std::string> attempted;
};

// Clients submit until the daemon stops answering.
void Submit(int port, const std::string& token, const std::string& prefix, Storm& storm) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  for (int i = 0;; ++i) {
    const std::string key = prefix + "-" + std::to_string(i);
    {
      std::lock_guard<std::mutex> lock(storm.mu);
      storm.attempted.insert(key);
    }
    Response r = Call(c, "POST", "/v1/jobs", token, Body(key), {{"Idempotency-Key", key}});
    if (r.status == 0) return;
    if (r.status != 201) {
      ADD_FAILURE() << "unexpected " << r.status << " " << r.body.dump();
      return;
    }
    std::lock_guard<std::mutex> lock(storm.mu);
    storm.acked[key] = r.body["id"];
  }
}

std::map<std::string, std::vector<std::string>> JobsByName(DaemonProcess& d) {
  httplib::Client c = d.Client();
  Response r = Call(c, "GET", "/v1/jobs", d.admin_token());
  EXPECT_EQ(r.status, 200);
  std::map<std::string, std::vector<std::string>> out;
  for (const Json& j : r.body["items"]) out[j["name"]].push_back(j["id"]);
  return out;
}

TEST(CrashRecovery, KillNineDuringASubmissionStormLosesNothingAcknowledged) {
  const auto dir = FreshDir("crash");
  std::ofstream(dir / "cluster.yaml") << kConfig;
  const std::vector<std::string> args = {"--config", (dir / "cluster.yaml").string(), "--simulate-executor"};
  Storm storm;
  std::mt19937 rng(12345);
  size_t total_acked_before = 0;
  for (int round = 0; round < 4; ++round) {
    DaemonProcess d(dir, args);
    ASSERT_TRUE(d.ok()) << d.log();
    // Everything acknowledged before this start is still there, exactly once.
    {
      const auto by_name = JobsByName(d);
      for (const auto& [key, id] : storm.acked) {
        auto it = by_name.find(key);
        ASSERT_NE(it, by_name.end()) << "acknowledged job " << key << " (id " << id << ") lost in round " << round;
        ASSERT_EQ(it->second.size(), 1u) << key << " applied twice";
        EXPECT_EQ(it->second[0], id);
      }
      for (const auto& [name, ids] : by_name) EXPECT_EQ(ids.size(), 1u) << name << " duplicated";
    }
    std::vector<std::thread> clients;
    for (int t = 0; t < 8; ++t) {
      clients.emplace_back(Submit, d.port(), d.admin_token(), "r" + std::to_string(round) + "t" + std::to_string(t),
                           std::ref(storm));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(300, 900)(rng)));
    d.Kill();
    for (std::thread& t : clients) t.join();
    EXPECT_GT(storm.acked.size(), total_acked_before) << "the storm made progress in round " << round;
    total_acked_before = storm.acked.size();
  }
  // Last start: retry every attempted key. Acknowledged ones replay their id; the others either
  // replay (durable but unacknowledged when the process died) or are created now, once.
  DaemonProcess d(dir, args);
  ASSERT_TRUE(d.ok()) << d.log();
  httplib::Client c = d.Client();
  for (const std::string& key : storm.attempted) {
    Response r = Call(c, "POST", "/v1/jobs", d.admin_token(), Body(key), {{"Idempotency-Key", key}});
    ASSERT_EQ(r.status, 201) << r.body.dump();
    auto acked = storm.acked.find(key);
    if (acked != storm.acked.end()) {
      EXPECT_EQ(r.body["id"], acked->second) << key;
    }
  }
  const auto by_name = JobsByName(d);
  EXPECT_EQ(by_name.size(), storm.attempted.size());
  for (const auto& [name, ids] : by_name) EXPECT_EQ(ids.size(), 1u) << name << " duplicated";
  EXPECT_GT(storm.acked.size(), 100u);
  RecordProperty("acknowledged", static_cast<int>(storm.acked.size()));
  RecordProperty("attempted", static_cast<int>(storm.attempted.size()));
  std::cout << "acknowledged " << storm.acked.size() << " of " << storm.attempted.size()
            << " attempted submissions across 4 kill -9s\n";
}

}  // namespace
}  // namespace gpupool::testing
