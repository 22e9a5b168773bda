// A failed journal write must leave the daemon serving exactly what is durable (issue 16 item 1).
// Random sequences of every kind of change the API and the agents make, through a journal whose
// appends fail at random; after each step the daemon must still serve (a tick runs, a read
// answers) and show what a fresh replay of the journal shows.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "daemon/core_fixture.h"
#include "policy/calendar/calendar.h"

namespace gpupool {
namespace {

class FlushProperty : public CoreTest {
 protected:
  // The visible state, without what only memory knows by design: pending reasons (the next cycle
  // recomputes them) and each node's liveness (heard since this process started or not).
  std::string Visible(DaemonCore& core) {
    const CallContext c = As(admin_, now_);
    Json jobs = Json::parse(core.ListJobs(c, {}).body);
    for (Json& j : jobs["items"]) j.erase("reason");
    Json nodes = Json::parse(core.ListNodes(c).body);
    for (Json& n : nodes["items"]) {
      for (const char* k : {"agent", "last_heartbeat_ms", "ready", "status", "reason", "conditions"}) n.erase(k);
    }
    return jobs.dump() + "\n" + nodes.dump() + "\n" + core.ListTenants(c).body + "\n" + core.ListTokens(c).body + "\n" +
           core.ListAudit(c).body + "\n" + core.ListPriorityClasses(c).body + "\n" + core.ListReservations(c).body +
           "\n" + core.GetPrices(c).body;
  }

  std::unique_ptr<DaemonCore> Fresh() {
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir_ / "journal.db").string());
    EXPECT_TRUE(j.ok());
    Result<std::unique_ptr<DaemonCore>> core = DaemonCore::Open(std::move(*j), SchedulerConfig());
    EXPECT_TRUE(core.ok()) << (core.ok() ? "" : core.error().message);
    return core.ok() ? std::move(*core) : nullptr;
  }

  std::string RandomJob(std::mt19937_64& rng) {
    const char* tenant = rng() % 2 ? "research" : "product";
    const int gpus = std::vector<int>{1, 2, 4, 8}[rng() % 4];
    return Job(tenant, gpus, "p" + std::to_string(rng() % 1000));
  }

  // One random change; returns what it was, for the failure message.
  std::string Step(std::mt19937_64& rng) {
    const CallContext a = As(admin_, now_);
    const CallContext m = As(members_[rng() % 2 ? "research" : "product"], now_);
    std::vector<std::string> jobs;
    for (const auto& [id, j] : core_->state().jobs()) jobs.push_back(std::to_string(id.value()));
    const std::string some_job = jobs.empty() ? "1" : jobs[rng() % jobs.size()];
    std::vector<std::string> nodes;
    for (const auto& n : core_->state().nodes()) nodes.push_back(n.name);
    const std::string some_node = nodes[rng() % nodes.size()];
    switch (rng() % 12) {
      case 0:
      case 1:
        return "submit " + std::to_string(core_->SubmitJob(m, RandomJob(rng), rng() % 2 ? "" : "k" + std::to_string(rng() % 20)).status);
      case 2:
        return "cancel " + some_job + " " + std::to_string(core_->CancelJob(a, some_job).status);
      case 3: {  // an admin registers a node through the agent path: the crash the review found
        const std::string name = "reg-" + std::to_string(++registered_);
        Json gpus = Json::array();
        for (int i = 0; i < 4; ++i) gpus.push_back({{"index", i}, {"uuid", "GPU-" + name + "-" + std::to_string(i)}});
        const Json body = {{"node", name}, {"flavor", "h100-80gb"}, {"gpus", gpus}};
        return "register " + name + " " + std::to_string(core_->RegisterAgent(a, body.dump()).status);
      }
      case 4:
        return "heartbeat " + some_node + " " + std::to_string(core_->AgentHeartbeat(a, some_node, "{}").status);
      case 5: {
        const std::string action = std::vector<std::string>{"cordon", "uncordon", "drain"}[rng() % 3];
        return action + " " + some_node + " " + std::to_string(core_->NodeAction(a, some_node, action).status);
      }
      case 6: {
        const std::string name = "t" + std::to_string(rng() % 6);
        return "tenant " + name + " " +
               std::to_string(core_->CreateTenant(a, R"({"name": ")" + name + R"(", "quotas": {"h100-80gb": {"guaranteed": 1}}})").status);
      }
      case 7:
        return "patch research " +
               std::to_string(core_->UpdateTenant(a, "research", R"({"weight": )" + std::to_string(1 + rng() % 3) + "}").status);
      case 8: {
        const Reply r = core_->CreateToken(a, R"({"name": "tok)" + std::to_string(rng() % 50) + R"(", "role": "viewer", "tenant": "research"})");
        return "token " + std::to_string(r.status);
      }
      case 9: {
        const Json list = Json::parse(core_->ListTokens(a).body);
        if (list["items"].empty()) return "revoke none";
        const std::string id = list["items"][rng() % list["items"].size()]["id"];
        return "revoke " + id + " " + std::to_string(core_->RevokeToken(a, id).status);
      }
      case 10: {
        const Json body = {{"tenant", "research"}, {"flavor", "h100-80gb"}, {"gpus", static_cast<int>(1 + rng() % 4)},
                           {"start", Rfc3339(Time::FromMillis(now_ + 3'600'000))},
                           {"end", Rfc3339(Time::FromMillis(now_ + 7'200'000))}};
        return "reserve " + std::to_string(core_->CreateReservation(a, body.dump()).status);
      }
      default:
        core_->Tick(Time::FromMillis(now_), true);
        return "tick";
    }
  }

