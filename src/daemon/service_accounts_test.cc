// Service accounts, token rotation and last use (issue 18 item 6), through the core: who may do
// what, and that each survives a restart from the journal and from a snapshot.
#include <gtest/gtest.h>

#include "daemon/control_plane_fixture.h"
#include "policy/calendar/calendar.h"

namespace gpupool {
namespace {

class ServiceAccounts : public CoreTest {
 protected:
  Principal TenantAdmin(const std::string& tenant) {
    return {tenant + "-admin", Role::kTenantAdmin, *core_->state().FindTenant(tenant), ""};
  }
  Json Accounts(const std::string& tenant, int64_t ms = 2000) {
    const Reply r = core_->ListServiceAccounts(As(admin_, ms), tenant);
    EXPECT_EQ(r.status, 200) << r.body;
    return Json::parse(r.body)["items"];
  }
  Json TokenListed(const std::string& id, int64_t ms = 2000) {
    const Json tokens = Json::parse(core_->ListTokens(As(admin_, ms)).body);
    for (const Json& t : tokens["items"]) {
      if (t["id"] == id) return t;
    }
    return Json();
  }
  void Restart(bool from_snapshot) {
    ASSERT_TRUE(core_->Flush().ok());
    if (from_snapshot) {
      std::shared_ptr<const ControlPlane::SnapshotCopy> copy = core_->CopyForSnapshot();
      ASSERT_TRUE(core_->journal().WriteSnapshot(ControlPlane::EncodeSnapshot(*copy)).ok());
      ASSERT_TRUE(core_->SnapshotWritten(ControlPlane::SnapshotSeq(*copy)).ok());
    }
    core_.reset();
    core_ = Open();
  }
};

TEST_F(ServiceAccounts, ATenantAdminMakesOnesOfItsTenantAndTheirTokensActForThem) {
  const Principal research = TenantAdmin("research");
  const Reply made = core_->CreateServiceAccount(As(research), "research", R"({"name": "ci-bot", "role": "member"})");
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_EQ(Json::parse(made.body)["created_by"], "research-admin");
  // Not another tenant's (which it cannot see), not above its own role, not twice, not badly named.
  EXPECT_EQ(core_->CreateServiceAccount(As(research), "product", R"({"name": "x", "role": "member"})").status, 404);
  EXPECT_EQ(core_->CreateServiceAccount(As(research), "research", R"({"name": "boss", "role": "tenant-admin"})").status, 403);
  EXPECT_EQ(core_->CreateServiceAccount(As(research), "research", R"({"name": "ci-bot", "role": "viewer"})").status, 409);
  for (const char* bad : {R"({"name": "Ci", "role": "member"})", R"({"name": "-x", "role": "member"})",
                          R"({"name": "x", "role": "cluster-admin"})", R"({"name": "x", "role": "node-agent"})",
                          R"({"name": "x", "role": "member", "tenant": "product"})", R"({"role": "member"})"}) {
    EXPECT_EQ(core_->CreateServiceAccount(As(research), "research", bad).status, 400) << bad;
  }
  EXPECT_EQ(core_->CreateServiceAccount(As(members_["research"]), "research", R"({"name": "m", "role": "viewer"})").status, 403);
  EXPECT_EQ(core_->ListServiceAccounts(As(TenantAdmin("product")), "research").status, 404);
  ASSERT_EQ(Accounts("research").size(), 1u);

  const Reply issued = core_->CreateServiceAccountToken(As(research), "research", "ci-bot", R"({"expires_in_days": 7})");
  ASSERT_EQ(issued.status, 201) << issued.body;
  const Json token = Json::parse(issued.body);
  EXPECT_EQ(token["service_account"], "ci-bot");
  EXPECT_EQ(token["role"], "member");
  EXPECT_EQ(core_->CreateServiceAccountToken(As(research), "research", "nobody", "{}").status, 404);
  EXPECT_EQ(core_->CreateServiceAccountToken(As(research), "research", "ci-bot", R"({"role": "tenant-admin"})").status, 400);
  const Principal* bot = core_->Authenticate(token["token"], Time::FromMillis(3000));
  ASSERT_NE(bot, nullptr);
  EXPECT_EQ(bot->name, "ci-bot");
  EXPECT_EQ(bot->role, Role::kMember);
  EXPECT_EQ(bot->tenant, *core_->state().FindTenant("research"));
  // Its jobs are the tenant's; the audit log names the account.
  const Reply job = core_->SubmitJob({bot, "10.0.0.9", Time::FromMillis(3000)}, Job("research", 1), "");
  EXPECT_EQ(job.status, 201) << job.body;
  EXPECT_EQ(core_->SubmitJob({bot, "10.0.0.9", Time::FromMillis(3000)}, Job("product", 1), "").status, 404);
}

TEST_F(ServiceAccounts, DeletingOneRevokesEveryTokenOfItAcrossARestart) {
  for (const bool from_snapshot : {false, true}) {
    SCOPED_TRACE(from_snapshot ? "from a snapshot" : "from the journal");
    const std::string name = from_snapshot ? "snap-bot" : "journal-bot";
    ASSERT_EQ(core_->CreateServiceAccount(As(admin_), "research", Json({{"name", name}, {"role", "viewer"}}).dump()).status, 201);
    std::vector<std::string> secrets;
    for (int i = 0; i < 2; ++i) {
      const Reply r = core_->CreateServiceAccountToken(As(admin_), "research", name, "{}");
      ASSERT_EQ(r.status, 201) << r.body;
      secrets.push_back(Json::parse(r.body)["token"]);
    }
    Restart(from_snapshot);
    ASSERT_EQ(Accounts("research").back()["name"], name);
    EXPECT_EQ(Accounts("research").back()["tokens"].size(), 2u);
    for (const std::string& s : secrets) EXPECT_NE(core_->Authenticate(s, Time::FromMillis(3000)), nullptr);
    const Reply gone = core_->DeleteServiceAccount(As(TenantAdmin("research")), "research", name);
    ASSERT_EQ(gone.status, 200) << gone.body;
    EXPECT_EQ(Json::parse(gone.body)["revoked_tokens"], 2);
    EXPECT_EQ(core_->DeleteServiceAccount(As(admin_), "research", name).status, 404);
    Restart(from_snapshot);
    for (const std::string& s : secrets) EXPECT_EQ(core_->Authenticate(s, Time::FromMillis(3000)), nullptr);
    EXPECT_TRUE(Accounts("research").empty());
    // The name is free again; the old tokens stay revoked.
    ASSERT_EQ(core_->CreateServiceAccount(As(admin_), "research", Json({{"name", name}, {"role", "viewer"}}).dump()).status, 201);
    for (const std::string& s : secrets) EXPECT_EQ(core_->Authenticate(s, Time::FromMillis(3000)), nullptr);
    ASSERT_EQ(core_->DeleteServiceAccount(As(admin_), "research", name).status, 200);
  }
}

TEST_F(ServiceAccounts, DeletingTheTenantTakesItsAccounts) {
  ASSERT_EQ(core_->CreateTenant(As(admin_), R"({"name": "temp"})").status, 201);
  ASSERT_EQ(core_->CreateServiceAccount(As(admin_), "temp", R"({"name": "bot", "role": "member"})").status, 201);
  const Reply t = core_->CreateServiceAccountToken(As(admin_), "temp", "bot", "{}");
  ASSERT_EQ(t.status, 201);
  ASSERT_EQ(core_->DeleteTenant(As(admin_), "temp").status, 200) << "no live jobs";
  EXPECT_EQ(core_->Authenticate(Json::parse(t.body)["token"], Time::FromMillis(3000)), nullptr);
  EXPECT_EQ(core_->ListServiceAccounts(As(admin_), "temp").status, 404);
  ASSERT_EQ(core_->CreateTenant(As(admin_), R"({"name": "temp"})").status, 201);
  EXPECT_TRUE(Accounts("temp").empty()) << "a tenant put again has no accounts of its past";
}

// Rotation: a new secret for the same caller; the old one stops now, or after the grace asked,
// and both facts survive a restart.
TEST_F(ServiceAccounts, RotationReplacesTheSecretNowOrAfterTheGrace) {
  ASSERT_EQ(core_->CreateServiceAccount(As(admin_), "research", R"({"name": "deploy", "role": "member"})").status, 201);
  const Json first = Json::parse(core_->CreateServiceAccountToken(As(admin_), "research", "deploy", "{}").body);
  const Principal research = TenantAdmin("research");

  const Reply now = core_->RotateToken(As(research, 5000), first["id"], "{}");
  ASSERT_EQ(now.status, 201) << now.body;
  const Json second = Json::parse(now.body);
  EXPECT_EQ(second["replaces"], first["id"]);
  EXPECT_EQ(second["service_account"], "deploy");
  EXPECT_NE(second["token"], first["token"]);
  EXPECT_EQ(core_->Authenticate(first["token"], Time::FromMillis(5000)), nullptr) << "without grace: at once";
  EXPECT_EQ(core_->RotateToken(As(research, 5000), first["id"], "{}").status, 409) << "a revoked token";

  // The token rotates itself, keeping the old secret for an hour.
  const Principal* self = core_->Authenticate(second["token"], Time::FromMillis(6000));
  ASSERT_NE(self, nullptr);
  const Reply graced = core_->RotateToken({self, "10.0.0.9", Time::FromMillis(6000)}, second["id"],
                                          R"({"grace_s": 3600, "expires_in_days": 30})");
  ASSERT_EQ(graced.status, 201) << graced.body;
  const Json third = Json::parse(graced.body);
  EXPECT_EQ(third["replaced_expires"], Rfc3339(Time::FromMillis(6000 + 3'600'000)));
  EXPECT_EQ(third["expires"], Rfc3339(Time::FromMillis(6000 + 30 * 86'400'000LL)));
  Restart(false);
  EXPECT_NE(core_->Authenticate(second["token"], Time::FromMillis(6000 + 3'599'999)), nullptr) << "in the grace";
  EXPECT_EQ(core_->Authenticate(second["token"], Time::FromMillis(6000 + 3'600'000)), nullptr) << "after it";
  const Principal* p = core_->Authenticate(third["token"], Time::FromMillis(7000));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "deploy");
  EXPECT_EQ(p->role, Role::kMember);

