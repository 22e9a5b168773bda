#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "api/auth.h"
#include "api/decode.h"
#include "api/openapi.h"
#include "api/page.h"
#include "model/demo_cluster.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

Json ValidJob() {
  return Json::parse(R"({"tenant": "research", "name": "train", "priority_class": "training",
    "replicas": 2, "resources": {"flavor": "h100-80gb", "gpus": 8},
    "duration_estimate_s": 3600, "command": ["python", "train.py"]})");
}

Principal Admin() { return {"admin", Role::kClusterAdmin, TenantId(), ""}; }

TEST(DecodeJob, AcceptsTheThreeResourceForms) {
  const State s = DemoCluster();
  Result<JobSpec> whole = DecodeJobRequest(s, Admin(), ValidJob().dump());
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_EQ(whole->shape.kind, ShapeKind::kWholeGpus);
  EXPECT_EQ(whole->shape.gpus, 8);
  EXPECT_EQ(whole->replicas, 2);
  EXPECT_EQ(whole->estimated_duration, Duration::Seconds(3600));

  Json mig = ValidJob();
  mig["replicas"] = 1;
  mig["resources"] = {{"flavor", "h100-80gb"}, {"mig_profile", "1g.10gb"}};
  Result<JobSpec> m = DecodeJobRequest(s, Admin(), mig.dump());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->shape.kind, ShapeKind::kMigProfile);
  EXPECT_EQ(s.catalogue().model(m->shape.flavor).profiles[m->shape.mig_profile].name, "1g.10gb");

  Json frac = ValidJob();
  frac["replicas"] = 1;
  frac["tenant"] = "interns";
  frac["resources"] = {{"flavor", "a100-80gb"}, {"gpu_fraction", 0.25}, {"memory_gb", 20}};
  Result<JobSpec> f = DecodeJobRequest(s, Admin(), frac.dump());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->shape.kind, ShapeKind::kGpuFraction);
  EXPECT_EQ(f->shape.milli, 250);
  EXPECT_EQ(f->shape.gpu_memory_mib, 20u * 1024);
}

