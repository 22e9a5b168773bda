// The tenant bodies of `create tenant` and `edit tenant` (tenant_request.h).
#include "cli/tenant_request.h"

#include <gtest/gtest.h>

namespace gpupool::cli {
namespace {

Args TenantArgs(const std::vector<std::string>& argv) {
  Result<Args> a = Args::Parse(argv, {"weight", "quota", "limit", "allow-gpu-cotenancy"});
  EXPECT_TRUE(a.ok()) << a.error().message;
  return *a;
}

// research as GET /v1/tenants/research shows it: 16 H100s guaranteed with 8 to borrow, 4 A100s.
const Json kResearch = Json::parse(R"({"name":"research","weight":2,"allow_gpu_cotenancy":false,
  "quotas":{"h100-80gb":{"guaranteed":16,"borrow_limit":8},"a100-80gb":{"guaranteed":4}},
  "limits":{"max_replicas":8,"max_duration_s":86400},
  "usage":{"h100-80gb":{"allocated":4,"borrowed":0}},"pending_jobs":1,"active_jobs":2})");

TEST(TenantFieldsFromArgs, CreateFromFlags) {
  Result<Json> body = TenantFieldsFromArgs(
      TenantArgs({"--weight", "1.5", "--quota", "h100-80gb=8,borrow=4,lend=none", "--quota", "a100-80gb=0.5",
                  "--limit", "max-replicas=4", "--limit", "max_duration=2h", "--limit", "default-duration=none",
                  "--allow-gpu-cotenancy", "true"}),
      nullptr);
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ(*body, Json::parse(R"({"weight":1.5,
    "quotas":{"h100-80gb":{"guaranteed":8,"borrow_limit":4},"a100-80gb":{"guaranteed":0.5}},
    "limits":{"max_replicas":4,"max_duration_s":7200,"default_duration_s":0},
    "allow_gpu_cotenancy":true})"));
}

TEST(TenantFieldsFromArgs, EditMergesQuotasIntoTheCurrentOnes) {
  // PATCH replaces the whole quotas map: the A100 quota must be sent again, unchanged.
  Result<Json> body = TenantFieldsFromArgs(TenantArgs({"--quota", "h100-80gb=24"}), &kResearch);
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ(*body, Json::parse(R"({"quotas":{"h100-80gb":{"guaranteed":24},"a100-80gb":{"guaranteed":4}}})"));
  body = TenantFieldsFromArgs(TenantArgs({"--quota", "a100-80gb=none"}), &kResearch);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ((*body)["quotas"], Json::parse(R"({"h100-80gb":{"guaranteed":16,"borrow_limit":8}})"));
  EXPECT_EQ(*TenantFieldsFromArgs(TenantArgs({}), &kResearch), Json::object());
}

TEST(TenantFieldsFromArgs, UsageErrors) {
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--weight", "heavy"},
           {"--quota", "h100-80gb"},
           {"--quota", "=4"},
           {"--quota", "h100-80gb=four"},
           {"--quota", "h100-80gb=-1"},
           {"--quota", "h100-80gb=4,borrow"},
           {"--quota", "h100-80gb=4,steal=2"},
           {"--quota", "h100-80gb=none"},  // nothing to remove on a new tenant
           {"--limit", "max-replicas"},
           {"--limit", "max-replicas=2.5"},
           {"--limit", "max-duration=soon"},
           {"--limit", "max-gpus=3"},
           {"--allow-gpu-cotenancy", "yes"}}) {
    EXPECT_FALSE(TenantFieldsFromArgs(TenantArgs(bad), nullptr).ok()) << bad[0] << " " << bad[1];
  }
}

TEST(TenantPatch, OnlyWhatChanged) {
  const Json before = EditableTenant(kResearch);
  EXPECT_EQ(before, Json::parse(R"({"name":"research","weight":2,"allow_gpu_cotenancy":false,
    "quotas":{"h100-80gb":{"guaranteed":16,"borrow_limit":8},"a100-80gb":{"guaranteed":4}},
    "limits":{"max_replicas":8,"max_duration_s":86400}})"));
  EXPECT_EQ(*TenantPatch(before, before), Json::object());
  Json after = before;
  after["weight"] = 3;
  after["quotas"].erase("a100-80gb");
  after["limits"].erase("max_duration_s");  // deleted: no limit
  EXPECT_EQ(*TenantPatch(before, after), Json::parse(R"({"weight":3,
    "quotas":{"h100-80gb":{"guaranteed":16,"borrow_limit":8}},
    "limits":{"max_replicas":8,"max_duration_s":0}})"));
  EXPECT_FALSE(TenantPatch(before, Json::array()).ok());
}

TEST(TenantRequestFromYaml, NameStaysAString) {
  Result<Json> body = TenantRequestFromYaml("name: \"123\"\nweight: 2\nquotas: {h100-80gb: {guaranteed: 4}}\n");
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(*body, Json::parse(R"({"name":"123","weight":2,"quotas":{"h100-80gb":{"guaranteed":4}}})"));
  EXPECT_EQ((*TenantRequestFromYaml("name: 007\n"))["name"], "007");
  EXPECT_FALSE(TenantRequestFromYaml("- a\n").ok());
}

}  // namespace
}  // namespace gpupool::cli
