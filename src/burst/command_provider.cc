#include "burst/command_provider.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

extern char** environ;

namespace gpupool {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxStdout = 1 << 20;  // a node description is tiny
constexpr size_t kKeptStderr = 4096;    // enough for the 200 bytes an error quotes
constexpr size_t kQuoted = 200;
// After the script exits, how long to wait for children that still hold its pipes.
constexpr std::chrono::milliseconds kExitGrace{200};

Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }

struct ScriptRun {
  int status = 0;  // waitpid status
  bool timed_out = false;
  std::string out, err;  // at most kMaxStdout and kKeptStderr bytes kept
  Duration elapsed;
};

// environ with `vars` ("NAME=value") replacing any entry of the same name.
std::vector<std::string> Environment(const std::vector<std::string>& vars) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('=') + 1);
    const bool replaced = std::any_of(vars.begin(), vars.end(), [&](const std::string& v) {
      return std::string_view(v).substr(0, v.find('=') + 1) == name;
    });
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), vars.begin(), vars.end());
  return env;
}

// Appends what is readable on fd to `buf` (up to `cap` bytes kept); false at end of file.
bool Drain(int fd, std::string& buf, size_t cap) {
  char chunk[4096];
  const ssize_t n = read(fd, chunk, sizeof chunk);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  const size_t keep = std::min(static_cast<size_t>(n), cap - std::min(cap, buf.size()));
  buf.append(chunk, keep);
  return true;
}

// Reads the child's stdout and stderr until it has exited and both pipes closed (or a grace
// after its exit passed: a leftover child may hold them), or until the deadline, which sets
// timed_out unless it had exited. Returns whether the child has been reaped; if not, its pid is
// still ours (not waited for), so killing its process group is safe.
bool Collect(pid_t pid, int out_fd, int err_fd, Clock::time_point deadline, ScriptRun& run) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  bool reaped = false;
  Clock::time_point exited_at{};
  for (;;) {
    const Clock::time_point now = Clock::now();
    const bool closed = fds[0].fd < 0 && fds[1].fd < 0;
    if (reaped && (closed || now - exited_at >= kExitGrace)) break;
    if (now >= deadline) {
      run.timed_out = !reaped;
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    const int wait_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, 20));
    if (poll(fds, 2, wait_ms) < 0 && errno != EINTR) break;  // both closed: a short sleep
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const bool open =
          Drain(fds[i].fd, i == 0 ? run.out : run.err, i == 0 ? kMaxStdout : kKeptStderr);
      if (!open) fds[i].fd = -1;
    }
    // The script has exited: what it left running in its process group goes with it (a
    // script that means to start a daemon uses setsid). The group id stays valid until the
    // script is reaped, so look without reaping (WNOWAIT), kill the group, then reap.
    siginfo_t info{};
    if (!reaped && waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      kill(-pid, SIGKILL);
      while (waitpid(pid, &run.status, 0) < 0 && errno == EINTR) {
      }
      reaped = true;
      exited_at = Clock::now();
    }
  }
  return reaped;
}

// Runs `/bin/sh -c command` with `vars` added to the environment, in its own process group.
// The Result is an error only when the script could not be started.
Result<ScriptRun> RunScript(const std::string& command, const std::vector<std::string>& vars,
                            Duration timeout) {
  std::vector<std::string> env = Environment(vars);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};

  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Unavailable(std::string("pipe: ") + strerror(errno));
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return Unavailable(std::string("pipe: ") + strerror(errno));
  }
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const Clock::time_point start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {  // the child: async-signal-safe calls only
    setpgid(0, 0);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execve(argv[0], argv, envp.data());
    _exit(127);
  }
  const int fork_errno = errno;
  if (pid > 0) setpgid(pid, pid);  // also here: no race with the kill below
  close(out[1]);
  close(err[1]);
  if (devnull >= 0) close(devnull);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    return Unavailable(std::string("fork: ") + strerror(fork_errno));
  }
  ScriptRun run;
  const auto limit = std::chrono::milliseconds(timeout.millis());
  const bool reaped = Collect(pid, out[0], err[0], start + limit, run);
  if (!reaped) {
    kill(-pid, SIGKILL);  // timed out (or poll failed): stop the whole group
    while (waitpid(pid, &run.status, 0) < 0 && errno == EINTR) {
    }
  }
  close(out[0]);
  close(err[0]);
  run.elapsed = Duration::Millis(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  return run;
}

