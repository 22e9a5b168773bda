// The Slurm executor's mapping (slurm.h). The executor against a real slurmctld, slurmd and
// slurmrestd is tests/slurm_executor_test.sh.
#include "executor/slurm.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace gpupool::executor {
namespace {

TEST(SlurmMapping, GresStringsGiveTheGpuTypeAndCount) {
  EXPECT_EQ(ParseGres("gpu:h100:8(S:0-1)").type, "h100");
  EXPECT_EQ(ParseGres("gpu:h100:8(S:0-1)").count, 8);
  EXPECT_EQ(ParseGres("gpu:4").count, 4);
  EXPECT_EQ(ParseGres("gpu:4").type, "");
  EXPECT_EQ(ParseGres("shard:16,gpu:a100:2,gpu:a100:2").count, 4);
  EXPECT_EQ(ParseGres("").count, 0);
  EXPECT_EQ(ParseGres("gpu:h100:x").count, 0);  // not a number: no GPUs, not a crash
  EXPECT_EQ(ParseGres("(null)").count, 0);
}

TEST(SlurmMapping, OnlyAnExactCommentNamesAnAttempt) {
  EXPECT_EQ(Comment(12, 3), "gpupool job=12 attempt=3");
  auto k = ParseComment("gpupool job=12 attempt=3");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->first, 12u);
  EXPECT_EQ(k->second, 3);
  for (const char* bad : {"", "gpupool job=12", "gpupool job=12 attempt=3 ", "gpupool job=012 attempt=3",
                          "gpupool job=12 attempt=+3", "GPUPOOL job=12 attempt=3", "gpupool job=-1 attempt=3"}) {
    EXPECT_FALSE(ParseComment(bad)) << bad;
  }
}

TEST(SlurmMapping, ExitCodesAreWaitStatuses) {
  EXPECT_EQ(ExitText(0), "exit code 0");
  EXPECT_EQ(ExitText(768), "exit code 3");
  EXPECT_EQ(ExitText(9), "killed by signal 9");
}

TEST(SlurmMapping, JobStatesMapOntoTheJobsLife) {
  EXPECT_EQ(RunStateOf("PENDING"), RunState::kWaiting);
  EXPECT_EQ(RunStateOf("CONFIGURING"), RunState::kWaiting);
  EXPECT_EQ(RunStateOf("RUNNING"), RunState::kRunning);
  EXPECT_EQ(RunStateOf("COMPLETING"), RunState::kRunning);
  EXPECT_EQ(RunStateOf("COMPLETED"), RunState::kSucceeded);
  EXPECT_EQ(RunStateOf("FAILED"), RunState::kFailed);
  EXPECT_EQ(RunStateOf("TIMEOUT"), RunState::kFailed);
  EXPECT_EQ(RunStateOf("CANCELLED"), RunState::kFailed);
  EXPECT_EQ(RunStateOf("NODE_FAIL"), RunState::kLost);
  EXPECT_EQ(RunStateOf("PREEMPTED"), RunState::kLost);
}

TEST(SlurmMapping, AnAttemptWaitsForAnEarlierOneSlurmStillHas) {
  // Attempt 1 was cancelled with SIGTERM and is within its grace (still RUNNING, then
  // COMPLETING): attempt 2 is not submitted, whatever node it was placed on.
  EXPECT_EQ(EarlierAttemptAlive({{1, 7, "RUNNING"}}, 2), "waiting for attempt 1 (Slurm job 7, RUNNING) to end");
  EXPECT_NE(EarlierAttemptAlive({{1, 7, "COMPLETING"}}, 3), "");
  EXPECT_NE(EarlierAttemptAlive({{1, 7, "PENDING"}}, 2), "") << "not yet cancelled";
  // Ended, or the attempt itself or a later one: nothing to wait for.
  for (const char* ended : {"CANCELLED", "COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT", "PREEMPTED"}) {
    EXPECT_EQ(EarlierAttemptAlive({{1, 7, ended}}, 2), "") << ended;
  }
  EXPECT_EQ(EarlierAttemptAlive({{2, 8, "RUNNING"}}, 2), "");
  EXPECT_EQ(EarlierAttemptAlive({{3, 9, "RUNNING"}}, 2), "");
  EXPECT_EQ(EarlierAttemptAlive({}, 2), "");
  EXPECT_EQ(EarlierAttemptAlive({{1, 0, "PENDING"}}, 2), "waiting for attempt 1 (a submission Slurm has not listed) to end");
}