  // Refusals change nothing: bad fields, another tenant's token, a grace past 7 days.
  for (const char* bad : {R"({"grace_s": 604801})", R"({"grace_s": -1})", R"({"expires_in_days": 0})",
                          R"({"name": "x"})", "[]"}) {
    EXPECT_EQ(core_->RotateToken(As(admin_, 8000), third["id"], bad).status, 400) << bad;
  }
  EXPECT_EQ(core_->RotateToken(As(TenantAdmin("product"), 8000), third["id"], "{}").status, 404);
  EXPECT_EQ(core_->RotateToken(As(members_["research"], 8000), third["id"], "{}").status, 404)
      << "a member sees no other token";
  EXPECT_NE(core_->Authenticate(third["token"], Time::FromMillis(8000)), nullptr);
  // A tenant admin cannot rotate a token above what it could create (and so obtain its secret).
  const Json boss = Json::parse(
      core_->CreateToken(As(admin_), R"({"name": "boss", "role": "tenant-admin", "tenant": "research"})").body);
  EXPECT_EQ(core_->RotateToken(As(research, 8000), boss["id"], "{}").status, 403);
}

// A rotation whose journal write fails loses both of its records: memory falls back to the disk,
// where the old secret still works and the new one never existed.
TEST_F(ServiceAccounts, AFailedWriteLosesTheWholeRotation) {
  const Json t = Json::parse(core_->CreateToken(As(admin_), R"({"name": "ci", "role": "member", "tenant": "research"})").body);
  ASSERT_TRUE(core_->Flush().ok());
  const Reply rotated = core_->RotateToken(As(admin_, 3000), t["id"], "{}");
  ASSERT_EQ(rotated.status, 201) << rotated.body;
  EXPECT_EQ(core_->Authenticate(t["token"], Time::FromMillis(3000)), nullptr) << "revoked in memory, before the flush";
  fail_next_ = 1;
  EXPECT_FALSE(core_->Flush().ok());
  EXPECT_NE(core_->Authenticate(t["token"], Time::FromMillis(4000)), nullptr) << "the old secret is what is durable";
  EXPECT_EQ(core_->Authenticate(Json::parse(rotated.body)["token"], Time::FromMillis(4000)), nullptr);
  // The use at 4000 was noted; its record goes out with the next tick's flush.
  core_->Tick(Time::FromMillis(4000), false);
  ASSERT_TRUE(core_->Flush().ok());
  Restart(false);
  EXPECT_EQ(TokenListed(t["id"])["last_used"], Rfc3339(Time::FromMillis(4000)));
  EXPECT_NE(core_->Authenticate(t["token"], Time::FromMillis(5000)), nullptr);
}

// Last use: exact in the listing at once; journaled when an hour past the journaled one (by the
// tick), so a restart shows it to within that hour.
TEST_F(ServiceAccounts, LastUseIsShownAndSurvivesARestartToTheHour) {
  const Json t = Json::parse(core_->CreateToken(As(admin_), R"({"name": "nb", "role": "viewer", "tenant": "research"})").body);
  EXPECT_TRUE(TokenListed(t["id"])["last_used"].is_null());
  ASSERT_NE(core_->Authenticate(t["token"], Time::FromMillis(10'000)), nullptr);
  EXPECT_EQ(TokenListed(t["id"])["last_used"], Rfc3339(Time::FromMillis(10'000)));
  core_->Tick(Time::FromMillis(10'000), false);  // journals the first use
  ASSERT_NE(core_->Authenticate(t["token"], Time::FromMillis(20'000)), nullptr);
  core_->Tick(Time::FromMillis(20'000), false);  // within the hour: not journaled
  EXPECT_EQ(TokenListed(t["id"])["last_used"], Rfc3339(Time::FromMillis(20'000)));
  Restart(false);
  EXPECT_EQ(TokenListed(t["id"])["last_used"], Rfc3339(Time::FromMillis(10'000)));
  const int64_t later = 10'000 + 3'600'000;
  ASSERT_NE(core_->Authenticate(t["token"], Time::FromMillis(later)), nullptr);
  core_->Tick(Time::FromMillis(later), false);
  Restart(true);
  EXPECT_EQ(TokenListed(t["id"])["last_used"], Rfc3339(Time::FromMillis(later)));
  // A failed authentication is no use.
  EXPECT_EQ(core_->Authenticate(std::string(t["token"]) + "x", Time::FromMillis(later + 1)), nullptr);
  EXPECT_EQ(TokenListed(t["id"])["last_used"], Rfc3339(Time::FromMillis(later)));
}

// OIDC mappings made through the API are journaled records: a start from the journal or from a
// snapshot has them; a deleted one stays deleted.
TEST_F(ServiceAccounts, OidcMappingsOfTheApiSurviveRestartsFromJournalAndSnapshot) {
  const std::string iss = "https://idp.example/v2.0";
  core_->SetOidcIssuers({iss});
  const auto make = [&](const std::string& group) {
    const Reply r = core_->CreateOidcMapping(
        As(admin_), Json({{"issuer", iss}, {"group", group}, {"tenant", "research"}, {"role", "member"}}).dump());
    EXPECT_EQ(r.status, 201) << r.body;
    return Json::parse(r.body)["id"].get<std::string>();
  };
  const std::string kept = make("kept"), dropped = make("dropped");
  EXPECT_EQ(core_->CreateOidcMapping(As(members_["research"]), "{}").status, 403);
  ASSERT_EQ(core_->DeleteOidcMapping(As(admin_), dropped).status, 200);
  for (const bool from_snapshot : {false, true}) {
    Restart(from_snapshot);
    core_->SetOidcIssuers({iss});
    const Json items = Json::parse(core_->ListOidcMappings(As(admin_)).body)["items"];
    ASSERT_EQ(items.size(), 1u) << items.dump();
    EXPECT_EQ(items[0]["id"], kept);
    EXPECT_EQ(items[0]["group"], "kept");
    EXPECT_EQ(items[0]["created_by"], "admin");
    EXPECT_EQ(core_->DeleteOidcMapping(As(admin_), dropped).status, 404);
  }
  // The mapping grants what it says to a verified caller of that issuer in that group.
  OidcIssuer config;
  config.issuer = iss;
  OidcIdentity who{iss, "u-1", "u1@example.com", {"kept"}, Time::FromMillis(9'000'000), &config};
  Result<Principal> p = core_->OidcPrincipal(who);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->role, Role::kMember);
  EXPECT_EQ(p->tenant, *core_->state().FindTenant("research"));
  who.groups = {"dropped"};
  EXPECT_FALSE(core_->OidcPrincipal(who).ok());
  // A mapping to a tenant deleted since grants nothing.
  ASSERT_EQ(core_->CreateTenant(As(admin_), R"({"name": "temp"})").status, 201);
  ASSERT_EQ(core_->CreateOidcMapping(As(admin_), Json({{"issuer", iss}, {"group", "t"}, {"tenant", "temp"},
                                                       {"role", "viewer"}}).dump()).status, 201);
  who.groups = {"t"};
  ASSERT_TRUE(core_->OidcPrincipal(who).ok());
  ASSERT_EQ(core_->DeleteTenant(As(admin_), "temp").status, 200);
  EXPECT_FALSE(core_->OidcPrincipal(who).ok());
}

}  // namespace
}  // namespace gpupool
