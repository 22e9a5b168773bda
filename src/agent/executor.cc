#include "agent/executor.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <algorithm>

#include "agent/spawn.h"

namespace gpupool {
namespace {

// How long Terminate waits beyond the grace period for a SIGKILLed group's shell to exit.
constexpr Duration kKillWait = Duration::Seconds(30);
constexpr auto kWaitStep = std::chrono::milliseconds(5);

}  // namespace

bool internal::ValidReplicaName(const std::string& n) {
  // No leading '.': the state directory is <work_dir>/.gpupool.
  if (n.empty() || n.size() > 128 || n[0] == '.') return false;
  for (char c : n) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

namespace {

bool ValidEnvName(const std::string& k) {
  if (k.empty() || (k[0] >= '0' && k[0] <= '9')) return false;
  for (char c : k) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// Variables the executor owns: a job cannot set them to escape its GPUs.
bool Reserved(const std::string& k) {
  return k == "CUDA_VISIBLE_DEVICES" || k == "GPUPOOL_REPLICA" || k.rfind("CUDA_MPS_", 0) == 0;
}

Status ValidateSpec(const LaunchSpec& s) {
  if (!internal::ValidReplicaName(s.replica)) {
    return InvalidArgument("replica name '" + s.replica +
                           "' must be 1-128 characters of [A-Za-z0-9._-]");
  }
  if (s.command.empty() || s.command.find('\0') != std::string::npos) {
    return InvalidArgument("replica " + s.replica + ": empty or malformed command");
  }
  bool mig = false;
  for (const std::string& d : s.devices) {
    const bool gpu = d.rfind("GPU-", 0) == 0, is_mig = d.rfind("MIG-", 0) == 0;
    if ((!gpu && !is_mig) || d.find_first_of(", \t\n=") != std::string::npos) {
      return InvalidArgument("device '" + d + "' is not a GPU-... or MIG-... UUID");
    }
    mig = mig || is_mig;
  }
  const bool mps = s.mps_active_thread_percentage || s.mps_pinned_memory_mib;
  if (mps && (s.devices.empty() || mig)) {
    return InvalidArgument("replica " + s.replica +
                           ": MPS limits need whole GPUs (MPS is not supported on MIG devices)");
  }
  if (s.mps_active_thread_percentage &&
      (*s.mps_active_thread_percentage < 1 || *s.mps_active_thread_percentage > 100)) {
    return InvalidArgument("MPS active thread percentage must be 1..100");
  }
  if (s.mps_pinned_memory_mib && *s.mps_pinned_memory_mib == 0) {
    return InvalidArgument("MPS pinned memory limit must be > 0 MiB");
  }
  for (const auto& [k, v] : s.env) {
    if (!ValidEnvName(k) || v.find('\0') != std::string::npos) {
      return InvalidArgument("environment variable '" + k + "' is malformed");
    }
    if (Reserved(k)) return InvalidArgument(k + " is set by the executor, not by the job");
  }
  return Ok();
}

std::vector<std::string> BuildEnv(const ExecutorOptions& o, const LaunchSpec& s) {
  std::map<std::string, std::string> env(o.base_env.begin(), o.base_env.end());
  for (const auto& [k, v] : s.env) env[k] = v;
  env["GPUPOOL_REPLICA"] = s.replica;
  std::string visible;
  for (const std::string& d : s.devices) visible += (visible.empty() ? "" : ",") + d;
  env["CUDA_VISIBLE_DEVICES"] = visible;
  if (s.mps_active_thread_percentage) {
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(*s.mps_active_thread_percentage);
  }
  if (s.mps_pinned_memory_mib) {
    // "<ordinal>=<limit>" per visible device, e.g. "0=20480MB,1=20480MB" (MPS docs format).
    std::string limits;
    for (size_t i = 0; i < s.devices.size(); ++i) {
      limits += (i ? "," : "") + std::to_string(i) + "=" +
                std::to_string(*s.mps_pinned_memory_mib) + "MB";
    }
    env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = limits;
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

Status MakeDir(const std::string& path, mode_t mode = 0755) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return Error{ErrorCode::kInternal, "mkdir " + path + ": " + std::strerror(errno)};
  }
  if (chmod(path.c_str(), mode) != 0) {
    return Error{ErrorCode::kInternal, "chmod " + path + ": " + std::strerror(errno)};
  }
  return Ok();
}

}  // namespace

std::string ToString(const ExitInfo& e) {
  const std::string fenced = e.fenced ? " (fenced)" : "";
  if (!e.signaled) return "exit " + std::to_string(e.code) + fenced;
  const char* name = strsignal(e.code);
  return "signal " + std::to_string(e.code) + " (" + (name ? name : "?") + ")" + fenced;
}

Result<std::string> ReadTail(const std::string& path, size_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound(path + " does not exist");
    return Error{ErrorCode::kInternal, "open " + path + ": " + std::strerror(err)};
  }
  struct stat st;
  std::string out;
  if (fstat(fd, &st) == 0) {
    const off_t size = st.st_size;
    const off_t from =
        size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
    out.resize(static_cast<size_t>(size - from));
    size_t got = 0;
    while (got < out.size()) {
      const ssize_t n =
          pread(fd, out.data() + got, out.size() - got, from + static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    out.resize(got);
  }
  close(fd);
  return out;
}

Result<std::unique_ptr<Executor>> Executor::Create(ExecutorOptions options) {
  if (options.work_dir.empty()) return InvalidArgument("executor needs a work_dir");
  if (options.state_dir.empty()) options.state_dir = options.work_dir + "/.gpupool";
  std::error_code ec;
  std::filesystem::create_directories(options.work_dir, ec);
  if (ec) {
    return Error{ErrorCode::kInternal, "creating " + options.work_dir + ": " + ec.message()};
  }
  // Jobs of different users reach their own directory but cannot list the others.
  if (chmod(options.work_dir.c_str(), 0711) != 0) {
    return Error{ErrorCode::kInternal, "chmod " + options.work_dir + ": " + std::strerror(errno)};
  }
  std::filesystem::create_directories(options.state_dir, ec);
  if (ec) {
    return Error{ErrorCode::kInternal, "creating " + options.state_dir + ": " + ec.message()};
  }
  GP_RETURN_IF_ERROR(MakeDir(options.state_dir, 0700));
  std::unique_ptr<Executor> ex(new Executor(std::move(options)));
  ex->hide_with_ = ex->options_.state_dir + "/no-device";
  const int fd = open(ex->hide_with_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0);
  if (fd < 0 || fchmod(fd, 0) != 0) {
    const int err = errno;
    if (fd >= 0) close(fd);
    return Error{ErrorCode::kInternal, "creating " + ex->hide_with_ + ": " + std::strerror(err)};
  }
  close(fd);
  return ex;
}

Executor::Executor(ExecutorOptions options)
    : options_(std::move(options)), cgroup_(DetectCgroupV2(options_.cgroup_parent)) {}

Executor::~Executor() {
  for (auto& [name, p] : procs_) {
    if (p.pidfd >= 0) internal::AskShimToStop(p.pidfd, 0);
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!procs_.empty() && std::chrono::steady_clock::now() < give_up) {
    for (auto it = procs_.begin(); it != procs_.end();) {
      if (TryReap(it->first, it->second)) {
        Release(it->first);
        if (it->second.pidfd >= 0) close(it->second.pidfd);
        it = procs_.erase(it);
      } else {
        ++it;
      }
    }
    std::this_thread::sleep_for(kWaitStep);
  }
  for (auto& [name, p] : procs_) {
    if (p.pidfd >= 0) close(p.pidfd);
  }
  for (const std::string& cg : stale_cgroups_) rmdir(cg.c_str());
  // The parent too, once nothing is left in it (fails harmlessly otherwise); the next start
  // makes it again.
  if (cgroup_.enabled && procs_.empty()) rmdir(options_.cgroup_parent.c_str());
}

Time Executor::Now() const {
  if (options_.now) return options_.now();
  return Time::FromMillis(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count());
}

std::string Executor::ReplicaDir(const std::string& replica) const {
  return options_.work_dir + "/" + replica;
}
std::string Executor::StatePath(const std::string& replica) const {
  return options_.state_dir + "/" + replica + ".json";
}
std::string Executor::ExitPath(const std::string& replica) const {
  return options_.state_dir + "/" + replica + ".exit";
}

pid_t Executor::pid(const std::string& replica) const {
  auto it = procs_.find(replica);
  return it == procs_.end() ? -1 : it->second.pid;
}

pid_t Executor::shim_pid(const std::string& replica) const {
  auto it = procs_.find(replica);
  return it == procs_.end() ? -1 : it->second.shim;
}

Status Executor::Start(const LaunchSpec& spec) {
  GP_RETURN_IF_ERROR(ValidateSpec(spec));
  if (running(spec.replica)) return AlreadyExists("replica " + spec.replica + " is running");
  if (access(StatePath(spec.replica).c_str(), F_OK) == 0) {
    return AlreadyExists("replica " + spec.replica + " has exited but is not released");
  }
  if (spec.user && geteuid() != 0) {
    return Error{ErrorCode::kPermissionDenied, "replica " + spec.replica + ": running as uid " +
                            std::to_string(spec.user->uid) + " needs an agent running as root"};
  }
  internal::SpawnRequest req;
  req.dir = ReplicaDir(spec.replica);
  GP_RETURN_IF_ERROR(MakeDir(req.dir, 0700));
  if (spec.user && chown(req.dir.c_str(), spec.user->uid, spec.user->gid) != 0) {
    return Error{ErrorCode::kInternal, "chown " + req.dir + ": " + std::strerror(errno)};
  }
  req.command = spec.command;
  req.env = BuildEnv(options_, spec);
  req.lease_path = options_.lease_path;
  req.exit_path = ExitPath(spec.replica);
  req.fence_grace_ms = spec.fence_grace.millis();
  if (spec.user) {
    req.switch_user = true;
    req.uid = spec.user->uid;
    req.gid = spec.user->gid;
  }
  if (!spec.hide.empty()) {
    if (geteuid() != 0) {
      return Error{ErrorCode::kPermissionDenied, "replica " + spec.replica +
                              ": hiding the GPUs it was not granted needs an agent running as root"};
    }
    req.hide = spec.hide;
    req.hide_with = hide_with_;
  }
  unlink(req.exit_path.c_str());
  Proc proc;
  if (cgroup_.enabled) {
    proc.cgroup = options_.cgroup_parent + "/" + spec.replica;
    GP_RETURN_IF_ERROR(MakeDir(proc.cgroup));
    // Another process's replica (a second agent on this parent) must never share it: killing
    // one would kill both.
    if (internal::ReadAll(proc.cgroup + "/cgroup.events").find("populated 1") != std::string::npos) {
      return Error{ErrorCode::kFailedPrecondition,
                   "replica " + spec.replica + ": its cgroup " + proc.cgroup +
                       " already holds processes (another agent on the same cgroup parent?)"};
    }
    // Where the controller is not enabled the file is absent: no limit (cgroup() says so).
    if (spec.memory_mib > 0) {
      internal::WriteSmallFile(proc.cgroup + "/memory.max", std::to_string(spec.memory_mib << 20));
    }
    if (spec.cpu_milli > 0) {
      internal::WriteSmallFile(proc.cgroup + "/cpu.max",
                               std::to_string(spec.cpu_milli * 100) + " 100000");
    }
    req.cgroup = proc.cgroup;
  }
  nlohmann::json state = {{"replica", spec.replica}, {"cgroup", proc.cgroup}, {"meta", spec.meta}};
  // Written before the fork, so a crash right after it still leaves a trace of the replica.
  GP_RETURN_IF_ERROR(internal::WriteAtomically(StatePath(spec.replica), state.dump()));
  auto spawned = internal::SpawnReplica(req);
  if (!spawned.ok()) {
    if (!proc.cgroup.empty()) rmdir(proc.cgroup.c_str());
    unlink(StatePath(spec.replica).c_str());
    return Error{spawned.error().code, "replica " + spec.replica + ": " + spawned.error().message};
  }
  proc.shim = spawned->shim;
  proc.pidfd = spawned->pidfd;
  proc.pid = spawned->pgid;
  state["shim"] = proc.shim;
  state["shim_start"] = internal::ProcessStartTime(proc.shim);
  state["pgid"] = proc.pid;
  if (Status s = internal::WriteAtomically(StatePath(spec.replica), state.dump()); !s.ok()) {
    internal::AskShimToStop(proc.pidfd, 0);  // a replica we could not find again must not run
    procs_.emplace(spec.replica, std::move(proc));
    return Error{s.error().code, "replica " + spec.replica + ": " + s.error().message +
                                     " (the replica was killed)"};
  }
  procs_.emplace(spec.replica, std::move(proc));
  return Ok();
}

std::optional<ExitInfo> Executor::TryReap(const std::string& replica, Proc& p) {
  if (p.pidfd >= 0) {
    struct pollfd pfd{p.pidfd, POLLIN, 0};
    if (poll(&pfd, 1, 0) == 0) return std::nullopt;  // still running
  } else if (p.child) {
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    if (waitid(P_PID, static_cast<id_t>(p.shim), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == 0) {
      return std::nullopt;
    }
  }
  if (p.child) {
    int status = 0;
    while (waitpid(p.shim, &status, 0) < 0 && errno == EINTR) {
    }
  }
  const ExitInfo e = ReadExit(replica, p);
  if (!p.cgroup.empty()) stale_cgroups_.push_back(p.cgroup);
  return e;
}

void Executor::CleanupCgroups() {
  std::vector<std::string> busy;
  for (const std::string& cg : stale_cgroups_) {
    if (rmdir(cg.c_str()) != 0 && errno == EBUSY) busy.push_back(cg);
  }
  stale_cgroups_.swap(busy);
}

std::vector<ReplicaExit> Executor::Poll() {
  std::vector<ReplicaExit> out;
  for (auto it = procs_.begin(); it != procs_.end();) {
    if (auto e = TryReap(it->first, it->second)) {
      out.push_back({it->first, *e});
      if (it->second.pidfd >= 0) close(it->second.pidfd);
      it = procs_.erase(it);
      continue;
    }
    ++it;
  }
  CleanupCgroups();
  return out;
}

Status Executor::RequestTerminate(const std::string& replica, Duration grace) {
  auto it = procs_.find(replica);
  if (it == procs_.end()) return NotFound("replica " + replica + " is not running");
  Proc& p = it->second;
  // The shim keeps the earliest deadline it was given.
  // Without a pidfd (kernels before 5.3) the shim gets SIGTERM: a stop with its fence grace.
  if (p.pidfd >= 0) {
    internal::AskShimToStop(p.pidfd, grace.millis());
  } else {
    kill(p.shim, SIGTERM);
  }
  return Ok();
}

Result<ExitInfo> Executor::Terminate(const std::string& replica, Duration grace) {
  GP_RETURN_IF_ERROR(RequestTerminate(replica, grace));
  auto it = procs_.find(replica);
  const Time give_up = Now() + grace + kKillWait;
  while (true) {
    if (auto e = TryReap(replica, it->second)) {
      if (it->second.pidfd >= 0) close(it->second.pidfd);
      procs_.erase(it);
      CleanupCgroups();
      return *e;
    }
    if (Now() >= give_up) {
      return Error{ErrorCode::kUnavailable,
                   "replica " + replica + " did not exit after SIGKILL; Poll will reap it"};
    }
    std::this_thread::sleep_for(kWaitStep);
  }
}

}  // namespace gpupool
