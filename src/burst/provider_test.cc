#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "burst/command_provider.h"
#include "burst/settings.h"
#include "burst/sim_provider.h"
#include "burst/test_scripts.h"
#include <nlohmann/json.hpp>

namespace gpupool {
namespace {

const Catalogue& Cat() {
  static const Catalogue c = Catalogue::BuiltIn();
  return c;
}
FlavorId Flavor(const char* name) { return *Cat().Find(name); }
bool Says(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// --- SimulatedProvider -----------------------------------------------------------------------

// h100: 8-GPU nodes, 5 minutes to provision, 2 nodes of capacity. a100: 4-GPU nodes, 1 minute.
class SimProviderTest : public ::testing::Test {
 protected:
  SimProviderTest()
      : provider_(Cat(), {{Flavor("h100-80gb"),
                           {.flavor = Flavor("h100-80gb"), .gpus_per_node = 8,
                            .micros_per_gpu_hour = 4'000'000,
                            .provisioning_delay = Duration::Minutes(5), .cpu_milli = 96'000,
                            .memory_mib = 1 << 20, .max_nodes = 2}},
                          {Flavor("a100-40gb"),
                           {.flavor = Flavor("a100-40gb"), .gpus_per_node = 4,
                            .provisioning_delay = Duration::Minutes(1), .max_nodes = 4}}}) {}
  ProvisionRequest H100(int nodes = 1) {
    return {.tenant = TenantId(0), .flavor = Flavor("h100-80gb"), .nodes = nodes,
            .gpus_per_node = 8, .for_job = JobId(1)};
  }
  SimulatedProvider provider_;
};

TEST_F(SimProviderTest, NodesAreReadyAfterTheDelay) {
  const Time t0 = Time::FromSeconds(1000);
  auto id = provider_.Provision(H100(), 0, t0);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "sim-000001");
  EXPECT_TRUE(provider_.Poll(t0 + Duration::Minutes(4)).empty());
  const std::vector<ProvisionedNode> ready = provider_.Poll(t0 + Duration::Minutes(5));
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0], (ProvisionedNode{.request_id = "sim-000001", .name = "od-h100-80gb-0001",
                                       .flavor = Flavor("h100-80gb"), .gpus = 8,
                                       .cpu_milli = 96'000, .memory_mib = 1 << 20,
                                       .ready = t0 + Duration::Minutes(5)}));
  EXPECT_TRUE(provider_.Poll(t0 + Duration::Minutes(60)).empty());  // each node once
}

TEST_F(SimProviderTest, PollReturnsInReadyOrder) {
  // The h100 asked first is ready at 5 min, the a100 asked second at 1 min.
  const Time t0 = Time::FromSeconds(0);
  ASSERT_TRUE(provider_.Provision(H100(), 0, t0).ok());
  ASSERT_TRUE(provider_.Provision({.tenant = TenantId(1), .flavor = Flavor("a100-40gb"),
                                   .nodes = 1, .gpus_per_node = 4},
                                  0, t0)
                  .ok());
  const std::vector<ProvisionedNode> ready = provider_.Poll(t0 + Duration::Hours(1));
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].name, "od-a100-40gb-0002");
  EXPECT_EQ(ready[1].name, "od-h100-80gb-0001");
}

TEST_F(SimProviderTest, CapacityIsExhaustedAndFreedByRelease) {
  const Time t0 = Time::FromSeconds(0);
  ASSERT_TRUE(provider_.Provision(H100(2), 0, t0).ok());
  ASSERT_TRUE(provider_.Provision(H100(2), 1, t0).ok());
  auto third = provider_.Provision(H100(), 0, t0);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, ErrorCode::kResourceExhausted);
  EXPECT_TRUE(Says(third.error().message, "h100-80gb capacity exhausted: 2 of 2"));
  EXPECT_EQ(provider_.in_use(Flavor("h100-80gb")), 2);

  EXPECT_EQ(provider_.Release("od-h100-80gb-0001", t0).error().code, ErrorCode::kNotFound)
      << "not ready yet";
  ASSERT_EQ(provider_.Poll(t0 + Duration::Minutes(5)).size(), 2u);
  EXPECT_TRUE(provider_.Release("od-h100-80gb-0001", t0).ok());
  EXPECT_EQ(provider_.in_use(Flavor("h100-80gb")), 1);
  EXPECT_EQ(provider_.Release("od-h100-80gb-0001", t0).error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(provider_.Provision(H100(), 0, t0).ok());
}

