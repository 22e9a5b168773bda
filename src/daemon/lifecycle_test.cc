// What a new user sees of a job's life (issue "first week"): every job's events with who and
// why, scoped like the job; pending reasons that say a job was sent back.
#include <gtest/gtest.h>

#include "daemon/control_plane_fixture.h"

namespace gpupool {
namespace {

Time At(int64_t s) { return Time::FromMillis(s * 1000); }

std::vector<std::string> Types(const Json& job) {
  std::vector<std::string> out;
  for (const Json& e : job["events"]) out.push_back(e["type"]);
  return out;
}

// research borrows 16 H100 beyond its 24; product then asks for its guarantee and takes back
// a borrowed job by reclaim, once the victims have run their 5 minutes.
class HistoryTest : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    for (int i = 0; i < 5; ++i) ASSERT_EQ(core_->SubmitJob(As(members_["research"], 2000), Job("research"), "").status, 201);
    core_->Tick(At(3), false);
    core_->Tick(At(4), true);  // the simulated executor starts them
    for (int i = 0; i < 2; ++i) ASSERT_EQ(core_->SubmitJob(As(members_["product"], 5000), Job("product"), "").status, 201);
    core_->Tick(At(400), false);  // past the 5-minute minimum runtime: reclaim
    ASSERT_EQ(core_->last_plan().preemptions.size(), 1u);
    victim_ = std::to_string(core_->last_plan().preemptions[0].victim.value());
    preemptor_ = std::to_string(core_->last_plan().preemptions[0].preemptor.value());
    ASSERT_TRUE(core_->Flush().ok());
  }
  Json Get(const Principal& p, const std::string& id) { return Json::parse(core_->GetJob(As(p, 401'000), id).body); }
  std::string victim_, preemptor_;
};

TEST_F(HistoryTest, APreemptedJobSaysByWhomAndWhyToThoseWhoMaySeeIt) {
  const Json admin = Get(admin_, victim_);
  EXPECT_EQ(Types(admin), (std::vector<std::string>{"submitted", "admitted", "started", "preempted"}));
  const Json& preempted = admin["events"][3];
  EXPECT_EQ(preempted["reason"], "reclaim");
  EXPECT_EQ(preempted["by"]["job"], preemptor_);
  EXPECT_EQ(preempted["by"]["tenant"], "product");
  EXPECT_NE(preempted["message"].get<std::string>().find("job " + preemptor_ + " of tenant product"), std::string::npos)
      << preempted["message"];
  EXPECT_NE(admin["events"][1]["message"].get<std::string>().find("admitted as borrowed on h100-"), std::string::npos);

  // research's member sees that it was reclaimed, never by which job of which tenant.
  const Json member = Get(members_["research"], victim_);
  const Json& seen = member["events"][3];
  EXPECT_TRUE(seen["by"].is_null());
  EXPECT_EQ(seen["message"].get<std::string>().find("product"), std::string::npos) << seen["message"];
  EXPECT_EQ(seen["message"].get<std::string>().find(preemptor_), std::string::npos) << seen["message"];
  EXPECT_EQ(member.dump().find("product"), std::string::npos) << member.dump();
}

TEST_F(HistoryTest, APreemptedJobsReasonLeadsWithThePreemption) {
  core_->Tick(At(401), false);  // the next cycle gives it a scheduler reason of its own
  const Json job = Get(members_["research"], victim_);
  ASSERT_EQ(job["state"], "pending");
  EXPECT_EQ(job["reason"]["code"], "preempted");
  const std::string msg = job["reason"]["message"];
  EXPECT_EQ(msg.rfind("preempted by a job of another tenant (reclaim", 0), 0u) << msg;
  EXPECT_NE(msg.find("; now "), std::string::npos) << msg;
  EXPECT_NE(job["reason"]["waiting"], "none");
  // Admitted again later, the lead is gone.
}

TEST_F(HistoryTest, TheHistorySurvivesARestartAndOtherTenantsCannotReadIt) {
  const std::string before = core_->GetJob(As(admin_, 401'000), victim_).body;
  core_.reset();
  core_ = Open();
  EXPECT_EQ(core_->GetJob(As(admin_, 401'000), victim_).body, before);
  EXPECT_EQ(core_->GetJob(As(members_["product"], 401'000), victim_).status, 404);
}

TEST_F(CoreTest, CancelAndDrainSayWhoAndWhy) {
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research"), "").status, 201);
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research"), "").status, 201);
  core_->Tick(At(3), false);
  const Json placed = Json::parse(core_->GetJob(As(admin_), "2").body);
  const std::string node = placed["placement"][0]["node"];
  ASSERT_EQ(core_->NodeAction(As(admin_, 4000), node, "drain").status, 200);
  ASSERT_EQ(core_->CancelJob(As(members_["research"], 5000), "1").status, 200);
  const Json drained = Json::parse(core_->GetJob(As(members_["research"], 6000), "2").body);
  const Json& requeued = drained["events"].back();
  EXPECT_EQ(requeued["type"], "requeued");
  EXPECT_EQ(requeued["reason"], "node_drained");
  EXPECT_EQ(requeued["message"], "requeued (node_drained): node " + node + " was drained by admin");
  EXPECT_EQ(drained["reason"]["code"], "requeued");
  const Json cancelled = Json::parse(core_->GetJob(As(members_["research"], 6000), "1").body);
  EXPECT_EQ(cancelled["events"].back()["type"], "cancelled");
  EXPECT_EQ(cancelled["events"].back()["message"], "cancelled by research-bob");
}

// --- the start deadline ----------------------------------------------------------------

TEST_F(CoreTest, NodesWithoutAnAgentAreNotReadyAndTakeNoWork) {
  core_->SetAgentExecutor(Duration::Minutes(2));
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research"), "").status, 201);
  core_->Tick(At(3), false);
  const Json node = Json::parse(core_->GetNode(As(admin_), "h100-0").body);
  EXPECT_EQ(node["condition"], "not_ready");
  EXPECT_EQ(node["condition_reason"], "no node agent has registered for it");
  const Json pending = Json::parse(core_->GetJob(As(admin_), "1").body);
  EXPECT_EQ(pending["state"], "pending");
  EXPECT_NE(pending["reason"]["message"].get<std::string>().find("not_ready"), std::string::npos) << pending.dump();
  // Its agent registers: ready, and the job goes there.
  Json gpus = Json::array();
  for (int i = 0; i < 8; ++i) gpus.push_back({{"index", i}, {"uuid", "GPU-h100-0-" + std::to_string(i)}});
  ASSERT_EQ(core_->RegisterAgent(As(admin_, 4000), Json({{"node", "h100-0"}, {"flavor", "h100-80gb"}, {"gpus", gpus}}).dump()).status, 200);
  EXPECT_EQ(Json::parse(core_->GetNode(As(admin_, 4000), "h100-0").body)["condition"], "ready");
  core_->Tick(At(5), false);
  const Json placed = Json::parse(core_->GetJob(As(admin_, 5000), "1").body);
  EXPECT_EQ(placed["state"], "admitted");
  EXPECT_EQ(placed["placement"][0]["node"], "h100-0");
}

class StartDeadlineTest : public AgentProtocolTest {
 protected:
  void SetUp() override {
    AgentProtocolTest::SetUp();
    core_->SetAgentExecutor(Duration::Minutes(2));
    core_->SetHeartbeat(Duration::Seconds(1), Duration::Hours(1));  // silence is not the point here
  }
};

TEST_F(StartDeadlineTest, APlacementItsAgentNeverStartsIsWithdrawnWithTheNodeNamed) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1), other = node == "g1" ? "g2" : "g1";
  Beat(node, 2);  // the agent is there, but never reports the replica
  core_->Tick(At(100), false);
  EXPECT_EQ(Job(j, 100)["state"], "admitted") << "within the deadline";
  core_->Tick(At(121), false);
  const Json job = Job(j, 121);
  const std::string why = "node " + node + "'s agent did not start it within 120s";
  bool requeued = false;
  for (const Json& e : job["events"]) {
    if (e["type"] == "requeued") {
      requeued = true;
      EXPECT_EQ(e["reason"], "start_timeout");
      EXPECT_EQ(e["message"], "requeued (start_timeout): " + why);
    }
  }
  EXPECT_TRUE(requeued) << job.dump();
  // The node is cordoned with the reason; the job went to the other node in the same tick.
  const Json n = Json::parse(core_->GetNode({&admin_, "", At(121)}, node).body);
  EXPECT_EQ(n["condition"], "cordoned");
  EXPECT_EQ(n["condition_reason"], why);
  EXPECT_EQ(NodeOf(j, 121), other);
  EXPECT_EQ(job["state"], "admitted");
}

TEST_F(StartDeadlineTest, ARunningReportBeatsTheDeadline) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1);
  const Json start = StartOf(Beat(node, 2), j);
  ASSERT_TRUE(start.is_object());
  Beat(node, 3, {{"replicas", {Report(start, "running")}}});
  core_->Tick(At(300), false);
  EXPECT_EQ(Job(j, 300)["state"], "running");
  EXPECT_EQ(NodeOf(j, 300), node);
}

TEST_F(StartDeadlineTest, AGangWithOneReplicaNeverStartedIsWithdrawnWhole) {
  const std::string j = Submit(member_a_, 4, 1, /*replicas=*/2);
  core_->Tick(At(1), false);
  const Json placed = Job(j, 1);
  ASSERT_EQ(placed["placement"].size(), 2u);
  const std::string first = placed["placement"][0]["node"], second = placed["placement"][1]["node"];
  ASSERT_NE(first, second);
  const Json start = StartOf(Beat(first, 2), j);
  Beat(first, 3, {{"replicas", {Report(start, "running")}}});
  Beat(second, 3);
  EXPECT_EQ(Job(j, 3)["state"], "running") << "one replica runs";
  core_->Tick(At(122), false);
  const Json job = Job(j, 122);
  EXPECT_EQ(job["events"].back()["type"], "requeued") << job.dump();
  EXPECT_EQ(job["events"].back()["message"], "requeued (start_timeout): node " + second + "'s agent did not start it within 120s");
  EXPECT_EQ(job["state"], "pending") << "the only other node is cordoned now";
}

TEST_F(StartDeadlineTest, AMigLayoutTheAgentRefusesIsNamed) {
  const MigPlacement placed = PlaceMigJob();
  ASSERT_FALSE(::testing::Test::HasFailure());
  Beat("m1", 4, {{"mig_errors", {{{"gpu", 0}, {"layout", placed.target}, {"error", "MIG changes are off"}}}}});
  core_->Tick(At(123), false);
  const Json job = Job(placed.job, 123);
  EXPECT_EQ(job["state"], "pending");
  const std::string why = "MIG layout refused by the agent of node m1: GPU 0 not given MIG layout '" + placed.target +
                          "': MIG changes are off";
  EXPECT_EQ(job["events"].back()["message"], "requeued (start_timeout): " + why);
  EXPECT_EQ(job["reason"]["code"], "requeued");
  const Json n = Json::parse(core_->GetNode({&admin_, "", At(123)}, "m1").body);
  EXPECT_EQ(n["condition"], "cordoned");
  EXPECT_EQ(n["condition_reason"], why);
}

// --- health, as describe node shows it ----------------------------------------------------

TEST_F(AgentProtocolTest, AnXidMarksItsGpuUnhealthyAndDescribeNodeSaysWhy) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string sick = NodeOf(j, 1);
  Beat(sick, 2, {{"health", {{{"gpu", 1}, {"kind", "xid"}, {"code", 48}}, {{"gpu", 3}, {"kind", "xid"}, {"code", 13}}}}});
  Json n = Json::parse(core_->GetNode({&admin_, "", At(2)}, sick).body);
  EXPECT_EQ(n["condition"], "draining");
  EXPECT_NE(n["condition_reason"].get<std::string>().find("XID 48"), std::string::npos) << n.dump();
  EXPECT_EQ(n["healthy_gpus"], 3) << "GPU 1 is out, GPU 3's application error is not a fault";
  EXPECT_FALSE(n["devices"][1]["healthy"]);
  EXPECT_NE(n["devices"][1]["health_reason"].get<std::string>().find("XID 48"), std::string::npos) << n["devices"][1];
  EXPECT_TRUE(n["devices"][3]["healthy"]);
  EXPECT_FALSE(n["devices"][3].contains("health_reason"));
  // The job's event says why it moved.
  EXPECT_EQ(Job(j, 2)["events"].back()["reason"], "node_unhealthy");
  // A failed acceptance test is the node's reason; passing it again brings the GPUs back.
  ASSERT_EQ(Register(sick, 3, /*passed=*/false).status, 200);
  n = Json::parse(core_->GetNode({&admin_, "", At(3)}, sick).body);
  EXPECT_EQ(n["condition"], "unhealthy");
  EXPECT_EQ(n["condition_reason"], "failed its acceptance test: dcgmi diag: FAIL");
  EXPECT_FALSE(n["devices"][1]["healthy"]);
  ASSERT_EQ(Register(sick, 4).status, 200);
  n = Json::parse(core_->GetNode({&admin_, "", At(4)}, sick).body);
  EXPECT_EQ(n["healthy_gpus"], 4);
  // The fault survives a restart (GpuHealthChanged is journaled with its reason).
}

TEST_F(AgentProtocolTest, AGpusFaultAndItsReasonSurviveARestart) {
  Beat("g1", 2, {{"health", {{{"gpu", 2}, {"kind", "ecc"}, {"count", 3}}}}});
  const std::string before = core_->GetNode({&admin_, "", At(2)}, "g1").body;
  EXPECT_FALSE(Json::parse(before)["devices"][2]["healthy"]);
  Restart();
  EXPECT_EQ(core_->GetNode({&admin_, "", At(2)}, "g1").body, before);
}

// --- removing a node ----------------------------------------------------------------------

TEST_F(AgentProtocolTest, ADrainedEmptyNodeCanBeDeletedAndItsNameRegisteredAgain) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1);
  const CallContext admin{&admin_, "", At(2)};
  Reply r = core_->DeleteNode(admin, node);
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("drain it first"), std::string::npos) << r.body;
  EXPECT_EQ(core_->DeleteNode({&member_a_, "", At(2)}, node).status, 403) << "it runs their job, so they see it; admins only";
  ASSERT_EQ(core_->NodeAction(admin, node, "cordon").status, 200);
  EXPECT_EQ(core_->DeleteNode(admin, node).status, 409) << "cordoned is not drained";
  ASSERT_EQ(core_->NodeAction(admin, node, "drain").status, 200);
  // Drained: its job moved to the other node, so it is empty.
  r = core_->DeleteNode(admin, node);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(core_->GetNode(admin, node).status, 404);
  EXPECT_EQ(Json::parse(core_->ListNodes(admin).body)["items"].size(), 1u);
  EXPECT_EQ(core_->AgentHeartbeat(admin, node, "{}").status, 404) << "its agent is gone with it";
  EXPECT_EQ(core_->DeleteNode(admin, node).status, 404);
  // Jobs that ran there keep naming it in their events.
  EXPECT_NE(Job(j, 3)["events"][1]["message"].get<std::string>().find(node), std::string::npos);
  Restart();
  EXPECT_EQ(core_->GetNode({&admin_, "", At(4)}, node).status, 404) << "the removal is journaled";
  ASSERT_EQ(Register(node, 5).status, 200) << "the name is free for a new node";
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(5)}, node).body)["condition"], "ready");
  EXPECT_EQ(Json::parse(core_->ListNodes({&admin_, "", At(5)}).body)["items"].size(), 2u);
}

