// Journals written by earlier code still replay: tests/fixtures/changes-v1 is a journal with a
// record of every kind (change.h), written by the code of change format 1, and the views the API
// showed when it was written. Regenerate (only when the format changes, into a new directory):
//   GPUPOOL_WRITE_CHANGE_FIXTURE=tests/fixtures/changes-vN build/src/daemon/change_fixture_test
// (the test WriteWhenAsked writes it; it is skipped without the variable).
#include <cstdlib>
#include <fstream>
#include <set>

#include "burst/sim_provider.h"
#include "daemon/change.h"
#include "daemon/control_plane_fixture.h"
#include "policy/calendar/calendar.h"

namespace gpupool {
namespace {

constexpr const char* kBurstYaml = R"(
burst:
  offers: {h100-80gb: {gpus_per_node: 8, per_gpu_hour: "10.00", provisioning_delay_s: 60, max_nodes: 2}}
  tenants: {a: {flavors: [h100-80gb], max_gpus: 8, budget: "500.00", period_s: 86400, max_wait_s: 30,
                idle_timeout_s: 300}}
)";

class ChangeFixture : public AgentProtocolTest {
 protected:
  CallContext Admin(int64_t s) { return {&admin_, "10.0.0.1", At(s)}; }

  // What the API shows of everything the journal holds (liveness and pending reasons aside: a
  // start recomputes them).
  std::string Visible(ControlPlane& core, int64_t s) {
    const CallContext c = Admin(s);
    Json jobs = Json::parse(core.ListJobs(c, {}).body);
    for (Json& j : jobs["items"]) j.erase("reason");
    Json nodes = Json::parse(core.ListNodes(c).body);
    for (Json& n : nodes["items"]) {
      for (const char* k : {"agent", "last_heartbeat_ms", "ready", "status", "reason", "conditions"}) n.erase(k);
    }
    // Fields the token list gained after format 1 (created, expires, last_used, service_account: issue 18) are not in
    // visible.json; a format-1 token has no expiry.
    Json tokens = Json::parse(core.ListTokens(c).body);
    for (Json& t : tokens["items"]) {
      EXPECT_TRUE(t["expires"].is_null()) << "a token of change format 1 never expires";
      EXPECT_TRUE(t["last_used"].is_null() && t["service_account"].is_null()) << t.dump();
      for (const char* k : {"created", "expires", "last_used", "service_account"}) t.erase(k);
    }
    const std::map<std::string, std::string> usage = {{"from", Rfc3339(At(0))}, {"to", Rfc3339(At(s))}};
    const Json out = {{"jobs", jobs},
                      {"job_1", Json::parse(core.GetJob(c, "1").body)},
                      {"nodes", nodes},
                      {"tenants", Json::parse(core.ListTenants(c).body)},
                      {"tokens", tokens},
                      {"audit", Json::parse(core.ListAudit(c).body)},
                      {"classes", Json::parse(core.ListPriorityClasses(c).body)},
                      {"reservations", Json::parse(core.ListReservations(c).body)},
                      {"prices", Json::parse(core.GetPrices(c).body)},
                      {"burst", Json::parse(core.BurstView(c).body)},
                      {"burst_settings", Json::parse(core.GetBurstSettings(c).body)},
                      {"usage", Json::parse(core.Usage(c, usage).body)}};
    return out.dump(1);
  }

  void EnableBurst() {
    Result<DaemonConfig> cfg = ParseDaemonConfig(kBurstYaml);
    ASSERT_TRUE(cfg.ok()) << cfg.error().message;
    auto sim = std::make_unique<SimulatedProvider>(core_->state().catalogue(), cfg->burst.offers);
    sim->SkipSequence(core_->burst_requests_seen());
    ASSERT_TRUE(core_->EnableBurst(cfg->burst, std::move(sim)).ok());
  }