TEST_F(SimProviderTest, BadRequestsAreRefused) {
  struct Row { const char* name; ProvisionRequest req; int index; const char* says; };
  const Row rows[] = {
      {"index out of range", H100(1), 1, "node index 1 outside [0, 1)"},
      {"no nodes", H100(0), 0, "nodes must be >= 1"},
      {"wrong size", {.tenant = TenantId(0), .flavor = Flavor("h100-80gb"), .nodes = 1,
                      .gpus_per_node = 4}, 0, "have 8 GPUs, not 4"},
      {"no offer", {.tenant = TenantId(0), .flavor = Flavor("h200-141gb"), .nodes = 1,
                    .gpus_per_node = 8}, 0, "no on-demand offer for h200-141gb"},
  };
  for (const Row& r : rows) {
    auto id = provider_.Provision(r.req, r.index, Time());
    ASSERT_FALSE(id.ok()) << r.name;
    EXPECT_EQ(id.error().code, ErrorCode::kInvalidArgument) << r.name;
    EXPECT_TRUE(Says(id.error().message, r.says)) << r.name << ": " << id.error().message;
  }
  EXPECT_EQ(provider_.in_use(Flavor("h100-80gb")), 0);
}

// --- CommandProvider -------------------------------------------------------------------------

// Scripts in a fresh temporary directory (ScriptDir); `log` collects what the scripts report.
class CommandProviderTest : public ::testing::Test, public ScriptDir {
 protected:
  std::string Log() const { return Read("log"); }
  CommandProvider MakeProvider(const std::string& create_body,
                               Duration timeout = Duration::Seconds(10)) {
    return CommandProvider(
        Cat(), {.create_command = Script("create.sh", create_body) + " --verbose",
                .delete_command = Script("delete.sh", "echo \"deleted $GPUPOOL_NODE "
                                                      "$GPUPOOL_FLAVOR $GPUPOOL_TENANT\" >> " +
                                                          log_),
                .timeout = timeout});
  }
  static ProvisionRequest H100() {
    return {.tenant = TenantId(3), .flavor = Flavor("h100-80gb"), .nodes = 2, .gpus_per_node = 8,
            .for_job = JobId(9), .tenant_name = "team-3"};
  }
  const std::string dir_ = dir(), log_ = Path("log");
};

// Prints a node named after the request, echoing the environment it was given.
constexpr const char* kGoodCreate =
    "echo \"create $GPUPOOL_FLAVOR $GPUPOOL_GPUS $GPUPOOL_TENANT $GPUPOOL_INDEX $1\" >> \"$LOG\"\n"
    "printf '{\"name\": \"gpu-%s\", \"gpus\": %s, \"flavor\": \"%s\", \"cpu_milli\": 96000, "
    "\"memory_mib\": 1048576}' \"$GPUPOOL_INDEX\" \"$GPUPOOL_GPUS\" \"$GPUPOOL_FLAVOR\"";

TEST_F(CommandProviderTest, CreateScriptMakesANodeThatPollReturns) {
  CommandProvider p = MakeProvider("LOG=" + log_ + "\n" + kGoodCreate);
  const Time t0 = Time::FromSeconds(5000);
  auto id = p.Provision(H100(), 1, t0);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(*id, "cmd-5000000-1");
  EXPECT_EQ(Log(), "create h100-80gb 8 team-3 1 --verbose\n");
  const std::vector<ProvisionedNode> ready = p.Poll(t0);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].request_id, *id);
  EXPECT_EQ(ready[0].name, "gpu-1");
  EXPECT_EQ(ready[0].flavor, Flavor("h100-80gb"));
  EXPECT_EQ(ready[0].gpus, 8);
  EXPECT_EQ(ready[0].cpu_milli, 96'000);
  EXPECT_EQ(ready[0].memory_mib, 1 << 20);
  EXPECT_GE(ready[0].ready, t0);
  EXPECT_TRUE(p.Poll(t0).empty());  // returned once
}

TEST_F(CommandProviderTest, RequestIdReachesTheScript) {
  CommandProvider p = MakeProvider(
      "printf '{\"name\": \"n-%s\", \"gpus\": 8, \"flavor\": \"h100-80gb\"}' "
      "\"$GPUPOOL_REQUEST_ID\"");
  auto id = p.Provision(H100(), 0, Time::FromMillis(7));
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(p.Poll(Time()).at(0).name, "n-" + *id);
}