// --- per-tenant bounds ----------------------------------------------------------------------

// One tenant cannot grow memory and the journal without bound: its pending jobs are capped
// (429 past the cap, counted again as jobs start or end), and so is each job's command.
TEST_F(CoreTest, ATenantsPendingJobsAndCommandsAreBounded) {
  ASSERT_EQ(core_->UpdateTenant(As(admin_), "research", R"({"limits": {"max_pending_jobs": 2}})").status, 200);
  const Json view = Json::parse(core_->GetTenant(As(admin_), "research").body);
  EXPECT_EQ(view["limits"]["max_pending_jobs"], 2) << view;
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    const Reply r = core_->SubmitJob(As(members_["research"]), Job("research", 8, "p" + std::to_string(i)), "");
    ASSERT_EQ(r.status, 201) << r.body;
    ids.push_back(Json::parse(r.body)["id"]);
  }
  Reply r = core_->SubmitJob(As(members_["research"]), Job("research", 8, "third"), "");
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_NE(r.body.find("tenant research has 2 jobs pending, its maximum (limits.max_pending_jobs)"), std::string::npos)
      << r.body;
  EXPECT_EQ(core_->SubmitJob(As(members_["product"]), Job("product", 8, "other"), "").status, 201)
      << "another tenant is not held back";
  ASSERT_EQ(core_->CancelJob(As(members_["research"]), ids[0]).status, 200);
  EXPECT_EQ(core_->SubmitJob(As(members_["research"]), Job("research", 8, "now"), "").status, 201);
  // The limit survives a restart (it is part of the tenant's record).
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_EQ(core_->SubmitJob(As(members_["research"]), Job("research", 8, "again"), "").status, 429);
  ASSERT_EQ(core_->UpdateTenant(As(admin_), "research", R"({"limits": {"max_pending_jobs": 0}})").status, 200);
  EXPECT_EQ(core_->SubmitJob(As(members_["research"]), Job("research", 8, "unbounded"), "").status, 201);

  Json big = Json::parse(Job("research"));
  big["command"] = Json::array();
  for (int i = 0; i < 17; ++i) big["command"].push_back(std::string(4000, 'x'));
  r = core_->SubmitJob(As(members_["research"]), big.dump(), "");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("'command' holds 68000 bytes; at most 65536"), std::string::npos) << r.body;
}

