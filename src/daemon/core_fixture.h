// The DaemonCore test fixture: a real SQLite journal that can be told to fail, the demo cluster
// bootstrapped, and members and viewers of two tenants (core_test.cc, lifecycle_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "daemon/core.h"
#include "model/demo_cluster.h"

namespace gpupool {

using Json = nlohmann::json;

// A real SQLite journal that can be told to fail its next appends (disk full, I/O error).
class FlakyJournal final : public Journal {
 public:
  explicit FlakyJournal(std::unique_ptr<Journal> inner, int* fail_next) : inner_(std::move(inner)), fail_(fail_next) {}
  Status Append(std::vector<Record>& batch) override {
    if (*fail_ > 0) {
      --*fail_;
      return Error{ErrorCode::kUnavailable, "injected: disk full"};
    }
    return inner_->Append(batch);
  }
  Result<std::vector<Record>> ReadAll() override { return inner_->ReadAll(); }

 private:
  std::unique_ptr<Journal> inner_;
  int* fail_;
};

class CoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gpupool-core-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir_);
    core_ = Open();
    ASSERT_TRUE(core_->empty());
    Result<std::string> admin = core_->Bootstrap(DemoCluster(), Time::FromMillis(1000));
    ASSERT_TRUE(admin.ok());
    for (const char* t : {"research", "product"}) {
      const TenantId id = *core_->state().FindTenant(t);
      members_[t] = {std::string(t) + "-bob", Role::kMember, id, std::string(t) + "-bob-token"};
      viewers_[t] = {std::string(t) + "-vic", Role::kViewer, id, std::string(t) + "-vic-token"};
    }
    ASSERT_TRUE(core_->Flush().ok());
  }

  std::unique_ptr<DaemonCore> Open() {
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir_ / "journal.db").string());
    EXPECT_TRUE(j.ok());
    auto flaky = std::make_unique<FlakyJournal>(std::move(*j), &fail_next_);
    Result<std::unique_ptr<DaemonCore>> core = DaemonCore::Open(std::move(flaky), SchedulerConfig());
    EXPECT_TRUE(core.ok()) << (core.ok() ? "" : core.error().message);
    return std::move(*core);
  }

  CallContext As(const Principal& p, int64_t ms = 2000) { return {&p, "127.0.0.1", Time::FromMillis(ms)}; }

  static std::string Job(const std::string& tenant, int gpus = 8, const std::string& name = "j") {
    return Json({{"tenant", tenant}, {"name", name}, {"priority_class", "training"}, {"replicas", 1},
                 {"resources", {{"flavor", "h100-80gb"}, {"gpus", gpus}}},
                 {"duration_estimate_s", 600}, {"command", {"run"}}})
        .dump();
  }

  // Everything an admin can read, as one JSON text: equal texts mean equal visible state.
  // Pending reasons are derived (the next cycle recomputes them), not journaled: left out.
  std::string Snapshot(DaemonCore& core) {
    const CallContext c = As(admin_);
    Json jobs = Json::parse(core.ListJobs(c, {}).body);
    for (Json& j : jobs["items"]) j.erase("reason");
    return jobs.dump() + core.ListTenants(c).body + core.ListNodes(c).body +
           core.ListTokens(c).body + core.ListAudit(c).body + core.ListPriorityClasses(c).body;
  }

  std::filesystem::path dir_;
  int fail_next_ = 0;
  std::unique_ptr<DaemonCore> core_;
  Principal admin_{"admin", Role::kClusterAdmin, TenantId(), ""};
  std::map<std::string, Principal> members_, viewers_;
};

}  // namespace gpupool
