// Executor with real /bin/sh processes. Each test gets its own work directory.
#include "agent/executor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>

namespace gpupool {
namespace {

namespace fs = std::filesystem;

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpupool-executor-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ExecutorOptions o;
    o.work_dir = dir_ + "/work";
    o.cgroup_parent = "";  // the cgroup test below opts in
    auto ex = Executor::Create(std::move(o));
    ASSERT_TRUE(ex.ok()) << ex.error().message;
    ex_ = std::move(*ex);
  }
  void TearDown() override {
    ex_.reset();
    fs::remove_all(dir_);
  }

  // Polls until `replica` exits (at most 10 s).
  ExitInfo WaitExit(const std::string& replica) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      for (const ReplicaExit& e : ex_->Poll()) {
        if (e.replica == replica) return e.exit;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ADD_FAILURE() << replica << " did not exit";
    return {true, -1};
  }

  std::string Tail(const std::string& path, size_t n = 4096) {
    auto r = ReadTail(path, n);
    return r.ok() ? *r : "error: " + r.error().message;
  }

  LaunchSpec Spec(std::string replica, std::string command) {
    LaunchSpec s;
    s.replica = std::move(replica);
    s.command = std::move(command);
    return s;
  }

  std::string dir_;
  std::unique_ptr<Executor> ex_;
};

// A process is gone once kill(pid, 0) fails or it is a zombie nobody reaped (an orphan whose
// reaper, in a container, may be a PID 1 that never reaps).
bool Gone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  return paren == std::string::npos || (paren + 2 < line.size() && line[paren + 2] == 'Z');
}