// Runs `script` through /bin/sh with `exec` replaced by printf, so the words the command gets
// are printed one per line.
std::string Words(const std::string& quoted) {
  FILE* f = popen(("printf '%s\\n'" + quoted).c_str(), "r");
  std::string out;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  pclose(f);
  return out;
}

TEST(SlurmMapping, CommandWordsReachTheProgramUnchanged) {
  std::string quoted;
  for (const char* w : {"echo", "it's", "$HOME", "a b", "`id`", "\"q\""}) quoted += " " + ShellQuote(w);
  EXPECT_EQ(Words(quoted), "echo\nit's\n$HOME\na b\n`id`\n\"q\"\n");
}

Placement Gang(std::vector<NodeShare> shares) {
  Placement p;
  p.job = 7;
  p.attempt = 2;
  p.tenant = "research";
  p.command = {"python", "train.py"};
  p.env = {{"GPUPOOL_JOB", "7"}};
  p.gpu_type = "h100";
  p.nodes = std::move(shares);
  return p;
}

TEST(SlurmMapping, ASubmissionPinsTheChosenNodesAndGpuCounts) {
  SlurmConfig c;
  c.partition = "gpu";
  c.accounts = true;
  nlohmann::json one = SubmitBody(Gang({{"gpu01", 1, 2}}), c);
  EXPECT_EQ(one["job"]["nodelist"], "gpu01");
  EXPECT_EQ(one["job"]["gres"], "gpu:h100:2");
  EXPECT_EQ(one["job"]["name"], "gpupool-7");
  EXPECT_EQ(one["job"]["comment"], "gpupool job=7 attempt=2");
  EXPECT_EQ(one["job"]["account"], "research");
  // A job of no GPU (gpus: 0): no gres at all, only its CPU.
  Placement cpu_only = Gang({{"gpu01", 1, 0}});
  cpu_only.cpu_milli = 2000;
  nlohmann::json none = SubmitBody(cpu_only, c);
  EXPECT_FALSE(none["job"].contains("gres")) << none.dump();
  EXPECT_EQ(none["job"]["cpus_per_task"], 2);
  EXPECT_EQ(one["job"]["partition"], "gpu");
  EXPECT_EQ(one["job"]["environment"]["GPUPOOL_JOB"], "7");
  EXPECT_NE(one["script"].get<std::string>().find("exec 'python' 'train.py'"), std::string::npos);

  nlohmann::json even = SubmitBody(Gang({{"gpu01", 2, 4}, {"gpu02", 2, 4}}), c);
  EXPECT_EQ(even["job"]["nodelist"], "gpu01,gpu02");
  EXPECT_EQ(even["job"]["gres"], "gpu:h100:4");
  EXPECT_EQ(even["job"]["tasks"], 4);
  EXPECT_NE(even["script"].get<std::string>().find("srun --kill-on-bad-exit=1 --ntasks=4 --ntasks-per-node=2"),
            std::string::npos);

  // Shares that differ: one component per node, each with its own count.
  nlohmann::json uneven = SubmitBody(Gang({{"gpu01", 3, 6}, {"gpu02", 1, 2}}), c);
  ASSERT_EQ(uneven["jobs"].size(), 2u);
  EXPECT_EQ(uneven["jobs"][0]["nodelist"], "gpu01");
  EXPECT_EQ(uneven["jobs"][0]["gres"], "gpu:h100:6");
  EXPECT_EQ(uneven["jobs"][1]["nodelist"], "gpu02");
  EXPECT_EQ(uneven["jobs"][1]["gres"], "gpu:h100:2");
  EXPECT_NE(uneven["script"].get<std::string>().find("--het-group=0-1"), std::string::npos);
}

