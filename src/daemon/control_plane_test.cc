// ControlPlane over a real SQLite journal: recovery is exact, idempotency survives restarts, bad
// input changes nothing, scoping hides other tenants, and a failed journal write leaves memory
// equal to disk.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "api/page.h"
#include "burst/sim_provider.h"
#include "core/node_budget.h"
#include "daemon/config.h"
#include "daemon/control_plane.h"
#include "daemon/control_plane_fixture.h"
#include "daemon/metrics.h"
#include "model/demo_cluster.h"
#include "policy/calendar/calendar.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

TEST_F(CoreTest, SubmitAnswers201AndTheSchedulerPlacesTheJob) {
  const Reply r = core_->SubmitJob(As(members_["research"]), Job("research"), "");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = Json::parse(r.body)["id"];
  core_->Tick(Time::FromMillis(2100), false);
  const Json job = Json::parse(core_->GetJob(As(members_["research"]), id).body);
  EXPECT_EQ(job["state"], "admitted");
  ASSERT_EQ(job["placement"].size(), 1u);
  EXPECT_EQ(job["placement"][0]["gpus"].size(), 8u);
}

TEST_F(CoreTest, RecoveryRebuildsExactlyTheSameState) {
  for (int i = 0; i < 30; ++i) {
    const char* tenant = i % 2 ? "research" : "product";
    ASSERT_EQ(core_->SubmitJob(As(members_[tenant], 2000 + i), Job(tenant, 1 + i % 8, "j" + std::to_string(i)), "").status, 201);
    if (i % 5 == 4) core_->Tick(Time::FromMillis(2000 + i * 1000), true);
  }
  ASSERT_EQ(core_->CancelJob(As(members_["product"], 90000), "1").status, 200);
  ASSERT_EQ(core_->NodeAction(As(admin_, 91000), "h100-0", "drain").status, 200);
  core_->Tick(Time::FromMillis(92000), true);
  ASSERT_TRUE(core_->Flush().ok());
  const std::string before = Snapshot(*core_);
  core_.reset();
  std::unique_ptr<ControlPlane> again = Open();
  EXPECT_FALSE(again->empty());
  EXPECT_EQ(Snapshot(*again), before);
  EXPECT_TRUE(CheckInvariants(again->state()).ok());
}

// Through the API and the journal: a fraction switches an idle dynamic GPU to shared (shown in
// GET /v1/nodes), a job that accepts two flavors runs on the second when the first is full and
// says so, and a restart replays both decisions exactly.
TEST(CoreDynamicAndFlavors, SwitchesAndChosenFlavorsAreJournaledAndShown) {
  std::filesystem::path dir;
  std::unique_ptr<ControlPlane> core = BootstrapFromYaml(R"(
tenants:
  - {name: a, quotas: {h100-80gb: {guaranteed: 2}, a100-80gb: {guaranteed: 2}}}
nodes:
  - {name: h, flavor: h100-80gb, gpus: 2}
  - {name: flex, flavor: a100-80gb, gpus: 2, gpu_sharing: dynamic, max_clients: 4}
)", "dynamic", Time::FromSeconds(100), dir);
  ASSERT_TRUE(core);
  const Principal admin{"admin", Role::kClusterAdmin, TenantId(), ""};
  const CallContext c{&admin, "127.0.0.1", Time::FromSeconds(101)};
  auto submit = [&](const Json& resources) {
    const Reply r = core->SubmitJob(c, Json({{"tenant", "a"}, {"name", "j"}, {"resources", resources},
                                            {"duration_estimate_s", 600}, {"command", {"run"}}}).dump(), "");
    EXPECT_EQ(r.status, 201) << r.body;
    return Json::parse(r.body).value("id", "");
  };
  const std::string frac = submit({{"flavor", "a100-80gb"}, {"gpu_fraction", 0.5}, {"memory_gb", 20}});
  const std::string full = submit({{"flavor", "h100-80gb"}, {"gpus", 2}});
  const std::string either = submit({{"flavors", {"h100-80gb", "a100-80gb"}}, {"gpus", 1}});
  core->Tick(Time::FromSeconds(102), true);
  const Json nodes = Json::parse(core->ListNodes(c, true).body);
  Json flex;
  for (const Json& n : nodes["items"]) if (n["name"] == "flex") flex = n;
  ASSERT_FALSE(flex.is_null()) << nodes.dump();
  int shared = 0, whole_used = 0;
  for (const Json& d : flex["devices"]) {
    EXPECT_EQ(d.value("dynamic", false), true) << d.dump();
    shared += d["mode"] == "shared";
    whole_used += d["mode"] == "whole" && !d["occupant"].is_null();
  }
  EXPECT_EQ(shared, 1) << flex.dump();
  EXPECT_EQ(whole_used, 1) << "the two-flavor job took the other GPU whole: " << flex.dump();
  const Json e = Json::parse(core->GetJob(c, either).body);
  EXPECT_EQ(e["state"], "admitted") << e.dump();
  EXPECT_EQ(e["resources"]["flavor"], "a100-80gb");
  EXPECT_EQ(e["resources"]["flavors"], Json({"h100-80gb", "a100-80gb"}));
  EXPECT_EQ(e["placement"][0]["node"], "flex");
  ASSERT_TRUE(core->Flush().ok());
  const std::string before = core->ListJobs(c, {}).body + core->ListNodes(c, true).body;
  core.reset();
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir / "journal.db").string());
  ASSERT_TRUE(j.ok());
  Result<std::unique_ptr<ControlPlane>> again = ControlPlane::Open(std::move(*j), SchedulerConfig());
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ((*again)->ListJobs(c, {}).body + (*again)->ListNodes(c, true).body, before);
  EXPECT_TRUE(CheckInvariants((*again)->state()).ok());
  std::filesystem::remove_all(dir);
}

TEST_F(CoreTest, IdempotencyKeyDedupesAcrossRestarts) {
  const Reply a = core_->SubmitJob(As(members_["research"]), Job("research"), "key-1");
  const Reply b = core_->SubmitJob(As(members_["research"]), Job("research"), "key-1");
  ASSERT_EQ(a.status, 201);
  ASSERT_EQ(b.status, 201);
  EXPECT_EQ(Json::parse(a.body)["id"], Json::parse(b.body)["id"]);
  EXPECT_EQ(Json::parse(b.body)["replayed"], true);
  // The same key from another token is a different request.
  const Reply c = core_->SubmitJob(As(members_["product"]), Job("product"), "key-1");
  EXPECT_NE(Json::parse(c.body)["id"], Json::parse(a.body)["id"]);
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  const Reply d = core_->SubmitJob(As(members_["research"]), Job("research"), "key-1");
  EXPECT_EQ(Json::parse(d.body)["id"], Json::parse(a.body)["id"]);
  EXPECT_EQ(core_->state().jobs().size(), 2u);
}

TEST_F(CoreTest, IdempotencyKeysAreForgottenADayAfterTheirSubmit) {
  constexpr int64_t kDay = 24 * 3'600'000;
  auto submit = [&](int64_t ms, const std::string& key) {
    const Reply r = core_->SubmitJob(As(members_["research"], ms), Job("research"), key);
    EXPECT_EQ(r.status, 201) << r.body;
    const Json j = Json::parse(r.body);
    EXPECT_TRUE(j.contains("id")) << r.body;
    return j;
  };
  const Json a = submit(2000, "daily");
  const Json o = submit(3000, "other");
  // A retry within the day is the same job, also after a restart.
  EXPECT_EQ(submit(2000 + kDay - 1, "daily")["id"], a["id"]);
  EXPECT_EQ(submit(2000 + kDay - 1, "other")["id"], o["id"]);
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_EQ(core_->idempotency_keys(), 2u);
  EXPECT_EQ(submit(2000 + kDay - 1, "daily")["id"], a["id"]);
  // A day after the submit the key is forgotten: the memory is freed at the next tick, and the
  // same key makes a new job, which it then names for a day.
  core_->Tick(Time::FromMillis(2000 + kDay), false);
  EXPECT_EQ(core_->idempotency_keys(), 1u);  // "other" is a second younger
  const Json b = submit(2000 + kDay, "daily");
  EXPECT_NE(b["id"], a["id"]);
  EXPECT_FALSE(b.contains("replayed"));
  EXPECT_EQ(submit(2000 + kDay + 1, "daily")["id"], b["id"]);
  core_->Tick(Time::FromMillis(3000 + kDay), false);
  EXPECT_EQ(core_->idempotency_keys(), 1u);
  // After a restart the journal's old keys are forgotten the same way.
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_EQ(submit(3000 + kDay + 1, "daily")["id"], b["id"]);
  const Json o2 = submit(3000 + kDay + 1, "other");
  EXPECT_NE(o2["id"], o["id"]);
  EXPECT_FALSE(o2.contains("replayed"));
  core_->Tick(Time::FromMillis(2000 + 3 * kDay), false);
  EXPECT_EQ(core_->idempotency_keys(), 0u);
}

TEST_F(CoreTest, BadInputChangesNothing) {
  const std::string before = Snapshot(*core_);
  const size_t staged = core_->staged();
  for (const std::string& body : {std::string("{"), std::string("[]"), Job("nobody"), Job("research", 99),
                                  Job("product")}) {
    const Reply r = core_->SubmitJob(As(members_["research"]), body, "");
    EXPECT_GE(r.status, 400) << body;
    EXPECT_LT(r.status, 500) << body;
    EXPECT_TRUE(Json::parse(r.body)["error"].contains("message"));
  }
  EXPECT_EQ(core_->CreateTenant(As(admin_), R"({"name": "x", "quotas": {"v100": {"guaranteed": 1}}})").status, 400);
  EXPECT_EQ(core_->CreateToken(As(admin_), R"({"name": "x", "role": "root"})").status, 400);
  // Bytes that are not UTF-8 outside the JSON body (a header; a path segment echoed in the error).
  EXPECT_EQ(core_->SubmitJob(As(members_["research"]), Job("research"), "key\xFE").status, 400);
  EXPECT_EQ(core_->GetNode(As(admin_), "node\xFE\xC3").status, 404);
  EXPECT_EQ(core_->ListJobs(As(admin_), {{"state", "finished"}}).status, 400);
  EXPECT_EQ(core_->CreateToken(As(admin_), R"({"name": ")" + std::string(129, 'n') + R"(", "role": "cluster-admin"})").status, 400);
  EXPECT_EQ(core_->staged(), staged);
  EXPECT_EQ(Snapshot(*core_), before);
}

TEST_F(CoreTest, OtherTenantsJobsAreNotFoundAndNeverListed) {
  const Reply r = core_->SubmitJob(As(members_["research"]), Job("research"), "");
  const std::string id = Json::parse(r.body)["id"];
  EXPECT_EQ(core_->GetJob(As(members_["product"]), id).status, 404);
  EXPECT_EQ(core_->CancelJob(As(members_["product"]), id).status, 404);
  EXPECT_EQ(Json::parse(core_->ListJobs(As(members_["product"]), {}).body)["items"].size(), 0u);
  EXPECT_EQ(core_->ListJobs(As(members_["product"]), {{"tenant", "research"}}).status, 404);
  EXPECT_EQ(core_->GetTenant(As(members_["product"]), "research").status, 404);
  EXPECT_EQ(Json::parse(core_->ListTenants(As(members_["product"])).body)["items"].size(), 1u);
  EXPECT_EQ(core_->GetJob(As(viewers_["research"]), id).status, 200);
  EXPECT_EQ(core_->CancelJob(As(viewers_["research"]), id).status, 403);
  EXPECT_EQ(core_->GetJob({nullptr, "", Time::FromMillis(1)}, id).status, 401);
}

TEST_F(CoreTest, AFailedJournalWriteLeavesMemoryEqualToDisk) {
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research", 8, "kept"), "").status, 201);
  ASSERT_TRUE(core_->Flush().ok());
  const std::string durable = Snapshot(*core_);
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research", 8, "lost"), "k").status, 201);
  fail_next_ = 1;
  EXPECT_FALSE(core_->Flush().ok());
  EXPECT_EQ(Snapshot(*core_), durable) << "memory must fall back to what is durable";
  // The retry with the same key is not deduplicated against the lost write: it is new.
  const Reply retry = core_->SubmitJob(As(members_["research"]), Job("research", 8, "lost"), "k");
  EXPECT_EQ(retry.status, 201);
  EXPECT_FALSE(Json::parse(retry.body).contains("replayed"));
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_EQ(core_->state().jobs().size(), 2u);
}

// A failed append whose read-back fails too (the store went away): the core is stale, serves
// nothing until a reload succeeds, and the reload brings back exactly what is durable. It used
// to abort the process.
TEST_F(CoreTest, AFailedWriteThatCannotBeReadBackLeavesTheCoreStaleUntilAReload) {
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research", 8, "kept"), "").status, 201);
  ASSERT_TRUE(core_->Flush().ok());
  const std::string durable = Snapshot(*core_);
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research", 8, "lost"), "").status, 201);
  fail_next_ = 1;
  fail_reads_ = 2;
  EXPECT_FALSE(core_->Flush().ok());
  EXPECT_TRUE(core_->stale());
  EXPECT_FALSE(core_->Reload().ok()) << "the store is still away";
  EXPECT_TRUE(core_->stale());
  ASSERT_TRUE(core_->Reload().ok());
  EXPECT_FALSE(core_->stale());
  EXPECT_EQ(Snapshot(*core_), durable);
}

