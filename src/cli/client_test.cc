// The client verbs' pure parts: command lines, job files, URLs, config resolution, server
// errors and rendering. The HTTP round trips are tests/cli_client_test.sh against a real daemon.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/client.h"
#include "cli/client_request.h"
#include "cli/client_view.h"
#include "cli/terminal.h"

namespace gpupool::cli {
namespace {

TEST(SplitCommandLine, RewritesShortFlagsAndStopsAtTheSeparator) {
  Result<SplitArgs> s = SplitCommandLine(
      {"-o", "json", "-fjob.yaml", "--name", "-odd", "-h", "--", "python", "-o", "x"}, {"help"});
  ASSERT_TRUE(s.ok());
  // "-odd" is the value of --name, not a short flag.
  EXPECT_EQ(s->flags, (std::vector<std::string>{"--output", "json", "--file=job.yaml", "--name", "-odd", "--help"}));
  EXPECT_TRUE(s->has_separator);
  EXPECT_EQ(s->command, (std::vector<std::string>{"python", "-o", "x"}));
  EXPECT_FALSE(SplitCommandLine({"-x"}, {}).ok());
  EXPECT_FALSE(SplitCommandLine({"-help"}, {}).ok());
}

TEST(ParseDuration, SecondsOrUnits) {
  EXPECT_EQ(*ParseDuration("90"), 90);
  EXPECT_EQ(*ParseDuration("30m"), 1800);
  EXPECT_EQ(*ParseDuration("2h"), 7200);
  EXPECT_EQ(*ParseDuration("1h30m"), 5400);  // 3600 + 1800
  EXPECT_EQ(*ParseDuration("1d"), 86400);
  for (const char* bad : {"", "h", "2x", "1h30", "-5", "1.5h", "9999999999"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

Args MustParse(const std::vector<std::string>& argv) {
  Result<Args> a = Args::Parse(argv, {"tenant", "name", "priority-class", "replicas", "flavor", "gpus",
                                      "mig-profile", "gpu-fraction", "memory-gb", "duration", "selector",
                                      "topology"});
  EXPECT_TRUE(a.ok());
  return *a;
}

TEST(JobRequestFromArgs, BuildsThePostBody) {
  const Args a = MustParse({"--tenant", "research", "--name", "train", "--priority-class", "training",
                            "--replicas", "2", "--flavor", "h100-80gb", "--gpus", "4", "--duration", "2h"});
  Result<Json> body = JobRequestFromArgs(a, {"python", "train.py"});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ(*body, Json::parse(R"({"tenant":"research","name":"train","priority_class":"training",
    "replicas":2,"resources":{"flavor":"h100-80gb","gpus":4},"duration_estimate_s":7200,
    "command":["python","train.py"]})"));
}

TEST(JobRequestFromArgs, FractionsCarryTheirMemory) {
  const Args a = MustParse({"--tenant", "t", "--name", "n", "--priority-class", "batch", "--flavor", "a100-40gb",
                            "--gpu-fraction", "0.25", "--memory-gb", "10", "--duration", "600"});
  Result<Json> body = JobRequestFromArgs(a, {"sleep", "600"});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["resources"], Json::parse(R"({"flavor":"a100-40gb","gpu_fraction":0.25,"memory_gb":10})"));
  EXPECT_EQ((*body)["replicas"], 1);
}

TEST(JobRequestFromArgs, SeveralFlavorsByPreference) {
  const Args a = MustParse({"--tenant", "t", "--name", "n", "--flavor", "h100-80gb,a100-80gb", "--gpus", "2"});
  Result<Json> body = JobRequestFromArgs(a, {"true"});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["resources"], Json::parse(R"({"flavors":["h100-80gb","a100-80gb"],"gpus":2})"));
}

TEST(JobRequestFromArgs, DurationAndPriorityClassAreTheServersDefaults) {
  // Neither given: the body leaves them out, and the server applies the tenant's default
  // duration and the default priority class.
  Result<Json> body = JobRequestFromArgs(
      MustParse({"--tenant", "t", "--name", "n", "--flavor", "h100-80gb", "--gpus", "1"}), {"true"});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_FALSE(body->contains("duration_estimate_s"));
  EXPECT_FALSE(body->contains("priority_class"));
  EXPECT_FALSE(JobRequestFromArgs(MustParse({"--tenant", "t", "--name", "n", "--flavor", "f", "--gpus", "1",
                                             "--priority-class", ""}), {"true"}).ok());
}

TEST(JobRequestFromArgs, SelectorsAndTopology) {
  Result<Json> body = JobRequestFromArgs(
      MustParse({"--tenant", "t", "--name", "n", "--flavor", "h100-80gb", "--gpus", "8", "--replicas", "2",
                 "--selector", "ib", "--selector", "zone in (a,b),!spot", "--topology", "nvlink-domain:preferred"}),
      {"python", "train.py"});
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["node_selector"], Json::parse(R"([{"key":"ib","operator":"Exists"},
    {"key":"zone","operator":"In","values":["a","b"]},{"key":"spot","operator":"DoesNotExist"}])"));
  EXPECT_EQ((*body)["topology"], Json::parse(R"({"level":"nvlink-domain","required":false})"));
  Result<Json> bad = JobRequestFromArgs(MustParse({"--tenant", "t", "--name", "n", "--flavor", "f", "--gpus", "1",
                                                   "--selector", "zone in (a"}), {"true"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--selector: selector 'zone in (a': missing ')'");
  EXPECT_FALSE(JobRequestFromArgs(MustParse({"--tenant", "t", "--name", "n", "--flavor", "f", "--gpus", "1",
                                             "--topology", "rack"}), {"true"}).ok());
}

TEST(JobRequestFromArgs, UsageErrors) {
  const std::vector<std::string> base = {"--tenant", "t", "--name", "n", "--priority-class", "p",
                                         "--flavor", "f", "--duration", "60"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = base;
    v.insert(v.end(), extra.begin(), extra.end());
    return MustParse(v);
  };
  EXPECT_FALSE(JobRequestFromArgs(with({}), {"x"}).ok());                                  // no resources
  EXPECT_FALSE(JobRequestFromArgs(with({"--gpus", "1", "--mig-profile", "1g.10gb"}), {"x"}).ok());  // two
  EXPECT_FALSE(JobRequestFromArgs(with({"--gpu-fraction", "0.5"}), {"x"}).ok());           // no memory
  EXPECT_FALSE(JobRequestFromArgs(with({"--gpus", "1", "--memory-gb", "4"}), {"x"}).ok());  // stray memory
  EXPECT_FALSE(JobRequestFromArgs(with({"--gpus", "1"}), {}).ok());                         // no command
  EXPECT_FALSE(JobRequestFromArgs(with({"--gpus", "two"}), {"x"}).ok());
  EXPECT_FALSE(JobRequestFromArgs(MustParse({"--gpus", "1"}), {"x"}).ok());                // no tenant...
  EXPECT_TRUE(JobRequestFromArgs(with({"--mig-profile", "1g.10gb"}), {"x"}).ok());
}

TEST(JobRequestFromYaml, NamesAndCommandWordsStayStrings) {
  Result<Json> body = JobRequestFromYaml(R"(
tenant: research
name: 123
priority_class: training
replicas: 2
resources: {flavor: h100-80gb, gpus: 1}
duration_estimate_s: 30m
command: [sleep, 60, "true"]
)");
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ(*body, Json::parse(R"({"tenant":"research","name":"123","priority_class":"training",
    "replicas":2,"resources":{"flavor":"h100-80gb","gpus":1},"duration_estimate_s":1800,
    "command":["sleep","60","true"]})"));
  Result<Json> fraction = JobRequestFromYaml("resources: {gpu_fraction: 0.5, memory_gb: 8}");
  ASSERT_TRUE(fraction.ok());
  EXPECT_TRUE((*fraction)["resources"]["gpu_fraction"].is_number_float());
  EXPECT_TRUE((*fraction)["resources"]["memory_gb"].is_number_integer());
  EXPECT_FALSE(JobRequestFromYaml("[1, 2]").ok());
  EXPECT_FALSE(JobRequestFromYaml("name: [unclosed").ok());
  EXPECT_FALSE(JobRequestFromYaml("duration_estimate_s: soon").ok());
}

// A job file whose anchor holds its own alias is a cycle: refused by depth, not recursed into.
TEST(JobRequestFromYaml, RefusesAnAliasInsideItsOwnAnchor) {
  Result<Json> body = JobRequestFromYaml("name: x\ncommand: &c [sh, *c]\n");
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.error().message.find("the file nests deeper than 64 levels"), std::string::npos)
      << body.error().message;
}

// A job file of aliases of aliases (10^8 names in 390 bytes) is refused, not expanded.
TEST(JobRequestFromYaml, RefusesAliasExpansion) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 8; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  Result<Json> body = JobRequestFromYaml(text);
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.error().message.find("expands to more than"), std::string::npos) << body.error().message;
  EXPECT_TRUE(JobRequestFromYaml("resources: &r {gpus: 1}\nname: *r").ok()) << "one alias is fine";
}

TEST(ParseServerUrl, SchemesPortsAndPrefixes) {
  Result<ServerUrl> u = ParseServerUrl("http://127.0.0.1:8080");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->Origin(), "http://127.0.0.1:8080");
  EXPECT_EQ(u->prefix, "");
  u = ParseServerUrl("https://gpupool.example/api/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->Origin(), "https://gpupool.example:443");
  EXPECT_EQ(u->prefix, "/api");
  u = ParseServerUrl("localhost:9000");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->Origin(), "http://localhost:9000");
  u = ParseServerUrl("http://[::1]:8080");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->Origin(), "http://[::1]:8080");
  for (const char* bad : {"ftp://x", "http://h:port", "http://h:70000", "http://:80", "http://u@h", ""}) {
    EXPECT_FALSE(ParseServerUrl(bad).ok()) << bad;
  }
}

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("gpupool-client-test-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

GetEnv FakeEnv(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(ResolveClientConfig, FlagsThenEnvironmentThenFile) {
  TempDir dir;
  const std::string file = dir.Write("config.yaml", "url: http://file:1\ntoken: file-token\n");
  Result<ClientConfig> c = ResolveClientConfig("", "", FakeEnv({{"GPUPOOL_CONFIG", file}}));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->url, "http://file:1");
  EXPECT_EQ(c->token, "file-token");
  EXPECT_EQ(c->url_source, file);
  // The environment beats the file, key by key.
  c = ResolveClientConfig("", "", FakeEnv({{"GPUPOOL_CONFIG", file}, {"GPUPOOL_TOKEN", "env-token\n"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->url, "http://file:1");
  EXPECT_EQ(c->token, "env-token");  // the newline a token file carries is dropped
  // Flags beat both.
  c = ResolveClientConfig("http://flag:3", "flag-token",
                          FakeEnv({{"GPUPOOL_URL", "http://env:2"}, {"GPUPOOL_CONFIG", file}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->url, "http://flag:3");
  EXPECT_EQ(c->token, "flag-token");
}

TEST(ResolveClientConfig, MissingAndBadFiles) {
  TempDir dir;
  // No default file under HOME: the default URL, no token.
  Result<ClientConfig> c = ResolveClientConfig("", "", FakeEnv({{"HOME", dir.path()}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->url, kDefaultServerUrl);
  EXPECT_EQ(c->token, "");
  // The default file is found under HOME.
  std::filesystem::create_directories(dir.path() + "/.config/gpupool");
  dir.Write(".config/gpupool/config.yaml", "token: home-token\n");
  c = ResolveClientConfig("", "", FakeEnv({{"HOME", dir.path()}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->token, "home-token");
  // A named file must exist, hold only url and token, and be YAML.
  EXPECT_FALSE(ResolveClientConfig("", "", FakeEnv({{"GPUPOOL_CONFIG", dir.path() + "/nope.yaml"}})).ok());
  const std::string extra = dir.Write("extra.yaml", "url: http://x:1\nserver: y\n");
  EXPECT_FALSE(ResolveClientConfig("", "", FakeEnv({{"GPUPOOL_CONFIG", extra}})).ok());
  const std::string broken = dir.Write("broken.yaml", "url: [\n");
  EXPECT_FALSE(ResolveClientConfig("", "", FakeEnv({{"GPUPOOL_CONFIG", broken}})).ok());
}

TEST(ReplyError, KeepsTheServersCodeAndMessage) {
  const Error e = ReplyError(404, R"({"error":{"code":"not_found","message":"no job '9'","details":""}})");
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  EXPECT_EQ(e.message, "no job '9' [HTTP 404 not_found]");
  const Error plain = ReplyError(502, "Bad Gateway\n");
  EXPECT_EQ(plain.message, "HTTP 502: Bad Gateway");
}

TEST(UrlEncode, EscapesAllButUnreserved) {
  EXPECT_EQ(UrlEncode("a-b_c.d~9"), "a-b_c.d~9");
  EXPECT_EQ(UrlEncode("a b/c?&"), "a%20b%2Fc%3F%26");
}

TEST(ToYaml, QuotesStringsThatWouldReadAsOtherTypes) {
  const Json j = Json::parse(R"({"id":"12","n":3,"x":0.25,"ok":true,"empty":"","word":"yes",
                                 "name":"train","list":[],"none":null})");
  const std::string yaml = ToYaml(j);
  const YAML::Node back = YAML::Load(yaml);
  EXPECT_EQ(back["id"].Tag(), "!") << yaml;  // quoted
  EXPECT_EQ(back["id"].as<std::string>(), "12");
  EXPECT_EQ(back["word"].Tag(), "!");
  EXPECT_EQ(back["empty"].as<std::string>(), "");
  EXPECT_EQ(back["n"].Tag(), "?");  // plain
  EXPECT_EQ(back["x"].as<double>(), 0.25);
  EXPECT_EQ(back["ok"].as<bool>(), true);
  EXPECT_EQ(back["name"].Tag(), "?");
  EXPECT_TRUE(back["list"].IsSequence());
  EXPECT_TRUE(back["none"].IsNull());
}

TEST(CompactDuration, LargestUnitsFirst) {
  EXPECT_EQ(CompactDuration(0, 2), "0s");
  EXPECT_EQ(CompactDuration(45, 2), "45s");
  EXPECT_EQ(CompactDuration(312, 2), "5m12s");
  EXPECT_EQ(CompactDuration(7200, 2), "2h");
  EXPECT_EQ(CompactDuration(3 * 86400 + 4 * 3600 + 5, 2), "3d4h");  // the 5 s are below two units
  EXPECT_EQ(CompactDuration(3600 + 5, 2), "1h");                    // minutes (0) count as a unit
  EXPECT_EQ(CompactDuration(3600 + 5, 4), "1h5s");
}

TEST(ResourcesCell, OneFormEach) {
  EXPECT_EQ(ResourcesCell(Json::parse(R"({"flavor":"h100-80gb","gpus":2})")), "h100-80gb:2gpu");
  EXPECT_EQ(ResourcesCell(Json::parse(R"({"flavor":"a100-40gb","mig_profile":"1g.5gb"})")), "a100-40gb:1g.5gb");
  EXPECT_EQ(ResourcesCell(Json::parse(R"({"flavor":"h100-80gb","gpu_fraction":0.25,"memory_gb":20})")),
            "h100-80gb:0.25gpu,20GB");
}

// Two jobs as GET /v1/jobs returns them: one pending 5 minutes, one admitted for 2 hours.
const char* kJobs = R"([
  {"id":"7","name":"train","tenant":"research","priority_class":"training","state":"pending",
   "replicas":2,"resources":{"flavor":"h100-80gb","gpus":8},"duration_estimate_s":5400,
   "command":["python","train.py","--lr","0.1"],"submitted_at_ms":1000000,"placement":[],
   "reason":{"code":"insufficient_capacity","message":"no node has 8 free h100-80gb GPUs"}},
  {"id":"12","name":"serve","tenant":"prod","priority_class":"inference","state":"admitted",
   "replicas":1,"resources":{"flavor":"a100-40gb","mig_profile":"1g.5gb"},"duration_estimate_s":60,
   "command":["sh","-c","echo hi"],"submitted_at_ms":-5900000,"admitted_as":"borrowed",
   "placement":[{"node":"a100-0","gpus":[{"gpu":3,"mig_start":6}]}]}])";
constexpr int64_t kNow = 1000000 + 300000;

TEST(PrintJobs, OneRowPerJobWithAgeAndReason) {
  std::ostringstream out;
  PrintJobs(Json::parse(kJobs), kNow, out);
  EXPECT_EQ(out.str(),
            "ID  NAME   TENANT    STATE     RESOURCES         REPLICAS  AGE  REASON\n"
            " 7  train  research  pending   h100-80gb:8gpu           2  5m   insufficient_capacity\n"
            "12  serve  prod      admitted  a100-40gb:1g.5gb         1  2h\n");
}

TEST(DescribeJob, ReasonAndPlacement) {
  const Json jobs = Json::parse(kJobs);
  std::ostringstream pending;
  DescribeJob(jobs[0], kNow, pending);
  EXPECT_EQ(pending.str(),
            "ID:                 7\n"
            "Name:               train\n"
            "Tenant:             research\n"
            "Priority class:     training\n"
            "State:              pending\n"
            "Reason:             insufficient_capacity: no node has 8 free h100-80gb GPUs\n"
            "Resources:          h100-80gb:8gpu per replica\n"
            "Replicas:           2\n"
            "Duration estimate:  1h30m (5400 s)\n"
            "Command:            python train.py --lr 0.1\n"
            "Submitted:          1970-01-01T00:16:40Z (5m ago)\n"
            "Placement:          <none>\n");
  std::ostringstream admitted;
  DescribeJob(jobs[1], kNow, admitted);
  const std::string text = admitted.str();
  EXPECT_NE(text.find("Reason:             <none>\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Admitted as:        borrowed\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("Start held"), std::string::npos) << "shown only when the daemon says so";
  Json held = jobs[1];
  held["start_held"] = "attempt 1 of replica 0 still runs on a100-1 (told to stop, within its 120s grace)";
  std::ostringstream waiting;
  DescribeJob(held, kNow, waiting);
  EXPECT_NE(waiting.str().find("Start held:         attempt 1 of replica 0 still runs on a100-1"), std::string::npos)
      << waiting.str();
  EXPECT_NE(text.find("Command:            sh -c 'echo hi'\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Placement:\n  REPLICA  NODE    GPUS\n        0  a100-0  3:slice6\n"), std::string::npos)
      << text;
}

TEST(DescribeTenant, QuotaAndUsagePerFlavor) {
  const Json t = Json::parse(R"({"name":"research","weight":2,"allow_gpu_cotenancy":false,
    "quotas":{"h100-80gb":{"guaranteed":16,"borrow_limit":8}},"limits":{"max_replicas":4},
    "usage":{"a100-40gb":{"allocated":0.5,"borrowed":0.5},"h100-80gb":{"allocated":4,"borrowed":0}},
    "pending_jobs":1,"active_jobs":2})");
  std::ostringstream out;
  DescribeTenant(t, out);
  EXPECT_EQ(out.str(),
            "Name:            research\n"
            "Weight:          2\n"
            "GPU co-tenancy:  not allowed\n"
            "Pending jobs:    1\n"
            "Active jobs:     2\n"
            "Limits:          max_replicas=4\n"
            "Quotas and usage (GPUs; - is no limit):\n"
            "  FLAVOR     GUARANTEED  BORROW-LIMIT  LEND-LIMIT  ALLOCATED  BORROWED\n"
            "  a100-40gb           0             -           -        0.5       0.5\n"
            "  h100-80gb          16             8           -          4         0\n");
}

TEST(DescribeNode, JobsListed) {
  std::ostringstream out;
  DescribeNode(Json::parse(R"({"name":"h100-0","flavor":"h100-80gb","condition":"ready","gpus":8,
    "healthy_gpus":8,"mig_gpus":0,"shared_gpus":0,"free_whole_gpus":6,"block":"","nvlink_domain":"nvl-0",
    "jobs":["3","5"]})"), out);
  EXPECT_NE(out.str().find("Block:            <none>\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Jobs:             3, 5\n"), std::string::npos) << out.str();
}

TEST(PrintUsage, UnpricedCostsAndTheirWarnings) {
  std::ostringstream out;
  PrintUsage(Json::parse(R"({"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z",
    "items":[{"tenant":"research","flavor":"a100-80gb","kind":"guaranteed","gpu_hours":2,"cost":"unpriced"}],
    "total":{"gpu_hours":2,"cost":"unpriced"},
    "warnings":["no price for a100-80gb from 2026-01-01T00:00:00Z to 2026-01-02T00:00:00Z"]})"), out);
  EXPECT_EQ(out.str(),
            "usage from 2026-01-01T00:00:00Z to 2026-01-02T00:00:00Z\n"
            "TENANT    FLAVOR     KIND        GPU-HOURS  COST\n"
            "research  a100-80gb  guaranteed      2.000  unpriced\n"
            "TOTAL                                2.000  unpriced\n"
            "warning: no price for a100-80gb from 2026-01-01T00:00:00Z to 2026-01-02T00:00:00Z\n");
}

TEST(Rendering, ToleratesMissingAndMistypedFields) {
  std::ostringstream out;
  PrintJobs(Json::parse(R"([{"id":5}, 7, {"resources":"?"}])"), kNow, out);
  PrintNodes(Json::object(), out);
  DescribeJob(Json::array(), kNow, out);
  DescribeTenant(Json::parse(R"({"quotas":[1],"usage":{"x":3}})"), out);
  EXPECT_FALSE(out.str().empty());
}

}  // namespace
}  // namespace gpupool::cli

namespace gpupool::cli {
namespace {

// Other users' text cannot drive the terminal: C0 controls but tab and newline, DEL and C1
// controls (in UTF-8) print as '?'; other UTF-8, a lone 0xC2 at the end included, is kept.
TEST(StripControls, ReplacesWhatDrivesATerminalAndKeepsTheRest) {
  EXPECT_EQ(StripControls("\x1b[2Jjob\tname\n"), "?[2Jjob\tname\n");
  EXPECT_EQ(StripControls("a\rb\x07" "c\x7f"), "a?b?c?");
  EXPECT_EQ(StripControls("\xc2\x9b" "31m"), "?31m") << "CSI as a C1 control";
  EXPECT_EQ(StripControls("caf\xc3\xa9 \xc2\xa0 \xe2\x82\xac"), "caf\xc3\xa9 \xc2\xa0 \xe2\x82\xac");
  EXPECT_EQ(StripControls("end\xc2"), "end\xc2");
  EXPECT_EQ(StripControls(R"({"name":"\u001b[2J"})"), R"({"name":"\u001b[2J"})") << "JSON escapes pass";
}

}  // namespace
}  // namespace gpupool::cli