  int64_t now_ = 10'000;
  int registered_ = 0;
};

TEST_F(FlushProperty, AFailedFlushLeavesWhatIsDurableAndTheDaemonServing) {
  ::testing::internal::CaptureStderr();  // silent nodes are logged at every tick
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::string> steps;
    for (int i = 0; i < 60; ++i) {
      now_ += 1000;
      // A batch of one to three changes, then the flush that fails one time in four.
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < n; ++k) steps.push_back(Step(rng));
      fail_next_ = rng() % 4 == 0 ? 1 : 0;
      steps.push_back(fail_next_ ? "flush (fails)" : "flush");
      (void)core_->Flush();
      fail_next_ = 0;
      // Still serving: a tick over whatever memory holds now, a read, and a flush.
      core_->Tick(Time::FromMillis(now_ + 500), true);
      ASSERT_EQ(core_->Summary(As(admin_, now_ + 500)).status, 200);
      ASSERT_TRUE(core_->Flush().ok());
      std::unique_ptr<DaemonCore> fresh = Fresh();
      ASSERT_TRUE(fresh);
      const std::string mine = Visible(*core_), replayed = Visible(*fresh);
      if (mine != replayed) {
        std::string trail;
        for (const std::string& s : steps) trail += "  " + s + "\n";
        FAIL() << "seed " << seed << ": memory differs from a replay of the journal after:\n"
               << trail << "memory:\n" << mine << "\nreplay:\n" << replayed;
      }
    }
  }
  (void)::testing::internal::GetCapturedStderr();
}

// A batch abandoned halfway (a handler threw) leaves memory as the journal has it.
TEST_F(FlushProperty, AnAbandonedBatchLeavesWhatIsDurable) {
  ASSERT_EQ(core_->SubmitJob(As(members_["research"], now_), Job("research", 8, "kept"), "").status, 201);
  ASSERT_TRUE(core_->Flush().ok());
  const std::string durable = Visible(*core_);
  ASSERT_EQ(core_->SubmitJob(As(members_["research"], now_), Job("research", 8, "dropped"), "").status, 201);
  ASSERT_NE(Visible(*core_), durable);
  core_->Abandon();
  EXPECT_EQ(Visible(*core_), durable);
  EXPECT_EQ(core_->staged(), 0u);
}

// A heartbeat whose second replica report is malformed is refused whole: the first report's
// change (the job starting) is neither applied nor staged.
TEST_F(AgentProtocolTest, ABadReplicaReportChangesNothing) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1);
  const Json start = Beat(node, 2)["start"][0];
  ASSERT_TRUE(core_->Flush().ok());
  Json bad = Report(start, "running");
  bad["state"] = "dancing";
  const Json body = {{"replicas", {Report(start, "running"), bad}}};
  const Reply r = core_->AgentHeartbeat({&admin_, "", At(3)}, node, body.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(Job(j, 3)["state"], "admitted");
  EXPECT_EQ(core_->staged(), 0u) << "a refused heartbeat stages nothing";
  // The same report, well formed, starts it.
  EXPECT_EQ(Beat(node, 4, {{"replicas", {Report(start, "running")}}})["start"].size(), 0u);
  EXPECT_EQ(Job(j, 4)["state"], "running");
}

}  // namespace
}  // namespace gpupool