TEST_F(CoreTest, TenantLifecycle) {
  const CallContext a = As(admin_);
  ASSERT_EQ(core_->CreateTenant(a, R"({"name": "vision", "quotas": {"h100-80gb": {"guaranteed": 4}}})").status, 201);
  EXPECT_EQ(core_->CreateTenant(a, R"({"name": "vision"})").status, 409);
  EXPECT_EQ(core_->CreateTenant(As(members_["research"]), R"({"name": "y"})").status, 403);
  const Reply patched = core_->UpdateTenant(a, "vision", R"({"quotas": {"h100-80gb": {"guaranteed": 6, "borrow_limit": 2}}})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(Json::parse(patched.body)["quotas"]["h100-80gb"]["guaranteed"], 6.0);
  ASSERT_EQ(core_->SubmitJob(a, Job("vision", 2), "").status, 201);
  EXPECT_EQ(core_->DeleteTenant(a, "vision").status, 409) << "live jobs";
  const std::string id = std::to_string(core_->state().NextJobId().value() - 1);
  ASSERT_EQ(core_->CancelJob(a, id).status, 200);
  // A reservation that has not ended blocks the delete until it is cancelled.
  ASSERT_EQ(core_->UpdateTenant(a, "research", R"({"quotas": {"h100-80gb": {"guaranteed": 16}}})").status, 200)
      << "frees capacity to reserve (the demo cluster guarantees all of it)";
  const Reply booked = core_->CreateReservation(
      a, R"({"tenant": "vision", "flavor": "h100-80gb", "gpus": 1, "start": "2031-01-01T00:00:00Z", "end": "2031-01-01T01:00:00Z"})");
  ASSERT_EQ(booked.status, 201) << booked.body;
  EXPECT_EQ(core_->DeleteTenant(a, "vision").status, 409) << "reservation held";
  ASSERT_EQ(core_->CancelReservation(a, Json::parse(booked.body)["id"]).status, 200);
  ASSERT_EQ(core_->DeleteTenant(a, "vision").status, 200);
  EXPECT_EQ(core_->GetTenant(a, "vision").status, 404);
  EXPECT_EQ(core_->SubmitJob(a, Job("vision"), "").status, 404);
  EXPECT_EQ(core_->CreateToken(a, R"({"name": "late", "role": "member", "tenant": "vision"})").status, 404);
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_EQ(core_->GetTenant(As(admin_), "vision").status, 404) << "deletion is durable";
}

TEST_F(CoreTest, TokensAreScopedAndRevocable) {
  const Principal tadmin{"research-admin", Role::kTenantAdmin, *core_->state().FindTenant("research"), ""};
  const Reply made = core_->CreateToken(As(tadmin), R"({"name": "carol", "role": "member", "tenant": "research"})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string secret = Json::parse(made.body)["token"];
  ASSERT_NE(core_->Authenticate(secret, Time::FromMillis(2000)), nullptr);
  EXPECT_EQ(core_->CreateToken(As(tadmin), R"({"name": "eve", "role": "cluster-admin"})").status, 403);
  EXPECT_EQ(core_->CreateToken(As(tadmin), R"({"name": "eve", "role": "member", "tenant": "product"})").status, 404);
  const Json mine = Json::parse(core_->ListTokens(As(tadmin)).body)["items"];
  ASSERT_EQ(mine.size(), 1u);
  const std::string token_id = mine[0]["id"];
  EXPECT_EQ(core_->RevokeToken(As(members_["product"]), token_id).status, 404);
  ASSERT_EQ(core_->RevokeToken(As(tadmin), token_id).status, 200);
  EXPECT_EQ(core_->Authenticate(secret, Time::FromMillis(2000)), nullptr);
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_EQ(core_->Authenticate(secret, Time::FromMillis(2000)), nullptr) << "revocation is durable";
}

// API tokens expire (issue 18 item 6): 90 days by default, `expires_in_days` up to the maximum;
// an expired token authenticates nothing, across a restart too. The bootstrap admin's does not.
TEST_F(CoreTest, ApiTokensExpireAndTheExpiryIsDurable) {
  const int64_t day = 86'400'000;
  const Reply one = core_->CreateToken(As(admin_), R"({"name": "ci", "role": "member", "tenant": "research", "expires_in_days": 1})");
  ASSERT_EQ(one.status, 201) << one.body;
  const std::string short_lived = Json::parse(one.body)["token"];
  EXPECT_EQ(Json::parse(one.body)["expires"], Rfc3339(Time::FromMillis(2000 + day)));
  const Reply dflt = core_->CreateToken(As(admin_), R"({"name": "ops", "role": "cluster-admin"})");
  ASSERT_EQ(dflt.status, 201) << dflt.body;
  EXPECT_EQ(Json::parse(dflt.body)["expires"], Rfc3339(Time::FromMillis(2000 + 90 * day)));
  EXPECT_EQ(core_->CreateToken(As(admin_), R"({"name": "x", "role": "cluster-admin", "expires_in_days": 0})").status, 400);
  EXPECT_EQ(core_->CreateToken(As(admin_), R"({"name": "x", "role": "cluster-admin", "expires_in_days": 366})").status, 400);
  EXPECT_EQ(core_->CreateToken(As(admin_), R"({"name": "x", "role": "cluster-admin", "expires_in_days": "1"})").status, 400);
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_NE(core_->Authenticate(short_lived, Time::FromMillis(2000 + day - 1)), nullptr);
  EXPECT_EQ(core_->Authenticate(short_lived, Time::FromMillis(2000 + day)), nullptr) << "expired, after a restart";
  bool listed = false;
  const Json tokens = Json::parse(core_->ListTokens(As(admin_)).body);
  for (const Json& t : tokens["items"]) {
    if (t["name"] == "ci") listed = t["expires"] == Rfc3339(Time::FromMillis(2000 + day));
    if (t["name"] == "admin") {
      EXPECT_TRUE(t["expires"].is_null()) << "the bootstrap admin's token does not expire";
    }
  }
  EXPECT_TRUE(listed) << tokens.dump();
}

TEST_F(CoreTest, EveryMutationIsAudited) {
  const Principal tadmin{"research-admin", Role::kTenantAdmin, *core_->state().FindTenant("research"), ""};
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research"), "").status, 201);
  ASSERT_EQ(core_->SubmitJob(As(members_["product"]), Job("product"), "").status, 201);
  ASSERT_EQ(core_->NodeAction(As(admin_), "h100-1", "cordon").status, 200);
  ASSERT_TRUE(core_->Flush().ok());  // the audit log is read from the store
  const Json all = Json::parse(core_->ListAudit(As(admin_)).body)["items"];
  ASSERT_EQ(all.size(), 3u);  // newest first
  EXPECT_EQ(all[2]["action"], "job.submit");
  EXPECT_EQ(all[2]["principal"], "research-bob");
  EXPECT_EQ(all[2]["remote"], "127.0.0.1");
  EXPECT_EQ(all[0]["action"], "node.cordon");
  // An entry's id is its journal record's seq: later entries, higher ids.
  EXPECT_LT(std::stoll(all[2]["id"].get<std::string>()), std::stoll(all[0]["id"].get<std::string>()));
  const Json research = Json::parse(core_->ListAudit(As(tadmin)).body)["items"];
  ASSERT_EQ(research.size(), 1u) << "a tenant admin sees its tenant's entries only";
  EXPECT_EQ(research[0]["tenant"], "research");
  EXPECT_EQ(core_->ListAudit(As(members_["research"])).status, 403);
}

// Reads every page of a list, newest first, calling `between` after each page (to add items
// meanwhile). Returns the ids in the order served; `pages` gets how many pages there were.
std::vector<std::string> ReadPages(const std::function<Reply(const std::map<std::string, std::string>&)>& list,
                                   std::map<std::string, std::string> query, int* pages = nullptr,
                                   const std::function<void()>& between = {}) {
  std::vector<std::string> ids;
  int n = 0;
  for (;;) {
    const Reply r = list(query);
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200 || ++n > 1000) break;
    const Json page = Json::parse(r.body);
    EXPECT_LE(page["items"].size(), static_cast<size_t>(std::stoi(query.at("limit"))));
    for (const Json& j : page["items"]) ids.push_back(j["id"]);
    if (page["next_cursor"].is_null()) break;
    EXPECT_FALSE(page["items"].empty()) << "a page with a next_cursor has items";
    query["cursor"] = page["next_cursor"];
    if (between) between();
  }
  if (pages) *pages = n;
  return ids;
}

std::vector<std::string> Descending(uint64_t from, uint64_t to, uint64_t step = 1) {
  std::vector<std::string> out;
  for (uint64_t i = from; i >= to && i <= from; i -= step) out.push_back(std::to_string(i));
  return out;
}

// 25 jobs in pages of 7, with 3 new jobs submitted after every page: each of the 25 is listed
// exactly once, newest first, and the new ones only at the head of a fresh first page.
TEST_F(CoreTest, JobPagesCoverTheSetOnceWhileJobsArrive) {
  for (int i = 0; i < 25; ++i) {
    const char* tenant = i % 2 ? "research" : "product";
    ASSERT_EQ(core_->SubmitJob(As(members_[tenant]), Job(tenant, 1, "old"), "").status, 201);
  }
  const auto list = [&](const std::map<std::string, std::string>& q) { return core_->ListJobs(As(admin_), q); };
  int pages = 0;
  const std::vector<std::string> ids = ReadPages(list, {{"limit", "7"}}, &pages, [&] {
    for (int i = 0; i < 3; ++i) ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research", 1, "new"), "").status, 201);
  });
  EXPECT_EQ(ids, Descending(25, 1));
  EXPECT_EQ(pages, 4);  // 7 + 7 + 7 + 4
  const Json head = Json::parse(list({{"limit", "10"}}).body);
  EXPECT_EQ(head["items"][0]["id"], "34") << "9 new jobs, on top";
  EXPECT_EQ(head["items"][9]["id"], "25");
  // Exactly one page's worth left: the last page says there is no next.
  const Json exact = Json::parse(list({{"limit", "34"}}).body);
  EXPECT_EQ(exact["items"].size(), 34u);
  EXPECT_TRUE(exact["next_cursor"].is_null());
  // Without a limit, the whole list, newest first, as before pagination (in the old order's reverse).
  const Json all = Json::parse(list({}).body);
  EXPECT_EQ(all["items"].size(), 34u);
  EXPECT_EQ(all["items"][0]["id"], "34");
  EXPECT_TRUE(all["next_cursor"].is_null());
}

// Filters and scopes hold across pages; a cursor names only the last job the caller was shown,
// never a skipped job of another tenant.
TEST_F(CoreTest, JobPagesKeepFiltersAndScope) {
  for (int i = 0; i < 20; ++i) {
    const char* tenant = i % 4 == 0 ? "research" : "product";  // research: 1, 5, 9, 13, 17
    ASSERT_EQ(core_->SubmitJob(As(members_[tenant]), Job(tenant, 1), "").status, 201);
  }
  ASSERT_EQ(core_->CancelJob(As(members_["product"]), "2").status, 200);
  ASSERT_EQ(core_->CancelJob(As(members_["product"]), "19").status, 200);
  const auto as = [&](const Principal& p) {
    return [&, p](const std::map<std::string, std::string>& q) { return core_->ListJobs(As(p), q); };
  };
  EXPECT_EQ(ReadPages(as(members_["research"]), {{"limit", "2"}}), Descending(17, 1, 4));
  EXPECT_EQ(ReadPages(as(admin_), {{"limit", "2"}, {"tenant", "research"}}), Descending(17, 1, 4));
  EXPECT_EQ(ReadPages(as(viewers_["product"]), {{"limit", "1"}, {"state", "cancelled"}}),
            (std::vector<std::string>{"19", "2"}));
  // research's first page of 2 ends at job 13; product's jobs 12..10 lie between it and job 9,
  // which the page looks at to know there is a next page: the cursor still says 13.
  const Json first = Json::parse(core_->ListJobs(As(members_["research"]), {{"limit", "2"}}).body);
  EXPECT_EQ(first["next_cursor"], EncodeCursor("jobs", 13));
  // The same cursor in product's hands is a position and nothing more: product's jobs below 13.
  const Json theirs = Json::parse(core_->ListJobs(As(members_["product"]), {{"limit", "3"}, {"cursor", first["next_cursor"]}}).body);
  std::vector<std::string> got;
  for (const Json& j : theirs["items"]) {
    got.push_back(j["id"]);
    EXPECT_EQ(j["tenant"], "product");
  }
  EXPECT_EQ(got, (std::vector<std::string>{"12", "11", "10"}));
  EXPECT_EQ(core_->ListJobs(As(members_["product"]), {{"limit", "3"}, {"tenant", "research"}, {"cursor", first["next_cursor"]}}).status, 404);
}

TEST_F(CoreTest, BadPagesAreRefusedAndChangeNothing) {
  for (int i = 0; i < 3; ++i) ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research", 1), "").status, 201);
  const std::string before = Snapshot(*core_);
  const size_t staged = core_->staged();
  using Q = std::map<std::string, std::string>;
  for (const Q& q : {Q{{"limit", "0"}}, Q{{"limit", "1001"}}, Q{{"limit", "ten"}}, Q{{"cursor", "bogus"}},
                     Q{{"cursor", EncodeCursor("audit", 2)}}, Q{{"limit", "5"}, {"page", "2"}}}) {
    const Reply jobs = core_->ListJobs(As(members_["research"]), q);
    EXPECT_EQ(jobs.status, 400) << jobs.body;
    EXPECT_EQ(Json::parse(jobs.body)["error"]["code"], "invalid_argument");
  }
  EXPECT_EQ(core_->ListAudit(As(admin_), {{"cursor", EncodeCursor("jobs", 2)}}).status, 400);
  EXPECT_EQ(core_->ListAudit(As(admin_), {{"limit", "-1"}}).status, 400);
  EXPECT_EQ(core_->ListAudit(As(admin_), {{"state", "pending"}}).status, 400);
  EXPECT_EQ(core_->ListAudit(As(members_["research"]), {{"limit", "0"}}).status, 403) << "the role is checked first";
  EXPECT_EQ(core_->ListJobs({nullptr, "", Time::FromMillis(1)}, {{"limit", "0"}}).status, 401);
  EXPECT_EQ(core_->ListJobs(As(admin_), {{"limit", "1000"}}).status, 200);
  // A cursor beyond every job is a position like any other: the jobs below it.
  EXPECT_EQ(Json::parse(core_->ListJobs(As(admin_), {{"limit", "2"}, {"cursor", EncodeCursor("jobs", 1000000)}}).body)["items"][0]["id"], "3");
  EXPECT_EQ(core_->staged(), staged);
  EXPECT_EQ(Snapshot(*core_), before);
}

// The audit log in pages: every entry once, newest first, while entries keep coming; a tenant
// admin's pages hold its tenant's entries only, and its cursors survive a restart.
TEST_F(CoreTest, AuditPagesCoverTheLogOnceAndKeepTheScope) {
  const Principal tadmin{"research-admin", Role::kTenantAdmin, *core_->state().FindTenant("research"), ""};
  for (int i = 0; i < 12; ++i) {
    const char* tenant = i % 3 ? "product" : "research";  // research: entries 1, 4, 7, 10
    ASSERT_EQ(core_->SubmitJob(As(members_[tenant]), Job(tenant, 1), "").status, 201);
  }
  const auto as = [&](const Principal& p) {
    return [&, p](const std::map<std::string, std::string>& q) { return core_->ListAudit(As(p), q); };
  };
  // The audit log is read from the store: what is durable (an entry's id is its record's seq).
  ASSERT_TRUE(core_->Flush().ok());
  const auto ids = [&](const Principal& p) {
    std::vector<std::string> out;
    const Json page = Json::parse(core_->ListAudit(As(p)).body);
    for (const Json& e : page["items"]) out.push_back(e["id"]);
    return out;
  };
  const std::vector<std::string> all = ids(admin_), research = ids(tadmin);
  ASSERT_EQ(all.size(), 12u);
  ASSERT_EQ(research.size(), 4u);
  int pages = 0;
  EXPECT_EQ(ReadPages(as(admin_), {{"limit", "5"}}, &pages, [&] {
              ASSERT_EQ(core_->SubmitJob(As(members_["product"]), Job("product", 1), "").status, 201);
              ASSERT_TRUE(core_->Flush().ok());
            }),
            all);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(ReadPages(as(tadmin), {{"limit", "3"}}), research);
  const Json first = Json::parse(core_->ListAudit(As(tadmin), {{"limit", "3"}}).body);
  for (const Json& e : first["items"]) EXPECT_EQ(e["tenant"], "research");
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  const Json rest = Json::parse(core_->ListAudit(As(tadmin), {{"limit", "3"}, {"cursor", first["next_cursor"]}}).body);
  ASSERT_EQ(rest["items"].size(), 1u);
  EXPECT_EQ(rest["items"][0]["id"], research.back());
  EXPECT_TRUE(rest["next_cursor"].is_null());
}

TEST(DaemonConfig, ParsesAClusterAndRejectsUnknownKeys) {
  Result<DaemonConfig> c = ParseDaemonConfig(R"(
scheduler: {placement: bestfit, tick_ms: 50}
tenants:
  - name: a
    weight: 2
    quotas: {h100-80gb: {guaranteed: 8, borrow_limit: 4}}
nodes:
  - {name: h, count: 3, flavor: h100-80gb, mig_gpus: 2, block: r1}
  - {name: solo, flavor: a100-80gb, gpus: 4, shared_gpus: 4, max_clients: 2}
  - {name: flex, flavor: h100-80gb, gpus: 4, mig_gpus: 1, shared_gpus: 1, max_clients: 3, gpu_sharing: dynamic}
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  // gpu_sharing: dynamic: the GPUs not in MIG mode switch between whole and shared use, one
  // starting shared; each keeps the client cap for when it is shared.
  const Node& flex = c->cluster.node(*c->cluster.FindNode("flex"));
  ASSERT_EQ(flex.gpus.size(), 4u);
  EXPECT_FALSE(flex.gpus[0].dynamic);
  EXPECT_EQ(flex.gpus[0].mode, GpuMode::kMig);
  EXPECT_EQ(flex.gpus[1].mode, GpuMode::kShared);
  for (int g = 1; g < 4; ++g) {
    EXPECT_TRUE(flex.gpus[g].dynamic) << g;
    EXPECT_EQ(flex.gpus[g].max_clients, 3) << g;
  }
  EXPECT_EQ(flex.gpus[3].mode, GpuMode::kWhole);
  EXPECT_FALSE(c->cluster.node(*c->cluster.FindNode("solo")).gpus[0].dynamic);
  Result<DaemonConfig> odd = ParseDaemonConfig("nodes: [{name: n, flavor: h100-80gb, gpu_sharing: sometimes}]");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("static or dynamic"), std::string::npos) << odd.error().message;
  EXPECT_EQ(c->scheduler.placement, "bestfit");
  EXPECT_EQ(c->tick_ms, 50);
  EXPECT_EQ(c->cluster.nodes().size(), 5u);
  EXPECT_TRUE(c->cluster.FindNode("h-2").ok());
  EXPECT_EQ(c->cluster.node(*c->cluster.FindNode("solo")).gpus.size(), 4u);
  EXPECT_FALSE(c->cluster.priority_classes().empty()) << "default classes";
  for (const char* bad : {"colour: red", "nodes: [{name: x, flavor: v100}]", "tenants: [{name: a, wieght: 2}]",
                          "scheduler: {placement: magic}", "nodes: {a: 1}", "{{{",
                          "tenants: [{name: \"a\xFE\"}]",  // found by decode_fuzz: threw inside dump()
                          "tenants: [{name: \"\\uD800\"}]", "nodes: [{name: n, count: -}]",
                          "nodes: [{name: n, count: --5}]", "nodes: [{name: n, count: 99999999999999999999}]"}) {
    EXPECT_FALSE(ParseDaemonConfig(bad).ok()) << bad;
  }
}

TEST(DaemonConfig, SlurmExecutorsWithAccounting) {
  const std::string base = "executors:\n  - {name: slurm, kind: slurm, slurmrestd: 'http://127.0.0.1:6820', "
                           "jwt_key_file: /k, partition: gpu";
  Result<DaemonConfig> c = ParseDaemonConfig(base + ", sacct: /usr/bin/sacct, accounting_poll_s: 5, accounting_window_days: 7, "
                                                    "command_timeout_s: 20}\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->executors.size(), 1u);
  EXPECT_EQ(c->executors[0].slurm.sacct, "/usr/bin/sacct");
  EXPECT_EQ(c->executors[0].slurm.accounting_poll, Duration::Seconds(5));
  EXPECT_EQ(c->executors[0].slurm.accounting_window, Duration::Hours(24 * 7));
  EXPECT_EQ(c->executors[0].slurm.command_timeout, Duration::Seconds(20));
  Result<DaemonConfig> plain = ParseDaemonConfig(base + "}\n");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_TRUE(plain->executors[0].slurm.sacct.empty());  // accounting is read only when asked
  EXPECT_EQ(plain->executors[0].slurm.command_timeout, Duration::Seconds(60));
  for (const char* bad : {", accounting_poll_s: 5}", ", sacct: sacct, accounting_poll_s: 0}",
                          ", sacct: sacct, accounting_window_days: 0}", ", sacct: sacct, accounting_window_days: x}",
                          ", sacct: [a, b]}", ", command_timeout_s: 0}", ", command_timeout_s: 3601}"}) {
    Result<DaemonConfig> r = ParseDaemonConfig(base + bad + "\n");
    EXPECT_FALSE(r.ok()) << bad;
  }
}

// Ten aliases of ten aliases, nine deep: 431 bytes that name 10^9 scalars. Converting them took
// 12 s and 900 MB under decode_fuzz (CI's fuzz_decoders timed out on such an input); the node
// budget refuses them at once, and a configuration that reuses an anchor a few times still reads.
std::string AliasBomb(int levels) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < levels; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  return text;
}

// An alias inside its own anchor is a cycle; depth-first conversion recursed until the stack
// overflowed (fuzz_decoders, 466 bytes). Refused by depth, as is plain nesting past the bound.
TEST(DaemonConfig, RefusesAnAliasInsideItsOwnAnchorAndDeepNesting) {
  for (const std::string& text : {std::string("a: &a [x, *a]\n"), std::string("m: &m {k: *m}\n"),
                                  "x: " + std::string(NodeBudget::kMaxDepth + 1, '[') + std::string(NodeBudget::kMaxDepth + 1, ']')}) {
    Result<DaemonConfig> r = ParseDaemonConfig(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find("nests deeper than 64 levels"), std::string::npos) << r.error().message;
  }
  // Nesting to the bound exactly reaches the decoder, which names the key it does not know.
  Result<DaemonConfig> nested = ParseDaemonConfig("x: " + std::string(NodeBudget::kMaxDepth, '[') +
                                                  std::string(NodeBudget::kMaxDepth, ']'));
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().message.find("nests deeper"), std::string::npos) << nested.error().message;
}