// Each bad body is rejected with a message naming what is wrong.
TEST(DecodeJob, BadInputTable) {
  const State s = DemoCluster();
  struct Case {
    const char* what;
    std::function<void(Json&)> edit;
    const char* message_has;
  };
  const std::vector<Case> cases = {
      {"unknown field", [](Json& j) { j["colour"] = "red"; }, "unknown field 'colour'"},
      {"unknown nested field", [](Json& j) { j["resources"]["cores"] = 2; }, "resources.cores"},
      {"missing tenant", [](Json& j) { j.erase("tenant"); }, "tenant"},
      {"tenant wrong type", [](Json& j) { j["tenant"] = 7; }, "tenant"},
      {"unknown tenant", [](Json& j) { j["tenant"] = "nobody"; }, "unknown tenant"},
      {"unknown class", [](Json& j) { j["priority_class"] = "urgent"; }, "urgent"},
      {"zero replicas", [](Json& j) { j["replicas"] = 0; }, "replicas"},
      {"fractional replicas", [](Json& j) { j["replicas"] = 1.5; }, "replicas"},
      {"huge replicas", [](Json& j) { j["replicas"] = 100000; }, "replicas"},
      {"negative duration", [](Json& j) { j["duration_estimate_s"] = -5; }, "duration_estimate_s"},
      {"string duration", [](Json& j) { j["duration_estimate_s"] = "1h"; }, "duration_estimate_s"},
      {"unknown flavor", [](Json& j) { j["resources"]["flavor"] = "v100"; }, "v100"},
      {"two forms", [](Json& j) { j["resources"]["mig_profile"] = "1g.10gb"; }, "exactly one"},
      {"no form", [](Json& j) { j["resources"].erase("gpus"); }, "exactly one"},
      {"too many gpus", [](Json& j) { j["resources"]["gpus"] = 17; }, "gpus"},
      {"bad profile", [](Json& j) { j["resources"] = {{"flavor", "h100-80gb"}, {"mig_profile", "9g.99gb"}}; }, "9g.99gb"},
      {"fraction above one", [](Json& j) { j["resources"] = {{"flavor", "a100-80gb"}, {"gpu_fraction", 1.5}, {"memory_gb", 8}}; }, "gpu_fraction"},
      {"fraction too fine", [](Json& j) { j["resources"] = {{"flavor", "a100-80gb"}, {"gpu_fraction", 0.0001}, {"memory_gb", 8}}; }, "gpu_fraction"},
      {"fraction without memory", [](Json& j) { j["resources"] = {{"flavor", "a100-80gb"}, {"gpu_fraction", 0.5}}; }, "memory_gb"},
      {"empty command", [](Json& j) { j["command"] = Json::array(); }, "command"},
      {"command not strings", [](Json& j) { j["command"] = {1, 2}; }, "command"},
      {"bad topology", [](Json& j) { j["topology"] = {{"level", "galaxy"}}; }, "topology.level"},
      {"empty name", [](Json& j) { j["name"] = ""; }, "name"},
      {"flavor and flavors", [](Json& j) { j["resources"]["flavors"] = {"a100-80gb"}; }, "one of 'flavor'"},
      {"no flavor", [](Json& j) { j["resources"].erase("flavor"); }, "one of 'flavor'"},
      {"empty flavors", [](Json& j) { j["resources"] = {{"flavors", Json::array()}, {"gpus", 1}}; }, "1 to 8"},
      {"flavors not names", [](Json& j) { j["resources"] = {{"flavors", {1, 2}}, {"gpus", 1}}; }, "names"},
      {"unknown in flavors", [](Json& j) { j["resources"] = {{"flavors", {"h100-80gb", "v100"}}, {"gpus", 1}}; }, "v100"},
      {"flavor twice", [](Json& j) { j["resources"] = {{"flavors", {"h100-80gb", "h100-80gb"}}, {"gpus", 1}}; }, "twice"},
      {"no GPU and no CPU", [](Json& j) { j["resources"]["gpus"] = 0; }, "CPU or memory"},
      {"MIG on two models", [](Json& j) { j["resources"] = {{"flavors", {"h100-80gb", "a100-80gb"}}, {"mig_profile", "1g.10gb"}}; }, "MIG"},
  };
  for (const Case& c : cases) {
    Json j = ValidJob();
    c.edit(j);
    Result<JobSpec> r = DecodeJobRequest(s, Admin(), j.dump());
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_NE(r.error().message.find(c.message_has), std::string::npos)
        << c.what << ": " << r.error().message;
  }
  for (const char* text : {"", "{", "[]", "null", "\"x\"", "{\"tenant\": }", "{} {}"}) {
    EXPECT_FALSE(DecodeJobRequest(s, Admin(), text).ok()) << text;
  }
}

TEST(DecodeJob, AJobOfNoGpuAsksForCpuOrMemory) {
  const State s = DemoCluster();
  Json j = ValidJob();
  j["resources"]["gpus"] = 0;
  j["cpu_milli"] = 4000;
  Result<JobSpec> r = DecodeJobRequest(s, Admin(), j.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->shape.gpus, 0);
  EXPECT_EQ(r->shape.cpu_milli, 4000);
}

TEST(DecodeJob, AListOfFlavorsIsKeptInOrderAndTheFirstIsTriedFirst) {
  const State s = DemoCluster();
  Json j = ValidJob();
  j["resources"] = {{"flavors", {"a100-80gb", "h100-80gb"}}, {"gpus", 2}};
  Result<JobSpec> r = DecodeJobRequest(s, Admin(), j.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->flavors.size(), 2u);
  EXPECT_EQ(s.catalogue().model(r->flavors[0]).name, "a100-80gb");
  EXPECT_EQ(s.catalogue().model(r->flavors[1]).name, "h100-80gb");
  EXPECT_EQ(r->shape.flavor, r->flavors[0]);
  // A list of one is the same as naming that flavor.
  j["resources"] = {{"flavors", {"h100-80gb"}}, {"gpus", 2}};
  r = DecodeJobRequest(s, Admin(), j.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->flavors.empty());
  EXPECT_EQ(s.catalogue().model(r->shape.flavor).name, "h100-80gb");
}

TEST(DecodeJob, AnotherTenantIsUnknownNotForbidden) {
  const State s = DemoCluster();
  const Principal member{"bob", Role::kMember, *s.FindTenant("product"), ""};
  Result<JobSpec> r = DecodeJobRequest(s, member, ValidJob().dump());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(r.error().message, "unknown tenant 'research'");
}