// --- defaults and per-class minimum runtime ------------------------------------------------

TEST_F(CoreTest, AJobMayOmitItsClassAndDurationWhenDefaultsExist) {
  Json body = Json::parse(Job("research"));
  body.erase("priority_class");
  body.erase("duration_estimate_s");
  Reply r = core_->SubmitJob(As(members_["research"]), body.dump(), "");
  ASSERT_EQ(r.status, 400) << "research has no default duration";
  EXPECT_NE(r.body.find("'duration_estimate_s' is required: tenant research has no default_duration_s"), std::string::npos)
      << r.body;
  ASSERT_EQ(core_->UpdateTenant(As(admin_), "research", R"({"limits": {"default_duration_s": 5400}})").status, 200);
  r = core_->SubmitJob(As(members_["research"]), body.dump(), "");
  ASSERT_EQ(r.status, 201) << r.body;
  const Json job = Json::parse(core_->GetJob(As(admin_), Json::parse(r.body)["id"]).body);
  EXPECT_EQ(job["priority_class"], "training") << "the class marked default";
  EXPECT_EQ(job["duration_estimate_s"], 5400) << "the tenant's default";
  // The maximum still holds for an explicit estimate.
  ASSERT_EQ(core_->UpdateTenant(As(admin_), "research", R"({"limits": {"default_duration_s": 600, "max_duration_s": 3600}})").status, 200);
  body["duration_estimate_s"] = 7200;
  r = core_->SubmitJob(As(members_["research"]), body.dump(), "");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("exceeds the tenant's maximum"), std::string::npos) << r.body;
}