// tls: names the files serve reads (daemon_tls_test and daemon_agent_cert_test serve them).
TEST(DaemonConfig, ReadsTlsFilesAndRefusesUnknownKeys) {
  Result<DaemonConfig> ok = ParseDaemonConfig("tls: {cert_file: /c.pem, key_file: /k.pem, client_ca_file: /ca.pem}\n");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->tls_cert, "/c.pem");
  EXPECT_EQ(ok->tls_key, "/k.pem");
  EXPECT_EQ(ok->tls_client_ca, "/ca.pem");
  Result<DaemonConfig> typo = ParseDaemonConfig("tls: {cert_file: /c.pem, key_file: /k.pem, client_ca: /ca.pem}\n");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("client_ca"), std::string::npos) << typo.error().message;
  EXPECT_FALSE(ParseDaemonConfig("tls: {client_ca_file: [a]}\n").ok());
}

// Found by fuzz_decoders: three lines of `count: 100000` built 300,000 nodes and ran the
// fuzzer out of memory. The total is bounded before any node is built.
TEST(DaemonConfig, RefusesAClusterBeyondItsTotalBoundsBeforeBuildingIt) {
  Result<DaemonConfig> many = ParseDaemonConfig(
      "nodes:\n  - {name: a, count: 100000, flavor: h100-80gb, gpus: 1}\n"
      "  - {name: b, count: 1, flavor: h100-80gb, gpus: 1}\n");
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("nodes[1]: the cluster would have 100001 nodes"), std::string::npos)
      << many.error().message;
  Result<DaemonConfig> gpus = ParseDaemonConfig(
      "nodes:\n  - {name: a, count: 50000, flavor: h100-80gb, gpus: 16}\n"
      "  - {name: b, flavor: h100-80gb, gpus: 1}\n");
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.error().message.find("800001 GPUs; at most 100000 nodes and 800000 GPUs"), std::string::npos)
      << gpus.error().message;
  Result<DaemonConfig> at_limit =
      ParseDaemonConfig("nodes:\n  - {name: a, count: 50000, flavor: h100-80gb, gpus: 16}\n");
  ASSERT_TRUE(at_limit.ok()) << at_limit.error().message;
  EXPECT_EQ(at_limit->cluster.nodes().size(), 50000u);
  Result<DaemonConfig> labels = ParseDaemonConfig(
      "nodes:\n  - {name: a, count: 100000, flavor: h100-80gb, gpus: 1, labels: [a=1, b=2, c=3, d=4, e=5, f=6, "
      "g=7, h=8, i=9, j=10, k=11]}\n");
  ASSERT_FALSE(labels.ok());
  EXPECT_NE(labels.error().message.find("1100000 labels"), std::string::npos) << labels.error().message;
  Result<DaemonConfig> long_label = ParseDaemonConfig(
      "nodes:\n  - {name: a, flavor: h100-80gb, labels: [a=" + std::string(300, 'x') + "]}\n");
  ASSERT_FALSE(long_label.ok());
  EXPECT_NE(long_label.error().message.find("at most 256 bytes"), std::string::npos) << long_label.error().message;
}

TEST(DaemonConfig, ReadsTheFlavorChoice) {
  Result<DaemonConfig> plain = ParseDaemonConfig("scheduler: {placement: gpupool}");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->scheduler.flavor_choice, FlavorChoice::kOrder);
  Result<DaemonConfig> best = ParseDaemonConfig("scheduler: {flavor_choice: best}");
  ASSERT_TRUE(best.ok()) << best.error().message;
  EXPECT_EQ(best->scheduler.flavor_choice, FlavorChoice::kBest);
  Result<DaemonConfig> odd = ParseDaemonConfig("scheduler: {flavor_choice: cheapest}");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("order or best"), std::string::npos) << odd.error().message;
}

TEST(DaemonConfig, ReadsTheQueuePolicyAndRefusesBadValues) {
  Result<DaemonConfig> name = ParseDaemonConfig("scheduler: {queue_policy: srsf}\n");
  ASSERT_TRUE(name.ok()) << name.error().message;
  EXPECT_EQ(name->scheduler.queue.order, QueueOrder::kSrsf);
  EXPECT_EQ(name->scheduler.queue.starvation_after, Duration::Hours(24 * 7));  // the default
  Result<DaemonConfig> full = ParseDaemonConfig(
      "scheduler:\n  queue_policy: {policy: las, starvation_after_s: 7200, max_preemptions_per_cycle: 0,\n"
      "                 las_thresholds_gpu_s: [60, 600]}\n");
  ASSERT_TRUE(full.ok()) << full.error().message;
  EXPECT_EQ(full->scheduler.queue.order, QueueOrder::kLas);
  EXPECT_EQ(full->scheduler.queue.starvation_after, Duration::Seconds(7200));
  EXPECT_EQ(full->scheduler.queue.max_preemptions_per_cycle, 0);
  EXPECT_EQ(full->scheduler.queue.las_thresholds_gpu_s, (std::vector<int64_t>{60, 600}));
  EXPECT_TRUE(ParseDaemonConfig("scheduler: {}\n").ok());
  EXPECT_EQ(ParseDaemonConfig("scheduler: {}\n")->scheduler.queue.order, QueueOrder::kFifo);
  // Each bad value is refused with a message that names what is wrong.
  for (const auto& [yaml, says] : std::vector<std::pair<std::string, std::string>>{
           {"scheduler: {queue_policy: shortest}\n", "shortest"},
           {"scheduler: {queue_policy: {policy: srsf, starve_after_s: 60}}\n", "starve_after_s"},
           {"scheduler: {queue_policy: {starvation_after_s: 10}}\n", "starvation_after_s"},
           {"scheduler: {queue_policy: {max_preemptions_per_cycle: -1}}\n", "max_preemptions_per_cycle"},
           {"scheduler: {queue_policy: {las_thresholds_gpu_s: [600, 60]}}\n", "increasing"},
           {"scheduler: {queue_policy: {las_thresholds_gpu_s: []}}\n", "las_thresholds_gpu_s"},
           {"scheduler: {queue_policy: {las_thresholds_gpu_s: [1.5]}}\n", "whole numbers"},
           {"scheduler: {queue_policy: [srsf]}\n", "queue_policy"}}) {
    Result<DaemonConfig> bad = ParseDaemonConfig(yaml);
    ASSERT_FALSE(bad.ok()) << yaml;
    EXPECT_NE(bad.error().message.find(says), std::string::npos) << yaml << ": " << bad.error().message;
  }
}