TEST(DecodeTenant, GpuAmountsAreExactAndValidated) {
  const State s = DemoCluster();
  Result<Tenant> t = DecodeTenantRequest(
      s, R"({"name": "vision", "weight": 1.5, "quotas": {"h100-80gb": {"guaranteed": 2.5, "borrow_limit": 0.001}},
             "limits": {"max_replicas": 4, "max_duration_s": 7200}})", nullptr);
  ASSERT_TRUE(t.ok()) << t.error().message;
  const FlavorQuota& q = t->quotas.at(*s.catalogue().Find("h100-80gb"));
  EXPECT_EQ(q.guaranteed.units(), 17500);
  EXPECT_EQ(q.borrow_limit->units(), 7);
  EXPECT_EQ(t->weight_milli, 1500);
  EXPECT_EQ(t->limits.max_duration, Duration::Seconds(7200));
  // Exact at scale: decimal fractions that are whole 1/7000 GPUs, up to a million GPUs.
  Result<Tenant> big = DecodeTenantRequest(
      s, R"({"name": "big", "quotas": {"h100-80gb": {"guaranteed": 999999.1, "borrow_limit": 0.1}}})", nullptr);
  ASSERT_TRUE(big.ok()) << big.error().message;
  EXPECT_EQ(big->quotas.at(*s.catalogue().Find("h100-80gb")).guaranteed.units(), 6999993700);
  EXPECT_EQ(big->quotas.at(*s.catalogue().Find("h100-80gb")).borrow_limit->units(), 700);
  for (const char* bad : {R"({"name": "Vision"})", R"({"name": "-x"})", R"({"name": "x", "weight": 0})",
                          R"({"name": "x", "weight": 0.00000000000001803994536})",  // rounds to 0 (fuzz)
                          R"({"name": "x", "quotas": {"v100": {"guaranteed": 1}}})",
                          R"({"name": "x", "quotas": {"h100-80gb": {"guaranteed": -1}}})",
                          R"({"name": "x", "quotas": {"h100-80gb": {"guaranteed": 0.00001}}})",
                          R"({"name": "x", "quotas": {"h100-80gb": {"guaranteed": 100.00001}}})",  // was rounded
                          R"({"name": "x", "quotas": {"h100-80gb": {"guaranteed": 999999.9999}}})",
                          R"({"name": "x", "quotas": {"h100-80gb": {}}})",
                          R"({"name": "x", "colour": 1})", R"({"name": "x", "limits": {"max_replicas": -1}})"}) {
    EXPECT_FALSE(DecodeTenantRequest(s, bad, nullptr).ok()) << bad;
  }
}

TEST(DecodeTenant, PatchKeepsWhatItDoesNotName) {
  const State s = DemoCluster();
  const Tenant& base = s.tenant(*s.FindTenant("research"));
  Result<Tenant> t = DecodeTenantRequest(s, R"({"weight": 3})", &base);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->weight_milli, 3000);
  EXPECT_EQ(t->quotas.size(), base.quotas.size());
  EXPECT_EQ(t->name, "research");
  EXPECT_FALSE(DecodeTenantRequest(s, R"({"name": "other"})", &base).ok());
}

TEST(DecodePriorityClass, ChecksFields) {
  Result<PriorityClass> pc = DecodePriorityClassRequest(R"({"name": "urgent", "value": 900, "preemptible": false})");
  ASSERT_TRUE(pc.ok());
  EXPECT_EQ(pc->value, 900);
  EXPECT_FALSE(pc->preemptible);
  EXPECT_FALSE(DecodePriorityClassRequest(R"({"name": "urgent"})").ok());
  EXPECT_FALSE(DecodePriorityClassRequest(R"({"name": "urgent", "value": "high"})").ok());
  EXPECT_FALSE(DecodePriorityClassRequest(R"({"name": "urgent", "value": 1, "x": 1})").ok());
  // Above INT64_MAX the JSON number is unsigned; it once wrapped to -1 and was accepted.
  EXPECT_FALSE(DecodePriorityClassRequest(R"({"name": "urgent", "value": 18446744073709551615})").ok());
  EXPECT_FALSE(DecodePriorityClassRequest(R"({"name": "urgent", "value": 9223372036854775808})").ok());
}

