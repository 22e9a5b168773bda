// Protocol tests of the agent alone: an in-process httplib server on 127.0.0.1:0 plays the
// daemon's side of docs/design/agent.md ("Protocol between the agent and the daemon") from a
// script, and the agent runs real processes through a real Executor on a FakeProbe. The
// end-to-end test against the real daemon lives with the daemon.
#include "agent/agent_loop.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <atomic>
#include <thread>

#include "agent/fake_probe.h"

namespace gpupool {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The daemon's side, from a script: replies are queued per endpoint; an empty queue answers
// the default (a ready registration, an empty heartbeat reply). Every request is recorded, and
// read with the daemon's own decoders (api/agent_protocol.h): what the agent sent that the
// daemon would refuse, or whose entries it would drop, is in Refused() (empty after every test).
class FakeDaemon {
 public:
  struct Request {
    std::string path;
    std::string authorization;
    Json body;
  };

  FakeDaemon() {
    server_.Post("/v1/agents/register",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   Answer(req, res, register_replies_,
                          Json::parse(Encode(RegisterReply{.node = "n1",
                                                           .condition = "ready",
                                                           .heartbeat_interval_ms = 1000,
                                                           .heartbeat_timeout_ms = 10000})));
                 });
    server_.Post(R"(/v1/agents/([^/]+)/heartbeat)",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   const int delay = heartbeat_delay_ms_.load();
                   if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
                   Answer(req, res, heartbeat_replies_,
                          Json::parse(Encode(HeartbeatReply{.condition = "ready"})));
                 });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the accept loop runs would be lost (and the join below would hang).
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeDaemon() {
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void QueueRegister(int status, Json body) {
    std::lock_guard<std::mutex> l(mu_);
    register_replies_.emplace_back(status, std::move(body));
  }
  void QueueHeartbeat(int status, Json body) {
    std::lock_guard<std::mutex> l(mu_);
    heartbeat_replies_.emplace_back(status, std::move(body));
  }
  std::vector<Request> Requests(const std::string& suffix) const {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<Request> out;
    for (const Request& r : requests_) {
      if (r.path.size() >= suffix.size() &&
          r.path.compare(r.path.size() - suffix.size(), suffix.size(), suffix) == 0) {
        out.push_back(r);
      }
    }
    return out;
  }
  std::vector<Request> Registers() const { return Requests("/register"); }
  void SetHeartbeatDelay(int ms) { heartbeat_delay_ms_ = ms; }
  // A replica that follows: every request is answered 307 to `leader` + its path.
  void RedirectTo(const std::string& leader) {
    std::lock_guard<std::mutex> l(mu_);
    redirect_ = leader;
  }
  std::vector<Request> Heartbeats() const { return Requests("/heartbeat"); }
  std::vector<std::string> Refused() const {
    std::lock_guard<std::mutex> l(mu_);
    return refused_;
  }

 private:
  void Check(const httplib::Request& req) {
    std::vector<std::string> skipped;
    if (req.path == "/v1/agents/register") {
      Result<RegisterRequest> r = DecodeRegisterRequest(req.body);
      if (!r.ok()) refused_.push_back("register: " + r.error().message);
    } else {
      Result<HeartbeatRequest> r = DecodeHeartbeatRequest(req.body);
      if (!r.ok()) refused_.push_back("heartbeat: " + r.error().message);
      if (r.ok()) skipped = r->skipped;
    }
    for (const std::string& why : skipped) refused_.push_back("heartbeat entry: " + why);
  }
  using Script = std::deque<std::pair<int, Json>>;
  void Answer(const httplib::Request& req, httplib::Response& res, Script& script,
              const Json& fallback) {
    std::lock_guard<std::mutex> l(mu_);
    requests_.push_back(
        {req.path, req.get_header_value("Authorization"), Json::parse(req.body, nullptr, false)});
    if (!redirect_.empty()) {
      res.status = 307;
      res.set_header("Location", redirect_ + req.path);
      res.set_content(R"({"error": {"code": "unavailable", "message": "this replica follows"}})", "application/json");
      return;
    }
    Check(req);
    int status = 200;
    Json body = fallback;
    if (!script.empty()) {
      std::tie(status, body) = script.front();
      script.pop_front();
    }
    res.status = status;
    res.set_content(body.dump(), "application/json");
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  Script register_replies_, heartbeat_replies_;
  std::vector<Request> requests_;
  std::vector<std::string> refused_;
  std::atomic<int> heartbeat_delay_ms_{0};
  std::string redirect_;
};

class AgentAloneProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpupool-agent-loop-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ExecutorOptions eo;
    eo.work_dir = dir_ + "/work";
    eo.cgroup_parent = "";
    auto ex = Executor::Create(std::move(eo));
    ASSERT_TRUE(ex.ok()) << ex.error().message;
    executor_ = std::move(*ex);
  }
  void TearDown() override {
    // A test that failed with a fake MIG apply still waiting must not make the agent's
    // destructor (which joins the MIG worker) wait it out.
    if (probe_) probe_->SetMigDelay(Duration::Millis(0));
    EXPECT_EQ(daemon_.Refused(), std::vector<std::string>{});
    agent_.reset();
    executor_.reset();
    fs::remove_all(dir_);
  }

  void MakeAgent(const std::string& spec = "2xh100-80gb", AgentOptions o = {}) {
    auto probe = FakeProbe::Create("n1", spec);
    ASSERT_TRUE(probe.ok()) << probe.error().message;
    probe_ = std::move(*probe);
    if (o.server_url.empty()) o.server_url = daemon_.url();
    o.token = "secret-token";
    o.node = "n1";
    if (o.users.empty() && o.allow_root.empty()) o.allow_root = {"*"};  // jobs as the test's user
    o.log = [this](const Json& record) {
      std::lock_guard<std::mutex> l(log_mu_);
      logs_.push_back(record);
    };
    auto agent = Agent::Create(std::move(o), *probe_, *executor_);
    ASSERT_TRUE(agent.ok()) << agent.error().message;
    agent_ = std::move(*agent);
  }

  // Heartbeats (at t = 1 s, 2 s, ... of fake time, 20 ms of real time apart) until `done` holds
  // for the last heartbeat body; at most 10 s.
  Json HeartbeatUntil(const std::function<bool(const Json&)>& done) {
    for (int i = 0; i < 500; ++i) {
      const Status s = agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_));
      EXPECT_TRUE(s.ok()) << s.error().message;
      const auto hb = daemon_.Heartbeats();
      if (!hb.empty() && done(hb.back().body)) return hb.back().body;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "condition not reached";
    return Json();
  }

  static const Json* FindReplica(const Json& hb, const std::string& job, int replica) {
    for (const Json& r : hb["replicas"]) {
      if (r["job"] == job && r["replica"] == replica) return &r;
    }
    return nullptr;
  }
  static const Json* FindLog(const Json& hb, const std::string& job, int replica) {
    for (const Json& r : hb["logs"]) {
      if (r["job"] == job && r["replica"] == replica) return &r;
    }
    return nullptr;
  }
  static Json Start(const std::string& job, int replica, std::vector<std::string> argv,
                    std::vector<std::string> devices = {}, int64_t attempt = 1) {
    return {{"job", job},
            {"replica", replica},
            {"attempt", attempt},
            {"command", argv},
            {"devices", devices}};
  }
  // Heartbeats until the replica's report has `state`; returns that heartbeat's body.
  // Starts replica 0 of `job` on `device`, running until the returned file appears and then
  // exiting with `code`; returns once the daemon was told it runs.
  std::string RunReplicaUntilSignal(const std::string& job, const std::string& device, int code = 1) {
    const std::string signal = dir_ + "/signal-" + job;
    daemon_.QueueHeartbeat(
        200, {{"start",
               {Start(job, 0,
                      {"/bin/sh", "-c",
                       "while [ ! -e " + signal + " ]; do sleep 0.02; done; exit " + std::to_string(code)},
                      {device})}}});
    EXPECT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
    HeartbeatUntilState(job, 0, "running");
    return signal;
  }

  Json HeartbeatUntilState(const std::string& job, int replica, const std::string& state) {
    return HeartbeatUntil([&](const Json& b) {
      const Json* r = FindReplica(b, job, replica);
      return r && (*r)["state"] == state;
    });
  }
  // "3g.40gb@0=MIG-...,..." for GPU `gpu` in a heartbeat body's "gpus".
  static std::string Instances(const Json& hb, int gpu) {
    std::string out;
    for (const Json& g : hb["gpus"]) {
      if (g["index"] != gpu) continue;
      for (const Json& i : g["instances"]) {
        out += (out.empty() ? "" : ",") + i["profile"].get<std::string>() + "@" +
               std::to_string(i["start"].get<int>()) + "=" + i["uuid"].get<std::string>();
      }
    }
    return out;
  }
  // The last log entry sent for a replica, over every heartbeat so far (tails are sent only when
  // they change, so the one with the exit may carry none).
  Json LastLog(const std::string& job, int replica) const {
    Json last;
    for (const auto& hb : daemon_.Heartbeats()) {
      if (const Json* l = FindLog(hb.body, job, replica)) last = *l;
    }
    return last;
  }
  bool Logged(const std::string& msg) { return LogCount(msg) > 0; }
  int LogCount(const std::string& msg, const Json& fields = Json::object()) {
    std::lock_guard<std::mutex> l(log_mu_);
    int n = 0;
    for (const Json& r : logs_) {
      if (r.value("msg", "") != msg) continue;
      bool match = true;
      for (const auto& [k, v] : fields.items()) match = match && r.value(k, Json()) == v;
      n += match ? 1 : 0;
    }
    return n;
  }
  // Waits (at most 30 s of real time) until `done` holds; false if it never did.
  static bool WaitFor(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  // Waits until the replica's shim has exited (the replica is gone) but is not reaped yet (a
  // zombie): the agent's next ReapExits sees its exit, whatever the machine's load.
  bool WaitUntilExitedUnreaped(const std::string& replica) {
    const pid_t pid = executor_->shim_pid(replica);
    if (pid <= 0) return false;
    return WaitFor([&] {
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string line;
      std::getline(stat, line);
      const size_t paren = line.rfind(')');
      return paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z';
    });
  }
  static bool HasHealth(const Json& hb, const Json& event) {
    return std::find(hb["health"].begin(), hb["health"].end(), event) != hb["health"].end();
  }

  std::string dir_;
  FakeDaemon daemon_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<FakeProbe> probe_;
  std::unique_ptr<Agent> agent_;
  int64_t clock_s_ = 0;
  std::mutex log_mu_;
  std::vector<Json> logs_;
};