// A tenant's queue policy is set and cleared through the API, refused when unknown (nothing
// changes), journaled across a restart; the job view shows the service it orders by.
TEST_F(CoreTest, TenantQueuePolicyThroughTheApiSurvivesRestart) {
  const CallContext a = As(admin_);
  auto policy = [&](ControlPlane& core) {
    const Json t = Json::parse(core.GetTenant(As(admin_), "research").body);
    return t["queue_policy"].get<std::string>() + "/" + t["queue_policy_source"].get<std::string>();
  };
  EXPECT_EQ(policy(*core_), "fifo/scheduler");
  Reply r = core_->UpdateTenant(a, "research", R"({"queue_policy": "srsf"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(policy(*core_), "srsf/tenant");
  r = core_->UpdateTenant(a, "research", R"({"queue_policy": "shortest"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("queue_policy"), std::string::npos) << r.body;
  EXPECT_EQ(core_->UpdateTenant(a, "research", R"({"queue_policy": 3})").status, 400);
  EXPECT_EQ(policy(*core_), "srsf/tenant");
  EXPECT_EQ(core_->UpdateTenant(As(members_["research"]), "research", R"({"queue_policy": "las"})").status, 403);
  EXPECT_EQ(policy(*core_), "srsf/tenant");
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_EQ(policy(*core_), "srsf/tenant");
  ASSERT_EQ(core_->UpdateTenant(As(admin_), "research", R"({"queue_policy": ""})").status, 200);
  EXPECT_EQ(policy(*core_), "fifo/scheduler");
  // A change whose journal write fails is not kept: memory falls back to what is durable.
  ASSERT_TRUE(core_->Flush().ok());
  ASSERT_EQ(core_->UpdateTenant(As(admin_), "research", R"({"queue_policy": "las"})").status, 200);
  fail_next_ = 1;
  EXPECT_FALSE(core_->Flush().ok());
  EXPECT_EQ(policy(*core_), "fifo/scheduler");
  ASSERT_EQ(core_->UpdateTenant(As(admin_), "research", R"({"queue_policy": null})").status, 200);

  // Service: 8 GPUs for 600 s estimated; after 100 s of running, 800 GPU-s attained, 4000 left.
  r = core_->SubmitJob(As(members_["research"]), Job("research"), "");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = Json::parse(r.body)["id"];
  Json job = Json::parse(core_->GetJob(As(members_["research"], 2000), id).body);
  EXPECT_EQ(job["service"]["attained_gpu_s"], 0);
  EXPECT_EQ(job["service"]["remaining_gpu_s"], 8 * 600);
  core_->Tick(Time::FromMillis(3000), true);
  core_->Tick(Time::FromMillis(4000), true);
  job = Json::parse(core_->GetJob(As(members_["research"], 4000), id).body);
  ASSERT_EQ(job["state"], "running") << job.dump();
  const int64_t started = job["started_at_ms"];
  job = Json::parse(core_->GetJob(As(members_["research"], started + 100'000), id).body);
  EXPECT_EQ(job["service"]["attained_gpu_s"], 800) << job.dump();
  EXPECT_EQ(job["service"]["ran_s"], 100);
  EXPECT_EQ(job["service"]["remaining_gpu_s"], 8 * 500);
}

TEST(DaemonConfig, RefusesAliasExpansionAndKeepsPlainAliases) {
  Result<DaemonConfig> bomb = ParseDaemonConfig("colour:\n" + AliasBomb(9));
  ASSERT_FALSE(bomb.ok());
  EXPECT_NE(bomb.error().message.find("expands to more than"), std::string::npos) << bomb.error().message;
  Result<DaemonConfig> ok = ParseDaemonConfig(R"(
tenants:
  - {name: a, quotas: &q {h100-80gb: {guaranteed: 2}}}
  - {name: b, quotas: *q}
)");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
}

// A tenant's gauges leave /metrics with it (they used to keep their last values until restart).
TEST_F(CoreTest, MetricsDropTheSeriesOfADeletedTenant) {
  const CallContext a = As(admin_);
  ASSERT_EQ(core_->CreateTenant(a, R"({"name": "vision", "quotas": {"h100-80gb": {"guaranteed": 4}}})").status, 201);
  Metrics m;
  m.AfterCycle(core_->state(), Time::FromMillis(3000), nullptr, 0);
  EXPECT_NE(m.Render().find(R"(gpupool_tenant_guaranteed_gpu_eq{flavor="h100-80gb",tenant="vision"} 4)"), std::string::npos);
  ASSERT_EQ(core_->DeleteTenant(a, "vision").status, 200);
  m.AfterCycle(core_->state(), Time::FromMillis(3000), nullptr, 0);
  const std::string text = m.Render();
  EXPECT_EQ(text.find(R"(tenant="vision")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(tenant="research")"), std::string::npos);
}

// A reservation in force is guarantee, in the tenant view and in /metrics as in the scheduler.
TEST_F(CoreTest, TenantViewAndGaugesCountReservationsInForce) {
  const CallContext a = As(admin_, 3000);
  const Reply booked = core_->CreateReservation(
      a, R"({"tenant": "product", "flavor": "h100-80gb", "gpus": 8, "start": "1970-01-01T00:00:00Z", "end": "1970-01-01T01:00:00Z"})");
  ASSERT_EQ(booked.status, 201) << booked.body;
  const Json during = Json::parse(core_->GetTenant(a, "product").body);
  EXPECT_EQ(during["usage"]["h100-80gb"]["reserved_in_force"], 8.0) << during.dump();
  const Json after = Json::parse(core_->GetTenant(As(admin_, 3'600'000), "product").body);
  EXPECT_FALSE(after["usage"]["h100-80gb"].contains("reserved_in_force")) << after.dump();
  Metrics m;
  m.AfterCycle(core_->state(), Time::FromMillis(3000), nullptr, 0);
  EXPECT_NE(m.Render().find(R"(gpupool_tenant_guaranteed_gpu_eq{flavor="h100-80gb",tenant="product"} 32)"),
            std::string::npos) << "24 standing + 8 reserved";
  m.AfterCycle(core_->state(), Time::FromMillis(3'600'000), nullptr, 0);
  EXPECT_NE(m.Render().find(R"(gpupool_tenant_guaranteed_gpu_eq{flavor="h100-80gb",tenant="product"} 24)"),
            std::string::npos) << "after the window";
}

// The capacity alert (DESIGN.md §7): when drains take the healthy H100 capacity below the
// guarantees, the shortfall gauge says by how much; it drops back to 0 when the nodes return.
TEST_F(CoreTest, CapacityAlertWhenHealthyCapacityFallsBelowGuarantees) {
  Metrics m;
  m.AfterCycle(core_->state(), Time::FromMillis(3000), nullptr, 0);
  EXPECT_EQ(m.Render().find(R"(gpupool_guarantee_shortfall_gpu_eq{flavor="h100-80gb"} 8)"), std::string::npos);
  ASSERT_EQ(core_->NodeAction(As(admin_, 3000), "h100-0", "drain").status, 200);  // 8 reservable: still covered
  m.AfterCycle(core_->state(), Time::FromMillis(3000), nullptr, 0);
  EXPECT_EQ(m.Render().find(R"(gpupool_guarantee_shortfall_gpu_eq{flavor="h100-80gb"} 8)"), std::string::npos);
  ASSERT_EQ(core_->NodeAction(As(admin_, 3000), "h100-1", "drain").status, 200);
  m.AfterCycle(core_->state(), Time::FromMillis(3000), nullptr, 0);
  EXPECT_NE(m.Render().find(R"(gpupool_guarantee_shortfall_gpu_eq{flavor="h100-80gb"} 8)"), std::string::npos)
      << m.Render();
  ASSERT_EQ(core_->NodeAction(As(admin_, 3000), "h100-1", "uncordon").status, 200);
  m.AfterCycle(core_->state(), Time::FromMillis(3000), nullptr, 0);
  EXPECT_NE(m.Render().find(R"(gpupool_guarantee_shortfall_gpu_eq{flavor="h100-80gb"} 0)"), std::string::npos);
}

// Chargeback end to end through the core: a seeded workload of whole GPUs, MIG slices and shared
// fractions, with cancellations, a drain, a reservation and jobs that name it. The usage report
// (every kind but reserved_idle) equals the integral of allocated GPU-equivalents, exactly;
// reserved_idle equals the sampled integral of max(0, reserved - research's H100s) (take or pay);
// and a restart rebuilds the
// same report from the journal.
TEST_F(CoreTest, UsageReconcilesWithAllocatedCapacityAndSurvivesRestart) {
  ASSERT_EQ(core_->SetPrices(As(admin_), R"({"flavors": {"h100-80gb": {"per_gpu_hour": "2.99"},
                                                          "a100-80gb": {"per_gpu_hour": 1.79}}})").status, 200);
  const Principal intern{"interns-ann", Role::kMember, *core_->state().FindTenant("interns"), "interns-ann-token"};
  constexpr int64_t kStepMs = 60'000, kT0 = 10'000;
  auto at = [&](int step) { return kT0 + step * kStepMs; };
  // Research reserves 4 H100 for steps [10, 40).
  const Reply booked = core_->CreateReservation(
      As(admin_, at(0)), Json({{"tenant", "research"}, {"flavor", "h100-80gb"}, {"gpus", 4},
                               {"start", Rfc3339(Time::FromMillis(at(10)))}, {"end", Rfc3339(Time::FromMillis(at(40)))}}).dump());
  ASSERT_EQ(booked.status, 201) << booked.body;
  const std::string rid = Json::parse(booked.body)["id"];
  // Interns reserve 2 H100 for steps [20, 50) and never use them (their work is on A100s).
  ASSERT_EQ(core_->CreateReservation(
                As(admin_, at(0)), Json({{"tenant", "interns"}, {"flavor", "h100-80gb"}, {"gpus", 2},
                                         {"start", Rfc3339(Time::FromMillis(at(20)))}, {"end", Rfc3339(Time::FromMillis(at(50)))}}).dump())
                .status, 201);

  std::mt19937_64 rng(20261129);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  UnitMillis integral = 0, idle_expected = 0;
  const FlavorId h100 = *core_->state().catalogue().Find("h100-80gb");
  std::vector<std::string> ids;
  constexpr int kSteps = 80;
  for (int step = 0; step < kSteps; ++step) {
    const int64_t now = at(step);
    for (int k = uni(0, 3); k > 0; --k) {
      Json j = {{"priority_class", uni(0, 2) ? "training" : "batch"}, {"replicas", uni(1, 2)},
                {"duration_estimate_s", 60 * uni(1, 20)}, {"command", {"run"}}, {"name", "w"}};
      const Principal* who = nullptr;
      switch (uni(0, 3)) {
        case 0:
          j["tenant"] = "research", who = &members_["research"];
          j["resources"] = {{"flavor", "h100-80gb"}, {"gpus", uni(1, 8)}};
          if (step >= 10 && step < 38 && uni(0, 1)) j["reservation"] = rid, j["replicas"] = 1, j["resources"]["gpus"] = uni(1, 4);
          break;
        case 1:
          j["tenant"] = "product", who = &members_["product"];
          j["resources"] = {{"flavor", "h100-80gb"}, {"mig_profile", uni(0, 1) ? "1g.10gb" : "3g.40gb"}};
          break;
        case 2:
          j["tenant"] = "interns", who = &intern;
          j["resources"] = {{"flavor", "a100-80gb"}, {"gpu_fraction", uni(0, 1) ? 0.25 : 0.5}, {"memory_gb", 16}};
          break;
        default:
          j["tenant"] = "product", who = &members_["product"];
          j["resources"] = {{"flavor", "h100-80gb"}, {"gpus", uni(1, 4)}};
      }
      const Reply r = core_->SubmitJob(As(*who, now), j.dump(), "");
      ASSERT_EQ(r.status, 201) << r.body;
      ids.push_back(Json::parse(r.body)["id"]);
    }
    if (step % 7 == 3 && !ids.empty()) (void)core_->CancelJob(As(admin_, now), ids[uni(0, static_cast<int>(ids.size()) - 1)]);
    if (step == 50) {
      ASSERT_EQ(core_->NodeAction(As(admin_, now), "h100-1", "drain").status, 200);
    }
    if (step == 55) {
      ASSERT_EQ(core_->NodeAction(As(admin_, now), "h100-1", "uncordon").status, 200);
    }
    core_->Tick(Time::FromMillis(now), true);
    ASSERT_TRUE(core_->Flush().ok());
    GpuEq allocated;
    std::map<std::string, GpuEq> h100_used;
    for (JobId id : core_->state().active()) {
      const gpupool::Job& job = *core_->state().FindJob(id);
      allocated += job.Eq(core_->state().catalogue());
      if (job.spec.shape.flavor == h100) h100_used[core_->state().tenant(job.spec.tenant).name] += job.Eq(core_->state().catalogue());
    }
    integral += static_cast<UnitMillis>(allocated.units()) * kStepMs;  // constant until the next step
    // Take or pay: a tenant pays for at least its reserved GPUs while they are in force.
    const std::map<std::string, GpuEq> reserved = {{"research", step >= 10 && step < 40 ? GpuEq::Gpus(4) : GpuEq()},
                                                   {"interns", step >= 20 && step < 50 ? GpuEq::Gpus(2) : GpuEq()}};
    for (const auto& [tenant, amount] : reserved) {
      if (amount > h100_used[tenant]) idle_expected += static_cast<UnitMillis>((amount - h100_used[tenant]).units()) * kStepMs;
    }
  }
  const int64_t end = at(kSteps);
  const std::string q_from = Rfc3339(Time::FromMillis(0)), q_to = Rfc3339(Time::FromMillis(end));
  const std::map<std::string, std::string> query = {{"from", q_from}, {"to", q_to}, {"group_by", "kind"}};
  const Reply usage = core_->Usage(As(admin_, end), query);
  ASSERT_EQ(usage.status, 200) << usage.body;
  std::map<std::string, UnitMillis> by_kind;
  const Json report = Json::parse(usage.body);
  for (const Json& row : report["items"]) {
    by_kind[row["kind"].get<std::string>()] += std::stoll(row["unit_ms"].get<std::string>());
  }
  UnitMillis allocated_kinds = 0;
  for (const auto& [kind, um] : by_kind) allocated_kinds += kind == "reserved_idle" ? 0 : um;
  EXPECT_TRUE(allocated_kinds == integral) << UnitMillisToString(allocated_kinds) << " vs " << UnitMillisToString(integral);
  EXPECT_TRUE(by_kind["reserved"] > 0) << usage.body;
  EXPECT_TRUE(by_kind["guaranteed"] > 0);
  EXPECT_TRUE(idle_expected > 0) << "the scenario leaves reserved capacity idle for a while";
  EXPECT_TRUE(by_kind["reserved_idle"] == idle_expected)
      << UnitMillisToString(by_kind["reserved_idle"]) << " vs " << UnitMillisToString(idle_expected);
  EXPECT_TRUE(by_kind["infrastructure_failure"] > 0) << "the drain requeued running jobs";

  // Every tenant's own view adds up to the admin's.
  UnitMillis tenants_sum = 0;
  for (const Principal* p : std::vector<const Principal*>{&members_["research"], &members_["product"], &intern}) {
    const Reply mine = core_->Usage(As(*p, end), {{"from", q_from}, {"to", q_to}, {"group_by", "none"}});
    ASSERT_EQ(mine.status, 200) << mine.body;
    const Json rows = Json::parse(mine.body);
    for (const Json& row : rows["items"]) tenants_sum += std::stoll(row["unit_ms"].get<std::string>());
  }
  UnitMillis all = 0;
  for (const auto& [kind, um] : by_kind) all += um;
  EXPECT_TRUE(tenants_sum == all);

  // The ledger is rebuilt from the journal: the same report, byte for byte, and the same prices.
  const std::string prices = core_->GetPrices(As(admin_, end)).body;
  core_.reset();
  core_ = Open();
  EXPECT_EQ(core_->Usage(As(admin_, end), query).body, usage.body);
  EXPECT_EQ(core_->GetPrices(As(admin_, end)).body, prices);
}

TEST_F(CoreTest, APriceChangeNeverRepricesThePastAndSurvivesRestart) {
  auto put = [&](int64_t ms, const std::string& price, const std::string& from = "") {
    std::string body = R"({"flavors": {"h100-80gb": {"per_gpu_hour": ")" + price + "\"}}";
    if (!from.empty()) body += R"(, "effective_from": ")" + from + "\"";
    return core_->SetPrices(As(admin_, ms), body + "}");
  };
  auto usage = [&](int64_t from, int64_t to) {
    return core_->Usage(As(admin_, to), {{"from", Rfc3339(Time::FromMillis(from))},
                                          {"to", Rfc3339(Time::FromMillis(to))},
                                          {"group_by", "none"}});
  };
  ASSERT_EQ(put(2000, "2.00").status, 200);
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research"), "").status, 201);
  for (int64_t t : {2100, 2200}) core_->Tick(Time::FromMillis(t), true);  // 8 GPUs for 600 s
  const int64_t change = 302'200;
  const Reply before = usage(0, change);
  ASSERT_EQ(before.status, 200) << before.body;
  ASSERT_EQ(put(change, "5.00").status, 200);
  // The past keeps its price, byte for byte; what comes after is billed at the new one.
  EXPECT_EQ(usage(0, change).body, before.body);
  for (int64_t t : {400'000, 700'000}) core_->Tick(Time::FromMillis(t), true);
  const Json after = Json::parse(usage(change, 700'000).body);
  const double hours = after["total"]["gpu_hours"].get<double>();
  EXPECT_GT(hours, 0);
  EXPECT_NEAR(std::stod(after["total"]["cost"].get<std::string>()), hours * 5.0, 1e-5);
  const Json old = Json::parse(before.body);
  EXPECT_NEAR(std::stod(old["total"]["cost"].get<std::string>()),
              old["total"]["gpu_hours"].get<double>() * 2.0, 1e-5);
  // A change cannot be back-dated: 400, and nothing changes.
  const std::string prices = core_->GetPrices(As(admin_, 700'000)).body;
  const Reply past = put(700'000, "1.00", Rfc3339(Time::FromMillis(600'000)));
  EXPECT_EQ(past.status, 400) << past.body;
  EXPECT_EQ(core_->GetPrices(As(admin_, 700'000)).body, prices);
  // A change scheduled for later shows in the history and takes effect then.
  ASSERT_EQ(put(700'000, "7.00", Rfc3339(Time::FromMillis(1'000'000))).status, 200);
  const Json now = Json::parse(core_->GetPrices(As(admin_, 800'000)).body);
  EXPECT_EQ(now["flavors"]["h100-80gb"]["per_gpu_hour"], "5.000000");
  ASSERT_EQ(now["history"].size(), 3u);
  EXPECT_EQ(now["history"][2]["effective_from"], Rfc3339(Time::FromMillis(1'000'000)));
  EXPECT_EQ(Json::parse(core_->GetPrices(As(admin_, 1'000'000)).body)["flavors"]["h100-80gb"]["per_gpu_hour"],
            "7.000000");
  // The history is journaled: the same prices and bills after a restart.
  const std::string all = usage(0, 700'000).body;
  const std::string history = core_->GetPrices(As(admin_, 800'000)).body;
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_EQ(core_->GetPrices(As(admin_, 800'000)).body, history);
  EXPECT_EQ(usage(0, 700'000).body, all);
  EXPECT_EQ(usage(0, change).body, before.body);
  // Before the first list's start, the first list is in force (as reports price it).
  EXPECT_EQ(Json::parse(core_->GetPrices(As(admin_, 1000)).body)["flavors"]["h100-80gb"]["per_gpu_hour"],
            "2.000000");
  // A change made now keeps the one scheduled after it.
  ASSERT_EQ(put(900'000, "6.00").status, 200);
  const Json h = Json::parse(core_->GetPrices(As(admin_, 950'000)).body);
  EXPECT_EQ(h["flavors"]["h100-80gb"]["per_gpu_hour"], "6.000000");
  EXPECT_EQ(h["history"].size(), 4u);
  EXPECT_EQ(Json::parse(core_->GetPrices(As(admin_, 1'000'000)).body)["flavors"]["h100-80gb"]["per_gpu_hour"],
            "7.000000");
  // The same start again replaces the scheduled list.
  ASSERT_EQ(put(950'000, "8.00", Rfc3339(Time::FromMillis(1'000'000))).status, 200);
  const Json r = Json::parse(core_->GetPrices(As(admin_, 1'000'000)).body);
  EXPECT_EQ(r["flavors"]["h100-80gb"]["per_gpu_hour"], "8.000000");
  EXPECT_EQ(r["history"].size(), 4u);
}

// Issue 14, item 8: without prices, and after a price change that leaves a flavor out, a usage
// report still gives every quantity; the flavor without a price is "unpriced", named by its
// name in a warning, never an error; pricing every flavor again takes effect from then on.
TEST_F(CoreTest, UsageGivesQuantitiesWithoutPricesAndNamesAnUnpricedFlavor) {
  auto usage = [&](int64_t from, int64_t to, const std::string& format = "") {
    std::map<std::string, std::string> q = {{"from", Rfc3339(Time::FromMillis(from))},
                                            {"to", Rfc3339(Time::FromMillis(to))}};
    if (!format.empty()) q["format"] = format;
    return core_->Usage(As(admin_, to), q);
  };
  auto rows_of = [](const Json& report, const std::string& flavor) {
    std::vector<Json> out;
    for (const Json& r : report["items"]) {
      if (r["flavor"] == flavor) out.push_back(r);
    }
    return out;
  };
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research"), "").status, 201);
  const std::string a100 = Json({{"tenant", "product"}, {"name", "f"}, {"priority_class", "training"},
                                 {"replicas", 1},
                                 {"resources", {{"flavor", "a100-80gb"}, {"gpu_fraction", 0.5}, {"memory_gb", 16}}},
                                 {"duration_estimate_s", 3600}, {"command", {"run"}}})
                               .dump();
  ASSERT_EQ(core_->SubmitJob(As(members_["product"]), a100, "").status, 201);
  core_->Tick(Time::FromMillis(2100), true);

  // 1. No prices at all: the quantities, every cost "unpriced", and warnings by flavor name.
  Reply r = usage(0, 300'000);
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_GT(j["total"]["gpu_hours"].get<double>(), 0);
  EXPECT_EQ(j["total"]["cost"], "unpriced");
  EXPECT_EQ(j["total"]["unpriced_flavors"], Json({"a100-80gb", "h100-80gb"}));
  for (const Json& row : j["items"]) EXPECT_EQ(row["cost"], "unpriced") << row;
  ASSERT_EQ(j["warnings"].size(), 2u);
  EXPECT_EQ(j["warnings"][1], "no price for h100-80gb from " + Rfc3339(Time()) + " to " +
                                  Rfc3339(Time::FromMillis(300'000)));
  EXPECT_EQ(r.body.find("flavor 0"), std::string::npos);
  EXPECT_EQ(r.body.find("flavor 1"), std::string::npos);

  // 2. A price list that leaves out the a100 (the answer says so). The earlier period, priced by
  // the first list, still reports: the h100 is priced, the a100 is unpriced and named.
  const Reply put = core_->SetPrices(As(admin_, 300'000), R"({"flavors": {"h100-80gb": {"per_gpu_hour": "2.00"}}})");
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(Json::parse(put.body)["warnings"],
            Json({"no price for a100-80gb from " + Rfc3339(Time::FromMillis(300'000)) +
                  ": its usage will be reported as unpriced"}));
  r = usage(0, 300'000);
  ASSERT_EQ(r.status, 200) << r.body;
  j = Json::parse(r.body);
  for (const Json& row : rows_of(j, "h100-80gb")) {
    EXPECT_NE(row["cost"], "unpriced") << row;
    EXPECT_EQ(row["unpriced_unit_ms"], "0");
  }
  ASSERT_FALSE(rows_of(j, "a100-80gb").empty());
  for (const Json& row : rows_of(j, "a100-80gb")) {
    EXPECT_EQ(row["cost"], "unpriced");
    EXPECT_EQ(row["priced_cost"], "0.000000");
    EXPECT_EQ(row["unpriced_unit_ms"], row["billed_unit_ms"]);
  }
  EXPECT_EQ(j["total"]["cost"], "unpriced");
  EXPECT_EQ(j["total"]["unpriced_flavors"], Json({"a100-80gb"}));
  EXPECT_EQ(j["warnings"], Json({"no price for a100-80gb from " + Rfc3339(Time()) + " to " +
                                 Rfc3339(Time::FromMillis(300'000))}));
  EXPECT_EQ(r.body.find("flavor 1"), std::string::npos);
  Reply csv = usage(0, 300'000, "csv");
  ASSERT_EQ(csv.status, 200) << csv.body;
  EXPECT_NE(csv.body.find("product,a100-80gb,guaranteed,"), std::string::npos) << csv.body;
  EXPECT_NE(csv.body.find(",unpriced,0.000000,"), std::string::npos) << csv.body;

  // 3. Every flavor priced again: reports over any period work; the a100's time under the list
  // without it stays unpriced (nothing re-prices the past), its time after is priced.
  ASSERT_EQ(core_->SetPrices(As(admin_, 600'000), R"({"flavors": {"h100-80gb": {"per_gpu_hour": "2.00"},
                                                                  "a100-80gb": {"per_gpu_hour": "1.00"}}})")
                .status, 200);
  core_->Tick(Time::FromMillis(900'000), true);
  r = usage(0, 900'000);
  ASSERT_EQ(r.status, 200) << r.body;
  j = Json::parse(r.body);
  EXPECT_EQ(j["warnings"], Json({"no price for a100-80gb from " + Rfc3339(Time()) + " to " +
                                 Rfc3339(Time::FromMillis(600'000))}));
  r = usage(600'000, 900'000);
  ASSERT_EQ(r.status, 200) << r.body;
  j = Json::parse(r.body);
  EXPECT_TRUE(j["warnings"].empty()) << j["warnings"];
  EXPECT_NE(j["total"]["cost"], "unpriced");
  EXPECT_EQ(j["total"]["cost"], j["total"]["priced_cost"]);
  EXPECT_GT(std::stod(j["total"]["cost"].get<std::string>()), 0);
  // The same after a restart (the price records are journaled).
  const std::string all = usage(0, 900'000).body;
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  EXPECT_EQ(usage(0, 900'000).body, all);
}

// Burst to on-demand through the core, with the simulated provider: a job that waited past
// max_wait gets an on-demand node, runs there billed at the on-demand price, the idle node goes
// back after the idle timeout, and the fleet survives a restart. A budget too small refuses
// with the reason on the job.
TEST_F(BurstTest, WaitsThenBurstsBillsOnDemandAndReleasesIdleNodes) {
  Start("200.00");
  Submit(0, 8, 3600);
  TickAt(0);  // fills the only node
  const std::string j2 = Submit(10, 8, 1800);
  TickAt(60);
  EXPECT_TRUE(core_->burst_fleet().empty()) << "waited 50 s of 120";
  TickAt(140);
  ASSERT_EQ(core_->burst_fleet().size(), 1u) << "waited 130 s: one 8-GPU node requested";
  EXPECT_TRUE(core_->burst_fleet()[0].in_flight());
  TickAt(150);
  EXPECT_EQ(JobAt(j2, 150)["state"], "pending");
  TickAt(200);  // provisioned at 140 + 60 s: the node joins before the cycle and takes the job
  ASSERT_TRUE(core_->burst_fleet()[0].live());
  Json job = JobAt(j2, 200);
  ASSERT_EQ(job["state"], "admitted") << job.dump();
  EXPECT_EQ(job["placement"][0]["node"], "od-h100-80gb-0001");
  TickAt(210);   // starts; runs 1800 s
  TickAt(2010);  // done
  EXPECT_EQ(JobAt(j2, 2010)["state"], "succeeded");
  TickAt(2300);
  EXPECT_TRUE(core_->burst_fleet()[0].live()) << "idle 290 s of 300";
  TickAt(2330);
  ASSERT_TRUE(core_->burst_fleet()[0].released.has_value()) << "idle 320 s";
  EXPECT_EQ(core_->state().node(core_->burst_fleet()[0].node).condition, NodeCondition::kRetired);

  // The job is billed on demand at 10.00 from its admission (200 s) to its end (2010 s):
  // 8 GPUs x 1810 s = 40.222222.
  const Principal admin{"admin", Role::kClusterAdmin, TenantId(), ""};
  const std::map<std::string, std::string> q = {{"from", Rfc3339(At(0))}, {"to", Rfc3339(At(3000))}, {"group_by", "kind"}};
  const Json usage = Json::parse(core_->Usage({&admin, "", At(3000)}, q).body);
  bool found = false;
  for (const Json& row : usage["items"]) {
    if (row["kind"] == "on_demand") {
      found = true;
      EXPECT_EQ(row["cost"], "40.222222") << usage.dump();
    }
  }
  EXPECT_TRUE(found) << usage.dump();
  // The node cost the tenant 8 x 10.00 x (2330 - 200) s = 47.333334 (rounded up to the micro).
  const Json burst = Json::parse(core_->BurstView({&member_, "", At(3000)}).body);
  ASSERT_EQ(burst["nodes"].size(), 1u);
  EXPECT_EQ(burst["nodes"][0]["state"], "released");
  EXPECT_EQ(burst["nodes"][0]["cost"], "47.333334");
  EXPECT_EQ(burst["policies"][0]["spent"], "47.333334");

  // A restart rebuilds the fleet from the journal; new nodes get new names.
  core_.reset();
  core_ = Open();
  Enable();
  EXPECT_EQ(Json::parse(core_->BurstView({&member_, "", At(3000)}).body), burst);
  Submit(3000, 8, 600);
  Submit(3000, 8, 600);
  TickAt(3000);
  TickAt(3130);
  TickAt(3200);
  bool second = false;
  for (const Node& n : core_->state().nodes()) second = second || n.name == "od-h100-80gb-0002";
  EXPECT_TRUE(second);
}

// Review finding: a request still in flight at a restart is dropped, and the simulated provider
// must not hand out its id again (that aborted the daemon on every restart).
TEST_F(BurstTest, RequestIdsStayUniqueAcrossARestartWithARequestInFlight) {
  std::string yaml = kYaml;
  yaml.replace(yaml.find("offers: {h100-80gb: {gpus_per_node: 8, per_gpu_hour: \"10.00\", provisioning_delay_s: 60"),
               std::string("offers: {h100-80gb: {gpus_per_node: 8, per_gpu_hour: \"10.00\", provisioning_delay_s: 60").size(),
               "offers: {a100-80gb: {gpus_per_node: 8, per_gpu_hour: \"5.00\", provisioning_delay_s: 30, max_nodes: 2},\n"
               "           h100-80gb: {gpus_per_node: 8, per_gpu_hour: \"10.00\", provisioning_delay_s: 600");
  yaml.replace(yaml.find("flavors: [h100-80gb]"), std::string("flavors: [h100-80gb]").size(), "flavors: [h100-80gb, a100-80gb]");
  yaml.replace(yaml.find("max_gpus: 8"), std::string("max_gpus: 8").size(), "max_gpus: 32");
  Start("500.00", yaml);
  Submit(0, 8, 3600);
  TickAt(0);
  Submit(10, 8, 600);  // waits for H100: requested at 140, ready only at 740
  TickAt(140);
  const std::string body = Json({{"tenant", "a"}, {"name", "z"}, {"priority_class", "training"}, {"replicas", 1},
                                 {"resources", {{"flavor", "a100-80gb"}, {"gpus", 8}}}, {"duration_estimate_s", 600},
                                 {"command", {"run"}}}).dump();
  ASSERT_EQ(core_->SubmitJob({&member_, "", At(150)}, body, "").status, 201);
  TickAt(280);  // the A100 request, ready at 310
  TickAt(310);
  ASSERT_EQ(core_->burst_fleet().size(), 2u);
  core_.reset();
  core_ = Open();
  Enable();
  EXPECT_EQ(core_->burst_fleet().size(), 1u) << "the H100 request in flight died with the process";
  TickAt(320);  // the H100 job still waits: asked again, under a fresh id
  ASSERT_EQ(core_->burst_fleet().size(), 2u);
  EXPECT_EQ(core_->burst_fleet()[1].request_id, "sim-000003");
}

// Issue 14, item 9: a node bought for one job does not take the tenant's other jobs unless the
// budget pays for their run. j1 (4 GPUs, 30 min) bursts: 8 x 10.00 x (1 h minimum + 5 min
// idle) = 86.67 of 100.00. j2 (4 GPUs, 10 h) arrives once the node runs j1; the node's free
// half would take it, but the budget pays for the node only until j1's expected end (2010 s).
// Before, j2 went there, and the release when spend reached 100.00 (at 4700 s) requeued it as
// a node loss. Now it waits with the budget's reason, the node goes back idle, j2 runs in the
// pool once that frees, and nothing is requeued. With a budget that pays for j2, it runs on the
// node and the node stays until j2 is done.
TEST_F(BurstTest, AnotherJobTakesTheOnDemandNodeOnlyIfTheBudgetPaysForIt) {
  const Principal admin{"admin", Role::kClusterAdmin, TenantId(), ""};
  auto node_of = [&](const std::string& id, int64_t s) {
    const Json j = JobAt(id, s);
    return j["placement"].empty() ? std::string() : j["placement"][0]["node"].get<std::string>();
  };
  for (const char* budget : {"100.00", "1000.00"}) {
    SCOPED_TRACE(budget);
    Start(budget);
    Submit(0, 8, 3600);
    TickAt(0);  // fills the pool node
    const std::string j1 = Submit(10, 4, 1800);
    TickAt(140);  // waited 130 s: a node is requested
    TickAt(200);  // it joins and takes j1
    ASSERT_EQ(node_of(j1, 200), "od-h100-80gb-0001");
    TickAt(210);  // j1 starts: expected to end at 2010 s
    const std::string j2 = Submit(220, 4, 36000);
    TickAt(220);
    EXPECT_EQ(JobAt(j2, 220)["state"], "pending") << "not past max_wait: nothing paid for it";
    TickAt(400);  // past max_wait
    TickAt(410);
    const bool paid = std::string(budget) == "1000.00";
    if (!paid) {
      EXPECT_EQ(JobAt(j2, 410)["state"], "pending");
      const std::string reason = JobAt(j2, 410)["reason"]["message"];
      EXPECT_NE(reason.find("burst budget"), std::string::npos) << reason;
      TickAt(2010);  // j1 done
      TickAt(2320);  // idle for 310 s: released
      ASSERT_TRUE(core_->burst_fleet()[0].released.has_value());
      TickAt(3740);  // the pool node frees (the first job started at 140 s)
      EXPECT_NE(node_of(j2, 3740), "");
      EXPECT_NE(node_of(j2, 3740), "od-h100-80gb-0001");
    } else {
      // Paid at 400 s: 8 x 10.00 x (36400 - 2010) s = 764.22 more, within 1000.00 with j1's 86.67.
      EXPECT_EQ(node_of(j2, 410), "od-h100-80gb-0001");
      TickAt(4800);  // spend is past 100.00 long since; the node keeps j2
      TickAt(36410);
      EXPECT_EQ(JobAt(j2, 36420)["state"], "succeeded");
      EXPECT_FALSE(core_->burst_fleet()[0].released.has_value());
    }
    // Nothing was cut short: no usage ended as infrastructure failure.
    const Json usage = Json::parse(core_->Usage({&admin, "", At(40000)}, {{"from", Rfc3339(At(0))},
                                                                          {"to", Rfc3339(At(40000))},
                                                                          {"group_by", "kind"}}).body);
    for (const Json& row : usage["items"]) EXPECT_NE(row["kind"], "infrastructure_failure") << usage.dump();
    const Json burst = Json::parse(core_->BurstView({&member_, "", At(40000)}).body);
    EXPECT_LE(std::stod(burst["policies"][0]["spent"].get<std::string>()), std::stod(budget));
  }
}

// Issue 14, item 9: a budget stop is recorded as one. j1 (4 GPUs, 30 min estimate) bursts and
// runs past its estimate (no executor finishes it). Spend reaches 100.00 at 4700 s (8 x 10.00
// from 200 s); j1 is past what the budget paid for, so the node goes back and j1 is requeued
// with the cause "budget". Its run on the node was the tenant's: billed on demand, not lost.
TEST_F(BurstTest, ABudgetStopIsRecordedAsOneAndBilled) {
  Start("100.00");
  auto tick = [&](int64_t s) {
    core_->Tick(At(s), false);
    ASSERT_TRUE(core_->Flush().ok());
  };
  Submit(0, 8, 3600);
  tick(0);
  const std::string j1 = Submit(10, 4, 1800);
  tick(140);
  tick(200);
  ASSERT_EQ(JobAt(j1, 200)["placement"][0]["node"], "od-h100-80gb-0001");
  tick(4699);
  EXPECT_FALSE(core_->burst_fleet()[0].released.has_value());
  tick(4700);
  ASSERT_TRUE(core_->burst_fleet()[0].released.has_value());
  const Json job = JobAt(j1, 4700);
  EXPECT_EQ(job["state"], "pending");
  ASSERT_FALSE(job["events"].empty()) << job.dump();
  const Json& last = job["events"].back();
  EXPECT_EQ(last["type"], "requeued") << job.dump();
  EXPECT_EQ(last["reason"], "budget") << job.dump();
  const Principal admin{"admin", Role::kClusterAdmin, TenantId(), ""};
  const Json usage = Json::parse(core_->Usage({&admin, "", At(5000)}, {{"from", Rfc3339(At(0))},
                                                                       {"to", Rfc3339(At(5000))},
                                                                       {"group_by", "kind"}}).body);
  bool on_demand = false;
  for (const Json& row : usage["items"]) {
    EXPECT_NE(row["kind"], "infrastructure_failure") << usage.dump();
    if (row["kind"] == "on_demand") {
      on_demand = true;
      EXPECT_EQ(row["cost"], "50.000000") << usage.dump();  // 4 GPUs x 10.00 x (4700 - 200) s
    }
  }
  EXPECT_TRUE(on_demand) << usage.dump();
}

TEST_F(BurstTest, ABudgetTooSmallRefusesWithTheReason) {
  Start("10.00");
  Submit(0, 8, 3600);
  TickAt(0);
  const std::string j2 = Submit(10, 8, 1800);
  TickAt(140);
  EXPECT_TRUE(core_->burst_fleet().empty());
  const std::string reason = JobAt(j2, 140)["reason"]["message"];
  EXPECT_NE(reason.find("burst budget"), std::string::npos) << reason;
}

// Issue 14, item 11: the burst settings change through the API, take effect at the next tick,
// are audited, survive a restart (the journal's win over the file's), and a bad change is
// refused and changes nothing. Every provision and release writes a log line.
TEST_F(BurstTest, SettingsChangeThroughTheApiWithoutARestart) {
  Start("10.00");
  const Principal admin{"admin", Role::kClusterAdmin, TenantId(), ""};
  auto settings = [&](int64_t s) { return Json::parse(core_->GetBurstSettings({&admin, "", At(s)}).body); };
  auto put = [&](int64_t s, const std::string& budget, const std::string& offers =
                     R"({"h100-80gb": {"gpus_per_node": 8, "per_gpu_hour": "10.00", "provisioning_delay_s": 60, "max_nodes": 2}})") {
    const std::string body = R"({"offers": )" + offers + R"(, "tenants": {"a": {"flavors": ["h100-80gb"], "max_gpus": 8, "budget": ")" +
                             budget + R"(", "max_wait_s": 120, "idle_timeout_s": 300}}})";
    return core_->SetBurstSettings({&admin, "", At(s)}, body);
  };
  Json before = settings(0);
  EXPECT_EQ(before["tenants"]["a"]["budget"], "10.000000");
  EXPECT_EQ(before["provider"], "simulated");
  EXPECT_TRUE(before["changed_at"].is_null());
  EXPECT_EQ(core_->GetBurstSettings({&member_, "", At(0)}).status, 403);
  EXPECT_EQ(core_->SetBurstSettings({&member_, "", At(0)}, "{}").status, 403);

  Submit(0, 8, 3600);
  TickAt(0);
  const std::string j2 = Submit(10, 8, 1800);
  TickAt(140);
  EXPECT_TRUE(core_->burst_fleet().empty()) << "10.00 pays for no node";
  const Reply r = put(150, "200.00");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json::parse(r.body)["tenants"]["a"]["budget"], "200.000000");
  EXPECT_EQ(Json::parse(r.body)["changed_at"], Rfc3339(At(150)));
  ASSERT_TRUE(core_->Flush().ok());
  EXPECT_NE(core_->ListAudit({&admin, "", At(150)}).body.find("burst.settings.set"), std::string::npos);
  ::testing::internal::CaptureStderr();
  TickAt(160);  // the next tick uses the new budget
  ASSERT_EQ(core_->burst_fleet().size(), 1u);
  TickAt(220);  // the node joins and takes j2
  // Refused, and nothing changes: a tenant that does not exist, a provider from the API, an
  // offer taken away from under a live node.
  const Json now = settings(230);
  EXPECT_EQ(core_->SetBurstSettings({&admin, "", At(230)}, R"({"tenants": {"zz": {"flavors": ["h100-80gb"], "budget": "1"}}})").status, 400);
  EXPECT_EQ(core_->SetBurstSettings({&admin, "", At(230)}, R"({"provider": "command", "create_command": "x", "delete_command": "y"})").status, 400);
  EXPECT_EQ(core_->SetBurstSettings({&admin, "", At(230)}, R"({"offers": {}})").status, 409);
  EXPECT_EQ(core_->SetBurstSettings({&admin, "", At(230)}, "[1]").status, 400);
  EXPECT_EQ(settings(230), now);
  // A change whose journal write fails (disk full) is undone: the settings are the journal's.
  ASSERT_EQ(put(230, "5.00").status, 200);
  fail_next_ = 1;
  EXPECT_FALSE(core_->Flush().ok());
  EXPECT_EQ(settings(230), now);
  EXPECT_EQ(Json::parse(core_->BurstView({&member_, "", At(230)}).body)["policies"][0]["budget"], "200.000000");
  TickAt(240);
  TickAt(2040);  // j2 done (started at 240 s, 1800 s)
  TickAt(2350);  // idle 310 s: released
  const std::string log = ::testing::internal::GetCapturedStderr();
  for (const char* line : {R"("msg":"on-demand node requested")", R"("msg":"on-demand node joined")",
                           R"("msg":"on-demand node released")", R"("why":"idle")", R"("tenant":"a")"}) {
    EXPECT_NE(log.find(line), std::string::npos) << line << " in\n" << log;
  }
  EXPECT_EQ(JobAt(j2, 2350)["state"], "succeeded");

  // A restart with the file's settings (budget 10.00): the change made through the API is in force.
  const Json changed = settings(2400);
  ASSERT_TRUE(core_->Flush().ok());
  core_.reset();
  core_ = Open();
  Enable();
  EXPECT_EQ(settings(2400), changed);
  EXPECT_EQ(Json::parse(core_->BurstView({&member_, "", At(2400)}).body)["policies"][0]["budget"], "200.000000");
}

// A provider that fails writes a log line saying so (the operator's create script here).
TEST_F(BurstTest, AFailedProvisioningIsLogged) {
  Start("200.00");
  CommandProviderConfig cc{.create_command = "echo quota exceeded >&2; exit 3", .delete_command = "true"};
  ASSERT_TRUE(core_->EnableBurst(config_.burst, std::make_unique<CommandProvider>(core_->state().catalogue(), cc)).ok());
  Submit(0, 8, 3600);
  TickAt(0);
  Submit(10, 8, 1800);
  ::testing::internal::CaptureStderr();
  TickAt(140);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find(R"("msg":"on-demand provisioning failed; retrying in 30 s")"), std::string::npos) << log;
  EXPECT_NE(log.find("quota exceeded"), std::string::npos) << log;
}

TEST_F(AgentProtocolTest, StartRunExitLogsAndScoping) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1);
  Json reply = Beat(node, 2);
  ASSERT_EQ(reply["start"].size(), 1u) << reply.dump();
  const Json& start = reply["start"][0];
  EXPECT_EQ(start["job"], j);
  EXPECT_EQ(start["command"], Json({"sh", "-c", "echo hi"}));
  ASSERT_EQ(start["devices"].size(), 4u);
  EXPECT_EQ(start["devices"][0].get<std::string>().rfind("GPU-" + node + "-", 0), 0u);
  EXPECT_EQ(start["env"]["GPUPOOL_TENANT"], "a");
  // The other node is told to start nothing.
  EXPECT_TRUE(Beat(node == "g1" ? "g2" : "g1", 2)["start"].empty());

  const Json started = start;
  EXPECT_TRUE(start["attempt"].is_number_integer());
  reply = Beat(node, 3, {{"replicas", {Report(started, "running")}},
                         {"logs", {{{"job", j}, {"replica", 0}, {"attempt", started["attempt"]}, {"stdout", "hi\n"}, {"stderr", ""}}}}});
  EXPECT_TRUE(reply["start"].empty()) << "a reported replica is not started twice";
  EXPECT_EQ(Job(j, 3)["state"], "running");
  const Json logs = Json::parse(core_->JobLogs({&member_a_, "", At(3)}, j).body);
  ASSERT_EQ(logs["items"].size(), 1u);
  EXPECT_EQ(logs["items"][0]["stdout"], "hi\n");
  EXPECT_EQ(core_->JobLogs({&member_b_, "", At(3)}, j).status, 404) << "another tenant's logs";

  reply = Beat(node, 4, {{"replicas", {Report(started, "exited", 0)}}});
  EXPECT_EQ(Job(j, 4)["state"], "succeeded");
  ASSERT_EQ(reply["forget"].size(), 1u);
  EXPECT_TRUE(reply["start"].empty());

  const std::string k = Submit(member_a_, 2, 5);
  core_->Tick(At(5), false);
  const Json k_start = StartOf(Beat(NodeOf(k, 5), 5), k);
  Beat(NodeOf(k, 5), 6, {{"replicas", {Report(k_start, "exited", 3)}}});
  EXPECT_EQ(Job(k, 6)["state"], "failed");

  // Only admins speak for agents; an unknown node must register.
  EXPECT_EQ(core_->AgentHeartbeat({&member_a_, "", At(7)}, "g1", "{}").status, 403);
  EXPECT_EQ(core_->AgentHeartbeat({&admin_, "", At(7)}, "g9", "{}").status, 404);
  EXPECT_EQ(core_->AgentHeartbeat({&admin_, "", At(7)}, "g1", R"({"replicas": 3})").status, 400);
  EXPECT_EQ(core_->AgentHeartbeat({&admin_, "", At(7)}, "g1",
                                  R"({"replicas": [{"job": "x", "replica": 0, "state": "running"}]})").status, 400);
  // Malformed values never throw: a 400, or (advisory health and logs) ignored.
  for (const char* bad : {R"({"replicas": [{"job": "1", "replica": "0", "attempt": 1, "state": "running"}]})",
                          R"({"replicas": [{"job": "1", "replica": 0, "attempt": 1, "state": "dancing"}]})",
                          R"({"replicas": [{"job": "1", "replica": 0, "state": "running"}]})",
                          R"({"replicas": [{"job": "1", "replica": 0, "attempt": -1, "state": "running"}]})",
                          R"({"replicas": [7]})", R"({"health": {}})", R"({"gpus": {}})",
                          R"({"gpus": [{"index": 9, "mig": true}]})",
                          R"({"gpus": [{"index": 0, "mig": true, "instances": [{"start": 0, "profile": "9g.1tb"}]}]})",
                          "[]", "not json"}) {
    EXPECT_EQ(core_->AgentHeartbeat({&admin_, "", At(7)}, "g1", bad).status, 400) << bad;
  }
  for (const char* odd : {R"({"health": [{"gpu": 0, "kind": "xid", "code": "79"}, {"gpu": "0"}, 5]})",
                          R"({"logs": [{"job": "1", "replica": 0, "stdout": 5}, "x"]})"}) {
    EXPECT_EQ(core_->AgentHeartbeat({&admin_, "", At(7)}, "g1", odd).status, 200) << odd;
  }
  for (const char* bad : {R"({"node": "g7", "flavor": "h100-80gb", "gpus": [{"uuid": "GPU-a", "mig": "yes"}]})",
                          R"({"node": "g7", "flavor": "h100-80gb", "gpus": [{"uuid": "GPU-a", "mig": true, "instances": [1]}]})",
                          R"({"node": "g7", "flavor": "h100-80gb", "gpus": [{"uuid": "GPU-a", "mig": true, "instances": [{"start": 0, "profile": "9g.1tb"}]}]})",
                          R"({"node": "g7", "flavor": "b300", "gpus": [{"uuid": "GPU-a"}]})",
                          R"({"node": "g7", "flavor": "h100-80gb", "gpus": []})",
                          R"({"node": "g7", "flavor": "h100-80gb", "gpus": [{"uuid": "GPU-a"}], "acceptance": {"passed": "yes"}})",
                          R"({"node": "g7", "flavor": "h100-80gb", "gpus": [{"uuid": "GPU-a"}], "colour": 1})"}) {
    EXPECT_EQ(core_->RegisterAgent({&admin_, "", At(7)}, bad).status, 400) << bad;
  }
  EXPECT_FALSE(core_->state().FindNode("g7").ok()) << "a refused registration adds no node";
}

// Log tails are taken only from the agent of the node a replica is placed on now, for the
// attempt placed now: a node-agent token cannot write another job's logs.
TEST_F(AgentProtocolTest, LogTailsComeOnlyFromTheReplicaPlacedOnTheNodeNow) {
  const std::string j = Submit(member_a_, 4, 1), k = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1), other = NodeOf(k, 1);
  ASSERT_NE(node, other) << "each job fills one node";
  const Principal agent = AgentOf(node), other_agent = AgentOf(other);
  const Json start = StartOf(Beat(node, 2), j), k_start = StartOf(Beat(other, 2), k);
  ASSERT_TRUE(start.is_object() && k_start.is_object());
  const int64_t attempt = start["attempt"];
  auto tail = [](const std::string& job, int replica, const Json& at, const std::string& out) {
    Json t = {{"job", job}, {"replica", replica}, {"stdout", out}, {"stderr", ""}};
    if (!at.is_null()) t["attempt"] = at;
    return t;
  };
  auto beat_as = [&](const Principal& p, const std::string& n, int64_t s, const Json& body) {
    const Reply r = core_->AgentHeartbeat({&p, "", At(s)}, n, body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
  };
  auto logs_of = [&](const std::string& job) {
    return Json::parse(core_->JobLogs({&admin_, "", At(9)}, job).body)["items"];
  };
  const Json honest = {{{"replica", 0}, {"stdout", "honest\n"}, {"stderr", ""}}};
  beat_as(agent, node, 3, {{"replicas", {Report(start, "running")}}, {"logs", {tail(j, 0, attempt, "honest\n")}}});
  ASSERT_EQ(logs_of(j), honest);
  // Another node's agent, even with the right attempt.
  beat_as(other_agent, other, 4, {{"replicas", {Report(k_start, "running")}},
                                  {"logs", {tail(j, 0, attempt, "forged by " + other + "\n")}}});
  EXPECT_EQ(logs_of(j), honest);
  // This node's agent, for a job placed on the other node.
  beat_as(agent, node, 5, {{"replicas", {Report(start, "running")}},
                           {"logs", {tail(k, 0, k_start["attempt"], "forged by " + node + "\n")}}});
  EXPECT_EQ(logs_of(k), Json::array());
  // No attempt, an earlier attempt, a replica the job does not have.
  beat_as(agent, node, 6, {{"replicas", {Report(start, "running")}},
                           {"logs", {tail(j, 0, nullptr, "no attempt\n"), tail(j, 0, attempt - 1, "stale\n"),
                                     tail(j, 1, attempt, "replica 1\n"), tail(j, 65535, attempt, "replica 65535\n")}}});
  EXPECT_EQ(logs_of(j), honest);
  // The final tail, sent with the exit that finishes the job, is kept.
  beat_as(agent, node, 7, {{"replicas", {Report(start, "exited", 0)}}, {"logs", {tail(j, 0, attempt, "honest\nbye\n")}}});
  EXPECT_EQ(Job(j, 7)["state"], "succeeded");
  const Json final_tail = {{{"replica", 0}, {"stdout", "honest\nbye\n"}, {"stderr", ""}}};
  EXPECT_EQ(logs_of(j), final_tail);
  // A finished job holds no placement: nothing changes its tails any more.
  beat_as(agent, node, 8, {{"logs", {tail(j, 0, attempt, "late\n")}}});
  EXPECT_EQ(logs_of(j), final_tail);
}

TEST_F(AgentProtocolTest, ASilentNodeIsUnreachableAndItsJobRunsElsewhere) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string lost = NodeOf(j, 1), other = lost == "g1" ? "g2" : "g1";
  const Json first = StartOf(Beat(lost, 2), j);
  Beat(lost, 2, {{"replicas", {Report(first, "running")}}});
  for (int64_t s = 3; s <= 14; ++s) {
    Beat(other, s);
    core_->Tick(At(s), false);
  }
  // 12 s after its last heartbeat (timeout 10 s = the lease): unreachable, but the job stays
  // placed there while its replica may still run: until the lease, the training class's 120 s
  // grace and the 1 s margin have passed (131 s after the last heartbeat, at 2).
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(14)}, lost).body)["condition"], "unreachable");
  EXPECT_EQ(NodeOf(j, 14), lost);
  for (int64_t s = 15; s <= 133; ++s) {
    Beat(other, s);
    core_->Tick(At(s), false);
  }
  EXPECT_EQ(NodeOf(j, 133), lost) << "requeued before its replica was surely fenced";
  for (int64_t s = 134; s <= 135; ++s) {
    Beat(other, s);
    core_->Tick(At(s), false);
  }
  // Then requeued (at 134) and placed on the other node, which is told to start it.
  EXPECT_EQ(NodeOf(j, 135), other);
  const Json reply = Beat(other, 135);
  ASSERT_EQ(reply["start"].size(), 1u);
  EXPECT_EQ(reply["start"][0]["job"], j);
  EXPECT_EQ(reply["lease_ms"], 10000);
  // The lost node comes back: ready again, and its stale replica is stopped.
  ASSERT_EQ(Register(lost, 136).status, 200);
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(136)}, lost).body)["condition"], "ready");
  const Json back = Beat(lost, 136, {{"replicas", {Report(first, "running")}}});
  ASSERT_EQ(back["stop"].size(), 1u);
  EXPECT_EQ(back["stop"][0]["grace_s"], 120) << "the training class's grace period";
}

// A node that comes back within the fence deadline keeps its job (the same attempt, not started
// again); a replica its shim fenced is requeued, not failed; starts say whose job and its grace.
TEST_F(AgentProtocolTest, AFencedReplicaIsRequeuedAndAQuickReturnKeepsItsJob) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1), other = node == "g1" ? "g2" : "g1";
  const Json start = StartOf(Beat(node, 2), j);
  ASSERT_TRUE(start.is_object());
  EXPECT_EQ(start["tenant"], "a");
  EXPECT_EQ(start["grace_s"], 120);
  EXPECT_EQ(start["env"]["GPUPOOL_ATTEMPT"], start["attempt"].dump());
  Beat(node, 2, {{"replicas", {Report(start, "running")}}});
  for (int64_t s = 3; s <= 20; ++s) {
    Beat(other, s);
    core_->Tick(At(s), false);
  }
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(20)}, node).body)["condition"], "unreachable");
  // Back (a restarted agent that adopted its replica): kept, no new start.
  ASSERT_EQ(Register(node, 21).status, 200);
  const Json kept = Beat(node, 21, {{"replicas", {Report(start, "running")}}});
  EXPECT_TRUE(kept["start"].empty()) << kept;
  EXPECT_TRUE(kept["stop"].empty()) << kept;
  EXPECT_EQ(Job(j, 21)["state"], "running");
  // Its shim stopped it when the lease ran out: requeued (pending again), not failed.
  Json fenced = Report(start, "exited", 143);
  fenced["signal"] = 15;
  fenced["fenced"] = true;
  const Json after = Beat(node, 22, {{"replicas", {fenced}}});
  ASSERT_EQ(after["forget"].size(), 1u);
  EXPECT_NE(Job(j, 22)["state"], "failed");
  core_->Tick(At(23), false);
  EXPECT_TRUE(Job(j, 23)["state"] == "admitted" || Job(j, 23)["state"] == "pending") << Job(j, 23);
}

// The daemon remembers its agents across a restart: heartbeats are not answered 404, starts
// carry the GPUs' UUIDs the agent registered, and an agent that stays silent after the restart
// is found out one timeout after the daemon's first tick.
TEST_F(AgentProtocolTest, AgentsSurviveADaemonRestart) {
  Restart();
  const std::string j = Submit(member_a_, 4, 100);
  core_->Tick(At(100), false);  // the first tick after the restart starts the agents' clocks
  const std::string node = NodeOf(j, 100), silent = node == "g1" ? "g2" : "g1";
  const Json start = StartOf(Beat(node, 101), j);
  ASSERT_TRUE(start.is_object()) << "no 404 and a start, without registering again";
  EXPECT_EQ(start["devices"], Json({"GPU-" + node + "-0", "GPU-" + node + "-1", "GPU-" + node + "-2", "GPU-" + node + "-3"}));
  for (int64_t s = 102; s <= 109; ++s) {
    Beat(node, s);
    core_->Tick(At(s), false);
  }
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(109)}, silent).body)["condition"], "ready")
      << "silence is counted from the first tick after the restart, not from before it";
  for (int64_t s = 110; s <= 112; ++s) {
    Beat(node, s);
    core_->Tick(At(s), false);
  }
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(112)}, silent).body)["condition"], "unreachable");
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(112)}, node).body)["condition"], "ready");
}

// A replica's successful exit is journaled before the agent is told to forget it: after a
// daemon restart, the finished replica of a running gang is not started again.
TEST_F(AgentProtocolTest, AReplicasSuccessfulExitSurvivesADaemonRestart) {
  const std::string j = Submit(member_a_, 4, 1, /*replicas=*/2);
  core_->Tick(At(1), false);
  const Json placement = Job(j, 1)["placement"];
  ASSERT_EQ(placement.size(), 2u);
  const std::string n0 = placement[0]["node"], n1 = placement[1]["node"];
  ASSERT_NE(n0, n1) << "4 GPUs a replica: one replica a node";
  const Json s0 = StartOf(Beat(n0, 2), j), s1 = StartOf(Beat(n1, 2), j);
  ASSERT_TRUE(s0.is_object() && s1.is_object());
  ASSERT_EQ(s0["replica"], 0);
  ASSERT_EQ(s1["replica"], 1);
  Beat(n0, 3, {{"replicas", {Report(s0, "running")}}});
  Beat(n1, 3, {{"replicas", {Report(s1, "running")}}});
  const Json reply = Beat(n0, 4, {{"replicas", {Report(s0, "exited", 0)}}});
  ASSERT_EQ(reply["forget"].size(), 1u);
  EXPECT_EQ(Job(j, 4)["state"], "running");

  Restart();
  // The agent forgot replica 0 and reports nothing on n0; replica 1 still runs on n1.
  EXPECT_TRUE(StartOf(Beat(n0, 5), j).is_null()) << "replica 0 exited 0 before the restart";
  EXPECT_TRUE(StartOf(Beat(n1, 5, {{"replicas", {Report(s1, "running")}}}), j).is_null());
  core_->Tick(At(5), false);
  EXPECT_TRUE(StartOf(Beat(n0, 6), j).is_null());
  Beat(n1, 7, {{"replicas", {Report(s1, "exited", 0)}}});
  EXPECT_EQ(Job(j, 7)["state"], "succeeded");
}

// A node-agent token registers only a node the cluster already has; a new node needs a
// cluster admin.
TEST_F(AgentProtocolTest, ANodeAgentTokenRegistersOnlyAnExistingNode) {
  const Principal g1 = AgentOf("g1"), g9 = AgentOf("g9");
  Reply r = core_->RegisterAgent({&g9, "", At(1)}, RegisterBody("g9").dump());
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("a cluster admin must register it first"), std::string::npos) << r.body;
  EXPECT_FALSE(core_->state().FindNode("g9").ok()) << "a refused registration adds no node";
  r = core_->RegisterAgent({&g1, "", At(1)}, RegisterBody("g1").dump());
  EXPECT_EQ(r.status, 200) << r.body;
  // Added by a cluster admin, g9 is then its agent's to register.
  ASSERT_EQ(Register("g9", 2).status, 200);
  r = core_->RegisterAgent({&g9, "", At(3)}, RegisterBody("g9").dump());
  EXPECT_EQ(r.status, 200) << r.body;
}

// A known node re-registering with a GPU in another MIG mode is refused (409), naming the GPU,
// and nothing changes: not the node, not the UUIDs its starts carry.
TEST_F(AgentProtocolTest, AReRegistrationWithAnotherMigModeIsRefused) {
  RegisterMigNode(1);
  Json whole = {{"node", "m1"}, {"flavor", "h100-80gb"}, {"gpus", {{{"index", 0}, {"uuid", "GPU-m1-other"}}}},
                {"acceptance", {{"passed", false}, {"output", "x"}}}};
  Reply r = core_->RegisterAgent({&admin_, "", At(2)}, whole.dump());
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("GPU 0"), std::string::npos) << r.body;
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(2)}, "m1").body)["condition"], "ready");

  const std::string j = Submit(member_a_, 4, 3);
  core_->Tick(At(3), false);
  const std::string node = NodeOf(j, 3);
  Json mig = RegisterBody(node, "GPU-other-");
  mig["gpus"][2]["mig"] = true;
  mig["gpus"][2]["instances"] = MigInstances("3g.40gb@0", "MIG-other-");
  mig["acceptance"] = {{"passed", false}, {"output", "x"}};
  const Principal agent = AgentOf(node);
  r = core_->RegisterAgent({&agent, "", At(4)}, mig.dump());
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("GPU 2"), std::string::npos) << r.body;
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(4)}, node).body)["condition"], "ready");
  const Json start = StartOf(Beat(node, 5), j);
  ASSERT_TRUE(start.is_object());
  EXPECT_EQ(start["devices"], Json({"GPU-" + node + "-0", "GPU-" + node + "-1", "GPU-" + node + "-2", "GPU-" + node + "-3"}))
      << "the refused registration's UUIDs were not taken";
}

TEST_F(AgentProtocolTest, Xid79DrainsAndAFailedAcceptanceKeepsANodeOut) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string sick = NodeOf(j, 1), other = sick == "g1" ? "g2" : "g1";
  Beat(sick, 2, {{"health", {{{"gpu", 1}, {"kind", "xid"}, {"code", 13}}}}});  // application error: nothing
  EXPECT_EQ(Job(j, 2)["state"], "admitted");
  Beat(sick, 3, {{"health", {{{"gpu", 1}, {"kind", "xid"}, {"code", 79}}}}});
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(3)}, sick).body)["condition"], "draining");
  EXPECT_EQ(Job(j, 3)["state"], "pending");
  core_->Tick(At(4), false);
  EXPECT_EQ(NodeOf(j, 4), other);

  const Reply r = Register("g3", 5, /*passed=*/false);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json::parse(r.body)["condition"], "unhealthy");
  const std::string k = Submit(member_b_, 4, 6);  // b borrows; only g3 has room, but it failed
  core_->Tick(At(6), false);
  EXPECT_EQ(Job(k, 6)["state"], "pending");
  ASSERT_EQ(Register("g3", 7).status, 200);  // repaired, passes
  core_->Tick(At(7), false);
  EXPECT_EQ(NodeOf(k, 7), "g3");
  // A node known with other GPUs is refused.
  Json gpus = Json::array({{{"index", 0}, {"uuid", "GPU-x"}}});
  EXPECT_EQ(core_->RegisterAgent({&admin_, "", At(8)}, Json({{"node", "g3"}, {"flavor", "h100-80gb"}, {"gpus", gpus}}).dump()).status, 409);
}