// The first kQuoted bytes of a script's output on one line, for error messages.
std::string Quote(const std::string& text) {
  std::string s = text.substr(0, kQuoted);
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s.empty() ? "(empty)" : s;
}

// "create script `cmd`": names the script in every error.
std::string Named(const char* what, const std::string& command) {
  return std::string(what) + " script `" + command.substr(0, 120) +
         (command.size() > 120 ? "...`" : "`");
}

// Ok for a clean exit 0; else the error, quoting stderr.
Status Outcome(const std::string& name, const ScriptRun& run, Duration timeout) {
  const std::string err = "; stderr: " + Quote(run.err);
  if (run.timed_out) {
    return Unavailable(name + " timed out after " + ToString(timeout) +
                       " (its process group was killed)" + err);
  }
  if (WIFSIGNALED(run.status)) {
    return Unavailable(name + " was killed by signal " + std::to_string(WTERMSIG(run.status)) +
                       err);
  }
  if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0) {
    return Unavailable(name + " exited with status " + std::to_string(WEXITSTATUS(run.status)) +
                       err);
  }
  return Ok();
}

bool ValidNodeName(const std::string& n) {
  if (n.empty() || n.size() > 253) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_';
  });
}

// An integer member in [lo, hi], or an error naming the key.
Result<int64_t> IntField(const Json& j, const char* key, int64_t lo, int64_t hi) {
  const Json& v = j.at(key);
  if (!v.is_number_integer()) return InvalidArgument(std::string(key) + " must be an integer");
  const int64_t n = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}
                        ? INT64_MAX
                        : v.get<int64_t>();
  if (n < lo || n > hi) {
    return InvalidArgument(std::string(key) + " " + std::to_string(n) + " is outside " +
                           std::to_string(lo) + ".." + std::to_string(hi));
  }
  return n;
}

}  // namespace

CommandProvider::CommandProvider(const Catalogue& catalogue, CommandProviderConfig config)
    : catalogue_(catalogue), config_(std::move(config)) {
  GP_CHECK(!config_.create_command.empty() && !config_.delete_command.empty())
      << "command provider needs create and delete commands";
  GP_CHECK(config_.timeout > Duration() && !config_.timeout.is_infinite())
      << "command provider timeout must be positive and finite";
}

Result<std::string> CommandProvider::Provision(const ProvisionRequest& request, int index,
                                               Time now) {
  GP_RETURN_IF_ERROR(ValidateProvisionRequest(request, index, catalogue_));
  const std::string id = !request.request_id.empty()
                             ? request.request_id
                             : "cmd-" + std::to_string(now.millis()) + "-" + std::to_string(++seq_);
  const std::string tenant =
      request.tenant_name.empty() ? std::to_string(request.tenant.value()) : request.tenant_name;
  const std::string flavor = catalogue_.model(request.flavor).name;
  const std::string name = Named("create", config_.create_command);
  auto run = RunScript(
      config_.create_command,
      {"GPUPOOL_FLAVOR=" + flavor, "GPUPOOL_GPUS=" + std::to_string(request.gpus_per_node),
       "GPUPOOL_TENANT=" + tenant, "GPUPOOL_REQUEST_ID=" + id,
       "GPUPOOL_INDEX=" + std::to_string(index)},
      config_.timeout);
  if (!run.ok()) return Unavailable(name + " could not start: " + run.error().message);
  GP_RETURN_IF_ERROR(Outcome(name, *run, config_.timeout));
  auto node = ParseNode(run->out, request);
  if (!node.ok()) {
    std::string msg = name + " printed a bad node description: " + node.error().message +
                      "; stdout: " + Quote(run->out) + "; stderr: " + Quote(run->err);
    const Json j = Json::parse(run->out, nullptr, false);
    if (j.is_object() && j.contains("name") && j["name"].is_string() &&
        ValidNodeName(j["name"].get<std::string>())) {  // it exists: do not leave it running
      const Status deleted = Release(j["name"].get<std::string>(), now);
      msg += deleted.ok() ? " (node deleted again)" : " (deleting it failed too)";
    }
    return Unavailable(std::move(msg));
  }
  node->request_id = id;
  node->ready = now + run->elapsed;
  origins_[node->name] = {request.flavor, tenant};
  created_.push_back(*node);
  return id;
}