TEST(SlurmMapping, AMintedTokenIsAnHs256JwtForTheUser) {
  const std::string t = MintSlurmToken("k", "gpupool", 1000, 600);
  ASSERT_EQ(std::count(t.begin(), t.end(), '.'), 2);
  // Another key or user gives another token; the same inputs the same one.
  EXPECT_EQ(t, MintSlurmToken("k", "gpupool", 1000, 600));
  EXPECT_NE(t, MintSlurmToken("k2", "gpupool", 1000, 600));
  EXPECT_NE(t, MintSlurmToken("k", "root", 1000, 600));
}

TEST(SlurmExecutorStart, RefusesAnIncompleteConfiguration) {
  SlurmConfig c;
  EXPECT_FALSE(SlurmExecutor::Start(c).ok());
  c.url = "http://127.0.0.1:1";
  EXPECT_FALSE(SlurmExecutor::Start(c).ok());  // no partition
  c.partition = "gpu";
  EXPECT_FALSE(SlurmExecutor::Start(c).ok());  // no credentials
  c.token_file = "/x";
  c.jwt_key_file = "/y";
  EXPECT_FALSE(SlurmExecutor::Start(c).ok());  // both
}

TEST(SlurmExecutorStart, ADeadSlurmrestdIsAnErrorOfTheRoundNotACrash) {
  SlurmConfig c;
  c.url = "http://127.0.0.1:1";
  c.partition = "gpu";
  c.jwt_key_file = "/dev/null";  // empty: the round fails before any call
  c.poll = Duration::Millis(20);
  auto e = SlurmExecutor::Start(c);
  ASSERT_TRUE(e.ok());
  for (int i = 0; i < 200 && (*e)->Observe().round == 0; ++i) usleep(10'000);
  Observation o = (*e)->Observe();
  EXPECT_GE(o.round, 1);
  EXPECT_NE(o.error.find("JWT key"), std::string::npos) << o.error;
  EXPECT_TRUE(o.nodes.empty());
}

TEST(SlurmAccounting, SacctLinesGiveGpupoolsJobsWithHeterogeneousComponentsMerged) {
  const std::string out =
      "41|gpupool-7|research|COMPLETED|1700000000|1700000002|1700000062|billing=4,cpu=1,gres/gpu:h100=4,gres/gpu=4,mem=1M,node=1\n"
      "42|interactive|research|RUNNING|1700000010|1700000011|Unknown|cpu=1,gres/gpu=1,node=1\n"   // not gpupool's
      "43+0|gpupool-8|product|CANCELLED by 0|1700000100|1700000101|1700000200|cpu=1,gres/gpu:a100=2,gres/gpu=2\n"
      "43+1|gpupool-8|product|COMPLETED|1700000099|1700000103|1700000190|cpu=1,gres/gpu:a100=1,gres/gpu=1\n"
      "45|gpupool-9|research|RUNNING|1700000300|1700000301|Unknown|cpu=1,gres/gpu=2\n"
      "46|gpupool-10|research|PENDING|1700000400|Unknown|Unknown|\n"
      "47|gpupool-x|research|COMPLETED|1|2|3|gres/gpu=1\n"  // a name gpupool never gives
      "48|gpupool-11|research|CANCELLED by 0|1700000500|1700000501|1700000501|\n";  // cancelled pending
  Result<std::vector<AccountedRun>> r = ParseSacct(out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 5u);
  const AccountedRun& a = (*r)[0];
  EXPECT_EQ(a.job, 7u);
  EXPECT_EQ(a.backend_id, "41");
  EXPECT_EQ(a.account, "research");
  EXPECT_EQ(a.state, "COMPLETED");
  EXPECT_EQ(a.submit_s, 1700000000);
  EXPECT_EQ(a.start_s, 1700000002);
  EXPECT_EQ(a.end_s, 1700000062);
  EXPECT_EQ(a.gpus, 4);  // gres/gpu=4, not gres/gpu:h100=4 as well
  const AccountedRun& het = (*r)[1];
  EXPECT_EQ(het.job, 8u);
  EXPECT_EQ(het.backend_id, "43");
  EXPECT_EQ(het.gpus, 3);
  EXPECT_EQ(het.submit_s, 1700000099);
  EXPECT_EQ(het.start_s, 1700000101);
  EXPECT_EQ(het.end_s, 1700000200);
  EXPECT_EQ(het.state, "CANCELLED");
  EXPECT_EQ((*r)[2].end_s, 0);  // running: no end yet
  EXPECT_EQ((*r)[3].start_s, 0);
  EXPECT_EQ((*r)[3].gpus, 0);
  EXPECT_EQ((*r)[4].start_s, 0);  // Slurm's "start" of a job cancelled while pending is its cancel
  EXPECT_EQ((*r)[4].end_s, 1700000501);
}

TEST(SlurmAccounting, ALineOfAnotherShapeIsAnErrorNotAGuess) {
  EXPECT_FALSE(ParseSacct("41|gpupool-7|research|COMPLETED|1|2|3\n").ok());  // 7 fields
  EXPECT_FALSE(ParseSacct("41|gpupool-7|research|COMPLETED|1|2|3|gres/gpu=1|extra\n").ok());
  Result<std::vector<AccountedRun>> empty = ParseSacct("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(SlurmMapping, TresGpusCountTheUntypedTotal) {
  EXPECT_EQ(TresGpus("billing=4,cpu=1,gres/gpu:h100=4,gres/gpu=4,mem=1M"), 4);
  EXPECT_EQ(TresGpus("gres/gpu=2"), 2);
  EXPECT_EQ(TresGpus("cpu=1,mem=1M"), 0);
  EXPECT_EQ(TresGpus("xgres/gpu=3"), 0);  // another TRES whose name ends alike
  EXPECT_EQ(TresGpus(""), 0);
}

// A script standing in for sacct: what it was run with goes to DIR/args and DIR/env.
std::string FakeSacct(const std::string& dir, const std::string& body) {
  const std::string path = dir + "/sacct";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fprintf(f, "#!/bin/sh\necho \"$@\" > %s/args\necho \"$SLURM_TIME_FORMAT $SLURM_CONF\" > %s/env\n%s\n",
               dir.c_str(), dir.c_str(), body.c_str());
  std::fclose(f);
  chmod(path.c_str(), 0755);
  return path;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

SlurmConfig DeadRestWithSacct(const std::string& sacct) {
  SlurmConfig c;
  c.url = "http://127.0.0.1:1";
  c.partition = "gpu";
  c.user = "svc";
  c.jwt_key_file = "/dev/null";  // the rounds fail; accounting is read all the same
  c.slurm_conf = "/etc/slurm-test.conf";
  c.poll = Duration::Millis(20);
  c.sacct = sacct;
  c.accounting_poll = Duration::Millis(20);
  return c;
}

TEST(SlurmAccounting, AFailingSacctIsReportedAndTheLastGoodReadStays) {
  char tmpl[] = "/tmp/gp-sacct-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  // The first read answers; every later one fails as sacct does without slurmdbd.
  const std::string sacct = FakeSacct(dir, "if [ -e " + dir + "/once ]; then echo 'sacct: error: slurmdbd: Connection "
                                           "refused' >&2; exit 1; fi\ntouch " + dir +
                                           "/once\necho '41|gpupool-7|research|COMPLETED|1|2|3|gres/gpu=1'");
  auto e = SlurmExecutor::Start(DeadRestWithSacct(sacct));
  ASSERT_TRUE(e.ok());
  Accounting a;
  for (int i = 0; i < 500 && (a = (*e)->Accounted()).error.empty(); ++i) usleep(10'000);
  ASSERT_NE(a.error.find("Connection refused"), std::string::npos) << a.error;
  ASSERT_EQ(a.runs.size(), 1u);  // the good read, kept
  EXPECT_EQ(a.runs[0].job, 7u);
  EXPECT_GT(a.read_ms, 0);
  const std::string args = Slurp(dir + "/args");
  EXPECT_NE(args.find("-X -P -n -u svc -r gpu -S now-"), std::string::npos) << args;
  EXPECT_NE(args.find("-o JobID,JobName,Account,State,Submit,Start,End,AllocTRES"), std::string::npos) << args;
  EXPECT_EQ(Slurp(dir + "/env"), "%s /etc/slurm-test.conf\n");
  e->reset();
  std::system(("rm -rf " + dir).c_str());
}

TEST(SlurmAccounting, AHungSacctAndWhatItStartedAreKilledAtTheTimeoutAndRoundsGoOn) {
  char tmpl[] = "/tmp/gp-sacct-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  // Hangs as sacct does when slurmdbd is stopped, with a child of its own holding the pipe.
  const std::string sacct = FakeSacct(dir, "sleep 300 &\necho $! > " + dir + "/child\nwait");
  SlurmConfig c = DeadRestWithSacct(sacct);
  c.command_timeout = Duration::Millis(300);
  auto e = SlurmExecutor::Start(c);
  ASSERT_TRUE(e.ok());
  Accounting a;
  for (int i = 0; i < 2000 && (a = (*e)->Accounted()).error.empty(); ++i) usleep(10'000);
  EXPECT_NE(a.error.find("killed after 300 ms"), std::string::npos) << a.error;
  EXPECT_TRUE(a.runs.empty());
  const int64_t round = (*e)->Observe().round;
  for (int i = 0; i < 2000 && (*e)->Observe().round <= round + 1; ++i) usleep(10'000);
  EXPECT_GT((*e)->Observe().round, round + 1);  // the worker was not stuck behind it
  e->reset();
  const std::string child = Slurp(dir + "/child");
  ASSERT_FALSE(child.empty());
  const pid_t pid = std::atoi(child.c_str());
  // Gone, or a zombie waiting for a reaper: not running on.
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    const std::string stat = Slurp("/proc/" + std::to_string(pid) + "/stat");
    gone = stat.empty() || stat.find(") Z ") != std::string::npos;
    if (!gone) usleep(10'000);
  }
  EXPECT_TRUE(gone) << "sacct's child " << pid << " still runs";
  std::system(("rm -rf " + dir).c_str());
}

TEST(SlurmMapping, HostlistsExpandInOrderWithTheirWidth) {
  using V = std::vector<std::string>;
  EXPECT_EQ(ExpandHostlist("gpu01"), V{"gpu01"});
  EXPECT_EQ(ExpandHostlist("gpu[01-03,07]"), (V{"gpu01", "gpu02", "gpu03", "gpu07"}));
  EXPECT_EQ(ExpandHostlist("gpu[8-10],cpu1"), (V{"gpu8", "gpu9", "gpu10", "cpu1"}));
  EXPECT_EQ(ExpandHostlist("r[1-2]-n"), (V{"r1-n", "r2-n"}));
  EXPECT_EQ(ExpandHostlist(""), V{});
  for (const char* bad : {"gpu[01-", "gpu[3-1]", "gpu[a-b]", "gpu[[1]]", "a,,b", "gpu[1-2][3]", "gpu]"}) {
    EXPECT_FALSE(ExpandHostlist(bad)) << bad;
  }
  EXPECT_FALSE(ExpandHostlist("n[0-999999999]", 1000));  // a limit, not a billion names
}

TEST(SlurmMapping, AForeignJobsGpusGoToItsNodes) {
  EXPECT_EQ(GpusPerNode(2, {"gpu:h100:6(IDX:0-5)", "gpu:a100:1(IDX:3)"}, 7), (std::vector<int>{6, 1}));
  EXPECT_EQ(GpusPerNode(3, {}, 7), (std::vector<int>{3, 2, 2}));  // no detail: spread
  EXPECT_EQ(GpusPerNode(1, {"gpu:h100:2(IDX:0-1)", "extra"}, 2), (std::vector<int>{2}));
  EXPECT_TRUE(GpusPerNode(0, {}, 4).empty());
}

}  // namespace
}  // namespace gpupool::executor