// The agent's rediscovery reports a GPU it no longer sees ("gpu_lost") or a MIG device gone
// under a replica ("device_lost"): the node drains and the job is requeued (an infrastructure
// failure), not failed.
TEST_F(AgentProtocolTest, ALostGpuOrDeviceDrainsTheNodeAndRequeuesItsJob) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string sick = NodeOf(j, 1), other = sick == "g1" ? "g2" : "g1";
  Beat(sick, 2, {{"health", {{{"gpu", 2}, {"kind", "gpu_lost"}}}}});
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(2)}, sick).body)["condition"], "draining");
  EXPECT_EQ(Job(j, 2)["state"], "pending");
  core_->Tick(At(3), false);
  ASSERT_EQ(NodeOf(j, 3), other);
  Beat(other, 4, {{"health", {{{"gpu", 0}, {"kind", "device_lost"}}}}});
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(4)}, other).body)["condition"], "draining");
  EXPECT_EQ(Job(j, 4)["state"], "pending");
}

// A row remap that waits for a GPU reset ("row_remap_pending", ignored before): the node is
// cordoned (no new work; reset it when idle), and the job placed there keeps its place.
TEST_F(AgentProtocolTest, ARowRemapPendingCordonsTheNodeAndKeepsItsJob) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1);
  Beat(node, 2, {{"health", {{{"gpu", 3}, {"kind", "row_remap_pending"}}}}});
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(2)}, node).body)["condition"], "cordoned");
  EXPECT_EQ(Job(j, 2)["state"], "admitted");
  EXPECT_EQ(NodeOf(j, 2), node);
}

