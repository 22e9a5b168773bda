#include "agent/executor.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/spawn.h"

namespace gpupool {
namespace {

// How long Terminate waits beyond the grace period for a SIGKILLed group's shell to exit.
constexpr Duration kKillWait = Duration::Seconds(30);
constexpr auto kWaitStep = std::chrono::milliseconds(5);

bool ValidReplicaName(const std::string& n) {
  if (n.empty() || n.size() > 128 || n == "." || n == "..") return false;
  for (char c : n) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

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
  if (!ValidReplicaName(s.replica)) {
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

Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return Ok();
  return Error{ErrorCode::kInternal, "mkdir " + path + ": " + std::strerror(errno)};
}

}  // namespace

std::string ToString(const ExitInfo& e) {
  if (!e.signaled) return "exit " + std::to_string(e.code);
  const char* name = strsignal(e.code);
  return "signal " + std::to_string(e.code) + " (" + (name ? name : "?") + ")";
}

CgroupSupport DetectCgroupV2(const std::string& parent) {
  if (parent.empty()) return {false, "skipped: cgroups disabled by configuration"};
  // The nearest existing ancestor tells which filesystem the cgroup would live on.
  std::string probe = parent;
  struct statfs fs;
  while (statfs(probe.c_str(), &fs) != 0) {
    const size_t slash = probe.find_last_of('/');
    if (errno != ENOENT || slash == std::string::npos || slash == 0) {
      return {false, "skipped: cannot stat " + probe + ": " + std::strerror(errno)};
    }
    probe.resize(slash);
  }
  if (static_cast<unsigned long>(fs.f_type) != CGROUP2_SUPER_MAGIC) {
    return {false, "skipped: " + probe + " is not a cgroup v2 mount (cgroup v1 or hybrid)"};
  }
  if (mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) {
    return {false, "skipped: cannot create " + parent + ": " + std::strerror(errno)};
  }
  if (access((parent + "/cgroup.procs").c_str(), W_OK) != 0) {
    return {false, "skipped: " + parent + "/cgroup.procs is not writable: " + std::strerror(errno)};
  }
  return {true, "cgroup v2 at " + parent};
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
  std::error_code ec;
  std::filesystem::create_directories(options.work_dir, ec);
  if (ec) {
    return Error{ErrorCode::kInternal, "creating " + options.work_dir + ": " + ec.message()};
  }
  return std::unique_ptr<Executor>(new Executor(std::move(options)));
}

Executor::Executor(ExecutorOptions options)
    : options_(std::move(options)), cgroup_(DetectCgroupV2(options_.cgroup_parent)) {}

Executor::~Executor() {
  for (auto& [name, p] : procs_) {
    KillGroup(p, SIGKILL);
    int status;
    while (waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!p.cgroup.empty()) stale_cgroups_.push_back(p.cgroup);
  }
  for (const std::string& cg : stale_cgroups_) rmdir(cg.c_str());
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

pid_t Executor::pid(const std::string& replica) const {
  auto it = procs_.find(replica);
  return it == procs_.end() ? -1 : it->second.pid;
}

Status Executor::Start(const LaunchSpec& spec) {
  GP_RETURN_IF_ERROR(ValidateSpec(spec));
  if (running(spec.replica)) return AlreadyExists("replica " + spec.replica + " is running");
  internal::SpawnRequest req;
  req.dir = ReplicaDir(spec.replica);
  GP_RETURN_IF_ERROR(MakeDir(req.dir));
  req.command = spec.command;
  req.env = BuildEnv(options_, spec);
  Proc proc;
  if (cgroup_.enabled) {
    proc.cgroup = options_.cgroup_parent + "/" + spec.replica;
    GP_RETURN_IF_ERROR(MakeDir(proc.cgroup));
    req.cgroup_procs = proc.cgroup + "/cgroup.procs";
  }
  auto pid = internal::SpawnShell(req);
  if (!pid.ok()) {
    if (!proc.cgroup.empty()) rmdir(proc.cgroup.c_str());
    return Error{pid.error().code, "replica " + spec.replica + ": " + pid.error().message};
  }
  proc.pid = *pid;
  procs_.emplace(spec.replica, std::move(proc));
  return Ok();
}

void Executor::KillGroup(const Proc& p, int sig) {
  kill(-p.pid, sig);
  if (p.cgroup.empty()) return;
  // Members that left the process group (setsid) are still in the cgroup. cgroup.kill needs
  // Linux 5.14; before that, signal each member.
  if (sig == SIGKILL && internal::WriteSmallFile(p.cgroup + "/cgroup.kill", "1")) return;
  std::ifstream procs(p.cgroup + "/cgroup.procs");
  for (pid_t member; procs >> member;) kill(member, sig);
}

std::optional<ExitInfo> Executor::TryReap(Proc& p) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  // WNOWAIT leaves the shell a zombie, so its pid (the group id) stays reserved while what is
  // left of the group is killed.
  if (waitid(P_PID, static_cast<id_t>(p.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == EINTR) return std::nullopt;
    return ExitInfo{true, SIGKILL};  // ECHILD: reaped behind our back; report it as killed
  }
  if (info.si_pid == 0) return std::nullopt;  // still running
  KillGroup(p, SIGKILL);
  int status = 0;
  while (waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!p.cgroup.empty()) stale_cgroups_.push_back(p.cgroup);
  if (WIFSIGNALED(status)) return ExitInfo{true, WTERMSIG(status)};
  return ExitInfo{false, WEXITSTATUS(status)};
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
  const Time now = Now();
  for (auto it = procs_.begin(); it != procs_.end();) {
    Proc& p = it->second;
    if (auto e = TryReap(p)) {
      out.push_back({it->first, *e});
      it = procs_.erase(it);
      continue;
    }
    if (p.kill_at && !p.killed && now >= *p.kill_at) {
      KillGroup(p, SIGKILL);
      p.killed = true;
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
  if (p.kill_at) return Ok();  // already terminating: keep the first deadline
  p.kill_at = Now() + grace;
  KillGroup(p, SIGTERM);
  return Ok();
}

Result<ExitInfo> Executor::Terminate(const std::string& replica, Duration grace) {
  GP_RETURN_IF_ERROR(RequestTerminate(replica, grace));
  auto it = procs_.find(replica);
  const Time give_up = *it->second.kill_at + kKillWait;
  while (true) {
    Proc& p = it->second;
    if (auto e = TryReap(p)) {
      procs_.erase(it);
      CleanupCgroups();
      return *e;
    }
    const Time now = Now();
    if (!p.killed && now >= *p.kill_at) {
      KillGroup(p, SIGKILL);
      p.killed = true;
    }
    if (now >= give_up) {
      return Error{ErrorCode::kUnavailable,
                   "replica " + replica + " did not exit after SIGKILL; Poll will reap it"};
    }
    std::this_thread::sleep_for(kWaitStep);
  }
}

}  // namespace gpupool
