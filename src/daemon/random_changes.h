// RandomChanges: a core fixture that makes random changes of every kind the API and the agents
// make (jobs, cancels, node registrations, heartbeats, node actions, tenants, tokens,
// reservations, prices, priority classes, tenant deletion, retention, ticks), and reads the state back as the API shows it. For the property tests of
// failed flushes (flush_property_test.cc) and of snapshots (snapshot_test.cc).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "daemon/control_plane_fixture.h"
#include "policy/calendar/calendar.h"

namespace gpupool {

class RandomChanges : public CoreTest {
 protected:
  // The visible state, without what only memory knows by design: pending reasons (the next cycle
  // recomputes them) and each node's liveness (heard since this process started or not).
  std::string Visible(ControlPlane& core) {
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

  std::unique_ptr<ControlPlane> Fresh() {
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir_ / "journal.db").string());
    EXPECT_TRUE(j.ok());
    Result<std::unique_ptr<ControlPlane>> core = ControlPlane::Open(std::move(*j), SchedulerConfig());
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
    switch (rng() % 16) {
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
      case 11: {  // prices from now or later on (a "prices" record)
        const Json body = {{"flavors", {{"h100-80gb", {{"per_gpu_hour", std::to_string(1 + rng() % 4) + ".00"}}}}},
                           {"effective_from", Rfc3339(Time::FromMillis(now_ + static_cast<int64_t>(rng() % 3) * 60'000))}};
        return "prices " + std::to_string(core_->SetPrices(a, body.dump()).status);
      }
      case 12: {
        const std::string name = "pc" + std::to_string(rng() % 8);
        return "class " + name + " " +
               std::to_string(core_->CreatePriorityClass(a, R"({"name": ")" + name + R"(", "value": )" +
                                                                std::to_string(rng() % 1000) + "}").status);
      }
      case 13: {  // a tombstone (refused while the tenant has work or reservations)
        const std::string name = "t" + std::to_string(rng() % 6);
        return "delete tenant " + name + " " + std::to_string(core_->DeleteTenant(a, name).status);
      }
      case 14: {  // finished jobs leave memory ("archived_job")
        core_->SetRetention(Duration::Seconds(static_cast<int64_t>(rng() % 5)));
        core_->Tick(Time::FromMillis(now_), true);
        return "retention tick";
      }
      default:
        core_->Tick(Time::FromMillis(now_), true);
        return "tick";
    }
  }

  int64_t now_ = 10'000;
  int registered_ = 0;
};

}  // namespace gpupool