TEST(Errors, BodyHasCodeMessageDetailsAndStatusMaps) {
  const Json j = Json::parse(ErrorBody(InvalidArgument("bad 'x'"), "d"));
  EXPECT_EQ(j["error"]["message"], "bad 'x'");
  EXPECT_EQ(j["error"]["details"], "d");
  EXPECT_TRUE(j["error"]["code"].is_string());
  EXPECT_EQ(HttpStatus(ErrorCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatus(ErrorCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatus(ErrorCode::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatus(ErrorCode::kNotFound), 404);
  EXPECT_EQ(HttpStatus(ErrorCode::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatus(ErrorCode::kUnavailable), 503);
}

TEST(Tokens, OnlyTheHashIsKeptAndRevocationIsImmediate) {
  TokenStore store;
  const Principal p{"alice", Role::kMember, TenantId(1), ""};
  auto [record, secret] = store.Create(p, Time::FromMillis(1));
  EXPECT_EQ(secret.rfind("gp_" + record.id + "_", 0), 0u);
  EXPECT_EQ(record.sha256, Sha256Hex(secret));
  EXPECT_EQ(record.sha256.find(secret), std::string::npos);
  EXPECT_EQ(store.Authenticate(secret, Time::FromMillis(1)), nullptr) << "not added yet";
  store.Add(record);
  const Principal* who = store.Authenticate(secret, Time::FromMillis(1));
  ASSERT_NE(who, nullptr);
  EXPECT_EQ(who->name, "alice");
  EXPECT_EQ(who->token_id, record.id);
  EXPECT_EQ(store.Authenticate(secret + "x", Time::FromMillis(1)), nullptr);
  EXPECT_EQ(store.Authenticate("", Time::FromMillis(1)), nullptr);
  ASSERT_TRUE(store.Revoke(record.id).ok());
  EXPECT_EQ(store.Authenticate(secret, Time::FromMillis(1)), nullptr);
  EXPECT_FALSE(store.Revoke("nope").ok());
}

TEST(Tokens, Sha256MatchesAKnownVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Roles, ScopeRules) {
  const Principal admin{"a", Role::kClusterAdmin, TenantId(), ""};
  const Principal viewer{"v", Role::kViewer, TenantId(2), ""};
  EXPECT_TRUE(admin.Sees(TenantId(5)));
  EXPECT_TRUE(viewer.Sees(TenantId(2)));
  EXPECT_FALSE(viewer.Sees(TenantId(3)));
  EXPECT_FALSE(viewer.Writes());
  for (Role r : {Role::kClusterAdmin, Role::kTenantAdmin, Role::kMember, Role::kViewer}) {
    EXPECT_EQ(*ParseRole(RoleName(r)), r);
  }
  EXPECT_FALSE(ParseRole("root").ok());
}

TEST(Rfc3339, ParsesUtcOffsetsAndFractions) {
  EXPECT_EQ(ParseRfc3339("1970-01-01T00:00:00Z")->millis(), 0);
  EXPECT_EQ(ParseRfc3339("2026-12-01T10:00:00Z")->millis(), 1796119200000);
  EXPECT_EQ(ParseRfc3339("2026-12-01T11:30:00+01:30")->millis(), 1796119200000);
  EXPECT_EQ(ParseRfc3339("2026-12-01T08:00:00-02:00")->millis(), 1796119200000);
  EXPECT_EQ(ParseRfc3339("2026-12-01T10:00:00.25Z")->millis(), 1796119200250);
  EXPECT_EQ(ParseRfc3339("2026-12-01T10:00:00.250000Z")->millis(), 1796119200250);
  EXPECT_EQ(ParseRfc3339("2024-02-29T00:00:00Z")->millis(), 1709164800000);  // leap day
  for (const char* bad : {"", "2026-12-01", "2026-12-01T10:00Z", "2026-12-01t10:00:00z", "2026-12-01T10:00:00",
                          "2026-13-01T10:00:00Z", "2026-02-29T00:00:00Z", "2026-12-01T24:00:00Z",
                          "2026-12-01T10:00:00.Z", "2026-12-01T10:00:00.0001Z", "2026-12-01T10:00:00+0100",
                          "1969-12-31T23:59:59Z", "2026-12-01T10:00:00Zjunk", "２026-12-01T10:00:00Z"}) {
    EXPECT_FALSE(ParseRfc3339(bad).ok()) << bad;
  }
}

TEST(DecodeReservation, TenantWindowAndMaintenance) {
  const State s = DemoCluster();
  const Principal admin{"root", Role::kClusterAdmin, TenantId(), "t"};
  const Principal member{"bob", Role::kMember, *s.FindTenant("research"), "t2"};
  Result<ReservationRequest> r = DecodeReservationRequest(
      s, member, R"({"tenant": "research", "flavor": "h100-80gb", "gpus": 8, "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->amount, GpuEq::Gpus(8));
  EXPECT_EQ((r->end - r->start), Duration::Hours(2));
  EXPECT_FALSE(r->maintenance);
  Result<ReservationRequest> m = DecodeReservationRequest(
      s, admin, R"({"maintenance": true, "flavor": "a100-80gb", "gpus": 8, "start": "2026-12-01T10:00:00Z", "end": "2026-12-02T10:00:00Z"})");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_FALSE(m->tenant.valid());
  EXPECT_EQ(DecodeReservationRequest(s, member, R"({"tenant": "product", "flavor": "h100-80gb", "gpus": 1, "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z"})")
                .error().code, ErrorCode::kNotFound) << "another tenant reads as unknown";
  for (const char* bad : {
           R"({"tenant": "research", "flavor": "v100", "gpus": 1, "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z"})",
           R"({"tenant": "research", "flavor": "h100-80gb", "gpus": 0, "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z"})",
           R"({"tenant": "research", "flavor": "h100-80gb", "gpus": 1.5, "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z"})",
           R"({"tenant": "research", "flavor": "h100-80gb", "gpus": 1, "start": "2026-12-01T12:00:00Z", "end": "2026-12-01T12:00:00Z"})",
           R"({"tenant": "research", "flavor": "h100-80gb", "gpus": 1, "start": "tomorrow", "end": "2026-12-01T12:00:00Z"})",
           R"({"tenant": "research", "flavor": "h100-80gb", "gpus": 1, "start": 1796119200, "end": "2026-12-01T12:00:00Z"})",
           R"({"tenant": "research", "flavor": "h100-80gb", "gpus": 1, "start": "2026-12-01T10:00:00Z"})",
           R"({"tenant": "research", "flavor": "h100-80gb", "gpus": 1, "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z", "x": 1})",
           R"({"maintenance": true, "tenant": "research", "flavor": "h100-80gb", "gpus": 1, "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z"})",
           R"({"maintenance": "yes", "flavor": "h100-80gb", "gpus": 1, "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z"})"}) {
    EXPECT_FALSE(DecodeReservationRequest(s, admin, bad).ok()) << bad;
  }
}

TEST(DecodeQueries, AvailabilityAndCalendar) {
  const State s = DemoCluster();
  using Q = std::map<std::string, std::string>;
  Result<AvailabilityQuery> e = DecodeAvailabilityQuery(s, Q{{"flavor", "h100-80gb"}, {"gpus", "8"}, {"duration_s", "7200"}});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_TRUE(e->earliest);
  EXPECT_EQ(e->amount, GpuEq::Gpus(8));
  EXPECT_EQ(e->duration, Duration::Hours(2));
  EXPECT_FALSE(e->after.has_value());
  Result<AvailabilityQuery> w = DecodeAvailabilityQuery(
      s, Q{{"flavor", "h100-80gb"}, {"start", "2031-01-01T00:00:00Z"}, {"end", "2031-01-01T01:00:00Z"}});
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_FALSE(w->earliest);
  EXPECT_EQ(w->end - w->start, Duration::Hours(1));
  for (const Q& bad : {Q{{"gpus", "8"}, {"duration_s", "60"}}, Q{{"flavor", "v100"}, {"gpus", "1"}, {"duration_s", "60"}},
                       Q{{"flavor", "h100-80gb"}}, Q{{"flavor", "h100-80gb"}, {"gpus", "8"}},
                       Q{{"flavor", "h100-80gb"}, {"gpus", "0"}, {"duration_s", "60"}},
                       Q{{"flavor", "h100-80gb"}, {"gpus", "8x"}, {"duration_s", "60"}},
                       Q{{"flavor", "h100-80gb"}, {"gpus", "1"}, {"duration_s", "60"}, {"start", "2031-01-01T00:00:00Z"}},
                       Q{{"flavor", "h100-80gb"}, {"start", "2031-01-01T01:00:00Z"}, {"end", "2031-01-01T00:00:00Z"}}}) {
    EXPECT_FALSE(DecodeAvailabilityQuery(s, bad).ok());
  }
  Result<CalendarQuery> c = DecodeCalendarQuery(
      s, Q{{"flavor", "a100-80gb"}, {"start", "2031-01-01T00:00:00Z"}, {"end", "2031-01-02T00:00:00Z"}, {"step_s", "3600"}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->step, Duration::Hours(1));
  EXPECT_FALSE(DecodeCalendarQuery(s, Q{{"flavor", "a100-80gb"}, {"start", "2031-01-01T00:00:00Z"},
                                        {"end", "2031-01-02T00:00:00Z"}, {"step_s", "0"}}).ok());
}

TEST(DecodePrices, ExactMicrosAndClearRefusals) {
  const State s = DemoCluster();
  const FlavorId h100 = *s.catalogue().Find("h100-80gb");
  auto price = [&](const std::string& v) -> Result<int64_t> {
    Result<PriceList> p = DecodePriceList(s, R"({"flavors": {"h100-80gb": {"per_gpu_hour": )" + v + "}}}");
    if (!p.ok()) return p.error();
    return p->micros_per_gpu_hour.at(h100);
  };
  for (const auto& [text, micros] : std::vector<std::pair<std::string, int64_t>>{
           {R"("4.1")", 4'100'000}, {"4.1", 4'100'000}, {"3", 3'000'000}, {R"("0.000001")", 1},
           {"0.000001", 1}, {R"("1000000")", 1'000'000'000'000}, {R"("2.990000")", 2'990'000}, {"0", 0}}) {
    Result<int64_t> m = price(text);
    ASSERT_TRUE(m.ok()) << text << ": " << m.error().message;
    EXPECT_EQ(*m, micros) << text;
  }
  for (const std::string bad : {R"("1.0000001")", "1.0000001", R"("-1")", "-1", R"("1000000.000001")", "1e7",
                                R"("")", R"(".5")", R"("5.")", R"("1,5")", "true", "null", R"("0x10")"}) {
    EXPECT_FALSE(price(bad).ok()) << bad;
  }
  Result<PriceList> p = DecodePriceList(s, R"({"flavors": {"h100-80gb": {"per_gpu_hour": "2.99", "on_demand_per_gpu_hour": 7}},
                                              "bill_reserved_idle": false})");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->on_demand_micros_per_gpu_hour.at(h100), 7'000'000);
  EXPECT_FALSE(p->bill_reserved_idle);
  // What PriceListToJson writes decodes to the same list.
  Result<PriceList> again = DecodePriceList(s, PriceListToJson(s, *p));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *p);
}

TEST(DecodeQueries, UsageIsScopedToTheCaller) {
  const State s = DemoCluster();
  using Q = std::map<std::string, std::string>;
  const Principal admin{"admin", Role::kClusterAdmin, TenantId(), ""};
  const Principal member{"bob", Role::kMember, *s.FindTenant("research"), ""};
  Result<UsageQuery> all = DecodeUsageQuery(s, admin, Q{{"from", "2026-11-01T00:00:00Z"}});
  ASSERT_TRUE(all.ok());
  EXPECT_FALSE(all->tenant.has_value());
  EXPECT_TRUE(all->by_flavor && all->by_kind && !all->csv && !all->to);
  Result<UsageQuery> mine = DecodeUsageQuery(s, member, Q{{"from", "2026-11-01T00:00:00Z"}, {"group_by", "kind"}, {"format", "csv"}});
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->tenant, *s.FindTenant("research"));
  EXPECT_TRUE(!mine->by_flavor && mine->by_kind && mine->csv);
  EXPECT_EQ(DecodeUsageQuery(s, member, Q{{"from", "2026-11-01T00:00:00Z"}, {"tenant", "product"}}).error().code,
            ErrorCode::kNotFound);
  for (const Q& bad : {Q{}, Q{{"from", "2026-11-01"}}, Q{{"from", "2026-11-01T00:00:00Z"}, {"group_by", "flavor,,kind"}},
                       Q{{"from", "2026-11-01T00:00:00Z"}, {"to", "2026-10-01T00:00:00Z"}},
                       Q{{"from", "2026-11-01T00:00:00Z"}, {"format", "pdf"}}}) {
    EXPECT_FALSE(DecodeUsageQuery(s, admin, bad).ok());
  }
}

// limit 1..1000 or absent (the whole list); a cursor round-trips to its position and belongs
// to one list; anything else is refused.
TEST(DecodeQueries, PageLimitAndCursor) {
  using Q = std::map<std::string, std::string>;
  Result<PageQuery> none = DecodePageQuery(Q{}, "jobs");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->limit || none->before);
  const std::string c = EncodeCursor("jobs", 42);
  EXPECT_EQ(c.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), std::string::npos) << c;
  EXPECT_EQ(c.find("42"), std::string::npos) << "opaque, not the number in clear: " << c;
  Result<PageQuery> page = DecodePageQuery(Q{{"limit", "1000"}, {"cursor", c}, {"state", "pending"}}, "jobs", {"tenant", "state"});
  ASSERT_TRUE(page.ok()) << page.error().message;
  EXPECT_EQ(page->limit, 1000);
  EXPECT_EQ(page->before, 42u);
  EXPECT_EQ(DecodePageQuery(Q{{"limit", "1"}}, "audit")->limit, 1);
  EXPECT_FALSE(DecodePageQuery(Q{{"cursor", ""}}, "audit")->before) << "an empty cursor is the first page";
  EXPECT_EQ(DecodePageQuery(Q{{"cursor", EncodeCursor("audit", 9223372036854775807ULL)}}, "audit")->before,
            9223372036854775807ULL);
  for (const Q& bad : {Q{{"limit", "0"}}, Q{{"limit", "1001"}}, Q{{"limit", "-5"}}, Q{{"limit", "10x"}}, Q{{"limit", ""}},
                       Q{{"limit", "05"}}, Q{{"limit", "1e2"}}, Q{{"limit", "99999999999999999999"}},
                       Q{{"cursor", "garbage!"}}, Q{{"cursor", c + "A"}}, Q{{"cursor", c.substr(1)}},
                       Q{{"cursor", EncodeCursor("audit", 42)}},  // another list's
                       Q{{"cursor", EncodeCursor("jobs", 0)}}, Q{{"cursor", EncodeCursor("jobs", 9223372036854775808ULL)}},
                       Q{{"cursor", std::string(200, 'A')}}, Q{{"limt", "10"}}, Q{{"tenant", "x"}}}) {
    Result<PageQuery> r = DecodePageQuery(bad, "jobs");
    ASSERT_FALSE(r.ok()) << bad.begin()->first << "=" << bad.begin()->second;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  }
  EXPECT_NE(DecodePageQuery(Q{{"limit", "0"}}, "jobs").error().message.find("from 1 to 1000"), std::string::npos);
  EXPECT_NE(DecodePageQuery(Q{{"cursor", "x"}}, "jobs").error().message.find("next_cursor"), std::string::npos);
}

