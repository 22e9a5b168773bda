// An executor's changes go through the same commit path as every other tick change: staged,
// then appended at the flush. A failed append (a full disk) leaves memory at what is durable, and
// the change is made again from the executor's next observation, which says what the backend
// has, not what changed (control_plane_executors.cc). The backend here is a script of
// observations in the test; the real one is tests/slurm_executor_test.sh.
#include <gtest/gtest.h>

#include "daemon/control_plane_fixture.h"

namespace gpupool {
namespace {

class ScriptedBackend final : public executor::Executor {
 public:
  const std::string& name() const override { return name_; }
  const std::string& kind() const override { return name_; }
  void Want(std::vector<executor::Placement> run, std::map<std::string, std::string>) override { wanted = std::move(run); }
  executor::Observation Observe() const override { return seen; }

  // A new round: the node, and each wanted attempt in `state`.
  void Round(executor::RunState state, int foreign_gpus = 0) {
    ++seen.round;
    seen.nodes = {{"s1", "h100", 8, 64'000, 512'000, {}, false, "", foreign_gpus, foreign_gpus ? "job 9" : ""}};
    seen.attempts.clear();
    for (const executor::Placement& p : wanted) seen.attempts.push_back({p.job, p.attempt, state, "scripted"});
  }

  std::vector<executor::Placement> wanted;
  executor::Observation seen;

 private:
  std::string name_ = "scripted";
};

class ExecutorJournal : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    auto b = std::make_unique<ScriptedBackend>();
    backend_ = b.get();
    core_->AddExecutor(std::move(b), {{"h100", *core_->state().catalogue().Find("h100-80gb")}});
  }

  // A tick at `ms` and its flush, failing when `disk_full`; returns the flush's status.
  Status TickAndFlush(int64_t ms, bool disk_full) {
    core_->Tick(Time::FromMillis(ms), false);
    fail_next_ = disk_full ? 1 : 0;
    Status s = core_->Flush();
    fail_next_ = 0;
    return s;
  }

  Json Node(ControlPlane& core, const std::string& name) {
    const Json nodes = Json::parse(core.ListNodes(As(admin_, 90'000)).body);
    for (const Json& n : nodes["items"]) {
      if (n["name"] == name) return n;
    }
    return Json();
  }

  std::string StateOf(ControlPlane& core, const std::string& job) {
    return Json::parse(core.GetJob(As(admin_, 90'000), job).body).value("state", "?");
  }

  ScriptedBackend* backend_ = nullptr;
};

TEST_F(ExecutorJournal, AFailedWriteOfAnExecutorsChangeIsMadeAgainFromItsNextRound) {
  // The node joins; the append fails, so it has not; the next round adds it for good.
  backend_->Round(executor::RunState::kWaiting);
  EXPECT_FALSE(TickAndFlush(3'000, true).ok());
  EXPECT_TRUE(Node(*core_, "s1").is_null()) << "memory is back at what is durable";
  backend_->Round(executor::RunState::kWaiting);
  ASSERT_TRUE(TickAndFlush(4'000, false).ok());
  ASSERT_FALSE(Node(*core_, "s1").is_null());

  Json job = Json::parse(Job("research", 2, "on-s1"));
  job["node_selector"] = {{{"key", "gpupool.io/executor"}, {"operator", "In"}, {"values", {"scripted"}}}};
  const Reply r = core_->SubmitJob(As(members_["research"], 5'000), job.dump(), "");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = Json::parse(r.body)["id"];
  ASSERT_TRUE(core_->Flush().ok());
  // The admission's append fails: the backend is not told to run what gpupool did not keep.
  EXPECT_FALSE(TickAndFlush(5'500, true).ok());
  EXPECT_EQ(StateOf(*core_, id), "pending");
  EXPECT_TRUE(backend_->wanted.empty());
  ASSERT_TRUE(TickAndFlush(6'000, false).ok());
  ASSERT_EQ(StateOf(*core_, id), "admitted");
  ASSERT_EQ(backend_->wanted.size(), 1u);  // handed over once durable

  // The backend says it runs: the start's append fails and the job is admitted again, then
  // started at the next round.
  backend_->Round(executor::RunState::kRunning);
  EXPECT_FALSE(TickAndFlush(7'000, true).ok());
  EXPECT_EQ(StateOf(*core_, id), "admitted");
  EXPECT_TRUE(TickAndFlush(7'500, false).ok());
  EXPECT_EQ(StateOf(*core_, id), "admitted") << "no new round: nothing new is known";
  backend_->Round(executor::RunState::kRunning);
  ASSERT_TRUE(TickAndFlush(8'000, false).ok());
  EXPECT_EQ(StateOf(*core_, id), "running");

  // A job outside gpupool takes 3 GPUs: lost with the append, taken out at the next round.
  backend_->Round(executor::RunState::kRunning, 3);
  EXPECT_FALSE(TickAndFlush(9'000, true).ok());
  EXPECT_EQ(Node(*core_, "s1")["healthy_gpus"], 8);
  backend_->Round(executor::RunState::kRunning, 3);
  ASSERT_TRUE(TickAndFlush(10'000, false).ok());
  EXPECT_EQ(Node(*core_, "s1")["healthy_gpus"], 5);

  // The end: the same, and the backend is still asked to run the job while gpupool has not
  // kept its end (with Slurm: a job still running is not cancelled on a decision that is lost).
  backend_->Round(executor::RunState::kSucceeded, 3);
  EXPECT_FALSE(TickAndFlush(11'000, true).ok());
  EXPECT_EQ(StateOf(*core_, id), "running");
  EXPECT_EQ(backend_->wanted.size(), 1u);
  backend_->Round(executor::RunState::kSucceeded, 3);
  ASSERT_TRUE(TickAndFlush(12'000, false).ok());
  EXPECT_EQ(StateOf(*core_, id), "succeeded");
  EXPECT_TRUE(backend_->wanted.empty());

  // What was acknowledged is what a restart reads.
  core_.reset();
  std::unique_ptr<ControlPlane> again = Open();
  EXPECT_EQ(StateOf(*again, id), "succeeded");
  EXPECT_EQ(Node(*again, "s1")["healthy_gpus"], 5);
}

}  // namespace
}  // namespace gpupool
