// The daemon with the command provider behind an AsyncProvider, as Serve wires it: real scripts
// through /bin/sh on the provider's thread, a real SQLite journal. While a create script runs,
// the core's ticks return and the loop answers requests; a failure the provider reports later is
// handled as a failed call was (released request, back-off, log line, pending reason); a failed
// delete is retried. A script that must still be running waits for a gate file the test
// creates only once it has seen the daemon answer, so the ordering is asserted, not timed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "burst/async_provider.h"
#include "burst/command_provider.h"
#include "burst/test_scripts.h"
#include "daemon/control_plane_fixture.h"
#include "daemon/loop.h"
#include "daemon/metrics.h"

namespace gpupool {
namespace {

// BurstTest's cluster (control_plane_fixture.h: one 8-GPU node, tenant a bursts after 120 s with a
// budget of 200.00), its provider replaced by the command provider behind an AsyncProvider,
// running scripts from a fresh folder (ScriptDir).
class BurstAsyncTest : public BurstTest, public ScriptDir {
 protected:
  // Opens any gate a failed test left shut, and joins the provider's thread before the folder
  // goes.
  void TearDown() override {
    Touch("go");
    core_.reset();
  }
  void StartWith(const std::string& create_body, const std::string& delete_body = "true",
                 std::string yaml = kYaml) {
    Start("200.00", std::move(yaml));
    CommandProviderConfig cc{.create_command = Script("create.sh", create_body),
                             .delete_command = Script("delete.sh", delete_body),
                             .timeout = Duration::Seconds(60)};
    auto async = std::make_unique<AsyncProvider>(std::make_unique<CommandProvider>(core_->state().catalogue(), cc));
    provider_ = async.get();
    ASSERT_TRUE(core_->EnableBurst(config_.burst, std::move(async)).ok());
  }
  static std::string JobBody(int duration_s) {
    return Json({{"tenant", "a"}, {"name", "j"}, {"priority_class", "training"}, {"replicas", 1},
                 {"resources", {{"flavor", "h100-80gb"}, {"gpus", 8}}},
                 {"duration_estimate_s", duration_s}, {"command", {"run"}}})
        .dump();
  }
  Json FleetAt(int64_t s) { return Json::parse(core_->BurstView({&member_, "", At(s)}).body)["nodes"]; }

  AsyncProvider* provider_ = nullptr;  // owned by core_
};

// Prints the node "od-<request id>" once the gate file `go` exists.
std::string GatedCreate(const std::string& dir) {
  return "echo \"$GPUPOOL_TENANT $GPUPOOL_REQUEST_ID\" > " + dir + "/started\n" +
         "while [ ! -e " + dir + "/go ]; do sleep 0.01; done\n" +
         "printf '{\"name\": \"od-%s\", \"gpus\": %s, \"flavor\": \"%s\"}' \"$GPUPOOL_REQUEST_ID\" \"$GPUPOOL_GPUS\" "
         "\"$GPUPOOL_FLAVOR\"";
}

TEST_F(BurstAsyncTest, TicksReturnWhileTheCreateScriptRunsAndTheNodeJoinsLater) {
  StartWith(GatedCreate(dir()));
  Submit(0, 8, 3600);  // fills the pool's node
  TickAt(0);
  const std::string waiting = Submit(10, 8, 1800);
  TickAt(140);  // past max_wait: a node is asked for, and the tick returns (the gate is shut)
  ASSERT_EQ(FleetAt(140).size(), 1u);
  EXPECT_EQ(FleetAt(140)[0]["state"], "provisioning");
  const std::string rid = FleetAt(140)[0]["request_id"];
  EXPECT_EQ(rid.rfind("async-", 0), 0u) << rid;
  ASSERT_TRUE(WaitFor([&] { return Exists("started"); }));
  EXPECT_EQ(Read("started"), "a " + rid + "\n");  // the tenant's name and the journaled id
  // The script is still running: the daemon serves and ticks meanwhile.
  TickAt(141);
  EXPECT_EQ(JobAt(waiting, 141)["state"], "pending");
  EXPECT_EQ(core_->ListJobs({&member_, "", At(141)}, {}).status, 200);
  EXPECT_EQ(FleetAt(141)[0]["state"], "provisioning");
  Touch("go");
  ASSERT_TRUE(WaitFor([&] { return provider_->outstanding() == 0; }));
  TickAt(142);  // it joins before the cycle, and the waiting job runs there
  EXPECT_EQ(FleetAt(142)[0]["state"], "ready");
  EXPECT_EQ(FleetAt(142)[0]["node"], "od-" + rid);
  const Json job = JobAt(waiting, 142);
  EXPECT_EQ(job["state"], "admitted") << job.dump();
  ASSERT_EQ(job["placement"].size(), 1u) << job.dump();
  EXPECT_EQ(job["placement"][0]["node"], "od-" + rid);
  // A restart has the node, from the journal.
  core_.reset();
  core_ = Open();
  EXPECT_EQ(FleetAt(143).size(), 1u);
  EXPECT_EQ(FleetAt(143)[0]["node"], "od-" + rid);
}

TEST_F(BurstAsyncTest, AFailedCreateReleasesTheRequestBacksOffAndSaysWhy) {
  StartWith("echo quota exceeded in us-east-1 >&2; exit 3");
  Submit(0, 8, 3600);
  TickAt(0);
  const std::string waiting = Submit(10, 8, 1800);
  TickAt(140);
  ASSERT_EQ(FleetAt(140).size(), 1u);
  ASSERT_TRUE(WaitFor([&] { return provider_->outstanding() == 0; }));
  ::testing::internal::CaptureStderr();
  TickAt(141);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find(R"("msg":"on-demand provisioning failed; retrying in 30 s")"), std::string::npos) << log;
  EXPECT_NE(log.find("quota exceeded in us-east-1"), std::string::npos) << log;
  // The request died: released, never billed, and no longer capacity on its way.
  const Json fleet = FleetAt(141);
  ASSERT_EQ(fleet.size(), 1u);
  EXPECT_EQ(fleet[0]["state"], "released");
  EXPECT_EQ(fleet[0]["cost"], "0.000000");
  const std::string reason = JobAt(waiting, 141)["reason"]["message"];
  EXPECT_NE(reason.find("on-demand capacity: create script"), std::string::npos) << reason;
  EXPECT_NE(reason.find("exited with status 3; stderr: quota exceeded in us-east-1"), std::string::npos) << reason;
  // Backed off for 30 s from when the failure was seen, then asked again: the dead request no
  // longer covers the job.
  TickAt(170);
  EXPECT_EQ(FleetAt(170).size(), 1u);
  TickAt(172);
  EXPECT_EQ(FleetAt(172).size(), 2u);
  // A restart agrees: no request that did not become a node is kept, so nothing is owed.
  ASSERT_TRUE(WaitFor([&] { return provider_->outstanding() == 0; }));
  core_.reset();
  core_ = Open();
  EXPECT_TRUE(FleetAt(173).empty());
}

TEST_F(BurstAsyncTest, AFailedDeleteIsRetried) {
  StartWith(std::string("printf '{\"name\": \"od-1\", \"gpus\": 8, \"flavor\": \"h100-80gb\"}'"),
            "echo \"try $GPUPOOL_NODE\" >> " + Path("deletes") + "; echo no such instance >&2; exit 4");
  Submit(0, 8, 3600);
  TickAt(0);
  Submit(10, 8, 60);
  TickAt(140);
  ASSERT_TRUE(WaitFor([&] { return provider_->outstanding() == 0; }));
  TickAt(141);  // joins, and the job is placed there
  ASSERT_EQ(FleetAt(141)[0]["state"], "ready");
  TickAt(142);  // starts: it runs 60 s, then the node idles 300 s
  TickAt(210);
  TickAt(600);  // released: the delete script runs on the provider's thread and fails
  EXPECT_EQ(FleetAt(600)[0]["state"], "released");
  ASSERT_TRUE(WaitFor([&] { return provider_->outstanding() == 0; }));
  EXPECT_EQ(Read("deletes"), "try od-1\n");
  ::testing::internal::CaptureStderr();
  TickAt(601);  // the failure is seen, and the release asked again
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find(R"("msg":"provider failed to release a node: retried every tick")"), std::string::npos) << log;
  EXPECT_NE(log.find("no such instance (node od-1)"), std::string::npos) << log;
  ASSERT_TRUE(WaitFor([&] { return provider_->outstanding() == 0; }));
  EXPECT_EQ(Read("deletes"), "try od-1\ntry od-1\n");
}