TEST(Utf8, AcceptsWellFormedRejectsTheRest) {
  EXPECT_TRUE(ValidUtf8(""));
  EXPECT_TRUE(ValidUtf8("plain ascii"));
  EXPECT_TRUE(ValidUtf8("gr\xC3\xBC\xC3\x9F \xE2\x82\xAC \xF0\x9F\x9A\x80"));  // ü ß € rocket
  EXPECT_TRUE(ValidUtf8("\xF4\x8F\xBF\xBF"));                                     // U+10FFFF
  for (const char* bad : {"\xFE", "\xC3", "a\xE2\x82", "\xC0\xAF", "\xE0\x80\xAF",  // truncated, overlong
                          "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "ok\xF0\x9F\x9A"}) {
    EXPECT_FALSE(ValidUtf8(bad)) << bad;
  }
}

// The document renders what it is given (the daemon gives it its route table:
// daemon/http_api_test.cc checks the whole document).
TEST(OpenApi, RendersTheRoutesItIsGiven) {
  const Json doc = Json::parse(OpenApiDocument(
      {{"GET", "/v1/things/{id}", "any token", {.summary = "a thing", .who = "anyone", .query = {{"n", "integer"}}}},
       {"POST", "/v1/things", "member", {.summary = "make one", .who = "members", .request = "Object", .success = 201}}}));
  EXPECT_EQ(doc["openapi"], "3.0.3");
  EXPECT_EQ(doc["paths"].size(), 2u);
  const Json& get = doc["paths"]["/v1/things/{id}"]["get"];
  EXPECT_EQ(get["parameters"][0]["name"], "id");
  EXPECT_EQ(get["parameters"][0]["in"], "path");
  EXPECT_EQ(get["parameters"][1]["schema"]["type"], "integer");
  EXPECT_EQ(get["x-minimum-role"], "any token");
  const Json& post = doc["paths"]["/v1/things"]["post"];
  EXPECT_TRUE(post["responses"].contains("201"));
  EXPECT_EQ(post["requestBody"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/Object");
  EXPECT_EQ(post["description"], "Who: members");
}

}  // namespace
}  // namespace gpupool
