// The agent's registration: its node's GPUs and labels, and the acceptance test that must pass
// first (agent_loop.h, "Registration").
#include "agent/agent_loop.h"

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <thread>

#include "agent/agent_internal.h"
#include "agent/fake_probe.h"
#include "agent/health.h"
#include "agent/mig_worker.h"
#include "api/url.h"

namespace gpupool {
using namespace agent_internal;
using Json = nlohmann::json;

void Agent::RunAcceptance() {
  if (acceptance_ran_ || options_.acceptance_command.empty()) return;
  acceptance_ran_ = true;
  LaunchSpec spec;
  spec.replica = kAcceptanceReplica;
  // stderr into the same file, so the tail keeps the order of both streams.
  spec.command = "exec 2>&1\n" + options_.acceptance_command;
  Result<std::vector<GpuInfo>> seen = [&] {
    std::lock_guard<std::mutex> lock(probe_mu_);
    return probe_.Discover();
  }();
  if (seen.ok()) {
    for (const GpuInfo& g : *seen) {
      if (g.mig_current == MigMode::kEnabled) {
        for (const GpuInstanceInfo& gi : g.gpu_instances) {
          for (const std::string& u : gi.mig_uuids) spec.devices.push_back(u);
        }
      } else {
        spec.devices.push_back(g.uuid);
      }
    }
  }
  Log("info", "running the acceptance command", {{"command", options_.acceptance_command}});
  if (Status s = executor_.Start(spec); !s.ok()) {
    acceptance_ = AcceptanceReport{
        .passed = false,
        .output = "gpupool agent: cannot start the acceptance command: " + s.error().message};
    Log("error", "acceptance command did not start", {{"error", s.error().message}});
    return;
  }
  const Time deadline = SteadyNow() + options_.acceptance_timeout;
  std::string why_killed;
  std::optional<ExitInfo> exit;
  while (!exit) {
    for (const ReplicaExit& e : executor_.Poll()) {
      if (e.replica == kAcceptanceReplica) exit = e.exit;
    }
    if (exit) break;
    if (why_killed.empty() && SteadyNow() >= deadline) {
      why_killed = "timed out after " + ToString(options_.acceptance_timeout);
    } else if (why_killed.empty() && StopRequested()) {
      why_killed = "interrupted";
    }
    if (!why_killed.empty())
      (void)executor_.RequestTerminate(kAcceptanceReplica, Duration::Seconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string output = TailOrEmpty(executor_.StdoutPath(kAcceptanceReplica), kAcceptanceTailBytes);
  if (!why_killed.empty()) output += "\n[gpupool agent: acceptance command " + why_killed + "]\n";
  if (output.size() > kAcceptanceTailBytes)
    output = output.substr(output.size() - kAcceptanceTailBytes);
  executor_.Release(kAcceptanceReplica);
  const bool passed = why_killed.empty() && !exit->signaled && exit->code == 0;
  acceptance_ = AcceptanceReport{.passed = passed, .output = output};
  Log(passed ? "info" : "warn", passed ? "acceptance passed" : "acceptance failed",
      {{"exit", ToString(*exit)}, {"reason", why_killed}});
}

Status Agent::Register() {
  RunAcceptance();
  Result<std::vector<GpuInfo>> gpus = gpus_;  // while a MIG change holds the probe: what we know
  bool discovered = false;
  if (std::unique_lock<std::mutex> lock(probe_mu_, std::try_to_lock);
      lock.owns_lock() || gpus_.empty()) {
    if (!lock.owns_lock()) lock.lock();
    gpus = probe_.Discover();
    system_ = probe_.System();
    discovered = true;
  }
  if (!gpus.ok()) return Error{gpus.error().code, "discover GPUs: " + gpus.error().message};
  // Registered before: what changed since is reported as rediscovery does. Not for gpus_ itself
  // (the probe was busy): that is no discovery, and would forget which GPUs our own applies
  // changed (mig_applied_) before one is taken.
  if (discovered && !gpus_.empty()) {
    TakeDiscovery(std::move(*gpus));
    gpus = gpus_;
  }
  if (gpus->empty()) return FailedPrecondition("the probe sees no GPUs");
  const std::string flavor = gpus->front().model;
  const Time sent = SteadyNow();
  RegisterRequest body{.node = options_.node, .flavor = flavor};
  for (const GpuInfo& g : *gpus) {
    if (g.model.empty()) {
      return FailedPrecondition("GPU " + std::to_string(g.index) + " (" + g.name +
                                ") is not a catalogue model");
    }
    if (g.model != flavor) {
      return FailedPrecondition("GPU " + std::to_string(g.index) + " is a " + g.model +
                                ", GPU 0 a " + flavor + ": a node has one GPU model");
    }
    body.gpus.push_back(GpuReportOf(g));
  }
  body.labels = options_.labels;
  body.reported_labels = AgentLabels(system_, *gpus);
  body.cpu_milli = options_.cpu_milli;
  body.memory_mib = options_.memory_mib;
  body.acceptance = acceptance_;

  const Reply r = Post("/v1/agents/register", Encode(body));
  if (r.status < 200 || r.status > 299) {
    registered_ = false;
    return ReplyToError("register", r);
  }
  Result<RegisterReply> reply = DecodeRegisterReply(r.body);
  if (!reply.ok()) {
    registered_ = false;
    return Error{ErrorCode::kUnavailable, "register: " + reply.error().message};
  }
  if (Status fresh = CheckEpoch("register", reply->epoch); !fresh.ok()) {
    registered_ = false;
    return fresh;
  }
  for (const std::string& why : reply->skipped) Log("warn", "registration reply: " + why);
  registered_ = true;
  RenewLease(sent, reply->lease_ms);
  reregister_after_ack_ = false;  // this registration carries the new UUIDs already
  last_contact_.reset();
  next_rediscover_.reset();  // the next heartbeat schedules it a whole interval from now
  gpus_ = std::move(*gpus);
  // A daemon that restarted has lost the tails it kept in memory: send them all again.
  for (auto& [key, rep] : replicas_) {
    rep.out_size = rep.out_mtime = rep.err_size = rep.err_mtime = -1;
    rep.start_error_sent = false;
  }
  if (reply->condition) condition_ = *reply->condition;
  if (reply->heartbeat_interval_ms) server_interval_ = Duration::Millis(*reply->heartbeat_interval_ms);
  if (reply->heartbeat_timeout_ms) server_timeout_ = Duration::Millis(*reply->heartbeat_timeout_ms);
  Log("info", "registered",
      {{"flavor", flavor},
       {"gpus", gpus_.size()},
       {"condition", condition_},
       {"heartbeat_interval_ms", heartbeat_interval().millis()},
       {"heartbeat_timeout_ms", server_timeout_.millis()}});
  return Ok();
}
}  // namespace gpupool