TEST_F(CoreTest, PriorityClassesCarryTheirMinimumRuntimeAndOneDefault) {
  Reply r = core_->CreatePriorityClass(As(admin_), R"({"name": "quick", "value": 50, "min_runtime_s": 60})");
  ASSERT_EQ(r.status, 201) << r.body;
  r = core_->CreatePriorityClass(As(admin_), R"({"name": "other", "value": 1, "default": true})");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("training is already the default"), std::string::npos) << r.body;
  EXPECT_EQ(core_->CreatePriorityClass(As(admin_), R"({"name": "neg", "value": 1, "min_runtime_s": -1})").status, 400);
  std::map<std::string, Json> classes;
  const Json listed = Json::parse(core_->ListPriorityClasses(As(admin_)).body);
  for (const Json& c : listed["items"]) classes[c["name"]] = c;
  EXPECT_EQ(classes["quick"]["min_runtime_s"], 60);
  EXPECT_EQ(classes["training"]["min_runtime_s"], 300) << "the scheduler's default";
  EXPECT_EQ(classes["training"]["default"], true);
  EXPECT_EQ(classes.count("other"), 0u);
  // Journaled with the class: the same after a restart.
  const std::string before = core_->ListPriorityClasses(As(admin_)).body;
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_EQ(core_->ListPriorityClasses(As(admin_)).body, before);
}

