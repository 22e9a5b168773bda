// The ControlPlane test fixture: a real SQLite journal that can be told to fail, the demo cluster
// bootstrapped, and members and viewers of two tenants; and AgentProtocolTest, a small cluster
// whose node agents the tests play (control_plane_test.cc, lifecycle_test.cc); and BurstTest, the burst
// tests' cluster.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "burst/sim_provider.h"
#include "daemon/config.h"
#include "daemon/control_plane.h"
#include "model/demo_cluster.h"

namespace gpupool {

using Json = nlohmann::json;

// A real SQLite journal that can be told to fail its next appends (disk full, I/O error).
class FlakyJournal final : public Journal {
 public:
  // `fail_reads`, if given: the next this many loads (ReadSnapshot) fail, as a store that cannot
  // be reached.
  explicit FlakyJournal(std::unique_ptr<Journal> inner, int* fail_next, int* fail_reads = nullptr)
      : inner_(std::move(inner)), fail_(fail_next), fail_reads_(fail_reads) {}
  Status Append(std::vector<Record>& batch) override {
    if (*fail_ > 0) {
      --*fail_;
      return Error{ErrorCode::kUnavailable, "injected: disk full"};
    }
    return inner_->Append(batch);
  }
  Result<std::vector<Record>> ReadAll() override { return inner_->ReadAll(); }
  int64_t last_seq() const override { return inner_->last_seq(); }
  Status WriteSnapshot(const Snapshot& s) override {
    if (fail_snapshots > 0) {
      --fail_snapshots;
      return Error{ErrorCode::kUnavailable, "injected: no space left on device"};
    }
    return inner_->WriteSnapshot(s);
  }
  int fail_snapshots = 0;  // the next this many snapshot writes fail (a full disk)
  Result<Snapshot> ReadSnapshot() override {
    if (fail_reads_ != nullptr && *fail_reads_ > 0) {
      --*fail_reads_;
      return Error{ErrorCode::kUnavailable, "injected: the store cannot be reached"};
    }
    return inner_->ReadSnapshot();
  }
  Status Compact(int64_t seq) override { return inner_->Compact(seq); }
  Result<std::optional<std::string>> ArchivedJob(int64_t id) override { return inner_->ArchivedJob(id); }
  Result<std::vector<std::pair<int64_t, std::string>>> ArchivedJobs(const ArchiveQuery& q) override {
    return inner_->ArchivedJobs(q);
  }
  Result<std::vector<std::string>> ArchivedUsage(int64_t from_ms, int64_t to_ms) override {
    return inner_->ArchivedUsage(from_ms, to_ms);
  }
  Result<std::vector<std::pair<int64_t, std::string>>> AuditLines(int64_t before, const std::string& tenant,
                                                                  int64_t limit) override {
    return inner_->AuditLines(before, tenant, limit);
  }

 private:
  std::unique_ptr<Journal> inner_;
  int* fail_;
  int* fail_reads_;
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

  std::unique_ptr<ControlPlane> Open() {
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir_ / "journal.db").string());
    EXPECT_TRUE(j.ok());
    auto flaky = std::make_unique<FlakyJournal>(std::move(*j), &fail_next_, &fail_reads_);
    Result<std::unique_ptr<ControlPlane>> core = ControlPlane::Open(std::move(flaky), SchedulerConfig());
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
  std::string Snapshot(ControlPlane& core) {
    const CallContext c = As(admin_);
    Json jobs = Json::parse(core.ListJobs(c, {}).body);
    for (Json& j : jobs["items"]) j.erase("reason");
    return jobs.dump() + core.ListTenants(c).body + core.ListNodes(c).body +
           core.ListTokens(c).body + core.ListAudit(c).body + core.ListPriorityClasses(c).body;
  }

  std::filesystem::path dir_;
  int fail_next_ = 0;
  int fail_reads_ = 0;
  std::unique_ptr<ControlPlane> core_;
  Principal admin_{"admin", Role::kClusterAdmin, TenantId(), ""};
  std::map<std::string, Principal> members_, viewers_;
};