bool WaitGone(pid_t pid) {
  for (int i = 0; i < 400 && !Gone(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Gone(pid);
}

TEST_F(ExecutorTest, CapturesOutputAndExitCode) {
  ASSERT_TRUE(ex_->Start(Spec("r1", "echo hello; echo oops >&2; exit 3")).ok());
  EXPECT_TRUE(ex_->running("r1"));
  EXPECT_EQ(WaitExit("r1"), (ExitInfo{false, 3}));
  EXPECT_FALSE(ex_->running("r1"));
  EXPECT_EQ(Tail(ex_->StdoutPath("r1")), "hello\n");
  EXPECT_EQ(Tail(ex_->StderrPath("r1")), "oops\n");
  EXPECT_EQ(ex_->StdoutPath("r1"), dir_ + "/work/r1/stdout");
  EXPECT_TRUE(ex_->Poll().empty());  // reported once
}

TEST_F(ExecutorTest, ReportsASignalDeath) {
  ASSERT_TRUE(ex_->Start(Spec("r1", "kill -9 $$")).ok());
  const ExitInfo e = WaitExit("r1");
  EXPECT_EQ(e, (ExitInfo{true, SIGKILL}));
  EXPECT_EQ(ToString(e).rfind("signal 9 (", 0), 0u) << ToString(e);
  EXPECT_EQ(ToString(ExitInfo{false, 0}), "exit 0");
}

TEST_F(ExecutorTest, TailReadIsBounded) {
  ASSERT_TRUE(
      ex_->Start(Spec("r1", "i=0; while [ $i -lt 1000 ]; do echo line$i; i=$((i+1)); done")).ok());
  EXPECT_EQ(WaitExit("r1"), (ExitInfo{false, 0}));
  EXPECT_EQ(Tail(ex_->StdoutPath("r1"), 8), "line999\n");
  EXPECT_EQ(Tail(ex_->StdoutPath("r1"), 0), "");
  EXPECT_EQ(Tail(ex_->StdoutPath("r1"), 1 << 20).size(), 7890u);  // all of it
  auto missing = ReadTail(dir_ + "/nope", 10);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(ExecutorTest, EnvironmentCarriesDevicesAndMpsLimits) {
  LaunchSpec s =
      Spec("r1",
           "echo \"$CUDA_VISIBLE_DEVICES|$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE|"
           "$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT|$GPUPOOL_REPLICA|$FOO|${HOME-unset}|$(pwd)\"");
  s.devices = {"GPU-aaaa", "GPU-bbbb"};
  s.mps_active_thread_percentage = 25;
  s.mps_pinned_memory_mib = 20480;
  s.env = {{"FOO", "bar baz"}};
  ASSERT_TRUE(ex_->Start(s).ok());
  EXPECT_EQ(WaitExit("r1"), (ExitInfo{false, 0}));
  // The environment is built, not inherited: HOME is not passed through.
  EXPECT_EQ(Tail(ex_->StdoutPath("r1")),
            "GPU-aaaa,GPU-bbbb|25|0=20480MB,1=20480MB|r1|bar baz|unset|" + dir_ + "/work/r1\n");

  LaunchSpec mig = Spec("r2", "echo \"[$CUDA_VISIBLE_DEVICES]\"; env | grep -c CUDA_MPS_ || true");
  mig.devices = {"MIG-1234-5678"};
  ASSERT_TRUE(ex_->Start(mig).ok());
  EXPECT_EQ(WaitExit("r2"), (ExitInfo{false, 0}));
  EXPECT_EQ(Tail(ex_->StdoutPath("r2")), "[MIG-1234-5678]\n0\n");

  // No devices: CUDA_VISIBLE_DEVICES is set and empty, which hides every GPU.
  ASSERT_TRUE(ex_->Start(Spec("r3", "echo \"${CUDA_VISIBLE_DEVICES-unset}.\"")).ok());
  EXPECT_EQ(WaitExit("r3"), (ExitInfo{false, 0}));
  EXPECT_EQ(Tail(ex_->StdoutPath("r3")), ".\n");
}

TEST_F(ExecutorTest, RejectsBadSpecs) {
  auto code = [&](const LaunchSpec& s) {
    Status st = ex_->Start(s);
    return st.ok() ? std::string("ok") : std::string(ErrorCodeName(st.error().code));
  };
  EXPECT_EQ(code(Spec("../escape", "true")), "invalid_argument");
  EXPECT_EQ(code(Spec("", "true")), "invalid_argument");
  EXPECT_EQ(code(Spec("r1", "")), "invalid_argument");
  LaunchSpec bad_dev = Spec("r1", "true");
  bad_dev.devices = {"0"};
  EXPECT_EQ(code(bad_dev), "invalid_argument");
  LaunchSpec mps_on_mig = Spec("r1", "true");
  mps_on_mig.devices = {"MIG-1"};
  mps_on_mig.mps_active_thread_percentage = 50;
  EXPECT_EQ(code(mps_on_mig), "invalid_argument");
  LaunchSpec mps_no_gpu = Spec("r1", "true");
  mps_no_gpu.mps_pinned_memory_mib = 100;
  EXPECT_EQ(code(mps_no_gpu), "invalid_argument");
  LaunchSpec pct = Spec("r1", "true");
  pct.devices = {"GPU-1"};
  pct.mps_active_thread_percentage = 101;
  EXPECT_EQ(code(pct), "invalid_argument");
  LaunchSpec escape = Spec("r1", "true");
  escape.env = {{"CUDA_VISIBLE_DEVICES", "GPU-other"}};
  EXPECT_EQ(code(escape), "invalid_argument");
  LaunchSpec bad_env = Spec("r1", "true");
  bad_env.env = {{"A=B", "c"}};
  EXPECT_EQ(code(bad_env), "invalid_argument");

  ASSERT_TRUE(ex_->Start(Spec("dup", "sleep 5")).ok());
  EXPECT_EQ(code(Spec("dup", "true")), "already_exists");
  EXPECT_FALSE(ex_->RequestTerminate("nobody", Duration::Seconds(1)).ok());
}

TEST_F(ExecutorTest, SigtermIsHonoured) {
  ASSERT_TRUE(ex_->Start(Spec("r1", "sleep 30")).ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto e = ex_->Terminate("r1", Duration::Seconds(10));
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(*e, (ExitInfo{true, SIGTERM}));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_FALSE(ex_->running("r1"));
  EXPECT_TRUE(ex_->Poll().empty());  // Terminate reported it
}

TEST_F(ExecutorTest, IgnoredSigtermEndsInSigkillAfterTheGrace) {
  // The shell ignores SIGTERM, and so does the sleep it starts (ignored signals survive exec).
  ASSERT_TRUE(ex_->Start(Spec("r1", "trap '' TERM; echo ready; sleep 30; echo survived")).ok());
  while (Tail(ex_->StdoutPath("r1")) != "ready\n") {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto e = ex_->Terminate("r1", Duration::Millis(300));
  const auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(*e, (ExitInfo{true, SIGKILL}));
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_EQ(Tail(ex_->StdoutPath("r1")), "ready\n");
}

TEST_F(ExecutorTest, NonBlockingTerminateEscalatesInPoll) {
  ASSERT_TRUE(ex_->Start(Spec("r1", "trap '' TERM; echo ready; sleep 30")).ok());
  while (Tail(ex_->StdoutPath("r1")) != "ready\n") {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(ex_->RequestTerminate("r1", Duration::Millis(100)).ok());
  EXPECT_TRUE(ex_->Poll().empty());  // still inside the grace period
  EXPECT_EQ(WaitExit("r1"), (ExitInfo{true, SIGKILL}));
}

TEST_F(ExecutorTest, TheWholeGroupDies) {
  // The grandchild sleep shares the shell's process group.
  ASSERT_TRUE(ex_->Start(Spec("r1", "sleep 300 & echo $! > grandchild.pid; wait")).ok());
  const std::string pid_file = ex_->ReplicaDir("r1") + "/grandchild.pid";
  pid_t grandchild = 0;
  for (int i = 0; i < 400 && grandchild == 0; ++i) {
    std::ifstream in(pid_file);
    if (!(in >> grandchild)) grandchild = 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GT(grandchild, 0);
  EXPECT_FALSE(Gone(grandchild));
  EXPECT_EQ(getpgid(grandchild), ex_->pid("r1"));
  auto e = ex_->Terminate("r1", Duration::Seconds(5));
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(WaitGone(grandchild));
}

TEST_F(ExecutorTest, LeftoversAreKilledWhenTheShellExits) {
  // The shell exits at once, leaving a background sleep that ignores SIGTERM in its group.
  ASSERT_TRUE(ex_->Start(Spec("r1", "trap '' TERM; sleep 300 & echo $! > bg.pid")).ok());
  EXPECT_EQ(WaitExit("r1"), (ExitInfo{false, 0}));
  pid_t bg = 0;
  std::ifstream(ex_->ReplicaDir("r1") + "/bg.pid") >> bg;
  ASSERT_GT(bg, 0);
  EXPECT_TRUE(WaitGone(bg));
}

TEST_F(ExecutorTest, DestructorKillsWhatIsStillRunning) {
  ASSERT_TRUE(ex_->Start(Spec("r1", "sleep 300")).ok());
  const pid_t pid = ex_->pid("r1");
  ex_.reset();
  EXPECT_TRUE(Gone(pid));
}

TEST_F(ExecutorTest, CgroupV2IsUsedOrSkippedWithAReason) {
  EXPECT_FALSE(ex_->cgroup().enabled);
  EXPECT_EQ(ex_->cgroup().reason, "skipped: cgroups disabled by configuration");
  // Opt in under a parent of our own; on this machine's cgroup v1/hybrid mount, or without
  // write access, it is skipped with a reason, and the replica still runs.
  ExecutorOptions o;
  o.work_dir = dir_ + "/work2";
  o.cgroup_parent = "/sys/fs/cgroup/gpupool-test-" + std::to_string(getpid());
  auto ex = Executor::Create(o);
  ASSERT_TRUE(ex.ok());
  const CgroupSupport cg = (*ex)->cgroup();
  std::cout << "cgroup: " << cg.reason << "\n";
  ASSERT_TRUE((*ex)->Start(Spec("r1", "cat /proc/self/cgroup")).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool done = false;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    for (const ReplicaExit& e : (*ex)->Poll()) done = done || e.replica == "r1";
  }
  ASSERT_TRUE(done);
  const std::string self = *ReadTail((*ex)->StdoutPath("r1"), 4096);
  if (cg.enabled) {
    EXPECT_EQ(cg.reason.rfind("cgroup v2 at " + o.cgroup_parent, 0), 0u) << cg.reason;
    EXPECT_NE(self.find("/gpupool-test-" + std::to_string(getpid()) + "/r1"), std::string::npos)
        << self;
  } else {
    EXPECT_EQ(cg.reason.rfind("skipped: ", 0), 0u) << cg.reason;
  }
  ex->reset();
  rmdir(o.cgroup_parent.c_str());
}

// The shim outlives the executor that started it (as if the agent were killed with -9): the
// child process starts replicas and _exits without any destructor, and a new executor on the
// same directories finds them.
class OwnershipTest : public ExecutorTest {
 protected:
  ExecutorOptions Options() {
    ExecutorOptions o;
    o.work_dir = dir_ + "/work";
    o.cgroup_parent = "";
    o.lease_path = dir_ + "/lease";
    return o;
  }
  // Runs `body` with a fresh executor in a child process that then dies without cleaning up.
  void InACrashingAgent(const std::function<void(Executor&)>& body) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto ex = Executor::Create(Options());
      if (!ex.ok()) _exit(2);
      body(**ex);
      _exit(0);  // no destructor: the replicas are left to their shims
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  void SetLease(int64_t ms_from_now) {
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    std::ofstream(dir_ + "/lease.tmp") << now + ms_from_now << "\n";
    ASSERT_EQ(rename((dir_ + "/lease.tmp").c_str(), (dir_ + "/lease").c_str()), 0);
  }
  pid_t ReadPid(const std::string& path) {
    pid_t pid = 0;
    for (int i = 0; i < 400 && pid == 0; ++i) {
      std::ifstream in(path);
      if (!(in >> pid)) pid = 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pid;
  }
};

TEST_F(OwnershipTest, ALeaseThatRunsOutStopsTheReplica) {
  ex_.reset();
  auto ex = Executor::Create(Options());
  ASSERT_TRUE(ex.ok());
  ex_ = std::move(*ex);
  SetLease(60000);
  LaunchSpec s = Spec("r1", "trap 'echo term; exit 5' TERM; while :; do sleep 0.05; done");
  s.fence_grace = Duration::Seconds(5);
  ASSERT_TRUE(ex_->Start(s).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(ex_->Poll().empty());  // the lease holds
  SetLease(-1);                      // and now it has passed
  const ExitInfo e = WaitExit("r1");
  EXPECT_EQ(e, (ExitInfo{false, 5, /*fenced=*/true}));
  EXPECT_EQ(Tail(ex_->StdoutPath("r1")), "term\n");

  // One that ignores SIGTERM is killed after its fence grace.
  SetLease(60000);
  LaunchSpec stubborn =
      Spec("r2", "trap '' TERM; echo $$ > trapped.pid; while :; do sleep 0.05; done");
  stubborn.fence_grace = Duration::Millis(200);
  ASSERT_TRUE(ex_->Start(stubborn).ok());
  // The lease runs out only once the shell ignores SIGTERM (before, a SIGTERM would end it
  // at once, which is not what this test is about).
  ASSERT_GT(ReadPid(dir_ + "/work/r2/trapped.pid"), 0);
  SetLease(-1);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(WaitExit("r2"), (ExitInfo{true, SIGKILL, true}));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
}

TEST_F(OwnershipTest, ANewExecutorAdoptsWhatTheDeadOneStarted) {
  ex_.reset();
  SetLease(60000);
  pid_t shell = 0;
  InACrashingAgent([&](Executor& ex) {
    LaunchSpec run = Spec("running", "echo $$ > shell.pid; exec sleep 300");
    run.meta = "{\"job\": \"7\"}";
    if (!ex.Start(run).ok() || !ex.Start(Spec("done", "exit 3")).ok()) _exit(3);
  });
  shell = ReadPid(dir_ + "/work/running/shell.pid");
  ASSERT_GT(shell, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // "done" exits meanwhile
  EXPECT_FALSE(Gone(shell));                                     // its shim keeps it

  auto ex = Executor::Create(Options());
  ASSERT_TRUE(ex.ok());
  ex_ = std::move(*ex);
  std::vector<RecoveredReplica> found = ex_->Recover();
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].replica, "done");
  EXPECT_FALSE(found[0].running);
  EXPECT_EQ(found[0].exit, (ExitInfo{false, 3}));
  EXPECT_EQ(found[1].replica, "running");
  EXPECT_TRUE(found[1].running);
  EXPECT_EQ(found[1].meta, "{\"job\": \"7\"}");
  EXPECT_TRUE(ex_->running("running"));
  EXPECT_EQ(ex_->pid("running"), shell);
  // A replica not released keeps its name: no second start under it.
  EXPECT_EQ(ex_->Start(Spec("done", "true")).error().code, ErrorCode::kAlreadyExists);
  ex_->Release("done");
  EXPECT_TRUE(ex_->Start(Spec("done", "true")).ok());

  // Adopted, it is stopped through its shim like any other.
  auto e = ex_->Terminate("running", Duration::Seconds(5));
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(*e, (ExitInfo{true, SIGTERM}));
  EXPECT_TRUE(WaitGone(shell));
}

TEST_F(OwnershipTest, AReplicaWhoseShimWasKilledIsKilledAndReportedLost) {
  ex_.reset();
  SetLease(60000);
  InACrashingAgent([&](Executor& ex) {
    if (!ex.Start(Spec("r1", "echo $$ > shell.pid; sleep 300 & echo $! > bg.pid; wait")).ok()) _exit(3);
  });
  const pid_t shell = ReadPid(dir_ + "/work/r1/shell.pid");
  const pid_t bg = ReadPid(dir_ + "/work/r1/bg.pid");
  ASSERT_GT(bg, 0);
  const std::string state = *ReadTail(dir_ + "/work/.gpupool/r1.json", 4096);
  const size_t at = state.find("\"shim\":");
  ASSERT_NE(at, std::string::npos) << state;
  const pid_t shim = std::stoi(state.substr(at + 7));
  ASSERT_EQ(kill(shim, SIGKILL), 0);
  EXPECT_TRUE(WaitGone(shell));  // PR_SET_PDEATHSIG
  auto ex = Executor::Create(Options());
  ASSERT_TRUE(ex.ok());
  ex_ = std::move(*ex);
  std::vector<RecoveredReplica> found = ex_->Recover();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].running);
  EXPECT_EQ(found[0].exit, (ExitInfo{true, SIGKILL, /*fenced=*/true}));
  EXPECT_TRUE(WaitGone(bg));  // what was left of its group
}

TEST_F(OwnershipTest, WhatTheJobDaemonizesDiesWithIt) {
  // setsid leaves the process group; the shim, as subreaper, still finds and kills it.
  ASSERT_TRUE(ex_->Start(Spec("r1", "setsid sh -c 'trap \"\" TERM; echo $$ > escaped.pid; exec sleep 300' & "
                                    "sleep 0.3")).ok());
  const pid_t escaped = ReadPid(ex_->ReplicaDir("r1") + "/escaped.pid");
  ASSERT_GT(escaped, 0);
  EXPECT_NE(getpgid(escaped), ex_->pid("r1"));
  EXPECT_EQ(WaitExit("r1"), (ExitInfo{false, 0}));
  EXPECT_TRUE(Gone(escaped));  // gone before the exit was reported
}

TEST_F(OwnershipTest, FilesAreTheJobsAlone) {
  ASSERT_TRUE(ex_->Start(Spec("r1", "echo hi; ls /proc/self/fd | wc -l")).ok());
  EXPECT_EQ(WaitExit("r1"), (ExitInfo{false, 0}));
  struct stat st;
  ASSERT_EQ(stat(ex_->StdoutPath("r1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(ex_->ReplicaDir("r1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(ex_->state_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // stdin, stdout, stderr and the fd ls itself opens: none of the agent's.
  EXPECT_EQ(Tail(ex_->StdoutPath("r1")), "hi\n4\n");
}

TEST_F(OwnershipTest, ACgroupV2TreeHoldsTheReplicaWhereThereIsOne) {
  const std::string parent = DefaultCgroupParent("test-" + std::to_string(getpid()), dir_);
  if (parent.empty() || geteuid() != 0) GTEST_SKIP() << "no writable cgroup v2 mount here";
  ExecutorOptions o = Options();
  o.work_dir = dir_ + "/work-cg";
  o.cgroup_parent = parent;
  auto ex = Executor::Create(o);
  ASSERT_TRUE(ex.ok());
  ASSERT_TRUE((*ex)->cgroup().enabled) << (*ex)->cgroup().reason;
  ASSERT_TRUE((*ex)->Start(Spec("r1", "setsid sleep 300 & echo $! > bg.pid; cat /proc/self/cgroup; exit 0")).ok());
  const pid_t bg = ReadPid(dir_ + "/work-cg/r1/bg.pid");
  ASSERT_GT(bg, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool done = false;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    for (const ReplicaExit& e : (*ex)->Poll()) done = done || e.replica == "r1";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(done);
  EXPECT_TRUE(Gone(bg));
  EXPECT_NE(ReadTail(dir_ + "/work-cg/r1/stdout", 4096)->find(parent.substr(parent.rfind('/')) + "/r1"),
            std::string::npos);
  // A second executor on the same parent cannot start a replica into a cgroup that holds one.
  ASSERT_TRUE((*ex)->Start(Spec("r2", "sleep 30")).ok());
  ExecutorOptions other = Options();
  other.work_dir = dir_ + "/work-cg2";
  other.cgroup_parent = parent;
  auto ex2 = Executor::Create(other);
  ASSERT_TRUE(ex2.ok());
  const Status clash = (*ex2)->Start(Spec("r2", "true"));
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message.find("already holds processes"), std::string::npos) << clash.error().message;
  ex2->reset();
  ex->reset();
  rmdir(parent.c_str());
}

}  // namespace
}  // namespace gpupool
