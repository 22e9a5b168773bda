// The agent's ownership of its replicas across its own restarts, the lease that fences them,
// the users jobs run as, and the orderly stop (agent_loop.h, "Ownership and fencing", "Sandbox").
#include <httplib.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <thread>

#include "agent/agent_internal.h"
#include "agent/agent_loop.h"
#include "agent/fake_probe.h"

namespace gpupool {
using namespace agent_internal;

void Agent::RecoverReplicas() {
  for (const RecoveredReplica& f : executor_.Recover()) {
    const Json meta = Json::parse(f.meta, nullptr, false);
    const std::optional<std::string> job = JobOf(meta);
    const std::optional<int64_t> index = ReplicaOf(meta);
    const std::optional<int64_t> attempt = AttemptOf(meta);
    if (!job || !index || !attempt || KeyOf(*job, *index) != f.replica) {
      // Not a job's replica (an acceptance run) or unreadable: nothing to report; it goes.
      Log("warn", "stopping a process an earlier agent started", {{"replica", f.replica}});
      if (f.running) (void)executor_.Terminate(f.replica, Duration::Seconds(5));
      executor_.Release(f.replica);
      continue;
    }
    Replica rec;
    rec.job = *job;
    rec.index = *index;
    rec.attempt = *attempt;
    for (const Json& d : meta.value("devices", Json::array())) {
      if (d.is_string()) rec.devices.push_back(d.get<std::string>());
    }
    if (!f.running) {
      rec.exited = true;
      rec.exit = f.exit;
    }
    newest_attempt_[f.replica] = std::max(newest_attempt_[f.replica], *attempt);
    Log(f.running ? "info" : "warn", "found a replica an earlier agent started",
        {{"job", *job},
         {"replica", *index},
         {"attempt", *attempt},
         {"running", f.running},
         {"exit", f.running ? "" : ToString(f.exit)}});
    replicas_[f.replica] = std::move(rec);
  }
}

void Agent::RenewLease(Time sent, std::optional<int64_t> lease_ms) {
  if (!lease_ms) return;  // the decoder keeps only a positive one
  // A reply that has not come within a third of the lease is given up on, so that the agent can
  // try again (on a new connection) while the lease still holds, instead of waiting out a 15 s
  // read on a connection that went dead.
  const int64_t wait_ms = std::clamp<int64_t>(*lease_ms / 3, 500, 15000);
  io_timeout_ms_ = wait_ms;
  http_->set_read_timeout(wait_ms / 1000, (wait_ms % 1000) * 1000);
  http_->set_write_timeout(wait_ms / 1000, (wait_ms % 1000) * 1000);
  if (executor_.lease_path().empty()) return;
  const Time until = sent + Duration::Millis(*lease_ms);
  if (lease_until_ && until <= *lease_until_) return;
  const std::string path = executor_.lease_path(), tmp = path + ".tmp";
  const std::string text = std::to_string(until.millis()) + "\n";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const bool ok = fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (fd >= 0) close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    // The shims keep the old deadline and stop the replicas when it passes: safe, but say so.
    Log("error", "cannot renew the lease file", {{"path", path}, {"error", std::strerror(errno)}});
    return;
  }
  lease_until_ = until;
  lease_expiry_logged_ = false;
}

Result<std::optional<RunAs>> Agent::UserFor(const std::string& tenant) const {
  auto it = options_.users.find(tenant);
  if (it == options_.users.end()) it = options_.users.find("*");
  const bool root_ok = options_.allow_root.count(tenant) > 0 || options_.allow_root.count("*") > 0;
  if (it == options_.users.end()) {
    if (geteuid() != 0 || root_ok) return std::optional<RunAs>();  // the agent's own user
    return Error{ErrorCode::kPermissionDenied, "tenant '" + tenant +
                            "' has no user on this node and may not run as root (gpupool agent "
                            "--users FILE, --allow-root TENANT)"};
  }
  if (it->second.uid == 0 && !root_ok) {
    return Error{ErrorCode::kPermissionDenied, "tenant '" + tenant + "' maps to root, which --allow-root does not allow"};
  }
  if (it->second.uid == geteuid() && it->second.gid == getegid()) return std::optional<RunAs>();
  return std::optional<RunAs>(it->second);
}

void Agent::Shutdown() {
  std::vector<std::string> running;
  for (const auto& [key, r] : replicas_) {
    if (executor_.running(key)) running.push_back(key);
  }
  if (running.empty()) return;
  Log("info", "stopping every replica",
      {{"count", running.size()}, {"grace_s", options_.shutdown_grace.seconds()}});
  for (const std::string& key : running) {
    (void)executor_.RequestTerminate(key, options_.shutdown_grace);  // keeps an earlier deadline
  }
  const Time give_up = SteadyNow() + options_.shutdown_grace + Duration::Seconds(60);
  while (SteadyNow() < give_up) {
    ReapExits();
    if (std::none_of(running.begin(), running.end(),
                     [&](const std::string& k) { return executor_.running(k); })) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Log("error", "some replicas did not exit; the executor kills them on exit");
}

}  // namespace gpupool