TEST_F(AgentProtocolTest, AStaleAttemptIsStoppedAndNeverTakenForTheNewOne) {
  const std::string j = Submit(member_a_, 4, 1), k = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1);
  ASSERT_NE(NodeOf(k, 1), node) << "each job fills one node";
  const Json first = StartOf(Beat(node, 2), j);
  ASSERT_TRUE(first.is_object());
  Beat(node, 3, {{"replicas", {Report(first, "running")}}});
  EXPECT_EQ(Job(j, 3)["state"], "running");
  // Drained and back: j is requeued and placed on the same node again (the other is full),
  // while the agent still runs the first attempt.
  ASSERT_EQ(core_->NodeAction({&admin_, "", At(4)}, node, "drain").status, 200);
  ASSERT_EQ(core_->NodeAction({&admin_, "", At(5)}, node, "uncordon").status, 200);
  core_->Tick(At(6), false);
  ASSERT_EQ(NodeOf(j, 6), node);
  EXPECT_EQ(Job(j, 6)["state"], "admitted");

  // The old attempt's report does not start the new one: it is told to stop, and the new one
  // is not handed out while the old one runs.
  Json reply = Beat(node, 7, {{"replicas", {Report(first, "running")}},
                              {"logs", {{{"job", j}, {"replica", 0}, {"attempt", first["attempt"]}, {"stdout", "old\n"}}}}});
  EXPECT_EQ(Job(j, 7)["state"], "admitted");
  ASSERT_EQ(reply["stop"].size(), 1u) << reply.dump();
  EXPECT_EQ(reply["stop"][0]["attempt"], first["attempt"]);
  EXPECT_TRUE(StartOf(reply, j).is_null());
  EXPECT_EQ(Json::parse(core_->JobLogs({&admin_, "", At(7)}, j).body)["items"], Json::array())
      << "the old attempt's tails are not the new one's";
  // Its exit (SIGTERM) fails nothing; it is forgotten, and the new attempt starts in the same reply.
  reply = Beat(node, 8, {{"replicas", {Report(first, "exited", 143)}}});
  EXPECT_EQ(Job(j, 8)["state"], "admitted");
  ASSERT_EQ(reply["forget"].size(), 1u);
  EXPECT_EQ(reply["forget"][0]["attempt"], first["attempt"]);
  const Json second = StartOf(reply, j);
  ASSERT_TRUE(second.is_object()) << reply.dump();
  EXPECT_NE(second["attempt"], first["attempt"]);
  Beat(node, 9, {{"replicas", {Report(second, "running")}}});
  EXPECT_EQ(Job(j, 9)["state"], "running");
  reply = Beat(node, 10, {{"replicas", {Report(second, "exited", 0)}}});
  EXPECT_EQ(Job(j, 10)["state"], "succeeded");
}

