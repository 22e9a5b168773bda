// `gpupool agent`: the node agent. Flags to AgentOptions, a probe (NVML or fake) and an executor;
// the loop itself is agent/agent_loop.cc. Logs go to stderr as JSON lines.
#include <cstdlib>
#include <iostream>

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

}  // namespace

int Agent(const std::vector<std::string>& argv) {
  Result<Args> args = Args::Parse(argv,
                                  {"server", "token", "name", "gpus", "work-dir", "acceptance",
                                   "fault-file", "allow-mig-changes", "rediscover-interval-s",
                                   "help"},
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
  Result<ClientConfig> config =
      ResolveClientConfig(args->Str("server", ""), args->Str("token", ""), std::getenv);
  if (!config.ok()) return UsageError(config.error().message);
  if (Result<ServerUrl> url = ParseServerUrl(config->url); !url.ok()) {
    return UsageError(url.error().message + " (from " + config->url_source + ")");
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
  Result<std::unique_ptr<Executor>> executor = Executor::Create(std::move(eo));
  if (!executor.ok()) {
    std::cerr << "gpupool agent: " << executor.error().message << "\n";
    return 1;
  }

  AgentOptions o;
  o.server_url = config->url;
  o.token = config->token;
  o.node = name;
  o.acceptance_command = args->Str("acceptance", "");
  o.fault_file = fault_file;
  o.allow_mig_changes = args->Has("allow-mig-changes");
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
       {"cgroup", (*executor)->cgroup().reason}});
  return (*agent)->Run();
}

}  // namespace gpupool::cli