// The daemon's side of the agent protocol, driven through the core with explicit times:
// registration, replicas started with their GPU UUIDs, running / exited reports driving the job
// state, logs scoped like jobs, the heartbeat timeout requeueing a silent node's jobs onto
// another node, XID 79 draining a node, a failed acceptance test keeping a node out, and stale
// replicas stopped after a node comes back.
// A core on a new SQLite journal in a fresh directory (`dir`), bootstrapped at `at` with the
// cluster of a YAML configuration; null (with a test failure) if any step fails.
inline std::unique_ptr<ControlPlane> BootstrapFromYaml(const std::string& yaml, const std::string& name, Time at,
                                                     std::filesystem::path& dir) {
  Result<DaemonConfig> cfg = ParseDaemonConfig(yaml);
  EXPECT_TRUE(cfg.ok()) << (cfg.ok() ? "" : cfg.error().message);
  if (!cfg.ok()) return nullptr;
  dir = std::filesystem::temp_directory_path() / ("gpupool-" + name + "-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir / "journal.db").string());
  EXPECT_TRUE(j.ok());
  if (!j.ok()) return nullptr;
  Result<std::unique_ptr<ControlPlane>> core = ControlPlane::Open(std::move(*j), SchedulerConfig());
  EXPECT_TRUE(core.ok());
  if (!core.ok() || !(*core)->Bootstrap(cfg->cluster, at).ok()) return nullptr;
  return std::move(*core);
}

class AgentProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    core_ = BootstrapFromYaml(R"(
tenants:
  - {name: a, quotas: {h100-80gb: {guaranteed: 8}}}
  - {name: b, quotas: {h100-80gb: {guaranteed: 0, borrow_limit: 8}}}
)", "agents", At(0), dir_);
    ASSERT_TRUE(core_);
    core_->SetHeartbeat(Duration::Seconds(1), Duration::Seconds(10));
    member_a_ = {"ann", Role::kMember, *core_->state().FindTenant("a"), "ann-token"};
    member_b_ = {"bo", Role::kMember, *core_->state().FindTenant("b"), "bo-token"};
    for (const char* n : {"g1", "g2"}) ASSERT_EQ(Register(n, 0).status, 200);
  }
  static Time At(int64_t s) { return Time::FromSeconds(2'000'000 + s); }
  static Json RegisterBody(const std::string& node, const std::string& uuid_prefix = "GPU-") {
    Json gpus = Json::array();
    for (int i = 0; i < 4; ++i) gpus.push_back({{"index", i}, {"uuid", uuid_prefix + node + "-" + std::to_string(i)}});
    return {{"node", node}, {"flavor", "h100-80gb"}, {"gpus", gpus}};
  }
  Reply Register(const std::string& node, int64_t s, bool passed = true) {
    Json body = RegisterBody(node);
    if (!passed) body["acceptance"] = {{"passed", false}, {"output", "dcgmi diag: FAIL"}};
    return core_->RegisterAgent({&admin_, "", At(s)}, body.dump());
  }
  // The token of the node agent of `node` (role node-agent, named after its node).
  static Principal AgentOf(const std::string& node) { return {node, Role::kNodeAgent, TenantId(), ""}; }
  // The daemon stops (after a Flush) and starts again on the same journal.
  void Restart() {
    ASSERT_TRUE(core_->Flush().ok());
    core_.reset();
    Result<std::unique_ptr<Journal>> journal = OpenSqliteJournal((dir_ / "journal.db").string());
    ASSERT_TRUE(journal.ok());
    Result<std::unique_ptr<ControlPlane>> reopened = ControlPlane::Open(std::move(*journal), SchedulerConfig());
    ASSERT_TRUE(reopened.ok()) << reopened.error().message;
    core_ = std::move(*reopened);
    core_->SetHeartbeat(Duration::Seconds(1), Duration::Seconds(10));
  }
  // MIG instances in a heartbeat's or registration's notation, from a layout "3g.40gb@0,...";
  // each instance's MIG UUID is `prefix` followed by its start slice.
  static Json MigInstances(const std::string& layout, const std::string& prefix) {
    Json out = Json::array();
    for (size_t at = 0; at < layout.size();) {
      const size_t comma = std::min(layout.find(',', at), layout.size());
      const std::string item = layout.substr(at, comma - at);
      const size_t sep = item.find('@');
      out.push_back({{"start", std::stoi(item.substr(sep + 1))}, {"profile", item.substr(0, sep)},
                     {"uuid", prefix + item.substr(sep + 1)}});
      at = comma + 1;
    }
    return out;
  }
  // Registers node m1: one H100 in MIG mode holding 3g@0 and 3g@4.
  void RegisterMigNode(int64_t s) {
    Json reg = {{"node", "m1"}, {"flavor", "h100-80gb"},
                {"gpus", {{{"index", 0}, {"uuid", "GPU-m1-0"}, {"mig", true},
                           {"instances", MigInstances("3g.40gb@0,3g.40gb@4", "MIG-old-")}}}}};
    const Reply r = core_->RegisterAgent({&admin_, "", At(s)}, reg.dump());
    ASSERT_EQ(r.status, 200) << r.body;
  }
  // A job of tenant a asking for one 1g.10gb MIG slice.
  std::string SubmitMig(int64_t s) {
    const Reply r = core_->SubmitJob({&member_a_, "", At(s)},
                                     Json({{"tenant", "a"}, {"name", "small"}, {"priority_class", "training"}, {"replicas", 1},
                                           {"resources", {{"flavor", "h100-80gb"}, {"mig_profile", "1g.10gb"}}},
                                           {"duration_estimate_s", 600}, {"command", {"nvidia-smi"}}}).dump(), "");
    EXPECT_EQ(r.status, 201) << r.body;
    return Json::parse(r.body)["id"];
  }
  // m1 registered (at 1), a 1g.10gb job placed on it (at 2), which re-partitions its GPU, and the
  // heartbeat reply (at 3) that carries the target layout.
  struct MigPlacement {
    std::string job;
    int slice = -1;
    Json reply;
    std::string target;
  };
  MigPlacement PlaceMigJob() {
    MigPlacement p;
    RegisterMigNode(1);
    EXPECT_EQ(Beat("m1", 1)["mig"], Json::array()) << "the layout the agent reported is the target";
    p.job = SubmitMig(2);
    core_->Tick(At(2), false);
    EXPECT_EQ(NodeOf(p.job, 2), "m1");
    p.slice = Job(p.job, 2)["placement"][0]["gpus"][0]["mig_start"];
    p.reply = Beat("m1", 3);
    EXPECT_EQ(p.reply["mig"].size(), 1u) << p.reply.dump();
    p.target = p.reply["mig"][0].value("layout", "");
    return p;
  }
  Json Beat(const std::string& node, int64_t s, const Json& body = Json::object()) {
    const Reply r = core_->AgentHeartbeat({&admin_, "", At(s)}, node, body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return Json::parse(r.body);
  }
  std::string Submit(const Principal& p, int gpus, int64_t s, int replicas = 1) {
    const std::string tenant = p.tenant == member_a_.tenant ? "a" : "b";
    const Reply r = core_->SubmitJob({&p, "", At(s)}, Json({{"tenant", tenant}, {"name", "w"}, {"priority_class", "training"},
                                                           {"replicas", replicas}, {"resources", {{"flavor", "h100-80gb"}, {"gpus", gpus}}},
                                                           {"duration_estimate_s", 600}, {"command", {"sh", "-c", "echo hi"}}}).dump(), "");
    EXPECT_EQ(r.status, 201) << r.body;
    return Json::parse(r.body)["id"];
  }
  Json Job(const std::string& id, int64_t s) { return Json::parse(core_->GetJob({&admin_, "", At(s)}, id).body); }
  std::string NodeOf(const std::string& id, int64_t s) { return Job(id, s)["placement"][0]["node"]; }
  // A replica report of the attempt the daemon handed out in `start`.
  static Json Report(const Json& start, const std::string& state, int exit_code = 0) {
    Json r = {{"job", start["job"]}, {"replica", start["replica"]}, {"attempt", start["attempt"]}, {"state", state}};
    if (state == "exited") r["exit_code"] = exit_code;
    return r;
  }
  // The start entry for `job` in a heartbeat reply, or null.
  static Json StartOf(const Json& reply, const std::string& job) {
    for (const Json& s : reply["start"]) {
      if (s["job"] == job) return s;
    }
    return Json();
  }

  std::filesystem::path dir_;
  std::unique_ptr<ControlPlane> core_;
  Principal admin_{"admin", Role::kClusterAdmin, TenantId(), ""};
  Principal member_a_, member_b_;
};