// The real loop (wall-clock ticks every 20 ms) keeps answering requests while a create script
// waits; the gate opens only once a request was answered during the script's run.
TEST_F(BurstAsyncTest, TheLoopAnswersWhileACreateScriptRuns) {
  std::string yaml = kYaml;  // bursts at once: the loop's clock is the wall clock
  yaml.replace(yaml.find("max_wait_s: 120"), 15, "max_wait_s: 0");
  StartWith(GatedCreate(dir()), "true", yaml);
  Metrics metrics;
  Loop loop(*core_, metrics, 20, /*executor=*/true);
  std::atomic<bool> stop{false};
  std::thread runner([&] { loop.Run(stop); });
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& runner;
    ~Joiner() {
      stop = true;
      runner.join();
    }
  } joiner{stop, runner};
  // Posts `work` to the loop and waits for its reply (at most 20 s).
  auto call = [&](Loop::Work work) {
    auto answered = std::make_shared<std::promise<Reply>>();
    std::future<Reply> reply = answered->get_future();
    loop.Post(std::move(work), [answered](Reply r) { answered->set_value(std::move(r)); });
    if (reply.wait_for(std::chrono::seconds(20)) != std::future_status::ready) return Reply{0, "no answer"};
    return reply.get();
  };
  auto submit = [&](ControlPlane& core, Time now) { return core.SubmitJob({&member_, "", now}, JobBody(3600), ""); };
  EXPECT_EQ(call(submit).status, 201);
  const Reply second = call(submit);
  ASSERT_EQ(second.status, 201) << second.body;
  const std::string waiting = Json::parse(second.body)["id"];
  // The script has started, and cannot end before the gate opens (or its 60 s timeout): a loop
  // blocked in it would not answer within call's 20 s.
  ASSERT_TRUE(WaitFor([&] { return Exists("started"); }));
  const Reply list = call([&](ControlPlane& core, Time now) { return core.ListJobs({&member_, "", now}, {}); });
  EXPECT_EQ(list.status, 200) << list.body;
  Touch("go");
  auto state = [&] {
    const Reply r = call([&](ControlPlane& core, Time now) { return core.GetJob({&member_, "", now}, waiting); });
    return r.status == 200 ? Json::parse(r.body)["state"].get<std::string>() : r.body;
  };
  EXPECT_TRUE(WaitFor([&] { return state() == "running"; })) << state();
}

}  // namespace
}  // namespace gpupool