// DESIGN.md §4: two attempts of a replica are never alive at once, also when the new attempt
// goes to another node. Each test starts a 4-GPU job on one node (attempt 1 handed out, and
// reported running when asked), drains that node, and finds the job placed on the other one.
class AttemptHoldTest : public AgentProtocolTest {
 protected:
  void StartThenDrain(bool reported, int64_t drain_s) {
    j = Submit(member_a_, 4, 1);
    core_->Tick(At(1), false);
    node = NodeOf(j, 1);
    other = node == "g1" ? "g2" : "g1";
    first = StartOf(Beat(node, 2), j);
    ASSERT_TRUE(first.is_object());
    if (reported) Beat(node, 2, {{"replicas", {Report(first, "running")}}});
    ASSERT_EQ(core_->NodeAction({&admin_, "", At(drain_s)}, node, "drain").status, 200);
    core_->Tick(At(drain_s), false);
    ASSERT_EQ(NodeOf(j, drain_s), other) << "requeued and placed on the other node";
  }
  std::string j, node, other;
  Json first;  // attempt 1's start
};

// The other node starts it only once its node reports attempt 1 gone; the wait does not count
// against the other node's start deadline.
TEST_F(AttemptHoldTest, AnAttemptMovedToAnotherNodeStartsOnlyOnceTheOldOneIsGone) {
  core_->SetAgentExecutor(Duration::Minutes(2));
  StartThenDrain(true, 3);
  // Attempt 1 still runs (its agent has not heard of the drain yet): no start on the other node.
  EXPECT_TRUE(StartOf(Beat(other, 4), j).is_null());
  // Told to stop it, its agent reports it running through the grace: still none, for minutes,
  // and the other node is not blamed for the wait.
  Json reply = Beat(node, 5, {{"replicas", {Report(first, "running")}}});
  ASSERT_EQ(reply["stop"].size(), 1u) << reply.dump();
  for (int64_t s = 6; s <= 200; s += 5) {
    Beat(node, s, {{"replicas", {Report(first, "running")}}});
    EXPECT_TRUE(StartOf(Beat(other, s), j).is_null()) << "at " << s;
    core_->Tick(At(s), false);
  }
  EXPECT_EQ(NodeOf(j, 200), other);
  EXPECT_EQ(Job(j, 200)["state"], "admitted");
  EXPECT_EQ(Job(j, 200).value("start_held", ""), "attempt 1 of replica 0 still runs on " + node +
                                                    " (told to stop, within its 120s grace)");
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(200)}, other).body)["condition"], "ready");
  // Gone: attempt 2 starts.
  Beat(node, 201, {{"replicas", {Report(first, "exited", 143)}}});
  EXPECT_FALSE(Job(j, 201).contains("start_held"));
  const Json second = StartOf(Beat(other, 201), j);
  ASSERT_TRUE(second.is_object());
  EXPECT_EQ(second["attempt"], 2);
}