// --- guarantees that the pool cannot hold ----------------------------------------------

// The demo cluster has 64 H100s and guarantees 56 of them (research 24, product 24, interns 8).
TEST_F(CoreTest, GuaranteesAboveCapacityAreRefusedUnlessAllowed) {
  const std::string big = R"({"name": "big", "quotas": {"h100-80gb": {"guaranteed": 16}}})";
  Reply r = core_->CreateTenant(As(admin_), big);
  ASSERT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("h100-80gb: guarantees would be 72 of 64 GPUs"), std::string::npos) << r.body;
  EXPECT_EQ(core_->GetTenant(As(admin_), "big").status, 404) << "nothing changed";
  r = core_->UpdateTenant(As(admin_), "research", R"({"quotas": {"h100-80gb": {"guaranteed": 40}}})");
  ASSERT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("guarantees would be 72 of 64"), std::string::npos) << r.body;
  // Allowed: audited and shown on the tenant.
  Json allowed = Json::parse(big);
  allowed["allow_overcommit"] = true;
  r = core_->CreateTenant(As(admin_), allowed.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  const Json view = Json::parse(core_->GetTenant(As(admin_), "big").body);
  ASSERT_TRUE(view.contains("overcommitted")) << view.dump();
  EXPECT_EQ(view["overcommitted"][0], "h100-80gb: guarantees are 72 of 64 GPUs");
  bool audited = false;
  ASSERT_TRUE(core_->Flush().ok());  // the audit log is read from the store
  const Json log = Json::parse(core_->ListAudit(As(admin_)).body);
  for (const Json& a : log["items"]) {
    audited = audited || (a["action"] == "tenant.overcommit" &&
                          a["object"].get<std::string>().find("72 of 64") != std::string::npos);
  }
  EXPECT_TRUE(audited);
  // Lowering a guarantee while over is fine; raising one is not.
  EXPECT_EQ(core_->UpdateTenant(As(admin_), "research", R"({"quotas": {"h100-80gb": {"guaranteed": 20}}})").status, 200);
  EXPECT_EQ(core_->UpdateTenant(As(admin_), "product", R"({"quotas": {"h100-80gb": {"guaranteed": 25}}})").status, 409);
  EXPECT_EQ(core_->CreateTenant(As(admin_), R"({"name": "x", "allow_overcommit": "yes"})").status, 400);
}