// A wrapper (AsyncProvider) names the request: the script sees the id its caller journals.
TEST_F(CommandProviderTest, AGivenRequestIdIsTheOneUsed) {
  CommandProvider p = MakeProvider(
      "printf '{\"name\": \"n-%s\", \"gpus\": 8, \"flavor\": \"h100-80gb\"}' "
      "\"$GPUPOOL_REQUEST_ID\"");
  ProvisionRequest req = H100();
  req.request_id = "async-7-1";
  auto id = p.Provision(req, 0, Time::FromMillis(7));
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(*id, "async-7-1");
  EXPECT_EQ(p.Poll(Time()).at(0).name, "n-async-7-1");
}

TEST_F(CommandProviderTest, DeleteScriptGetsTheNode) {
  CommandProvider p = MakeProvider("LOG=" + log_ + "\n" + kGoodCreate);
  ASSERT_TRUE(p.Provision(H100(), 0, Time()).ok());
  ASSERT_TRUE(p.Release("gpu-0", Time()).ok());
  ASSERT_TRUE(p.Release("someone-elses", Time()).ok());  // unknown names are still deleted
  EXPECT_TRUE(Says(Log(), "deleted gpu-0 h100-80gb team-3\n"));
  EXPECT_TRUE(Says(Log(), "deleted someone-elses  \n"));
}

TEST_F(CommandProviderTest, FailingDeleteIsAnError) {
  CommandProvider p(Cat(), {.create_command = "true",
                            .delete_command = "echo no such instance >&2; exit 4"});
  const Status s = p.Release("gpu-0", Time());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(Says(s.error().message, "delete script `echo no such instance >&2; exit 4` exited "
                                      "with status 4; stderr: no such instance (node gpu-0)"))
      << s.error().message;
}