TEST_F(AgentAloneProtocolTest, RegisterSendsFlavorGpusAndAcceptance) {
  AgentOptions o;
  o.acceptance_command =
      "echo accept-stdout; echo accept-stderr >&2; echo \"cvd=$CUDA_VISIBLE_DEVICES\"";
  MakeAgent("1xa100-80gb:mig=3g.40gb+3g.40gb,1xa100-80gb", o);
  daemon_.QueueRegister(200, {{"node", "n1"},
                              {"condition", "ready"},
                              {"heartbeat_interval_ms", 250},
                              {"heartbeat_timeout_ms", 5000}});
  ASSERT_TRUE(agent_->Register().ok());
  EXPECT_TRUE(agent_->registered());
  EXPECT_EQ(agent_->condition(), "ready");
  EXPECT_EQ(agent_->heartbeat_interval(), Duration::Millis(250));

  const auto regs = daemon_.Registers();
  ASSERT_EQ(regs.size(), 1u);
  EXPECT_EQ(regs[0].path, "/v1/agents/register");
  EXPECT_EQ(regs[0].authorization, "Bearer secret-token");
  const Json& b = regs[0].body;
  EXPECT_EQ(b["node"], "n1");
  EXPECT_EQ(b["flavor"], "a100-80gb");
  EXPECT_EQ(b["labels"], Json::array());
  // The driver's versions and the product, for node selectors.
  EXPECT_EQ(b["reported_labels"], (Json{"node.gpupool.io/cuda-version=12.4", "node.gpupool.io/driver-version=550.54.15",
                                        "node.gpupool.io/gpu-product=NVIDIA-A100-SXM4-80GB"}));
  EXPECT_EQ(b["cpu_milli"], 0);
  EXPECT_EQ(b["memory_mib"], 0);
  ASSERT_EQ(b["gpus"].size(), 2u);
  const Json& g0 = b["gpus"][0];
  EXPECT_EQ(g0["index"], 0);
  EXPECT_EQ(g0["uuid"], "GPU-fake-n1-0");
  EXPECT_EQ(g0["mig"], true);
  ASSERT_EQ(g0["instances"].size(), 2u);
  EXPECT_EQ(g0["instances"][0],
            (Json{{"start", 0}, {"size", 4}, {"profile", "3g.40gb"}, {"uuid", "MIG-fake-n1-0-1"}}));
  EXPECT_EQ(g0["instances"][1],
            (Json{{"start", 4}, {"size", 4}, {"profile", "3g.40gb"}, {"uuid", "MIG-fake-n1-0-2"}}));
  const Json& g1 = b["gpus"][1];
  EXPECT_EQ(g1["uuid"], "GPU-fake-n1-1");
  EXPECT_EQ(g1["mig"], false);
  EXPECT_FALSE(g1.contains("instances"));

  ASSERT_TRUE(b.contains("acceptance"));
  EXPECT_EQ(b["acceptance"]["passed"], true);
  const std::string out = b["acceptance"]["output"];
  EXPECT_NE(out.find("accept-stdout\naccept-stderr\n"), std::string::npos) << out;
  EXPECT_NE(out.find("cvd=MIG-fake-n1-0-1,MIG-fake-n1-0-2,GPU-fake-n1-1"), std::string::npos)
      << out;

  // The acceptance command runs once: a second registration sends the same result.
  ASSERT_TRUE(agent_->Register().ok());
  EXPECT_EQ(daemon_.Registers()[1].body["acceptance"], b["acceptance"]);
}

// A heartbeat whose reply does not come is given up on after a third of the lease, not after
// the client's 15 s default: the agent can try again while its replicas' lease still holds.
TEST_F(AgentAloneProtocolTest, AStalledHeartbeatIsGivenUpOnWithinTheLease) {
  MakeAgent();
  daemon_.QueueRegister(200, {{"node", "n1"}, {"condition", "ready"}, {"heartbeat_interval_ms", 250},
                              {"heartbeat_timeout_ms", 3000}, {"lease_ms", 3000}});
  ASSERT_TRUE(agent_->Register().ok());
  daemon_.SetHeartbeatDelay(4000);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(900));
  EXPECT_LT(waited, std::chrono::milliseconds(2500)) << "waited for the reply past a third of the 3 s lease";
  daemon_.SetHeartbeatDelay(0);
}