// The old node falls silent after its last report (at 2): the new attempt starts once that
// node's lease (10 s), the class's grace (120 s) and the margin (1 s) have passed since then.
TEST_F(AttemptHoldTest, AnAttemptOnASilentNodeIsTakenAsGoneOnlyAfterItsLeaseAndGrace) {
  StartThenDrain(true, 3);
  EXPECT_TRUE(StartOf(Beat(other, 133), j).is_null()) << "131 s after node's last heartbeat";
  const Json second = StartOf(Beat(other, 134), j);
  ASSERT_TRUE(second.is_object()) << "132 s after it: surely fenced";
  EXPECT_EQ(second["attempt"], 2);
}

// A start the daemon handed out counts as running until the agent's next heartbeat says
// otherwise: a drain in between does not start the next attempt beside it. And a node deleted
// right after its drain still holds the next attempt until its lease and grace are over.
TEST_F(AttemptHoldTest, AStartHandedOutOrADeletedNodeStillHoldsTheNextAttempt) {
  StartThenDrain(false, 2);
  EXPECT_TRUE(StartOf(Beat(other, 3), j).is_null()) << "attempt 1 was handed out on " << node;
  // The agent did start it; deleted, its node's reports stop, and the lease, the grace and the
  // margin count from its last heartbeat (at 4).
  Beat(node, 4, {{"replicas", {Report(first, "running")}}});
  ASSERT_EQ(core_->DeleteNode({&admin_, "", At(5)}, node).status, 200);
  core_->Tick(At(134), false);  // the sweep of silent and removed nodes keeps it until the bound
  EXPECT_TRUE(StartOf(Beat(other, 135), j).is_null()) << "131 s after the deleted node's last heartbeat";
  core_->Tick(At(136), false);  // past it: the removed node is forgotten
  const Json second = StartOf(Beat(other, 136), j);
  ASSERT_TRUE(second.is_object()) << "132 s after it";
  EXPECT_EQ(second["attempt"], 2);
}

// A start handed out that the agent did not take (its next heartbeat does not report it) holds
// nothing.
TEST_F(AttemptHoldTest, AStartTheAgentDidNotTakeHoldsNothing) {
  StartThenDrain(false, 2);
  Beat(node, 3);
  EXPECT_TRUE(StartOf(Beat(other, 3), j).is_object());
}

// The attempt is a counter of placements (issue 16 item 10): the first placement of a job is
// attempt 1, its placement after a requeue attempt 2, whatever the clock says (both placements
// here fall in the same second, a clock stepped back would not matter either), and a restart
// replays the same numbers from the journal.
TEST_F(AgentProtocolTest, AttemptsCountPlacementsAndSurviveARestart) {
  const std::string j = Submit(member_a_, 4, 1), k = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1);
  const Json first = StartOf(Beat(node, 1), j);
  ASSERT_TRUE(first.is_object());
  EXPECT_EQ(first["attempt"], 1);
  EXPECT_EQ(first["env"]["GPUPOOL_ATTEMPT"], "1");
  Beat(node, 1, {{"replicas", {Report(first, "running")}}});
  ASSERT_EQ(core_->NodeAction({&admin_, "", At(1)}, node, "drain").status, 200);
  ASSERT_EQ(core_->NodeAction({&admin_, "", At(1)}, node, "uncordon").status, 200);
  core_->Tick(At(1), false);
  ASSERT_EQ(NodeOf(j, 1), node) << "placed again, on the same node (the other is full)";

  Restart();
  // Attempt 1 is still the stale one after the replay: told to stop, then forgotten, and
  // attempt 2 starts once every agent has reported what it runs since the restart (the other
  // node's could have run attempt 1 for all the restarted daemon knows).
  const std::string other = node == "g1" ? "g2" : "g1";
  Json reply = Beat(node, 2, {{"replicas", {Report(first, "running")}}});
  ASSERT_EQ(reply["stop"].size(), 1u) << reply.dump();
  EXPECT_EQ(reply["stop"][0]["attempt"], 1);
  reply = Beat(node, 3, {{"replicas", {Report(first, "exited", 143)}}});
  EXPECT_TRUE(StartOf(reply, j).is_null()) << "held until " << other << " reports: " << reply.dump();
  Beat(other, 3);
  reply = Beat(node, 3);
  const Json second = StartOf(reply, j);
  ASSERT_TRUE(second.is_object()) << reply.dump();
  EXPECT_EQ(second["attempt"], 2);

  Restart();
  // The replayed job is at attempt 2: its report counts, attempt 1's would not.
  Beat(node, 4, {{"replicas", {Report(second, "running")}}});
  EXPECT_EQ(Job(j, 4)["state"], "running");
  reply = Beat(node, 5, {{"replicas", {Report(second, "exited", 0)}}});
  EXPECT_EQ(Job(j, 5)["state"], "succeeded");
  const Json k_start = StartOf(Beat(NodeOf(k, 5), 5), k);
  ASSERT_TRUE(k_start.is_object());
  EXPECT_EQ(k_start["attempt"], 1) << "each job counts its own placements";
}

// A MIG node (one H100, 3g@0 + 3g@4) registered by its agent, and a job that needs a 1g slice.
TEST_F(AgentProtocolTest, MigLayoutsGoThroughTheAgentAndStartsWaitForThem) {
  const auto instances = &MigInstances;
  // The scheduler re-partitioned GPU 0: the reply carries the target, and the job waits for it.
  const MigPlacement placed = PlaceMigJob();
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string j = placed.job, target = placed.target;
  const int slice = placed.slice;
  Json reply = placed.reply;
  EXPECT_EQ(reply["mig"][0]["gpu"], 0);
  EXPECT_NE(target.find("1g.10gb@" + std::to_string(slice)), std::string::npos) << target;
  EXPECT_TRUE(reply["start"].empty()) << "slice " << slice << " does not exist on the device yet";
  // The agent refuses (no --allow-mig-changes): logged, and the job still waits.
  reply = Beat("m1", 4, {{"mig_errors", {{{"gpu", 0}, {"layout", target}, {"error", "MIG changes are off"}}}}});
  EXPECT_EQ(reply["mig"].size(), 1u);
  EXPECT_TRUE(reply["start"].empty());
  // Operators see the refusal on the GPU in the node view (the console's cluster map).
  const Json refused = Json::parse(core_->GetNode({&admin_, "", At(4)}, "m1").body)["devices"][0];
  EXPECT_NE(refused.value("mig_error", "").find("MIG changes are off"), std::string::npos) << refused.dump();
  // A malformed report changes nothing: still waiting.
  Json bad_gpus = {{{"index", 0}, {"mig", true}, {"instances", instances(target, "MIG-new-")}},
                   {{"index", 3}, {"mig", true}}};
  EXPECT_EQ(core_->AgentHeartbeat({&admin_, "", At(5)}, "m1", Json({{"gpus", bad_gpus}}).dump()).status, 400);
  EXPECT_TRUE(Beat("m1", 5)["start"].empty());
  // Applied and reported: the job starts on the new slice's MIG UUID.
  reply = Beat("m1", 6, {{"gpus", {{{"index", 0}, {"mig", true}, {"instances", instances(target, "MIG-new-")}}}}});
  EXPECT_EQ(reply["mig"], Json::array());
  EXPECT_FALSE(Json::parse(core_->GetNode({&admin_, "", At(6)}, "m1").body)["devices"][0].contains("mig_error"));
  const Json start = StartOf(reply, j);
  ASSERT_TRUE(start.is_object()) << reply.dump();
  EXPECT_EQ(start["devices"], Json({"MIG-new-" + std::to_string(slice)}));
  Beat("m1", 7, {{"replicas", {Report(start, "running")}}});
  EXPECT_EQ(Job(j, 7)["state"], "running");
}

// The MIG layout and slice UUIDs an agent reports after applying a layout are journaled: after a
// daemon restart the target is not sent again and the start still carries the new slice's UUID.
TEST_F(AgentProtocolTest, AppliedMigLayoutsSurviveADaemonRestart) {
  const MigPlacement placed = PlaceMigJob();
  ASSERT_FALSE(::testing::Test::HasFailure());
  Beat("m1", 4, {{"gpus", {{{"index", 0}, {"mig", true}, {"instances", MigInstances(placed.target, "MIG-new-")}}}}});
  Restart();
  core_->Tick(At(5), false);
  const Json reply = Beat("m1", 6);
  EXPECT_EQ(reply["mig"], Json::array()) << "the applied layout was remembered";
  const Json start = StartOf(reply, placed.job);
  ASSERT_TRUE(start.is_object()) << reply.dump();
  EXPECT_EQ(start["devices"], Json({"MIG-new-" + std::to_string(placed.slice)}));
}

// A heartbeat that changes what is journaled of its agent (here the MIG layout) still counts as
// heard: the journaled part and what this daemon heard are kept apart, so the record does not
// reset the node's silence (it used to, and the node looked alive one tick longer).
TEST_F(AgentProtocolTest, AHeartbeatThatChangesTheAgentRecordStillCountsAsHeard) {
  const MigPlacement placed = PlaceMigJob();
  ASSERT_FALSE(::testing::Test::HasFailure());
  const Json reply =
      Beat("m1", 4, {{"gpus", {{{"index", 0}, {"mig", true}, {"instances", MigInstances(placed.target, "MIG-new-")}}}}});
  ASSERT_EQ(reply["mig"], Json::array()) << "the new layout was recorded";
  core_->Tick(At(5), false);
  core_->Tick(At(15), false);  // 11 s after the last heartbeat, timeout 10 s
  EXPECT_EQ(Json::parse(core_->GetNode({&admin_, "", At(15)}, "m1").body)["condition"], "unreachable");
}

// A MIG grant is started with its slice's MIG UUID and never with the whole GPU's: while the
// agent reports the target layout but no UUID for the slice, the start is held.
TEST_F(AgentProtocolTest, AMigGrantWithoutAKnownMigUuidIsHeld) {
  const MigPlacement placed = PlaceMigJob();
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string j = placed.job, target = placed.target;
  const int slice = placed.slice;
  Json reply = placed.reply;
  Json reported = MigInstances(target, "MIG-new-");
  for (Json& in : reported) {
    if (in["start"] == slice) in.erase("uuid");  // its compute instance is not there yet
  }
  reply = Beat("m1", 4, {{"gpus", {{{"index", 0}, {"mig", true}, {"instances", reported}}}}});
  EXPECT_EQ(reply["mig"], Json::array()) << "the reported layout is the target";
  EXPECT_TRUE(StartOf(reply, j).is_null()) << "sent without the slice's MIG UUID: " << reply.dump();
  EXPECT_EQ(Job(j, 4)["state"], "admitted");
  reply = Beat("m1", 5, {{"gpus", {{{"index", 0}, {"mig", true}, {"instances", MigInstances(target, "MIG-new-")}}}}});
  const Json start = StartOf(reply, j);
  ASSERT_TRUE(start.is_object()) << reply.dump();
  EXPECT_EQ(start["devices"], Json({"MIG-new-" + std::to_string(slice)}));
}

}  // namespace
}  // namespace gpupool