TEST_F(CommandProviderTest, NonZeroExitQuotesTheFirst200BytesOfStderr) {
  CommandProvider p = MakeProvider(
      "echo 'quota exceeded in us-east-1' >&2\n"
      "head -c 1000 /dev/zero | tr '\\0' x >&2\n"
      "exit 3");
  auto id = p.Provision(H100(), 0, Time());
  ASSERT_FALSE(id.ok());
  const std::string& m = id.error().message;
  EXPECT_EQ(id.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(Says(m, "create script `" + dir_ + "/create.sh --verbose` exited with status 3"))
      << m;
  EXPECT_TRUE(Says(m, "stderr: quota exceeded in us-east-1 xxx")) << m;
  // 27 bytes of text and a newline, then 172 of the 1000 x: 200 bytes in all.
  EXPECT_TRUE(Says(m, std::string(172, 'x'))) << m;
  EXPECT_FALSE(Says(m, std::string(173, 'x'))) << m;
  EXPECT_TRUE(p.Poll(Time()).empty());
}

TEST_F(CommandProviderTest, BadOutputIsRefused) {
  struct Row { const char* name; const char* out; const char* says; bool deleted; };
  const Row rows[] = {
      {"not json", "node ready", "not one JSON object", false},
      {"two objects", "{} {}", "not one JSON object", false},
      {"an array", "[1]", "not one JSON object", false},
      {"missing gpus", R"({"name": "n1", "flavor": "h100-80gb"})", "missing \"gpus\"", true},
      {"bad name", R"({"name": "a b", "gpus": 8, "flavor": "h100-80gb"})", "name must be", false},
      {"unknown key", R"({"name": "n1", "gpus": 8, "flavor": "h100-80gb", "zone": "x"})",
       "unknown key \"zone\"", true},
      {"unknown flavor", R"({"name": "n1", "gpus": 8, "flavor": "h100-81gb"})",
       "unknown flavor \"h100-81gb\"", true},
      {"other flavor", R"({"name": "n1", "gpus": 8, "flavor": "a100-40gb"})",
       "flavor a100-40gb, but h100-80gb was asked for", true},
      {"gpus out of range", R"({"name": "n1", "gpus": 17, "flavor": "h100-80gb"})",
       "gpus 17 is outside 1..16", true},
      {"gpus not asked for", R"({"name": "n1", "gpus": 4, "flavor": "h100-80gb"})",
       "gpus 4, but 8 were asked for", true},
      {"gpus a string", R"({"name": "n1", "gpus": "8", "flavor": "h100-80gb"})",
       "gpus must be an integer", true},
      {"negative memory", R"({"name": "n1", "gpus": 8, "flavor": "h100-80gb", "memory_mib": -1})",
       "memory_mib -1 is outside", true},
  };
  for (const Row& r : rows) {
    std::remove(log_.c_str());
    CommandProvider p = MakeProvider(std::string("cat <<'EOF'\n") + r.out + "\nEOF\necho oops >&2");
    auto id = p.Provision(H100(), 0, Time());
    ASSERT_FALSE(id.ok()) << r.name;
    const std::string& m = id.error().message;
    EXPECT_TRUE(Says(m, "printed a bad node description: " + std::string(r.says))) << m;
    EXPECT_TRUE(Says(m, "stderr: oops")) << m;
    EXPECT_EQ(Says(m, "(node deleted again)"), r.deleted) << m;
    EXPECT_EQ(Log(), r.deleted ? "deleted n1  \n" : "") << r.name;
    EXPECT_TRUE(p.Poll(Time()).empty());
  }
}

TEST_F(CommandProviderTest, TimeoutKillsTheProcessGroup) {
  // The script and a child of it both sleep; the child would write the log if it survived.
  CommandProvider p = MakeProvider(
      "echo starting >&2\n(sleep 1; echo survived >> " + log_ + ") &\nsleep 30",
      Duration::Millis(300));
  const auto start = std::chrono::steady_clock::now();
  auto id = p.Provision(H100(), 0, Time());
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(Says(id.error().message, "timed out after")) << id.error().message;
  EXPECT_TRUE(Says(id.error().message, "stderr: starting")) << id.error().message;
  EXPECT_LT(took, std::chrono::seconds(2));
  usleep(1'500'000);
  EXPECT_EQ(Log(), "");
}

// Review finding: a script that exits normally must not leave its background children running.
TEST_F(CommandProviderTest, ChildrenOfAFinishedScriptDoNotOutliveIt) {
  CommandProvider p = MakeProvider(std::string("(sleep 1; echo survived >> ") + log_ + ") >/dev/null 2>&1 &\n" +
                                   "LOG=/dev/null\n" + kGoodCreate);
  auto id = p.Provision(H100(), 0, Time());
  ASSERT_TRUE(id.ok()) << id.error().message;
  usleep(1'500'000);
  EXPECT_EQ(Log(), "");
}

TEST_F(CommandProviderTest, ScriptThatClosesItsOutputStillTimesOut) {
  CommandProvider p = MakeProvider("exec >&- 2>&-\nsleep 30", Duration::Millis(200));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(p.Provision(H100(), 0, Time()).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// GET /v1/burst/settings writes what DecodeBurstSettings reads: the same settings back, the
// command provider's commands, labels and exact prices included.
TEST(BurstSettings, WrittenAsTheSectionItWasReadFrom) {
  const Catalogue cat = Catalogue::BuiltIn();
  const nlohmann::json section = nlohmann::json::parse(R"({
    "provider": "command", "create_command": "/etc/gpupool/create.sh", "delete_command": "/etc/gpupool/delete.sh",
    "command_timeout_s": 90,
    "offers": {"h100-80gb": {"gpus_per_node": 4, "per_gpu_hour": "6.981234", "provisioning_delay_s": 30,
                             "max_nodes": 3, "cpu_milli": 96000, "labels": ["cuda=12.4"]}},
    "tenants": {"research": {"flavors": ["h100-80gb"], "max_gpus": 16, "budget": "500.5", "period_s": 3600,
                             "max_wait_s": 60, "idle_timeout_s": 120}}})");
  BurstSettings first, second;
  ASSERT_TRUE(DecodeBurstSettings(cat, section, &first).ok());
  const nlohmann::json written = BurstSettingsToJson(cat, first);
  ASSERT_TRUE(DecodeBurstSettings(cat, written, &second).ok()) << written.dump();
  EXPECT_EQ(BurstSettingsToJson(cat, second), written);
  EXPECT_EQ(written["offers"]["h100-80gb"]["per_gpu_hour"], "6.981234");
  EXPECT_EQ(written["tenants"]["research"]["budget"], "500.500000");
  EXPECT_EQ(written["command_timeout_s"], 90);
  EXPECT_EQ(second.command.create_command, "/etc/gpupool/create.sh");
  EXPECT_EQ(second.offers.at(*cat.Find("h100-80gb")).labels, std::vector<std::string>{"cuda=12.4"});
}

}  // namespace
}  // namespace gpupool
