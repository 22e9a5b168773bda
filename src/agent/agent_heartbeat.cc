// One heartbeat: what the agent reports (replica states, exits, logs, health events, MIG), and
// what it does with the daemon's reply (starts, stops, forgets, MIG layouts, the lease).
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

void Agent::ReapExits() {
  for (const ReplicaExit& e : executor_.Poll()) {
    auto it = replicas_.find(e.replica);
    if (it == replicas_.end()) {
      Log("warn", "an unknown process exited",
          {{"replica", e.replica}, {"exit", ToString(e.exit)}});
      continue;
    }
    it->second.exited = true;
    it->second.exit = e.exit;
    // A failed replica may have lost its device: look before its exit is reported.
    if ((e.exit.signaled || e.exit.code != 0) && !it->second.devices.empty() &&
        options_.rediscover_interval > Duration::Millis(0)) {
      rediscover_now_ = true;
      // Reported only after that look, even if a MIG apply holds the probe for a while.
      it->second.exit_unchecked = true;
    }
    Log("info", "replica exited",
        {{"job", it->second.job}, {"replica", it->second.index}, {"exit", ToString(e.exit)}});
  }
}


void Agent::PollHealthEvents() {
  std::unique_lock<std::mutex> lock(probe_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // a MIG change holds the probe: the events wait in it
  Result<std::vector<HealthEvent>> events = probe_.PollHealth();
  lock.unlock();
  // Failed exits waited for a look at their devices: a rediscovery (done once rediscover_now_,
  // set with exit_unchecked, is false again) and this poll. They go now, unless one of them
  // found their device lost (device_lost holds them until the daemon has the loss).
  if (!rediscover_now_) {
    for (auto& [key, r] : replicas_) r.exit_unchecked = false;
  }
  if (!events.ok()) {
    Log("warn", "health poll failed", {{"error", events.error().message}});
  } else {
    for (const HealthEvent& ev : *events) {
      if (ev.gpu == kUnknownU32) {
        Log("warn", "health event for an unknown GPU",
            {{"kind", HealthKind(ev.kind)}, {"value", ev.value}, {"gpu_uuid", ev.gpu_uuid}});
        continue;
      }
      HealthReport report = HealthReportOf(ev);
      if (ev.kind == HealthEventKind::kTemperature) {  // a level: keep only the latest reading
        std::erase_if(pending_health_, [&](const HealthReport& p) {
          return p.kind == report.kind && p.gpu == report.gpu;
        });
      }
      pending_health_.push_back(std::move(report));
      if (Classify(ev).action < HealthAction::kDrain) continue;
      // The daemon drains the node for it: a replica on that GPU that exits meanwhile failed
      // because of the GPU, not by its own fault.
      if (const GpuInfo* g = GpuAt(ev.gpu)) {
        for (auto& [key, r] : replicas_) {
          for (const std::string& d : r.devices) {
            if (GpuOfDevice(d) == g && !r.exit_sent && !r.device_lost) {
              MarkDeviceLost(r, d, HealthKind(ev.kind) + " on GPU " + std::to_string(ev.gpu));
            }
          }
        }
      }
    }
    if (pending_health_.size() > kMaxPendingHealth) {
      pending_health_.erase(pending_health_.begin(),
                            pending_health_.end() - static_cast<ptrdiff_t>(kMaxPendingHealth));
    }
  }
}

HeartbeatRequest Agent::BuildHeartbeat(Sent& sent) {
  PollHealthEvents();  // first: a drain-class event holds back the exits of its GPU's replicas
  sent.health = pending_health_.size();
  HeartbeatRequest body;
  for (const auto& [key, r] : replicas_) {
    // A replica whose device was lost stays "running" until the daemon has the loss: it then
    // requeues the job (infrastructure failure) and this exit no longer counts.
    const bool loss_held = r.device_lost && !r.loss_sent;
    const bool exited = r.exited && !loss_held && !r.exit_unchecked;
    if (loss_held) sent.held.push_back(key);
    if (exited) sent.exits.push_back(key);
    ReplicaReport e{.job = r.job,
                    .replica = r.index,
                    .attempt = r.attempt,
                    .state = exited ? ReplicaRunState::kExited : ReplicaRunState::kRunning};
    if (exited) {
      e.exit_code = r.exit.signaled ? 128 + r.exit.code : r.exit.code;
      e.signal = r.exit.signaled ? r.exit.code : 0;
      e.fenced = r.exit.fenced;
    }
    body.replicas.push_back(std::move(e));

    Replica mark = r;
    if (!r.start_error.empty()) {
      if (r.start_error_sent) continue;
      mark.start_error_sent = true;
      body.logs.push_back({.job = r.job,
                           .replica = r.index,
                           .attempt = r.attempt,
                           .out = "",
                           .err = "gpupool agent: cannot start the replica: " + r.start_error + "\n"});
      sent.log_marks.emplace_back(key, mark);
      continue;
    }
    const std::string out_path = executor_.StdoutPath(key), err_path = executor_.StderrPath(key);
    std::tie(mark.out_size, mark.out_mtime) = FileSignature(out_path);
    std::tie(mark.err_size, mark.err_mtime) = FileSignature(err_path);
    if (mark.out_size == r.out_size && mark.out_mtime == r.out_mtime &&
        mark.err_size == r.err_size && mark.err_mtime == r.err_mtime) {
      continue;
    }
    body.logs.push_back({.job = r.job,
                         .replica = r.index,
                         .attempt = r.attempt,
                         .out = TailOrEmpty(out_path, kLogTailBytes),
                         .err = TailOrEmpty(err_path, kLogTailBytes)});
    sent.log_marks.emplace_back(key, mark);
  }

  body.health = pending_health_;
  for (const GpuInfo& g : gpus_) {
    if (g.mig_current == MigMode::kEnabled) body.gpus.push_back(GpuReportOf(g));
  }
  for (const auto& [gpu, e] : mig_errors_) body.mig_errors.push_back(e);
  return body;
}

Status Agent::HeartbeatOnce(Time now) {
  if (lease_until_ && SteadyNow() >= *lease_until_ && !lease_expiry_logged_) {
    lease_expiry_logged_ = true;
    size_t running = 0;
    for (const auto& [key, r] : replicas_) running += executor_.running(key) ? 1 : 0;
    Log("warn", "the lease expired: every replica's shim stops it", {{"replicas", running}});
  }
  ReapExits();
  if (!options_.fault_file.empty()) ApplyFaultFile(now);
  TakeMigResults();
  if (lost_until_ && now >= *lost_until_) {
    lost_until_.reset();
    fake_->SetHeartbeatLost(false);
    Log("warn", "heartbeats resume (lose_heartbeats over)");
  }
  if (heartbeats_suspended(now)) return Ok();
  if (registered_ && last_contact_ && now - *last_contact_ >= server_timeout_) {
    Log("warn", "no heartbeat got through for the daemon's heartbeat timeout: registering again",
        {{"since_ms", (now - *last_contact_).millis()}});
    registered_ = false;
  }
  if (!registered_) {
    GP_RETURN_IF_ERROR(Register());
  } else if (RediscoveryDue(now)) {
    Rediscover(now);
  }

  Sent sent;
  std::string body = Encode(BuildHeartbeat(sent));
  const std::string path = "/v1/agents/" + UrlEncode(options_.node) + "/heartbeat";
  Time sent_at = SteadyNow();
  Reply r = Post(path, body);
  if (r.status == 404) {
    Log("warn", "the daemon does not know this node (404): registering again");
    registered_ = false;
    GP_RETURN_IF_ERROR(Register());
    // Built again: the registration's discovery may have found a loss (a health event, exits
    // to hold back), and the new daemon wants every log tail.
    sent = Sent{};
    body = Encode(BuildHeartbeat(sent));
    sent_at = SteadyNow();
    r = Post(path, body);
  }
  if (r.status < 200 || r.status > 299) {
    if (r.status == 404) registered_ = false;
    return ReplyToError("heartbeat", r);
  }
  // Not understood, not accepted: nothing is acknowledged and the lease is not renewed.
  Result<HeartbeatReply> reply = DecodeHeartbeatReply(r.body);
  if (!reply.ok()) return Error{ErrorCode::kUnavailable, "heartbeat: " + reply.error().message};
  GP_RETURN_IF_ERROR(CheckEpoch("heartbeat", reply->epoch));
  RenewLease(sent_at, reply->lease_ms);
  AckHeartbeat(sent);
  last_contact_ = now;
  for (const std::string& why : reply->skipped) Log("warn", "heartbeat reply: " + why);
  ApplyReply(*reply);
  if (reregister_after_ack_) {  // the loss went out: now the new UUIDs, at the next heartbeat
    reregister_after_ack_ = false;
    registered_ = false;
  }
  return Ok();
}

void Agent::AckHeartbeat(const Sent& sent) {
  // Only what this body carried (anything added since goes in the next heartbeat).
  pending_health_.erase(pending_health_.begin(),
                        pending_health_.begin() +
                            static_cast<ptrdiff_t>(std::min(sent.health, pending_health_.size())));
  for (const auto& [key, mark] : sent.log_marks) {
    auto it = replicas_.find(key);
    if (it == replicas_.end()) continue;
    it->second.out_size = mark.out_size;
    it->second.out_mtime = mark.out_mtime;
    it->second.err_size = mark.err_size;
    it->second.err_mtime = mark.err_mtime;
    it->second.start_error_sent = mark.start_error_sent;
  }
  for (const std::string& key : sent.held) {
    if (auto it = replicas_.find(key); it != replicas_.end()) it->second.loss_sent = true;
  }
  for (const std::string& key : sent.exits) {
    if (auto it = replicas_.find(key); it != replicas_.end()) it->second.exit_sent = true;
  }
}

void Agent::ApplyReply(const HeartbeatReply& reply) {
  if (reply.condition && *reply.condition != condition_) {
    condition_ = *reply.condition;
    Log("info", "node condition changed", {{"condition", condition_}});
  }
  // The daemon did not hear this agent for its timeout (a pause of its own, a network cut that
  // healed before this agent's timeout) and takes the node back only through a registration,
  // with its acceptance test: without one the node would stay unreachable while its heartbeats
  // go through. Every such reply asks for one.
  if (reply.condition == "unreachable") {
    Log("warn", "the daemon holds this node unreachable: registering again");
    registered_ = false;
  }
  // Forgets before starts: a replica forgotten and placed here again in one reply (a requeued
  // job) is then started afresh rather than taken for the old one.
  for (const ReplicaStop& s : reply.stop) StopReplica(s);
  for (const ReplicaForget& f : reply.forget) ForgetReplica(f);
  // A refusal is reported for as long as the daemon asks for that layout.
  std::erase_if(mig_errors_, [&](const auto& e) {
    return std::none_of(reply.mig.begin(), reply.mig.end(), [&](const MigTarget& m) {
      return m.gpu == e.second.gpu && m.layout == e.second.layout;
    });
  });
  for (const MigTarget& m : reply.mig) ApplyMig(m);
  for (const ReplicaStart& s : reply.start) StartReplica(s);
  // A held start the daemon no longer sends (cancelled, placed elsewhere) is forgotten.
  std::erase_if(start_held_, [&](const auto& e) {
    return std::none_of(reply.start.begin(), reply.start.end(), [&](const ReplicaStart& s) {
      return KeyOf(s.job, s.replica) == e.first;
    });
  });
}
}  // namespace gpupool