  // A cluster's life that makes a record of every kind; returns the last instant.
  int64_t Live() {
    EXPECT_EQ(core_->SetPrices(Admin(1), R"({"flavors": {"h100-80gb": {"per_gpu_hour": "2.50"}}})").status, 200);
    EXPECT_EQ(core_->CreateTenant(Admin(1), R"({"name": "c", "quotas": {"h100-80gb": {"guaranteed": 0, "borrow_limit": 4}}})").status, 201);
    EXPECT_EQ(core_->CreatePriorityClass(Admin(1), R"({"name": "urgent", "value": 900})").status, 201);
    const Json token = Json::parse(core_->CreateToken(Admin(1), R"({"name": "ci", "role": "member", "tenant": "a"})").body);
    EXPECT_EQ(core_->RevokeToken(Admin(2), token["id"]).status, 200);
    EXPECT_EQ(core_->DeleteTenant(Admin(2), "c").status, 200);
    // A gang of two replicas on g1 and g2: one exits 0 before the other (replica_exit), then both.
    const std::string gang = Submit(member_a_, 4, 3, 2);
    core_->Tick(At(3), false);
    std::map<std::string, Json> starts;
    for (const char* n : {"g1", "g2"}) starts[n] = StartOf(Beat(n, 4), gang);
    Beat("g1", 5, {{"replicas", {Report(starts["g1"], "exited", 0)}}});
    Beat("g2", 5, {{"replicas", {Report(starts["g2"], "running")}}});
    Beat("g2", 6, {{"replicas", {Report(starts["g2"], "exited", 0)}}});
    EXPECT_EQ(Job(gang, 6)["state"], "succeeded");
    // A third node makes room beyond the guarantees for a reservation a day ahead.
    EXPECT_EQ(Register("g3", 6).status, 200);
    const Json res = {{"tenant", "a"}, {"flavor", "h100-80gb"}, {"gpus", 2},
                      {"start", Rfc3339(At(86'400))}, {"end", Rfc3339(At(90'000))}};
    const Reply reserved = core_->CreateReservation(Admin(2), res.dump());
    EXPECT_EQ(reserved.status, 201) << reserved.body;
    // An idempotent submit, then a cancel.
    const Reply once = core_->SubmitJob({&member_a_, "", At(7)}, JobBody("b-once"), "key-1");
    EXPECT_EQ(once.status, 201) << once.body;
    EXPECT_EQ(core_->CancelJob(Admin(8), Json::parse(once.body)["id"]).status, 200);
    // Burst: both nodes full, a job of tenant a waits past max_wait_s; a node is requested, joins.
    EnableBurst();
    const Json in_force = Json::parse(core_->GetBurstSettings(Admin(9)).body);
    const Reply set = core_->SetBurstSettings(Admin(9), Json({{"offers", in_force["offers"]}, {"tenants", in_force["tenants"]}}).dump());
    EXPECT_EQ(set.status, 200) << set.body;
    Submit(member_b_, 4, 10);
    Submit(member_b_, 4, 10);
    core_->Tick(At(10), false);
    Submit(member_a_, 8, 11);
    for (int64_t s : {12, 50, 120}) core_->Tick(At(s), false);
    // Retention: the gang and the cancelled job leave memory (archived_job).
    core_->SetRetention(Duration::Seconds(60));
    core_->Tick(At(200), false);
    EXPECT_GE(core_->archived(), 2);
    EXPECT_TRUE(core_->Flush().ok());
    return 200;
  }
  static std::string JobBody(const std::string& name) {
    return Json({{"tenant", "a"}, {"name", name}, {"priority_class", "training"}, {"replicas", 1},
                 {"resources", {{"flavor", "h100-80gb"}, {"gpus", 1}}}, {"duration_estimate_s", 600},
                 {"command", {"true"}}}).dump();
  }

  static std::filesystem::path FixtureDir() {
    return std::filesystem::path(GPUPOOL_SOURCE_DIR) / "tests" / "fixtures" / "changes-v1";
  }
  static std::string Read(const std::filesystem::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

TEST_F(ChangeFixture, WriteWhenAsked) {
  const char* out = std::getenv("GPUPOOL_WRITE_CHANGE_FIXTURE");
  if (out == nullptr) GTEST_SKIP() << "set GPUPOOL_WRITE_CHANGE_FIXTURE to a directory to write the fixture";
  const int64_t end = Live();
  const std::string visible = Visible(*core_, end);
  core_.reset();
  std::filesystem::create_directories(out);
  for (const char* f : {"journal.db", "journal.hwm"}) {
    std::filesystem::copy_file(dir_ / f, std::filesystem::path(out) / f, std::filesystem::copy_options::overwrite_existing);
  }
  std::ofstream(std::filesystem::path(out) / "visible.json") << visible << "\n";
  std::ofstream(std::filesystem::path(out) / "at_s") << end << "\n";
}

TEST_F(ChangeFixture, TheFormat1JournalReplaysToTheSameViews) {
  const std::filesystem::path copy = dir_ / "fixture";
  std::filesystem::create_directories(copy);
  for (const char* f : {"journal.db", "journal.hwm"}) std::filesystem::copy_file(FixtureDir() / f, copy / f);
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((copy / "journal.db").string());
  ASSERT_TRUE(j.ok()) << j.error().message;
  Result<std::vector<Record>> records = (*j)->ReadAll();
  ASSERT_TRUE(records.ok());
  std::set<std::string> kinds;
  for (const Record& r : *records) kinds.insert(r.kind);
  // Kinds added after the fixture was written (additive: format 1 still) are not in it; their
  // replay is tested where they are made (ServiceAccounts.* in service_accounts_test).
  const std::set<std::string> since_fixture = {"service_account", "oidc_mapping"};
  for (const std::string& k : ChangeKinds()) {
    EXPECT_TRUE(kinds.count(k) || since_fixture.count(k)) << "the fixture has no '" << k << "' record";
  }
  Result<std::unique_ptr<ControlPlane>> core = ControlPlane::Open(std::move(*j), SchedulerConfig());
  ASSERT_TRUE(core.ok()) << core.error().message;
  core_ = std::move(*core);
  EnableBurst();  // as `gpupool serve` does after the start, from the same configuration
  const int64_t at = std::stoll(Read(FixtureDir() / "at_s"));
  EXPECT_EQ(Visible(*core_, at) + "\n", Read(FixtureDir() / "visible.json"));
}

// A record of a change format newer than this binary's stops the start, saying so, instead of
// being misread.
TEST_F(ChangeFixture, ARecordOfANewerFormatIsRefused) {
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir_ / "journal.db").string());
  ASSERT_TRUE(j.ok()) << j.error().message;
  core_.reset();
  std::vector<Record> batch = {{0, "token_revoked", R"({"v": 2, "id": "x"})", {}}};
  ASSERT_TRUE((*j)->Append(batch).ok());
  Result<std::unique_ptr<ControlPlane>> core = ControlPlane::Open(std::move(*j), SchedulerConfig());
  ASSERT_FALSE(core.ok());
  EXPECT_NE(core.error().message.find("change format 2, written by a newer gpupool"), std::string::npos)
      << core.error().message;
}

}  // namespace
}  // namespace gpupool