TEST_F(AgentAloneProtocolTest, AcceptanceFailureAndOmission) {
  AgentOptions o;
  o.acceptance_command = "head -c 6000 /dev/zero | tr '\\0' x; echo; echo broken >&2; exit 4";
  MakeAgent("2xh100-80gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  const Json a = daemon_.Registers()[0].body["acceptance"];
  EXPECT_EQ(a["passed"], false);
  const std::string out = a["output"];
  EXPECT_EQ(out.size(), 4096u);  // the last 4 KiB
  EXPECT_EQ(out.substr(out.size() - 7), "broken\n");
  EXPECT_EQ(daemon_.Registers()[0].body["flavor"], "h100-80gb");

  agent_.reset();
  MakeAgent("2xh100-80gb");  // no acceptance command: no "acceptance" key
  ASSERT_TRUE(agent_->Register().ok());
  EXPECT_FALSE(daemon_.Registers()[1].body.contains("acceptance"));
}

TEST_F(AgentAloneProtocolTest, AcceptanceTimeoutFails) {
  AgentOptions o;
  o.acceptance_command = "echo started; exec sleep 30";
  o.acceptance_timeout = Duration::Millis(200);
  MakeAgent("2xh100-80gb", o);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(agent_->Register().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  const Json a = daemon_.Registers()[0].body["acceptance"];
  EXPECT_EQ(a["passed"], false);
  EXPECT_NE(a["output"].get<std::string>().find("timed out"), std::string::npos) << a;
}

TEST_F(AgentAloneProtocolTest, StartRunsCommandReportsExitLogsAndForget) {
  MakeAgent("2xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  Json start = Start("12", 0,
                     {"/bin/sh", "-c",
                      "echo hello; echo \"cvd=$CUDA_VISIBLE_DEVICES job=$GPUPOOL_JOB "
                      "replica=$GPUPOOL_REPLICA\"; echo oops >&2; exit 3"},
                     {"GPU-fake-n1-1", "GPU-fake-n1-0"});
  start["env"] = {{"GPUPOOL_JOB", "12"}, {"GPUPOOL_REPLICA", "0"}};
  daemon_.QueueHeartbeat(200, {{"start", {start}}, {"condition", "ready"}});
  // The first heartbeat has nothing to report and gets the start.
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  Json first = daemon_.Heartbeats()[0].body;
  EXPECT_EQ(first["replicas"], Json::array());
  EXPECT_EQ(agent_->replicas(), std::vector<std::string>{"12-0"});

  const Json hb = HeartbeatUntil([&](const Json& b) {
    const Json* r = FindReplica(b, "12", 0);
    return r && (*r)["state"] == "exited";
  });
  const Json* r = FindReplica(hb, "12", 0);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ((*r)["exit_code"], 3);
  EXPECT_EQ((*r)["signal"], 0);
  // By the time the exit is reported, so are the final tails (exits are reaped before the
  // tails are read).
  const Json log = LastLog("12", 0);
  ASSERT_TRUE(log.is_object());
  EXPECT_EQ(log["stdout"], "hello\ncvd=GPU-fake-n1-1,GPU-fake-n1-0 job=12 replica=0\n");
  EXPECT_EQ(log["stderr"], "oops\n");

  // Unchanged tails are not sent again; the exit is, until the daemon says forget.
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  Json again = daemon_.Heartbeats().back().body;
  ASSERT_NE(FindReplica(again, "12", 0), nullptr);
  EXPECT_EQ(FindLog(again, "12", 0), nullptr);

  daemon_.QueueHeartbeat(200, {{"forget", {{{"job", "12"}, {"replica", 0}}}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_TRUE(agent_->replicas().empty());
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(daemon_.Heartbeats().back().body["replicas"], Json::array());
  EXPECT_EQ(daemon_.Heartbeats().back().path, "/v1/agents/n1/heartbeat");
  EXPECT_EQ(daemon_.Heartbeats().back().authorization, "Bearer secret-token");
}

TEST_F(AgentAloneProtocolTest, StartIsIdempotentAndStopTerminatesSleep) {
  MakeAgent("2xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  const Json start = Start("7", 1, {"sleep", "30"}, {"GPU-fake-n1-0"});
  daemon_.QueueHeartbeat(200, {{"start", {start}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  ASSERT_TRUE(executor_->running("7-1"));
  const pid_t pid = executor_->pid("7-1");

  // The same start again (the daemon had not seen the report yet): not started twice.
  daemon_.QueueHeartbeat(200, {{"start", {start}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(executor_->pid("7-1"), pid);
  const Json hb = daemon_.Heartbeats().back().body;
  ASSERT_NE(FindReplica(hb, "7", 1), nullptr);
  EXPECT_EQ((*FindReplica(hb, "7", 1))["state"], "running");
  EXPECT_EQ(hb["replicas"].size(), 1u);

  daemon_.QueueHeartbeat(200, {{"stop", {{{"job", "7"}, {"replica", 1}, {"grace_s", 5}}}}});
  const auto t0 = std::chrono::steady_clock::now();
  const Json done = HeartbeatUntil([&](const Json& b) {
    const Json* r = FindReplica(b, "7", 1);
    return r && (*r)["state"] == "exited";
  });
  EXPECT_LT(std::chrono::steady_clock::now() - t0,
            std::chrono::seconds(4));  // SIGTERM, not the grace
  const Json* r = FindReplica(done, "7", 1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ((*r)["signal"], SIGTERM);
  EXPECT_EQ((*r)["exit_code"], 128 + SIGTERM);
}

TEST_F(AgentAloneProtocolTest, StopEscalatesToSigkillAfterGrace) {
  MakeAgent("2xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  daemon_.QueueHeartbeat(
      200,
      {{"start",
        {Start("8", 0,
               {"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  HeartbeatUntil([&](const Json& b) {  // the trap is set once "ready" is printed
    const Json* l = FindLog(b, "8", 0);
    return l && (*l)["stdout"] == "ready\n";
  });
  daemon_.QueueHeartbeat(200, {{"stop", {{{"job", "8"}, {"replica", 0}, {"grace_s", 1}}}}});
  const Json done = HeartbeatUntil([&](const Json& b) {
    const Json* r = FindReplica(b, "8", 0);
    return r && (*r)["state"] == "exited";
  });
  EXPECT_EQ((*FindReplica(done, "8", 0))["signal"], SIGKILL);
}

TEST_F(AgentAloneProtocolTest, HeartbeatNotFoundReregistersAndReplicasSurvive) {
  MakeAgent("2xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  daemon_.QueueHeartbeat(200, {{"start", {Start("3", 0, {"sleep", "30"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  ASSERT_TRUE(executor_->running("3-0"));

  // The daemon restarted: the heartbeat answers 404, the agent registers and sends it again.
  daemon_.QueueHeartbeat(404, {{"error", {{"code", "NOT_FOUND"}, {"message", "unknown node n1"}}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(daemon_.Registers().size(), 2u);
  const auto hbs = daemon_.Heartbeats();
  ASSERT_EQ(hbs.size(), 3u);
  EXPECT_EQ(hbs[1].body["replicas"], hbs[2].body["replicas"]);
  EXPECT_NE(FindLog(hbs[2].body, "3", 0), nullptr);  // the new daemon gets the tails again
  ASSERT_NE(FindReplica(hbs[2].body, "3", 0), nullptr);
  EXPECT_EQ((*FindReplica(hbs[2].body, "3", 0))["state"], "running");
  EXPECT_TRUE(executor_->running("3-0"));
  EXPECT_TRUE(agent_->registered());
}

// A daemon that held the node unreachable (it did not hear the agent for its timeout, e.g. it
// was itself paused past it) takes it back only through a registration: the agent registers
// again at its next heartbeat, and its replicas keep running (the lease still came with the
// reply). Before, its heartbeats went on and the node stayed unreachable for good.
TEST_F(AgentAloneProtocolTest, AnUnreachableConditionMakesTheAgentRegisterAgain) {
  MakeAgent("2xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  daemon_.QueueHeartbeat(200, {{"start", {Start("3", 0, {"sleep", "30"})}}, {"condition", "ready"}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  ASSERT_TRUE(executor_->running("3-0"));
  daemon_.QueueHeartbeat(200, {{"condition", "unreachable"}, {"lease_ms", 10000}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_FALSE(agent_->registered());
  EXPECT_TRUE(Logged("the daemon holds this node unreachable: registering again"));
  daemon_.QueueHeartbeat(200, {{"condition", "ready"}, {"lease_ms", 10000}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(daemon_.Registers().size(), 2u);
  EXPECT_TRUE(agent_->registered());
  EXPECT_TRUE(executor_->running("3-0"));
}

TEST_F(AgentAloneProtocolTest, RegisterErrors) {
  MakeAgent("2xh100-80gb");
  daemon_.QueueRegister(409, {{"error", {{"code", "CONFLICT"}, {"message", "flavor mismatch"}}}});
  Status s = agent_->Register();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kConflict);
  EXPECT_NE(s.error().message.find("flavor mismatch"), std::string::npos) << s.error().message;
  EXPECT_FALSE(agent_->registered());
  daemon_.QueueRegister(503, Json::object());
  s = agent_->Register();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  // A heartbeat before a successful registration registers first.
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(1)).ok());
  EXPECT_EQ(daemon_.Registers().size(), 3u);
  EXPECT_EQ(daemon_.Heartbeats().size(), 1u);
}

TEST_F(AgentAloneProtocolTest, UnreachableServerIsUnavailable) {
  auto probe = FakeProbe::Create("n1", "1xh100-80gb");
  ASSERT_TRUE(probe.ok());
  AgentOptions o;
  o.server_url = "http://127.0.0.1:1";  // nothing listens there
  o.node = "n1";
  o.log = [](const Json&) {};
  auto agent = Agent::Create(std::move(o), **probe, *executor_);
  ASSERT_TRUE(agent.ok());
  const Status s = (*agent)->Register();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
}

TEST_F(AgentAloneProtocolTest, BadStartIsReportedAsExit127) {
  MakeAgent("2xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  daemon_.QueueHeartbeat(
      200,
      {{"start",
        {Start("5", 0, {"true"}, {"not-a-uuid"}), Start("5", 1, {"no-such-program-gpupool"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  const Json hb = HeartbeatUntil([&](const Json& b) {
    const Json* r = FindReplica(b, "5", 1);
    return r && (*r)["state"] == "exited";
  });
  const Json* bad = FindReplica(hb, "5", 0);
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ((*bad)["state"], "exited");
  EXPECT_EQ((*bad)["exit_code"], 127);
  const std::string err = LastLog("5", 0)["stderr"];
  EXPECT_NE(err.find("not-a-uuid"), std::string::npos) << err;
  EXPECT_EQ((*FindReplica(hb, "5", 1))["exit_code"], 127);  // execvp: not found
}

TEST_F(AgentAloneProtocolTest, FaultFileReachesHealthList) {
  const std::string faults = dir_ + "/faults";
  AgentOptions o;
  o.fault_file = faults;
  MakeAgent("2xh100-80gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  {
    std::ofstream f(faults);
    f << "xid 1 79\nbogus line\nxid 9 79\necc 0 2\nrow_remap 1\ntemp 0 92\n";
  }
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  const Json health = daemon_.Heartbeats().back().body["health"];
  const Json want = Json::array({
      {{"gpu", 1}, {"kind", "xid"}, {"code", 79}},
      {{"gpu", 0}, {"kind", "ecc"}, {"count", 2}},
      {{"gpu", 1}, {"kind", "row_remap_failure"}},
      {{"gpu", 0}, {"kind", "temperature"}, {"celsius", 92}},
      {{"gpu", 1}, {"kind", "temperature"}, {"celsius", 40}},
  });
  EXPECT_EQ(health, want);
  EXPECT_EQ(fs::file_size(faults), 0u);                                      // read and truncated
  EXPECT_TRUE(Logged("fault file: skipping an unknown or malformed line"));  // "bogus", gpu 9
  // Events go once; temperatures on every heartbeat.
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(daemon_.Heartbeats().back().body["health"].size(), 2u);
}

TEST_F(AgentAloneProtocolTest, FaultFileNeedsFakeProbe) {
  AgentOptions o;
  o.server_url = daemon_.url();
  o.node = "n1";
  o.fault_file = dir_ + "/faults";
  struct OtherProbe : GpuProbe {
    Result<std::vector<GpuInfo>> Discover() override { return std::vector<GpuInfo>{}; }
    Result<std::vector<HealthEvent>> PollHealth() override { return std::vector<HealthEvent>{}; }
  } other;
  auto agent = Agent::Create(std::move(o), other, *executor_);
  ASSERT_FALSE(agent.ok());
  EXPECT_EQ(agent.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(AgentAloneProtocolTest, LoseHeartbeatsStopsSendingThenReregisters) {
  const std::string faults = dir_ + "/faults";
  AgentOptions o;
  o.fault_file = faults;
  MakeAgent("2xh100-80gb", o);
  daemon_.QueueRegister(
      200,
      {{"condition", "ready"}, {"heartbeat_interval_ms", 1000}, {"heartbeat_timeout_ms", 3000}});
  ASSERT_TRUE(agent_->Register().ok());
  daemon_.QueueHeartbeat(200, {{"start", {Start("4", 0, {"sleep", "30"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(10)).ok());
  ASSERT_EQ(daemon_.Heartbeats().size(), 1u);

  { std::ofstream(faults) << "lose_heartbeats 5\n"; }
  for (int t = 11; t < 16; ++t) {
    ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(t)).ok());
    EXPECT_TRUE(agent_->heartbeats_suspended(Time::FromSeconds(t)));
  }
  EXPECT_TRUE(probe_->heartbeat_lost());
  EXPECT_EQ(daemon_.Heartbeats().size(), 1u);  // nothing sent while "cut off"
  EXPECT_TRUE(executor_->running("4-0"));      // the process keeps running

  // At t = 16 the outage (6 s since the last heartbeat) exceeds the daemon's 3 s timeout: the
  // agent registers again before it heartbeats.
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(16)).ok());
  EXPECT_FALSE(probe_->heartbeat_lost());
  EXPECT_EQ(daemon_.Registers().size(), 2u);
  ASSERT_EQ(daemon_.Heartbeats().size(), 2u);
  EXPECT_NE(FindReplica(daemon_.Heartbeats().back().body, "4", 0), nullptr);
}

TEST_F(AgentAloneProtocolTest, FailedHeartbeatKeepsHealthForTheNext) {
  const std::string faults = dir_ + "/faults";
  AgentOptions o;
  o.fault_file = faults;
  MakeAgent("1xh100-80gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  { std::ofstream(faults) << "xid 0 48\n"; }
  daemon_.QueueHeartbeat(500, Json::object());
  EXPECT_FALSE(agent_->HeartbeatOnce(Time::FromSeconds(1)).ok());
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(2)).ok());
  const Json health = daemon_.Heartbeats().back().body["health"];
  ASSERT_EQ(health.size(), 2u);
  EXPECT_EQ(health[0], (Json{{"gpu", 0}, {"kind", "xid"}, {"code", 48}}));
}

TEST_F(AgentAloneProtocolTest, RunRetriesRegistrationHeartbeatsAndStopsReplicasOnSigterm) {
  AgentOptions o;
  o.heartbeat_interval = Duration::Millis(50);
  o.register_backoff_initial = Duration::Millis(20);
  o.shutdown_grace = Duration::Seconds(5);
  MakeAgent("2xh100-80gb", o);
  daemon_.QueueRegister(503, Json::object());
  daemon_.QueueRegister(503, Json::object());
  daemon_.QueueHeartbeat(200, {{"start", {Start("1", 0, {"sleep", "30"})}}});
  int rc = -1;
  std::thread run([&] { rc = agent_->Run(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  // Wait for a report of the replica running (the executor belongs to Run's thread meanwhile).
  auto reported_running = [&] {
    const auto hbs = daemon_.Heartbeats();
    if (hbs.size() < 3) return false;
    const Json* r = FindReplica(hbs.back().body, "1", 0);
    return r != nullptr && (*r)["state"] == "running";
  };
  while (!reported_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(reported_running());
  EXPECT_EQ(daemon_.Registers().size(), 3u);
  kill(getpid(), SIGTERM);  // Run's handler turns it into a stop
  run.join();
  EXPECT_EQ(rc, 0);
  EXPECT_FALSE(executor_->running("1-0"));  // SIGTERM'd by the shutdown
  EXPECT_TRUE(Logged("shutting down"));
}

TEST_F(AgentAloneProtocolTest, RunEndsWhenRegistrationIsRefused) {
  MakeAgent("2xh100-80gb");
  daemon_.QueueRegister(409, {{"error", {{"code", "CONFLICT"}, {"message", "2 GPUs, want 8"}}}});
  EXPECT_EQ(agent_->Run(), 1);
  EXPECT_TRUE(daemon_.Heartbeats().empty());
}

// A reply is read entry by entry (api/agent_protocol.h, acceptance 3): a malformed entry is
// skipped and logged, a start that names its replica but asks for something impossible is that
// replica's failed start (exit 127, the reason in its stderr), and the good entries apply.
TEST_F(AgentAloneProtocolTest, AMalformedReplyEntryIsSkippedAndTheRestApplies) {
  MakeAgent("2xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  Json bad_mps = Start("12", 0, {"true"});
  bad_mps["mps_active_thread_percentage"] = 0;
  daemon_.QueueHeartbeat(200, {{"stop", {"not an object"}},
                               {"start", {bad_mps, Start("13", 0, {"echo", "hello"}), 42}},
                               {"mig", "not a list"},
                               {"lease_ms", "soon"}});
  const Json hb = HeartbeatUntil([&](const Json& b) {
    const Json* good = FindReplica(b, "13", 0);
    const Json* failed = FindReplica(b, "12", 0);
    return good && failed && (*good)["state"] == "exited" && (*failed)["state"] == "exited";
  });
  EXPECT_EQ((*FindReplica(hb, "13", 0))["exit_code"], 0);
  EXPECT_EQ(LastLog("13", 0)["stdout"], "hello\n");
  EXPECT_EQ((*FindReplica(hb, "12", 0))["exit_code"], 127);
  EXPECT_NE(LastLog("12", 0)["stderr"].get<std::string>().find("mps_active_thread_percentage"),
            std::string::npos);
  EXPECT_TRUE(Logged("heartbeat reply: 'stop[0]' must be an object"));
  EXPECT_TRUE(Logged("heartbeat reply: 'start[2]' must be an object"));
  EXPECT_TRUE(Logged("heartbeat reply: 'mig' must be a list"));
  EXPECT_TRUE(Logged("heartbeat reply: 'lease_ms' must be a number of milliseconds"));
}

// A 2xx reply that is no JSON object is no acknowledgement: the heartbeat fails, and what it
// carried (here a replica's exit and its output) goes again with the next one.
TEST_F(AgentAloneProtocolTest, AReplyThatIsNoJsonObjectAcknowledgesNothing) {
  MakeAgent("2xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  daemon_.QueueHeartbeat(200, {{"start", {Start("21", 0, {"echo", "bye"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  ASSERT_TRUE(WaitUntilExitedUnreaped("21-0"));
  daemon_.QueueHeartbeat(200, "not an object");
  EXPECT_FALSE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  const std::vector<FakeDaemon::Request> hbs = daemon_.Heartbeats();
  ASSERT_EQ(hbs.size(), 4u);
  for (size_t i : {1, 2}) {
    ASSERT_NE(FindReplica(hbs[i].body, "21", 0), nullptr) << i;
    EXPECT_EQ((*FindReplica(hbs[i].body, "21", 0))["state"], "exited") << i;
    ASSERT_NE(FindLog(hbs[i].body, "21", 0), nullptr) << i;
    EXPECT_EQ((*FindLog(hbs[i].body, "21", 0))["stdout"], "bye\n") << i;
  }
  EXPECT_EQ(FindLog(hbs[3].body, "21", 0), nullptr);  // acknowledged by the good reply
}

TEST_F(AgentAloneProtocolTest, AStaleAttemptIsNeverTakenForTheNewOne) {
  MakeAgent("2xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  // A start without an attempt number is skipped.
  Json no_attempt = Start("7", 0, {"true"});
  no_attempt.erase("attempt");
  daemon_.QueueHeartbeat(200, {{"start", {no_attempt}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_TRUE(agent_->replicas().empty());
  EXPECT_TRUE(Logged("heartbeat reply: missing field 'start[0].attempt'"));

  daemon_.QueueHeartbeat(200, {{"start", {Start("7", 0, {"sleep", "30"}, {}, 1)}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  const pid_t first = executor_->pid("7-0");
  Json hb = HeartbeatUntilState("7", 0, "running");
  EXPECT_EQ((*FindReplica(hb, "7", 0))["attempt"], 1);

  // The job was requeued and placed here again (attempt 2) while attempt 1 still runs: the
  // start waits, and a stop or forget addressed to attempt 2 does not touch attempt 1.
  daemon_.QueueHeartbeat(200, {{"start", {Start("7", 0, {"sleep", "30"}, {}, 2)}},
                               {"stop", {{{"job", "7"}, {"replica", 0}, {"attempt", 2}}}},
                               {"forget", {{{"job", "7"}, {"replica", 0}, {"attempt", 2}}}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(executor_->pid("7-0"), first);
  EXPECT_TRUE(executor_->running("7-0"));
  EXPECT_TRUE(Logged("start of a new attempt while the previous one is still here: waiting"));
  EXPECT_TRUE(Logged("stop for another attempt than the one here: ignored"));

  // The daemon stops attempt 1; its exit is reported as attempt 1's.
  daemon_.QueueHeartbeat(
      200, {{"stop", {{{"job", "7"}, {"replica", 0}, {"attempt", 1}, {"grace_s", 5}}}}});
  hb = HeartbeatUntilState("7", 0, "exited");
  EXPECT_EQ((*FindReplica(hb, "7", 0))["attempt"], 1);
  EXPECT_EQ((*FindReplica(hb, "7", 0))["signal"], SIGTERM);
  // Forget attempt 1 and start attempt 2 in one reply: a new process, reported as attempt 2.
  daemon_.QueueHeartbeat(200, {{"forget", {{{"job", "7"}, {"replica", 0}, {"attempt", 1}}}},
                               {"start", {Start("7", 0, {"sleep", "30"}, {}, 2)}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  ASSERT_TRUE(executor_->running("7-0"));
  EXPECT_NE(executor_->pid("7-0"), first);
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  hb = daemon_.Heartbeats().back().body;
  ASSERT_NE(FindReplica(hb, "7", 0), nullptr);
  EXPECT_EQ((*FindReplica(hb, "7", 0))["attempt"], 2);
  EXPECT_EQ((*FindReplica(hb, "7", 0))["state"], "running");
}

TEST_F(AgentAloneProtocolTest, MigLayoutIsRefusedWithoutAllowMigChanges) {
  MakeAgent("1xh100-80gb:mig=3g.40gb+3g.40gb,1xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  const Json target = {{"gpu", 0}, {"layout", "1g.10gb@0,2g.20gb@2,3g.40gb@4"}};
  daemon_.QueueHeartbeat(200, {{"mig", {target}}});
  daemon_.QueueHeartbeat(200, {{"mig", {target}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  Json hb = daemon_.Heartbeats().back().body;
  EXPECT_EQ(hb["mig_errors"], Json::array());
  // Every heartbeat carries the MIG GPUs' instances, only those.
  ASSERT_EQ(hb["gpus"].size(), 1u);
  EXPECT_EQ(Instances(hb, 0), "3g.40gb@0=MIG-fake-n1-0-1,3g.40gb@4=MIG-fake-n1-0-2");
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  hb = daemon_.Heartbeats().back().body;
  ASSERT_EQ(hb["mig_errors"].size(), 1u);
  EXPECT_EQ(hb["mig_errors"][0]["gpu"], 0);
  EXPECT_EQ(hb["mig_errors"][0]["layout"], target["layout"]);
  EXPECT_NE(hb["mig_errors"][0]["error"].get<std::string>().find("--allow-mig-changes"),
            std::string::npos);
  EXPECT_EQ(Instances(hb, 0), "3g.40gb@0=MIG-fake-n1-0-1,3g.40gb@4=MIG-fake-n1-0-2");
  EXPECT_EQ(probe_->mig_changes(), 0);
  // Still asked: still refused. No longer asked: no longer reported.
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(daemon_.Heartbeats().back().body["mig_errors"].size(), 1u);
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(daemon_.Heartbeats().back().body["mig_errors"], Json::array());
}

TEST_F(AgentAloneProtocolTest, MigLayoutIsAppliedOnlyOnAnIdleGpu) {
  AgentOptions o;
  o.allow_mig_changes = true;
  MakeAgent("1xh100-80gb:mig=3g.40gb+3g.40gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  // A replica (say, of a preempted job in its stop grace) still runs on the first slice.
  daemon_.QueueHeartbeat(200, {{"start", {Start("9", 0, {"sleep", "30"}, {"MIG-fake-n1-0-1"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  const Json target = {{"gpu", 0}, {"layout", "1g.10gb@0,2g.20gb@2,3g.40gb@4"}};
  daemon_.QueueHeartbeat(200, {{"mig", {target}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(probe_->mig_changes(), 0) << "the GPU is busy";
  EXPECT_TRUE(Logged("MIG layout waits for the GPU's replicas to exit"));
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(daemon_.Heartbeats().back().body["mig_errors"], Json::array()) << "waiting is no error";

  daemon_.QueueHeartbeat(200, {{"stop", {{{"job", "9"}, {"replica", 0}, {"attempt", 1}}}}});
  HeartbeatUntilState("9", 0, "exited");
  // Idle now: applied. 3g@4 is kept (same MIG UUID); the new slices have new UUIDs, reported in
  // the next heartbeat.
  daemon_.QueueHeartbeat(200, {{"mig", {target}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  // Applied on the worker's thread; a later heartbeat carries the result.
  Json hb = HeartbeatUntil([](const Json& b) {
    return Instances(b, 0) ==
           "1g.10gb@0=MIG-fake-n1-0-3,2g.20gb@2=MIG-fake-n1-0-4,3g.40gb@4=MIG-fake-n1-0-2";
  });
  EXPECT_EQ(probe_->mig_changes(), 1);
  EXPECT_TRUE(Logged("MIG layout applied"));
  // Asked again before the daemon saw the report: nothing to do.
  daemon_.QueueHeartbeat(200, {{"mig", {target}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(probe_->mig_changes(), 1);
  // A layout the GPU's model cannot hold, and a GPU the node lacks: refused or skipped.
  daemon_.QueueHeartbeat(
      200,
      {{"mig", {{{"gpu", 0}, {"layout", "9g.1tb@0"}}, {{"gpu", 5}, {"layout", "7g.80gb@0"}}}}});
  daemon_.QueueHeartbeat(200, {{"mig", {{{"gpu", 0}, {"layout", "9g.1tb@0"}}}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  hb = daemon_.Heartbeats().back().body;
  ASSERT_EQ(hb["mig_errors"].size(), 1u);
  EXPECT_EQ(hb["mig_errors"][0]["layout"], "9g.1tb@0");
  EXPECT_TRUE(Logged("MIG entry for a GPU this node lacks: skipped"));
  EXPECT_EQ(probe_->mig_changes(), 1);
}

// Re-partitioning can outlast the daemon's heartbeat timeout on real GPUs: the apply runs off
// the heartbeat path, and no start may use the GPU meanwhile.
TEST_F(AgentAloneProtocolTest, MigApplyDoesNotBlockHeartbeatsNorAdmitStartsOnItsGpu) {
  AgentOptions o;
  o.allow_mig_changes = true;
  MakeAgent("1xh100-80gb:mig=3g.40gb+3g.40gb,1xh100-80gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  // Each ApplyMigLayout lasts until released below (TearDown releases it if the test fails):
  // a fixed delay would race the heartbeats below on a loaded machine.
  probe_->SetMigDelay(Duration::Seconds(3600));
  const Json target = {{"gpu", 0}, {"layout", "1g.10gb@0,2g.20gb@2,3g.40gb@4"}};
  daemon_.QueueHeartbeat(200, {{"mig", {target}}});
  auto timed_heartbeat = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
    return std::chrono::steady_clock::now() - t0;
  };
  EXPECT_LT(timed_heartbeat(), std::chrono::seconds(3)) << "the heartbeat waited for the apply";
  ASSERT_TRUE(WaitFor([&] { return probe_->mig_applies_in_progress() == 1; }));
  EXPECT_TRUE(agent_->mig_applying(0));

  // Heartbeats go on while the GPU is re-partitioned (the daemon still asks for the layout). A
  // start on a slice of that GPU waits; one on the other GPU runs.
  const size_t before = daemon_.Heartbeats().size();
  daemon_.QueueHeartbeat(
      200, {{"mig", {target}},
            {"start",
             {Start("20", 0, {"sleep", "30"}, {"MIG-fake-n1-0-1"}),
              Start("21", 0, {"sleep", "30"}, {"GPU-fake-n1-1"})}}});
  for (int i = 0; i < 3; ++i) EXPECT_LT(timed_heartbeat(), std::chrono::seconds(3));
  EXPECT_EQ(daemon_.Heartbeats().size(), before + 3);
  EXPECT_EQ(agent_->replicas(), std::vector<std::string>{"21-0"});
  EXPECT_TRUE(Logged("start waits"));
  EXPECT_EQ(probe_->mig_applies_in_progress(), 1) << "one apply, not one per reply";
  EXPECT_EQ(probe_->mig_changes(), 0);
  EXPECT_EQ(Instances(daemon_.Heartbeats().back().body, 0),
            "3g.40gb@0=MIG-fake-n1-0-1,3g.40gb@4=MIG-fake-n1-0-2");

  probe_->SetMigDelay(Duration::Millis(0));  // the apply finishes
  HeartbeatUntil([](const Json& b) {
    return Instances(b, 0) ==
           "1g.10gb@0=MIG-fake-n1-0-3,2g.20gb@2=MIG-fake-n1-0-4,3g.40gb@4=MIG-fake-n1-0-2";
  });
  EXPECT_FALSE(agent_->mig_applying(0));
  EXPECT_EQ(probe_->mig_changes(), 1);
  EXPECT_EQ(daemon_.Heartbeats().back().body["mig_errors"], Json::array());
  // The held start was not sent again: nothing is kept for it.
  EXPECT_EQ(agent_->held_starts(), 0u);
  // The daemon's start now names the new slice: it runs.
  daemon_.QueueHeartbeat(200, {{"start", {Start("20", 0, {"sleep", "30"}, {"MIG-fake-n1-0-3"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(agent_->replicas(), (std::vector<std::string>{"20-0", "21-0"}));
}

// A GPU falls off the bus; its replica crashes. Found by the rediscovery that the failed exit
// triggers: the daemon gets "gpu_lost" before (never after) the exit, so it requeues the job
// instead of failing it.
TEST_F(AgentAloneProtocolTest, AGpuThatVanishesIsReportedLostBeforeItsReplicasExit) {
  MakeAgent("2xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  const std::string gone = RunReplicaUntilSignal("30", "GPU-fake-n1-1");
  probe_->RemoveGpu(1);
  { std::ofstream(gone) << "x"; }
  ASSERT_TRUE(WaitUntilExitedUnreaped("30-0"));

  const Json lost = HeartbeatUntil([](const Json& b) {
    return std::any_of(b["health"].begin(), b["health"].end(),
                       [](const Json& e) { return e["kind"] == "gpu_lost"; });
  });
  EXPECT_NE(std::find(lost["health"].begin(), lost["health"].end(),
                      Json{{"gpu", 1}, {"kind", "gpu_lost"}}),
            lost["health"].end())
      << lost["health"];
  for (const auto& hb : daemon_.Heartbeats()) {  // up to the one that carried the loss
    const Json* r = FindReplica(hb.body, "30", 0);
    if (r != nullptr) {
      EXPECT_EQ((*r)["state"], "running") << "an exit reported before the loss";
    }
  }
  EXPECT_TRUE(Logged("a GPU is no longer seen: reported lost"));
  // Once the daemon has the loss, the exit goes (it no longer counts for the job), and the loss
  // is reported once.
  const Json exited = HeartbeatUntilState("30", 0, "exited");
  EXPECT_EQ((*FindReplica(exited, "30", 0))["exit_code"], 1);
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(clock_s_ + 60)).ok());
  const Json later = daemon_.Heartbeats().back().body;
  EXPECT_EQ(later["health"], Json::array({{{"gpu", 0}, {"kind", "temperature"}, {"celsius", 40}}}));
}

// Every rediscover_interval the agent reads its GPUs again: a manual `nvidia-smi mig` change
// is reported in "gpus", and a MIG device destroyed under a replica is "device_lost" for its GPU.
// (Heartbeats here are less than the daemon's 10 s timeout apart: no re-registration.)
TEST_F(AgentAloneProtocolTest, PeriodicRediscoveryReportsAMigChangeMadeBehindTheAgentsBack) {
  AgentOptions o;
  o.rediscover_interval = Duration::Seconds(5);
  MakeAgent("1xh100-80gb:mig=3g.40gb+3g.40gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  daemon_.QueueHeartbeat(200, {{"start", {Start("40", 0, {"sleep", "30"}, {"MIG-fake-n1-0-1"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(100)).ok());  // next rediscovery: t = 105
  ASSERT_EQ(agent_->replicas(), std::vector<std::string>{"40-0"});
  const Catalogue catalogue = Catalogue::BuiltIn();
  const GpuModel& h100 = catalogue.model(*catalogue.Find("h100-80gb"));
  ASSERT_TRUE(probe_->ApplyMigLayout(0, h100, *ParseLayout(h100, "7g.80gb@0")).ok());

  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(104)).ok());
  Json hb = daemon_.Heartbeats().back().body;
  EXPECT_EQ(Instances(hb, 0), "3g.40gb@0=MIG-fake-n1-0-1,3g.40gb@4=MIG-fake-n1-0-2") << "not due";
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(105)).ok());
  hb = daemon_.Heartbeats().back().body;
  EXPECT_EQ(Instances(hb, 0), "7g.80gb@0=MIG-fake-n1-0-3");
  EXPECT_NE(std::find(hb["health"].begin(), hb["health"].end(),
                      Json{{"gpu", 0}, {"kind", "device_lost"}}),
            hb["health"].end())
      << hb["health"];
  EXPECT_EQ((*FindReplica(hb, "40", 0))["state"], "running");
  EXPECT_TRUE(Logged("the GPUs changed"));

  // 0 turns it off: another manual change stays unseen.
  agent_.reset();
  o.rediscover_interval = Duration::Millis(0);
  MakeAgent("1xh100-80gb:mig=3g.40gb+3g.40gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(100)).ok());
  ASSERT_TRUE(probe_->ApplyMigLayout(0, h100, *ParseLayout(h100, "7g.80gb@0")).ok());
  for (int t = 105; t <= 200; t += 5) ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(t)).ok());
  EXPECT_EQ(Instances(daemon_.Heartbeats().back().body, 0),
            "3g.40gb@0=MIG-fake-n1-0-1,3g.40gb@4=MIG-fake-n1-0-2");
}

// Another GPU UUID at an index (a replaced board, a renumbering): the old one is lost, a start
// naming it waits instead of failing, and the agent registers again with the new UUID.
TEST_F(AgentAloneProtocolTest, AChangedGpuUuidIsReportedLostThenRegistered) {
  AgentOptions o;
  o.rediscover_interval = Duration::Seconds(5);
  MakeAgent("2xh100-80gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(100)).ok());
  probe_->SetGpuUuid(1, "GPU-replaced-1");
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(105)).ok());
  const Json hb = daemon_.Heartbeats().back().body;
  EXPECT_NE(std::find(hb["health"].begin(), hb["health"].end(),
                      Json{{"gpu", 1}, {"kind", "gpu_lost"}}),
            hb["health"].end())
      << hb["health"];
  EXPECT_EQ(daemon_.Registers().size(), 1u) << "the loss goes first";
  // The daemon, not yet told, starts a replica on the old UUID: it waits.
  daemon_.QueueHeartbeat(200, {{"start", {Start("50", 0, {"true"}, {"GPU-fake-n1-1"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(106)).ok());
  EXPECT_TRUE(agent_->replicas().empty());
  EXPECT_TRUE(Logged("start waits"));
  const auto regs = daemon_.Registers();
  ASSERT_EQ(regs.size(), 2u);
  EXPECT_EQ(regs[1].body["gpus"][1]["uuid"], "GPU-replaced-1");
  EXPECT_EQ(regs[1].body["gpus"][0]["uuid"], "GPU-fake-n1-0");
}

// An XID that drains the node (79: fallen off the bus) and the crash of a replica on that GPU,
// seen in the same heartbeat: the replica is reported running with the XID, its exit after.
TEST_F(AgentAloneProtocolTest, AReplicaExitWithADrainXidOnItsGpuIsHeldBack) {
  AgentOptions o;
  o.rediscover_interval = Duration::Millis(0);  // only the health event says it
  MakeAgent("2xh100-80gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  const std::string crash = RunReplicaUntilSignal("60", "GPU-fake-n1-0", 2);
  { std::ofstream(crash) << "x"; }
  ASSERT_TRUE(WaitUntilExitedUnreaped("60-0"));  // the next heartbeat reaps it
  probe_->InjectXid(0, 79);
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  Json hb = daemon_.Heartbeats().back().body;
  EXPECT_EQ(hb["health"][0], (Json{{"gpu", 0}, {"kind", "xid"}, {"code", 79}}));
  EXPECT_EQ((*FindReplica(hb, "60", 0))["state"], "running");
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  hb = daemon_.Heartbeats().back().body;
  EXPECT_EQ((*FindReplica(hb, "60", 0))["state"], "exited");
  EXPECT_EQ((*FindReplica(hb, "60", 0))["exit_code"], 2);
}

// Two GPUs re-partitioned at once: when GPU 0's apply ends, the worker holds the probe for
// GPU 1's. The heartbeat that takes GPU 0's result still carries its new instances (the worker
// read them), so the daemon's repeated target for GPU 0 is not applied again and its old MIG
// UUIDs are not admitted for a start.
TEST_F(AgentAloneProtocolTest, AnAppliedGpuIsReportedAndNotAppliedAgainWhileTheNextIsApplied) {
  AgentOptions o;
  o.allow_mig_changes = true;
  MakeAgent("2xh100-80gb:mig=3g.40gb+3g.40gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  probe_->SetMigDelay(1, Duration::Seconds(3600));  // GPU 1's apply lasts until released
  const std::string layout = "1g.10gb@0,2g.20gb@2,3g.40gb@4";
  const Json targets = {{{"gpu", 0}, {"layout", layout}}, {{"gpu", 1}, {"layout", layout}}};
  daemon_.QueueHeartbeat(200, {{"mig", targets}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  ASSERT_TRUE(WaitFor([&] {
    return probe_->mig_changes() == 1 && probe_->mig_applies_in_progress() == 1;
  })) << "GPU 0 applied, GPU 1 being applied";

  // The daemon has not seen GPU 0's new layout yet: it asks for both again, and sends a start
  // naming GPU 0's old slice (MIG-fake-n1-0-1, destroyed by the apply).
  daemon_.QueueHeartbeat(
      200, {{"mig", targets}, {"start", {Start("70", 0, {"sleep", "30"}, {"MIG-fake-n1-0-1"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(Instances(daemon_.Heartbeats().back().body, 0),
            "1g.10gb@0=MIG-fake-n1-0-3,2g.20gb@2=MIG-fake-n1-0-4,3g.40gb@4=MIG-fake-n1-0-2");
  EXPECT_EQ(Instances(daemon_.Heartbeats().back().body, 1),
            "3g.40gb@0=MIG-fake-n1-1-1,3g.40gb@4=MIG-fake-n1-1-2")
      << "GPU 1 keeps its last known state until its apply ends";
  EXPECT_FALSE(agent_->mig_applying(0)) << "GPU 0's layout submitted again";
  EXPECT_TRUE(agent_->mig_applying(1));
  EXPECT_TRUE(agent_->replicas().empty()) << "a start on a destroyed slice";

  probe_->SetMigDelay(1, Duration::Millis(0));
  HeartbeatUntil([](const Json& b) {
    return Instances(b, 1) ==
           "1g.10gb@0=MIG-fake-n1-1-3,2g.20gb@2=MIG-fake-n1-1-4,3g.40gb@4=MIG-fake-n1-1-2";
  });
  EXPECT_EQ(probe_->mig_changes(), 2);
  EXPECT_EQ(LogCount("MIG layout being applied", {{"gpu", 0}}), 1);
  EXPECT_EQ(LogCount("MIG layout being applied", {{"gpu", 1}}), 1);
}

// A replica on another GPU fails while a MIG apply holds the probe: the rediscovery its failed
// exit calls for cannot run yet, so the exit waits for it (reported "running") instead of going
// out before the daemon can know that its GPU was lost.
TEST_F(AgentAloneProtocolTest, AFailedExitDuringAMigApplyWaitsForTheRediscovery) {
  AgentOptions o;
  o.allow_mig_changes = true;  // rediscover_interval: the default 30 s
  MakeAgent("1xh100-80gb:mig=3g.40gb+3g.40gb,1xh100-80gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  const std::string gone = RunReplicaUntilSignal("80", "GPU-fake-n1-1");
  const size_t running_from = daemon_.Heartbeats().size() - 1;
  probe_->SetMigDelay(0, Duration::Seconds(3600));  // until released
  daemon_.QueueHeartbeat(200,
                         {{"mig", {{{"gpu", 0}, {"layout", "1g.10gb@0,2g.20gb@2,3g.40gb@4"}}}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  ASSERT_TRUE(WaitFor([&] { return probe_->mig_applies_in_progress() == 1; }));

  probe_->RemoveGpu(1);
  { std::ofstream(gone) << "x"; }
  ASSERT_TRUE(WaitUntilExitedUnreaped("80-0"));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  }
  ASSERT_TRUE(Logged("replica exited"));
  const auto hbs = daemon_.Heartbeats();
  for (size_t i = running_from; i < hbs.size(); ++i) {
    const auto& hb = hbs[i];
    const Json* r = FindReplica(hb.body, "80", 0);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ((*r)["state"], "running") << "an exit reported before the look for a lost GPU";
    EXPECT_FALSE(HasHealth(hb.body, {{"gpu", 1}, {"kind", "gpu_lost"}})) << "the probe was free";
  }

  probe_->SetMigDelay(0, Duration::Millis(0));  // the apply ends; the rediscovery finds the loss
  const Json lost = HeartbeatUntil(
      [](const Json& b) { return HasHealth(b, {{"gpu", 1}, {"kind", "gpu_lost"}}); });
  EXPECT_EQ((*FindReplica(lost, "80", 0))["state"], "running");
  const Json exited = HeartbeatUntilState("80", 0, "exited");
  EXPECT_EQ((*FindReplica(exited, "80", 0))["exit_code"], 1);
}

// A GPU replaced while the daemon restarted (404): the registration that follows finds the new
// UUID and carries it, the loss goes out in the heartbeat after it, and nothing registers again.
TEST_F(AgentAloneProtocolTest, AChangedGpuUuidFoundByARegistrationIsRegisteredOnce) {
  AgentOptions o;
  o.rediscover_interval = Duration::Seconds(3600);  // no periodic rediscovery in this test
  MakeAgent("2xh100-80gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  probe_->SetGpuUuid(1, "GPU-replaced-1");
  daemon_.QueueHeartbeat(404, {{"error", {{"code", "NOT_FOUND"}, {"message", "unknown node n1"}}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  auto regs = daemon_.Registers();
  ASSERT_EQ(regs.size(), 2u);
  EXPECT_EQ(regs[1].body["gpus"][1]["uuid"], "GPU-replaced-1");
  EXPECT_TRUE(HasHealth(daemon_.Heartbeats().back().body, {{"gpu", 1}, {"kind", "gpu_lost"}}));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  }
  EXPECT_EQ(daemon_.Registers().size(), 2u) << "registered again with what it had registered";
}

// A GPU that came back (a reset) and is lost again is reported lost again.
TEST_F(AgentAloneProtocolTest, AGpuLostAgainAfterItCameBackIsReportedAgain) {
  AgentOptions o;
  o.rediscover_interval = Duration::Seconds(5);
  MakeAgent("2xh100-80gb", o);
  ASSERT_TRUE(agent_->Register().ok());
  const Json lost = {{"gpu", 1}, {"kind", "gpu_lost"}};
  auto reported_lost = [&](const std::string& uuid) {
    SCOPED_TRACE(uuid);
    const size_t before = daemon_.Heartbeats().size();
    const int logged = LogCount("a GPU is no longer seen: reported lost", {{"uuid", uuid}});
    HeartbeatUntil([&](const Json& b) { return HasHealth(b, lost); });
    EXPECT_EQ(LogCount("a GPU is no longer seen: reported lost", {{"uuid", uuid}}), logged + 1);
    // Registered again with the UUID seen now, and nothing more reported lost.
    for (int i = 0; i < 12; ++i) {
      ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
    }
    const auto hbs = daemon_.Heartbeats();
    EXPECT_EQ(std::count_if(hbs.begin() + static_cast<ptrdiff_t>(before), hbs.end(),
                            [&](const auto& hb) { return HasHealth(hb.body, lost); }),
              1);
  };
  probe_->SetGpuUuid(1, "GPU-replaced-1");  // another board
  reported_lost("GPU-fake-n1-1");
  probe_->SetGpuUuid(1, "GPU-fake-n1-1");  // the first one back
  reported_lost("GPU-replaced-1");
  probe_->SetGpuUuid(1, "GPU-replaced-1");  // and lost again
  reported_lost("GPU-fake-n1-1");
  EXPECT_EQ(daemon_.Registers().size(), 4u);
}

TEST(AgentShellQuoteTest, QuotesEachArgument) {
  EXPECT_EQ(ShellQuote("abc"), "'abc'");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(*ShellCommandFor({"python", "train.py", "--lr", "0.1"}),
            "exec 'python' 'train.py' '--lr' '0.1'");
  EXPECT_EQ(*ShellCommandFor({"env"}, {{"GPUPOOL_REPLICA", "0"}}),
            "export GPUPOOL_REPLICA='0'; exec 'env'");
  EXPECT_EQ(*ShellCommandFor({"-weird"}), "'-weird'");
  EXPECT_FALSE(ShellCommandFor({}).ok());
  EXPECT_FALSE(ShellCommandFor({std::string("a\0b", 3)}).ok());
  EXPECT_FALSE(ShellCommandFor({"true"}, {{"BAD NAME", "x"}}).ok());
}

// The quoted string through a real /bin/sh gives the program exactly the argv it was built from.
TEST_F(AgentAloneProtocolTest, QuotedArgvSurvivesTheShell) {
  MakeAgent("1xh100-80gb");
  ASSERT_TRUE(agent_->Register().ok());
  const std::vector<std::string> args = {
      "a b", "it's",         "$HOME", "`id`",       "$(id)",    "\\n",       "*",       "",
      "-n",  "line1\nline2", "'",     "\"double\"", "; exit 9", "tab\there", "ünïcødé", "!"};
  std::vector<std::string> argv = {"printf", "<%s>\\n"};
  argv.insert(argv.end(), args.begin(), args.end());
  daemon_.QueueHeartbeat(200, {{"start", {Start("31", 0, argv)}}});
  const Json hb = HeartbeatUntil([&](const Json& b) {
    const Json* r = FindReplica(b, "31", 0);
    return r && (*r)["state"] == "exited";
  });
  EXPECT_EQ((*FindReplica(hb, "31", 0))["exit_code"], 0);
  std::string want;
  for (const std::string& a : args) want += "<" + a + ">\n";
  EXPECT_EQ(LastLog("31", 0)["stdout"], want);
}

// A new agent on the same state directory finds the replica its predecessor started (as after a
// kill -9: neither the agent nor its executor cleaned up), reports it with its attempt, and stops
// it when the daemon says so; meanwhile the lease file carries the daemon's lease.
TEST_F(AgentAloneProtocolTest, ARestartedAgentReportsAndStopsWhatItsPredecessorStarted) {
  ExecutorOptions eo;
  eo.work_dir = dir_ + "/work2";
  eo.cgroup_parent = "";
  eo.lease_path = dir_ + "/lease";
  auto first = Executor::Create(eo);
  ASSERT_TRUE(first.ok());
  executor_ = std::move(*first);
  MakeAgent();
  Json start = Start("5", 0, {"sleep", "300"}, {}, 42);
  daemon_.QueueHeartbeat(200, {{"start", {start}}, {"lease_ms", 60000}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  HeartbeatUntilState("5", 0, "running");
  {
    std::ifstream lease(eo.lease_path);
    int64_t until = 0;
    ASSERT_TRUE(lease >> until) << "no lease file";
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    EXPECT_GT(until, now + 50000);
    EXPECT_LE(until, now + 60000);
  }
  const pid_t shell = executor_->pid("5-0");
  // The crash: nothing is cleaned up (the old executor and agent are leaked on purpose).
  (void)agent_.release();
  (void)executor_.release();
  auto second = Executor::Create(eo);
  ASSERT_TRUE(second.ok());
  executor_ = std::move(*second);
  MakeAgent();
  EXPECT_TRUE(Logged("found a replica an earlier agent started"));
  const Json hb = HeartbeatUntilState("5", 0, "running");
  EXPECT_EQ((*FindReplica(hb, "5", 0))["attempt"], 42);
  EXPECT_EQ(executor_->pid("5-0"), shell);
  // An older attempt of it is refused outright.
  daemon_.QueueHeartbeat(200, {{"start", {Start("5", 0, {"true"}, {}, 41)}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_TRUE(Logged("start of an attempt older than one seen here: refused"));
  daemon_.QueueHeartbeat(200, {{"stop", {{{"job", "5"}, {"replica", 0}, {"attempt", 42}, {"grace_s", 5}}}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  const Json done = HeartbeatUntilState("5", 0, "exited");
  EXPECT_EQ((*FindReplica(done, "5", 0))["signal"], SIGTERM);
  EXPECT_FALSE(FindReplica(done, "5", 0)->contains("fenced"));
}

// A start waits while a replica told to stop still holds its GPU.
TEST_F(AgentAloneProtocolTest, AStartWaitsForTheStoppingReplicaOnItsGpu) {
  MakeAgent();
  const std::string gpu = "GPU-fake-n1-0";
  daemon_.QueueHeartbeat(200, {{"start", {Start("1", 0, {"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.02; done"}, {gpu})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  HeartbeatUntil([&](const Json& b) {  // running, with SIGTERM ignored once "ready" is printed
    const Json* l = FindLog(b, "1", 0);
    return l && (*l)["stdout"] == "ready\n";
  });
  // Preempted: stop it (it ignores SIGTERM: 1 s grace) and start another job on its GPU.
  daemon_.QueueHeartbeat(200, {{"stop", {{{"job", "1"}, {"replica", 0}, {"attempt", 1}, {"grace_s", 1}}}},
                               {"start", {Start("2", 0, {"true"}, {gpu})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_FALSE(executor_->running("2-0"));
  EXPECT_TRUE(Logged("start waits"));
  // The daemon keeps sending the start; it goes once the old replica is gone.
  for (int i = 0; i < 200 && executor_->running("1-0"); ++i) {
    daemon_.QueueHeartbeat(200, {{"start", {Start("2", 0, {"true"}, {gpu})}}});
    ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
    EXPECT_FALSE(executor_->running("2-0") && executor_->running("1-0"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  daemon_.QueueHeartbeat(200, {{"start", {Start("2", 0, {"true"}, {gpu})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  const Json hb = HeartbeatUntilState("2", 0, "exited");
  EXPECT_EQ((*FindReplica(hb, "2", 0))["exit_code"], 0);
}

}  // namespace
}  // namespace gpupool

namespace gpupool {
namespace {

// A daemon with replicas (docs/design/daemon.md, "Replicas"): a follower's 307 is followed to the
// leader, which the agent then talks to directly.
TEST_F(AgentAloneProtocolTest, AFollowersRedirectIsFollowedToTheLeader) {
  FakeDaemon follower;
  follower.RedirectTo(daemon_.url());
  AgentOptions o;
  o.server_url = follower.url() + "," + daemon_.url();
  MakeAgent("1xh100-80gb", o);
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(daemon_.Registers().size(), 1u);
  EXPECT_EQ(daemon_.Heartbeats().size(), 2u);
  EXPECT_EQ(follower.Requests("").size(), 1u) << "after the redirect the agent talks to the leader";
  EXPECT_TRUE(Logged("following the daemon's leader"));
}

// A URL that does not answer: the next request goes to the next URL given.
TEST_F(AgentAloneProtocolTest, ASilentServerIsSkippedForTheNextUrl) {
  AgentOptions o;
  o.server_url = "http://127.0.0.1:1," + daemon_.url();  // nothing listens on port 1
  MakeAgent("1xh100-80gb", o);
  const Status first = agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_));
  EXPECT_FALSE(first.ok());
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(daemon_.Registers().size(), 1u);
}

// Once a reply of epoch 5 came, a reply of epoch 4 (a deposed leader that has not stopped yet)
// is not acted on: its start does not run and its lease is not taken.
TEST_F(AgentAloneProtocolTest, AReplyOfAnOlderEpochIsIgnored) {
  MakeAgent("1xh100-80gb");
  daemon_.QueueRegister(200, Json::parse(Encode(RegisterReply{.node = "n1", .condition = "ready", .epoch = 5})));
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  daemon_.QueueHeartbeat(200, {{"epoch", 4}, {"start", {Start("old", 0, {"/bin/sleep", "2"})}}});
  const Status stale = agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_));
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.error().message.find("older than epoch 5"), std::string::npos) << stale.error().message;
  EXPECT_TRUE(agent_->replicas().empty()) << "the deposed leader's start must not run";
  daemon_.QueueHeartbeat(200, {{"epoch", 6}, {"start", {Start("new", 0, {"/bin/sleep", "2"})}}});
  ASSERT_TRUE(agent_->HeartbeatOnce(Time::FromSeconds(++clock_s_)).ok());
  EXPECT_EQ(agent_->replicas().size(), 1u);
}

}  // namespace
}  // namespace gpupool