// Burst to on-demand through the core: one 8-GPU node, tenant `a` bursting onto 8-GPU
// on-demand nodes (60 s to provision, at most 2) after 120 s, with the budget Start is given;
// the simulated provider unless a test enables another (control_plane_test.cc, burst_async_test.cc).
class BurstTest : public ::testing::Test {
 protected:
  static constexpr const char* kYaml = R"(
tenants:
  - {name: a, quotas: {h100-80gb: {guaranteed: 8}}}
nodes:
  - {name: n, count: 1, flavor: h100-80gb, gpus: 8}
prices:
  flavors: {h100-80gb: {per_gpu_hour: "2.00"}}
burst:
  offers: {h100-80gb: {gpus_per_node: 8, per_gpu_hour: "10.00", provisioning_delay_s: 60, max_nodes: 2}}
  tenants: {a: {flavors: [h100-80gb], max_gpus: 8, budget: "BUDGET", period_s: 86400, max_wait_s: 120,
                idle_timeout_s: 300}}
)";
  void Start(const std::string& budget, std::string yaml = kYaml) {
    yaml.replace(yaml.find("BUDGET"), 6, budget);
    Result<DaemonConfig> cfg = ParseDaemonConfig(yaml);
    ASSERT_TRUE(cfg.ok()) << cfg.error().message;
    config_ = std::move(*cfg);
    dir_ = std::filesystem::temp_directory_path() / ("gpupool-burst-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir_);
    core_ = Open();
    ASSERT_TRUE(core_->Bootstrap(config_.cluster, At(0), config_.prices).ok());
    ASSERT_TRUE(core_->Flush().ok());
    Enable();
    member_ = {"bob", Role::kMember, *core_->state().FindTenant("a"), "bob-token"};
  }
  std::unique_ptr<ControlPlane> Open() {
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir_ / "journal.db").string());
    EXPECT_TRUE(j.ok());
    auto flaky = std::make_unique<FlakyJournal>(std::move(*j), &fail_next_);
    Result<std::unique_ptr<ControlPlane>> core = ControlPlane::Open(std::move(flaky), SchedulerConfig());
    EXPECT_TRUE(core.ok());
    return std::move(*core);
  }
  int fail_next_ = 0;  // the journal's next appends that fail (disk full)
  void Enable() {
    auto sim = std::make_unique<SimulatedProvider>(core_->state().catalogue(), config_.burst.offers);
    sim->SkipSequence(core_->burst_requests_seen());
    ASSERT_TRUE(core_->EnableBurst(config_.burst, std::move(sim)).ok());
  }
  static Time At(int64_t s) { return Time::FromSeconds(1'000'000 + s); }
  std::string Submit(int64_t s, int gpus, int duration_s) {
    const std::string body = Json({{"tenant", "a"}, {"name", "j"}, {"priority_class", "training"}, {"replicas", 1},
                                   {"resources", {{"flavor", "h100-80gb"}, {"gpus", gpus}}},
                                   {"duration_estimate_s", duration_s}, {"command", {"run"}}}).dump();
    const Reply r = core_->SubmitJob({&member_, "", At(s)}, body, "");
    EXPECT_EQ(r.status, 201) << r.body;
    return Json::parse(r.body)["id"];
  }
  void TickAt(int64_t s) {
    core_->Tick(At(s), true);
    ASSERT_TRUE(core_->Flush().ok());
  }
  Json JobAt(const std::string& id, int64_t s) { return Json::parse(core_->GetJob({&member_, "", At(s)}, id).body); }

  DaemonConfig config_;
  std::filesystem::path dir_;
  std::unique_ptr<ControlPlane> core_;
  Principal member_;
};

}  // namespace gpupool