Result<ProvisionedNode> CommandProvider::ParseNode(const std::string& out,
                                                   const ProvisionRequest& request) const {
  const Json j = Json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("not one JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "name" && key != "gpus" && key != "flavor" && key != "cpu_milli" &&
        key != "memory_mib") {
      return InvalidArgument("unknown key \"" + key + "\"");
    }
  }
  for (const char* key : {"name", "gpus", "flavor"}) {
    if (!j.contains(key)) return InvalidArgument(std::string("missing \"") + key + "\"");
  }
  if (!j["name"].is_string() || !ValidNodeName(j["name"].get<std::string>())) {
    return InvalidArgument("name must be 1 to 253 of [A-Za-z0-9._-]");
  }
  if (!j["flavor"].is_string()) return InvalidArgument("flavor must be a string");
  const std::string flavor = j["flavor"].get<std::string>();
  const auto f = catalogue_.Find(flavor);
  if (!f.ok()) return InvalidArgument("unknown flavor \"" + flavor + "\"");
  if (*f != request.flavor) {
    return InvalidArgument("flavor " + flavor + ", but " + catalogue_.model(request.flavor).name +
                           " was asked for");
  }
  ProvisionedNode n{.name = j["name"].get<std::string>(), .flavor = *f};
  auto gpus = IntField(j, "gpus", 1, 16);
  if (!gpus.ok()) return gpus.error();
  if (*gpus != request.gpus_per_node) {
    return InvalidArgument("gpus " + std::to_string(*gpus) + ", but " +
                           std::to_string(request.gpus_per_node) + " were asked for");
  }
  n.gpus = static_cast<int>(*gpus);
  const std::pair<const char*, int64_t*> optional[] = {{"cpu_milli", &n.cpu_milli},
                                                       {"memory_mib", &n.memory_mib}};
  for (const auto& [key, field] : optional) {
    if (!j.contains(key)) continue;
    auto v = IntField(j, key, 0, INT64_MAX);
    if (!v.ok()) return v.error();
    *field = *v;
  }
  return n;
}

std::vector<ProvisionedNode> CommandProvider::Poll(Time /*now*/) {
  return std::exchange(created_, {});
}

Status CommandProvider::Release(const std::string& node_name, Time /*now*/) {
  std::vector<std::string> vars = {"GPUPOOL_NODE=" + node_name};
  const auto it = origins_.find(node_name);
  if (it != origins_.end()) {
    vars.push_back("GPUPOOL_FLAVOR=" + catalogue_.model(it->second.flavor).name);
    vars.push_back("GPUPOOL_TENANT=" + it->second.tenant);
  }
  GP_RETURN_IF_ERROR(Delete(node_name, vars));
  origins_.erase(node_name);
  return Ok();
}

Status CommandProvider::Delete(const std::string& node_name, const std::vector<std::string>& env) {
  const std::string name = Named("delete", config_.delete_command);
  auto run = RunScript(config_.delete_command, env, config_.timeout);
  if (!run.ok()) return Unavailable(name + " could not start: " + run.error().message);
  const Status s = Outcome(name, *run, config_.timeout);
  if (!s.ok()) return Unavailable(s.error().message + " (node " + node_name + ")");
  return Ok();
}

}  // namespace gpupool
