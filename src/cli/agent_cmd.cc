// `gpupool agent`: the node agent. Flags to AgentOptions, a probe (NVML or fake) and an executor;
// the loop itself is agent/agent_loop.cc. Logs go to stderr as JSON lines.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "agent/agent_loop.h"
#include "agent/executor.h"
#include "agent/fake_probe.h"
#include "agent/nvml_probe.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/commands.h"

namespace gpupool::cli {
namespace {

int UsageError(const std::string& message) {
  std::cerr << "gpupool agent: " << message << "\n" << kAgentUsage;
  return 2;
}

// "NAME" or "UID" of a user; "NAME[:GROUP]" with a group name or GID.
Result<RunAs> ParseUser(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string user = text.substr(0, colon);
  const std::string group_name = colon == std::string::npos ? "" : text.substr(colon + 1);
  auto number = [](const std::string& s) -> std::optional<unsigned long> {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9) return std::nullopt;
    return std::stoul(s);
  };
  RunAs out;
  if (auto n = number(user)) {
    out.uid = static_cast<uid_t>(*n);
    out.gid = static_cast<gid_t>(*n);  // a numeric user without a group: its own number
    if (const passwd* pw = getpwuid(out.uid)) out.gid = pw->pw_gid;
  } else if (const passwd* pw = getpwnam(user.c_str())) {
    out.uid = pw->pw_uid;
    out.gid = pw->pw_gid;
  } else {
    return InvalidArgument("no user '" + user + "' on this node");
  }
  if (!group_name.empty()) {
    if (auto n = number(group_name)) {
      out.gid = static_cast<gid_t>(*n);
    } else if (const struct group* gr = getgrnam(group_name.c_str())) {
      out.gid = gr->gr_gid;
    } else {
      return InvalidArgument("no group '" + group_name + "' on this node");
    }
  }
  return out;
}

// --users FILE: "TENANT USER[:GROUP]" a line ("*" for every other tenant; '#' comments).
Result<std::map<std::string, RunAs>> ReadUsers(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("cannot read --users file " + path);
  std::map<std::string, RunAs> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream words(line);
    std::string tenant, user, extra;
    if (!(words >> tenant) || tenant[0] == '#') continue;
    if (!(words >> user) || (words >> extra && extra[0] != '#')) {
      return InvalidArgument(path + ":" + std::to_string(n) + ": expected 'TENANT USER[:GROUP]'");
    }
    Result<RunAs> u = ParseUser(user);
    if (!u.ok()) return InvalidArgument(path + ":" + std::to_string(n) + ": " + u.error().message);
    out[tenant] = *u;
  }
  return out;
}

// The token file must be the agent's own secret: a regular file not readable by others.
Result<std::string> ReadTokenFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return InvalidArgument("cannot read --token-file " + path);
  if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
    return InvalidArgument("--token-file " + path + " must be a regular file of mode 0600 (or 0400)");
  }
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) return InvalidArgument("--token-file " + path + " is empty");
  return token;
}

}  // namespace