TEST_F(CoreTest, GuaranteesMayNotTakeWhatReservationsHold) {
  // The 8 unguaranteed H100s are booked for a day next year.
  const Reply booked = core_->CreateReservation(
      As(admin_), R"({"tenant": "research", "flavor": "h100-80gb", "gpus": 8, "start": "2027-06-01T00:00:00Z", "end": "2027-06-02T00:00:00Z"})");
  ASSERT_EQ(booked.status, 201) << booked.body;
  const Reply r = core_->CreateTenant(As(admin_), R"({"name": "late", "quotas": {"h100-80gb": {"guaranteed": 4}}})");
  ASSERT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("guarantees would be 60 of 64 GPUs, and reservations hold 8 at 2027-06-01T00:00:00Z (at most 56 can be guaranteed)"),
            std::string::npos)
      << r.body;
}

// --- node selectors and the tenant's labels ----------------------------------------------

class LabelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    core_ = BootstrapFromYaml(R"(
tenants:
  - {name: a, quotas: {h100-80gb: {guaranteed: 16}}, allowed_labels: [cuda=12.4, cuda=12.6, pool=a]}
  - {name: b, quotas: {h100-80gb: {guaranteed: 8}}, required_labels: [pool=b]}
nodes:
  - {name: old, flavor: h100-80gb, gpus: 8, labels: [cuda=12.4, pool=a]}
  - {name: new, flavor: h100-80gb, gpus: 8, labels: [cuda=12.6, pool=a]}
  - {name: bee, flavor: h100-80gb, gpus: 8, labels: [cuda=12.6, pool=b]}
)", "labels", Time::FromSeconds(1), dir_);
    ASSERT_TRUE(core_);
    a_ = {"ann", Role::kMember, *core_->state().FindTenant("a"), "ann-token"};
    b_ = {"bo", Role::kMember, *core_->state().FindTenant("b"), "bo-token"};
  }
  Reply Submit(const Principal& p, const std::string& tenant, const Json& selector) {
    Json body = {{"tenant", tenant}, {"name", "w"}, {"resources", {{"flavor", "h100-80gb"}, {"gpus", 8}}},
                 {"duration_estimate_s", 600}, {"command", {"run"}}};
    if (!selector.is_null()) body["node_selector"] = selector;
    return core_->SubmitJob({&p, "", Time::FromSeconds(2)}, body.dump(), "");
  }
  std::string NodeOf(const Reply& submitted) {
    core_->Tick(Time::FromSeconds(3), true);
    const Json j = Json::parse(core_->GetJob({&admin_, "", Time::FromSeconds(3)}, Json::parse(submitted.body)["id"]).body);
    return j["placement"].empty() ? "-" + j["reason"]["message"].get<std::string>() : j["placement"][0]["node"].get<std::string>();
  }
  std::filesystem::path dir_;
  std::unique_ptr<ControlPlane> core_;
  Principal admin_{"admin", Role::kClusterAdmin, TenantId(), ""};
  Principal a_, b_;
};