int Agent(const std::vector<std::string>& argv) {
  Result<Args> args = Args::Parse(argv,
                                  {"server", "token", "name", "gpus", "work-dir", "acceptance",
                                   "fault-file", "allow-mig-changes", "rediscover-interval-s",
                                   "token-file", "state-dir", "cgroup-parent", "users",
                                   "allow-root", "device-nodes", "ca", "client-cert", "client-key", "help"},
                                  {"help", "allow-mig-changes"});
  if (!args.ok()) return UsageError(args.error().message);
  if (args->Has("help")) {
    std::cout << kAgentUsage;
    return 0;
  }
  if (!args->positional().empty()) {
    return UsageError("unexpected argument '" + args->positional().front() + "'");
  }
  const std::string name = args->Str("name", "");
  if (name.empty()) return UsageError("--name NODE is required");
  // The token from a file stays out of argv and the environment, where a job could read it.
  std::string token_flag = args->Str("token", "");
  if (args->Has("token-file")) {
    if (args->Has("token")) return UsageError("--token and --token-file exclude each other");
    Result<std::string> t = ReadTokenFile(args->Str("token-file", ""));
    if (!t.ok()) return UsageError(t.error().message);
    token_flag = *t;
  } else if (args->Has("token") || std::getenv("GPUPOOL_TOKEN") != nullptr) {
    std::cerr << "gpupool agent: warning: a token in --token or GPUPOOL_TOKEN is visible in "
                 "/proc of this process; give it with --token-file\n";
  }
  Result<ClientConfig> config =
      ResolveClientConfig(args->Str("server", ""), token_flag, std::getenv);
  if (!config.ok()) return UsageError(config.error().message);
  for (size_t from = 0; from <= config->url.size();) {  // several, comma-separated, for replicas
    size_t comma = config->url.find(',', from);
    if (comma == std::string::npos) comma = config->url.size();
    if (Result<ServerUrl> url = ParseServerUrl(config->url.substr(from, comma - from)); !url.ok()) {
      return UsageError(url.error().message + " (from " + config->url_source + ")");
    }
    from = comma + 1;
  }

  const std::string gpus = args->Str("gpus", "nvml");
  const std::string fault_file = args->Str("fault-file", "");
  std::unique_ptr<GpuProbe> probe;
  if (gpus == "nvml") {
    if (!fault_file.empty()) return UsageError("--fault-file needs --gpus fake:SPEC");
    NvmlProbeOptions no;
    no.allow_mig_changes = args->Has("allow-mig-changes");
    auto nvml = std::make_unique<NvmlProbe>(std::move(no));
    if (Result<std::vector<GpuInfo>> seen = nvml->Discover(); !seen.ok()) {
      std::cerr << "gpupool agent: cannot use NVML: " << seen.error().message
                << " (on a machine without NVIDIA GPUs, use --gpus fake:SPEC)\n";
      return 1;
    }
    probe = std::move(nvml);
  } else if (gpus.rfind("fake:", 0) == 0) {
    Result<std::unique_ptr<FakeProbe>> fake = FakeProbe::Create(name, gpus.substr(5));
    if (!fake.ok()) return UsageError(fake.error().message);
    probe = std::move(*fake);
  } else {
    return UsageError("--gpus must be nvml or fake:SPEC, not '" + gpus + "'");
  }

  ExecutorOptions eo;
  eo.work_dir = args->Str("work-dir", "./gpupool-agent-" + name);
  eo.state_dir = args->Str("state-dir", eo.work_dir + "/.gpupool");
  eo.lease_path = eo.state_dir + "/lease";
  eo.cgroup_parent = args->Has("cgroup-parent") ? args->Str("cgroup-parent", "") : DefaultCgroupParent(name, eo.state_dir);
  Result<std::unique_ptr<Executor>> executor = Executor::Create(std::move(eo));
  if (!executor.ok()) {
    std::cerr << "gpupool agent: " << executor.error().message << "\n";
    return 1;
  }

  AgentOptions o;
  o.server_url = config->url;
  o.ca_file = args->Str("ca", config->ca_file);
  o.token = config->token;
  o.client_cert = args->Str("client-cert", "");
  o.client_key = args->Str("client-key", "");
  if (!o.client_key.empty()) {
    // The key is the node's credential, as a token file is: the agent's own, unreadable by jobs.
    struct stat st;
    if (stat(o.client_key.c_str(), &st) != 0) return UsageError("cannot read --client-key " + o.client_key);
    if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
      return UsageError("--client-key " + o.client_key + " must be a regular file of mode 0600 (or 0400)");
    }
  }
  o.node = name;
  o.acceptance_command = args->Str("acceptance", "");
  o.fault_file = fault_file;
  o.allow_mig_changes = args->Has("allow-mig-changes");
  if (args->Has("users")) {
    Result<std::map<std::string, RunAs>> users = ReadUsers(args->Str("users", ""));
    if (!users.ok()) return UsageError(users.error().message);
    o.users = std::move(*users);
  }
  {
    std::istringstream list(args->Str("allow-root", ""));
    for (std::string t; std::getline(list, t, ',');) {
      if (!t.empty()) o.allow_root.insert(t);
    }
  }
  if (args->Has("device-nodes")) {
    // A template with %d for the GPU index (/dev/nvidia%d), used for every GPU the probe sees.
    const std::string tmpl = args->Str("device-nodes", "");
    const size_t at = tmpl.find("%d");
    if (at == std::string::npos) return UsageError("--device-nodes needs %d for the GPU index, as in /dev/nvidia%d");
    Result<std::vector<GpuInfo>> seen = probe->Discover();
    if (!seen.ok()) return UsageError("--device-nodes: " + seen.error().message);
    for (const GpuInfo& g : *seen) {
      std::string path = tmpl;
      path.replace(at, 2, std::to_string(g.index));
      struct stat st;
      if (stat(path.c_str(), &st) != 0) return UsageError("--device-nodes: no " + path + " for GPU " + std::to_string(g.index));
      o.device_nodes[g.index] = path;
    }
  }
  if (args->Has("rediscover-interval-s")) {
    const std::string text = args->Str("rediscover-interval-s", "");
    char* end = nullptr;
    const double secs = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(secs >= 0) || secs > 86400) {
      return UsageError("--rediscover-interval-s must be 0 to 86400 seconds, not '" + text + "'");
    }
    o.rediscover_interval = Duration::Millis(static_cast<int64_t>(secs * 1000 + 0.5));
  }
  const int64_t rediscover_ms = o.rediscover_interval.millis();
  Result<std::unique_ptr<gpupool::Agent>> agent =
      gpupool::Agent::Create(std::move(o), *probe, **executor);
  if (!agent.ok()) return UsageError(agent.error().message);
  const AgentLog log = StderrJsonLog();
  log({{"level", "info"},
       {"msg", "agent starting"},
       {"node", name},
       {"server", config->url},
       {"gpus", gpus},
       {"allow_mig_changes", args->Has("allow-mig-changes")},
       {"rediscover_interval_ms", rediscover_ms},
       {"state_dir", (*executor)->state_dir()},
       {"running_as_root", geteuid() == 0},
       {"cgroup", (*executor)->cgroup().reason}});
  return (*agent)->Run();
}

}  // namespace gpupool::cli