TEST_F(LabelsTest, AJobChoosesItsNodesByLabelWithinWhatItsTenantMayAskFor) {
  const Reply r = Submit(a_, "a", Json::parse(R"([{"key": "cuda", "operator": "In", "values": ["12.6"]}])"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(NodeOf(r), "new");
  const Json job = Json::parse(core_->GetJob({&a_, "", Time::FromSeconds(3)}, Json::parse(r.body)["id"]).body);
  EXPECT_EQ(job["node_selector"], Json::parse(R"([{"key": "cuda", "operator": "In", "values": ["12.6"]}])"));
  // Outside the whitelist: refused, nothing submitted.
  Reply refused = Submit(a_, "a", Json::parse(R"([{"key": "pool", "operator": "In", "values": ["b"]}])"));
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_NE(refused.body.find("tenant a may not select nodes by pool=b"), std::string::npos) << refused.body;
  EXPECT_EQ(Submit(a_, "a", Json::parse(R"([{"key": "gpu", "operator": "Exists"}])")).status, 403);
  EXPECT_EQ(Submit(a_, "a", Json::parse(R"([{"key": "spot", "operator": "DoesNotExist"}])")).status, 201)
      << "DoesNotExist only narrows";
  // b's required label keeps it on its pool; an unmet selector is its reason.
  const Reply b = Submit(b_, "b", Json::parse(R"([{"key": "cuda", "operator": "In", "values": ["12.4"]}])"));
  ASSERT_EQ(b.status, 201) << b.body;
  EXPECT_EQ(NodeOf(b), "-no ready h100-80gb node offered to tenant b matches node_selector cuda=12.4");
  EXPECT_EQ(NodeOf(Submit(b_, "b", nullptr)), "bee");
}

TEST_F(LabelsTest, MalformedSelectorsAreClearErrors) {
  for (const char* bad : {R"({"key": "cuda"})", R"([{"key": "cuda", "operator": "Near", "values": ["1"]}])",
                          R"([{"key": "cuda", "operator": "In"}])", R"([{"key": "cuda", "operator": "In", "values": []}])",
                          R"([{"key": "cuda", "operator": "Exists", "values": ["12.4"]}])", R"([{"key": "", "operator": "Exists"}])",
                          R"([{"key": "a b", "operator": "Exists"}])", R"([{"key": "cuda", "operator": "In", "values": ["x/y"]}])",
                          R"([{"key": "cuda", "operator": "In", "values": ["1"], "extra": 1}])"}) {
    const Reply r = Submit(admin_, "a", Json::parse(bad));
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_NE(r.body.find("node_selector"), std::string::npos) << bad << ": " << r.body;
  }
  EXPECT_EQ(core_->state().jobs().size(), 0u);
}

TEST_F(LabelsTest, TheTenantsLabelsChangeThroughTheApiAndShowOnTheTenantAndNodes) {
  const CallContext admin{&admin_, "", Time::FromSeconds(2)};
  Reply r = core_->UpdateTenant(admin, "b", R"({"required_labels": ["pool=b", "cuda=12.6"], "allowed_labels": ["cuda=12.6"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  const Json t = Json::parse(r.body);
  EXPECT_EQ(t["required_labels"], Json({"cuda=12.6", "pool=b"}));
  EXPECT_EQ(t["allowed_labels"], Json({"cuda=12.6"}));
  EXPECT_EQ(core_->UpdateTenant(admin, "b", R"({"required_labels": ["pool"]})").status, 400);
  EXPECT_EQ(core_->UpdateTenant(admin, "b", R"({"allowed_labels": "pool=b"})").status, 400);
  const Json node = Json::parse(core_->GetNode(admin, "bee").body);
  EXPECT_EQ(node["labels"], Json({"cuda=12.6", "pool=b"}));
  EXPECT_TRUE(node["dedicated_to"].is_null());
}

TEST_F(CoreTest, ARefusedReservationNamesNoIdThatAnotherBookingGetsLater) {
  const Reply refused = core_->CreateReservation(
      As(admin_), R"({"tenant": "research", "flavor": "h100-80gb", "gpus": 9, "start": "2027-06-01T00:00:00Z", "end": "2027-06-02T00:00:00Z"})");
  ASSERT_EQ(refused.status, 409) << refused.body;
  EXPECT_NE(refused.body.find("reservation refused: short by 1 GPU"), std::string::npos) << refused.body;
  EXPECT_EQ(refused.body.find("reservation 1"), std::string::npos) << refused.body;
  const Reply booked = core_->CreateReservation(
      As(admin_), R"({"tenant": "product", "flavor": "h100-80gb", "gpus": 8, "start": "2027-06-01T00:00:00Z", "end": "2027-06-02T00:00:00Z"})");
  ASSERT_EQ(booked.status, 201) << booked.body;
  EXPECT_EQ(Json::parse(booked.body)["id"], "1");
}

TEST_F(AgentProtocolTest, AgentsReportDriverCudaAndProductAsLabelsThatJobsSelect) {
  Json reg = RegisterBody("g1");
  reg["reported_labels"] = {"node.gpupool.io/cuda-version=12.4", "node.gpupool.io/driver-version=550.54.15"};
  ASSERT_EQ(core_->RegisterAgent({&admin_, "", At(1)}, reg.dump()).status, 200);
  reg = RegisterBody("g2");
  reg["reported_labels"] = {"node.gpupool.io/cuda-version=12.6"};
  ASSERT_EQ(core_->RegisterAgent({&admin_, "", At(1)}, reg.dump()).status, 200);
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(1)}, "g1").body)["labels"],
            Json({"node.gpupool.io/cuda-version=12.4", "node.gpupool.io/driver-version=550.54.15"}));
  const Reply r = core_->SubmitJob({&member_a_, "", At(2)}, Json({{"tenant", "a"}, {"name", "w"}, {"resources", {{"flavor", "h100-80gb"}, {"gpus", 4}}},
      {"duration_estimate_s", 60}, {"command", {"x"}},
      {"node_selector", {{{"key", "node.gpupool.io/cuda-version"}, {"operator", "In"}, {"values", {"12.6"}}}}}}).dump(), "");
  ASSERT_EQ(r.status, 201) << r.body;
  core_->Tick(At(2), false);
  EXPECT_EQ(NodeOf(Json::parse(r.body)["id"], 2), "g2");
  // A driver upgrade: the next registration replaces the reported labels, nothing else.
  reg["reported_labels"] = {"node.gpupool.io/cuda-version=12.8"};
  ASSERT_EQ(core_->RegisterAgent({&admin_, "", At(3)}, reg.dump()).status, 200);
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(3)}, "g2").body)["labels"], Json({"node.gpupool.io/cuda-version=12.8"}));
  // Only labels under the agent's prefix.
  reg["reported_labels"] = {"pool=a"};
  EXPECT_EQ(core_->RegisterAgent({&admin_, "", At(4)}, reg.dump()).status, 400);
}

TEST(JobHistoryBounds, AJobRequeuedWithoutEndKeepsItsFirstAndLastEvents) {
  State s = DemoCluster();
  JobHistory h;
  const JobId id(1);
  for (int i = 0; i < 200; ++i) h.Observe(s, JobLost{id, Time::FromMillis(i), RequeueCause::kNodeLost, std::to_string(i)});
  ASSERT_EQ(h.Of(id).size(), JobHistory::kMaxEntries);
  EXPECT_EQ(h.dropped(id), 200 - JobHistory::kMaxEntries);
  EXPECT_EQ(h.Of(id)[JobHistory::kKeepFirst - 1].detail, std::to_string(JobHistory::kKeepFirst - 1));
  EXPECT_EQ(h.Of(id).back().detail, "199");
}

}  // namespace
}  // namespace gpupool
