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
namespace {

using Json = nlohmann::json;

// Set by Run's signal handler.
std::atomic<bool> g_signalled{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void OnSignal(int) { g_signalled.store(true); }

}  // namespace

AgentLog StderrJsonLog() {
  return [](const Json& record) {
    Json out = record;
    out["ts_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    std::cerr << Dump(out) + "\n" << std::flush;
  };
}

std::string ShellQuote(std::string_view arg) {
  std::string out = "'";
  for (const char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

Result<std::string> ShellCommandFor(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& exports) {
  if (argv.empty()) return InvalidArgument("empty command");
  std::string out;
  for (const auto& [k, v] : exports) {
    if (!ValidEnvName(k)) return InvalidArgument("bad environment variable name '" + k + "'");
    if (v.find('\0') != std::string::npos) return InvalidArgument(k + " contains a NUL byte");
    out += "export " + k + "=" + ShellQuote(v) + "; ";
  }
  if (argv[0].empty()) return InvalidArgument("empty program name");
  if (argv[0][0] != '-') out += "exec ";
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].find('\0') != std::string::npos) {
      return InvalidArgument("argument " + std::to_string(i) + " contains a NUL byte");
    }
    if (i > 0) out += ' ';
    out += ShellQuote(argv[i]);
  }
  return out;
}

Result<std::unique_ptr<Agent>> Agent::Create(AgentOptions options, GpuProbe& probe,
                                             Executor& executor) {
  if (!ValidNodeName(options.node)) {
    return InvalidArgument("node name '" + options.node +
                           "' must be 1-128 characters of [A-Za-z0-9._-]");
  }
  Url url;
  std::string rest = options.server_url;
  std::string scheme = "http";
  if (const size_t p = rest.find("://"); p != std::string::npos) {
    scheme = rest.substr(0, p);
    rest = rest.substr(p + 3);
  }
  if (scheme != "http" && scheme != "https") {
    return InvalidArgument("server URL '" + options.server_url + "': scheme must be http or https");
  }
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    url.prefix = rest.substr(slash);
    rest = rest.substr(0, slash);
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
  }
  if (rest.empty()) return InvalidArgument("server URL '" + options.server_url + "' has no host");
  url.origin = scheme + "://" + rest;
  FakeProbe* fake = dynamic_cast<FakeProbe*>(&probe);
  if (!options.fault_file.empty() && fake == nullptr) {
    return InvalidArgument("a fault file needs fake GPUs (--gpus fake:SPEC)");
  }
  if (options.heartbeat_interval < Duration::Millis(0)) {
    return InvalidArgument("negative heartbeat interval");
  }
  if (options.rediscover_interval < Duration::Millis(0)) {
    return InvalidArgument("negative rediscovery interval");
  }
  std::unique_ptr<Agent> agent(new Agent(std::move(options), url, probe, executor, fake));
  if (!agent->http_->is_valid()) {
    return InvalidArgument("cannot use server URL '" + agent->options_.server_url + "'");
  }
  agent->RecoverReplicas();
  return agent;
}

Agent::Agent(AgentOptions options, Url url, GpuProbe& probe, Executor& executor, FakeProbe* fake)
    : options_(std::move(options)),
      url_(std::move(url)),
      probe_(probe),
      executor_(executor),
      fake_(fake),
      http_(std::make_unique<httplib::Client>(url_.origin)) {
  if (!options_.log) options_.log = StderrJsonLog();
  http_->set_connection_timeout(5);
  http_->set_read_timeout(15);
  http_->set_write_timeout(15);
  if (!options_.token.empty()) http_->set_bearer_token_auth(options_.token);
}

Agent::~Agent() = default;

void Agent::Log(const char* level, const std::string& msg, Json fields) {
  Json record = {{"level", level}, {"msg", msg}, {"node", options_.node}};
  if (fields.is_object()) record.update(fields);
  options_.log(record);
}

Duration Agent::heartbeat_interval() const {
  return options_.heartbeat_interval > Duration::Millis(0) ? options_.heartbeat_interval
                                                           : server_interval_;
}

std::vector<std::string> Agent::replicas() const {
  std::vector<std::string> out;
  for (const auto& [key, r] : replicas_) out.push_back(key);
  return out;
}

bool Agent::heartbeats_suspended(Time now) const {
  if (lost_until_) return now < *lost_until_;
  return fake_ != nullptr && fake_->heartbeat_lost();
}

bool Agent::StopRequested() const { return stop_.load() || g_signalled.load(); }

bool Agent::SleepFor(Duration d) {
  const Time until = SteadyNow() + d;
  while (!StopRequested()) {
    const Time now = SteadyNow();
    if (now >= until) return true;
    const int64_t step = std::min<int64_t>(50, (until - now).millis());
    std::this_thread::sleep_for(std::chrono::milliseconds(step));
  }
  return false;
}

Agent::Reply Agent::Post(const std::string& path, const Json& body) {
  Reply out;
  httplib::Result r = http_->Post(url_.prefix + path, Dump(body), "application/json");
  if (!r) {
    std::string why;
    switch (r.error()) {
      case httplib::Error::Connection:
        why = "could not connect";
        break;
      case httplib::Error::ConnectionTimeout:
        why = "connection timed out";
        break;
      case httplib::Error::Read:
        why = "no reply (read failed or timed out)";
        break;
      case httplib::Error::Write:
        why = "could not send the request";
        break;
      default:
        why = httplib::to_string(r.error());
        break;
    }
    out.error = "cannot reach the daemon at " + options_.server_url + ": " + why;
    return out;
  }
  out.status = r->status;
  out.body = Json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (out.status < 200 || out.status > 299) {
    if (out.body.is_object() && out.body.contains("error") && out.body["error"].is_object() &&
        out.body["error"].contains("message") && out.body["error"]["message"].is_string()) {
      out.error = out.body["error"]["message"].get<std::string>();
    } else {
      out.error = r->body.substr(0, 200);
    }
  } else if (out.body.is_discarded()) {
    if (!r->body.empty()) {
      out.status = 0;
      out.error = "the reply is not JSON";
    }
    out.body = Json::object();
  }
  return out;
}

Error Agent::ReplyToError(const std::string& what, const Reply& r) {
  if (r.status == 0) return {ErrorCode::kUnavailable, what + ": " + r.error};
  const std::string msg =
      what + ": HTTP " + std::to_string(r.status) + (r.error.empty() ? "" : ": " + r.error);
  switch (r.status) {
    case 400:
      return {ErrorCode::kInvalidArgument, msg};
    case 401:
      return {ErrorCode::kUnauthenticated, msg};
    case 403:
      return {ErrorCode::kPermissionDenied, msg};
    case 404:
      return {ErrorCode::kNotFound, msg};
    case 409:
      return {ErrorCode::kConflict, msg};
    default:
      break;
  }
  return {r.status >= 500 ? ErrorCode::kUnavailable : ErrorCode::kInternal, msg};
}

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
    acceptance_ = Json{
        {"passed", false},
        {"output", "gpupool agent: cannot start the acceptance command: " + s.error().message}};
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
  acceptance_ = Json{{"passed", passed}, {"output", output}};
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
  Json gj = Json::array();
  for (const GpuInfo& g : *gpus) {
    if (g.model.empty()) {
      return FailedPrecondition("GPU " + std::to_string(g.index) + " (" + g.name +
                                ") is not a catalogue model");
    }
    if (g.model != flavor) {
      return FailedPrecondition("GPU " + std::to_string(g.index) + " is a " + g.model +
                                ", GPU 0 a " + flavor + ": a node has one GPU model");
    }
    gj.push_back(GpuJson(g));
  }
  Json body = {{"node", options_.node},
               {"flavor", flavor},
               {"gpus", gj},
               {"labels", options_.labels},
               {"reported_labels", AgentLabels(system_, *gpus)},
               {"cpu_milli", options_.cpu_milli},
               {"memory_mib", options_.memory_mib}};
  if (acceptance_) body["acceptance"] = *acceptance_;

  const Reply r = Post("/v1/agents/register", body);
  if (r.status < 200 || r.status > 299) {
    registered_ = false;
    return ReplyToError("register", r);
  }
  registered_ = true;
  RenewLease(sent, r.body);
  reregister_after_ack_ = false;  // this registration carries the new UUIDs already
  last_contact_.reset();
  next_rediscover_.reset();  // the next heartbeat schedules it a whole interval from now
  gpus_ = std::move(*gpus);
  // A daemon that restarted has lost the tails it kept in memory: send them all again.
  for (auto& [key, rep] : replicas_) {
    rep.out_size = rep.out_mtime = rep.err_size = rep.err_mtime = -1;
    rep.start_error_sent = false;
  }
  if (r.body.contains("condition") && r.body["condition"].is_string()) {
    condition_ = r.body["condition"].get<std::string>();
  }
  if (r.body.contains("heartbeat_interval_ms") && r.body["heartbeat_interval_ms"].is_number() &&
      r.body["heartbeat_interval_ms"].get<double>() > 0) {
    server_interval_ =
        Duration::Millis(static_cast<int64_t>(r.body["heartbeat_interval_ms"].get<double>()));
  }
  if (r.body.contains("heartbeat_timeout_ms") && r.body["heartbeat_timeout_ms"].is_number() &&
      r.body["heartbeat_timeout_ms"].get<double>() > 0) {
    server_timeout_ =
        Duration::Millis(static_cast<int64_t>(r.body["heartbeat_timeout_ms"].get<double>()));
  }
  Log("info", "registered",
      {{"flavor", flavor},
       {"gpus", gpus_.size()},
       {"condition", condition_},
       {"heartbeat_interval_ms", heartbeat_interval().millis()},
       {"heartbeat_timeout_ms", server_timeout_.millis()}});
  return Ok();
}

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
      Json j = HealthJson(ev);
      if (ev.kind == HealthEventKind::kTemperature) {  // a level: keep only the latest reading
        std::erase_if(pending_health_, [&](const Json& p) {
          return p["kind"] == "temperature" && p["gpu"] == ev.gpu;
        });
      }
      pending_health_.push_back(std::move(j));
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

Json Agent::BuildHeartbeat(Sent& sent) {
  PollHealthEvents();  // first: a drain-class event holds back the exits of its GPU's replicas
  sent.health = pending_health_.size();
  Json reps = Json::array();
  Json logs = Json::array();
  for (const auto& [key, r] : replicas_) {
    // A replica whose device was lost stays "running" until the daemon has the loss: it then
    // requeues the job (infrastructure failure) and this exit no longer counts.
    const bool loss_held = r.device_lost && !r.loss_sent;
    const bool exited = r.exited && !loss_held && !r.exit_unchecked;
    if (loss_held) sent.held.push_back(key);
    if (exited) sent.exits.push_back(key);
    Json e = {{"job", r.job},
              {"replica", r.index},
              {"attempt", r.attempt},
              {"state", exited ? "exited" : "running"}};
    if (exited) {
      e["exit_code"] = r.exit.signaled ? 128 + r.exit.code : r.exit.code;
      e["signal"] = r.exit.signaled ? r.exit.code : 0;
      if (r.exit.fenced) e["fenced"] = true;
    }
    reps.push_back(e);

    Replica mark = r;
    if (!r.start_error.empty()) {
      if (r.start_error_sent) continue;
      mark.start_error_sent = true;
      logs.push_back(
          {{"job", r.job},
           {"replica", r.index},
           {"attempt", r.attempt},
           {"stdout", ""},
           {"stderr", "gpupool agent: cannot start the replica: " + r.start_error + "\n"}});
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
    logs.push_back({{"job", r.job},
                    {"replica", r.index},
                    {"attempt", r.attempt},
                    {"stdout", TailOrEmpty(out_path, kLogTailBytes)},
                    {"stderr", TailOrEmpty(err_path, kLogTailBytes)}});
    sent.log_marks.emplace_back(key, mark);
  }

  Json gpus = Json::array();
  for (const GpuInfo& g : gpus_) {
    if (g.mig_current == MigMode::kEnabled) gpus.push_back(GpuJson(g));
  }
  Json mig_errors = Json::array();
  for (const auto& [gpu, e] : mig_errors_) mig_errors.push_back(e);
  return {{"replicas", reps},
          {"logs", logs},
          {"health", pending_health_},
          {"gpus", gpus},
          {"mig_errors", mig_errors}};
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
  Json body = BuildHeartbeat(sent);
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
    body = BuildHeartbeat(sent);
    sent_at = SteadyNow();
    r = Post(path, body);
  }
  if (r.status < 200 || r.status > 299) {
    if (r.status == 404) registered_ = false;
    return ReplyToError("heartbeat", r);
  }
  RenewLease(sent_at, r.body);
  AckHeartbeat(sent);
  last_contact_ = now;
  ApplyReply(r.body);
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

void Agent::ApplyReply(const Json& reply) {
  if (!reply.is_object()) return;
  if (reply.contains("condition") && reply["condition"].is_string() &&
      reply["condition"].get<std::string>() != condition_) {
    condition_ = reply["condition"].get<std::string>();
    Log("info", "node condition changed", {{"condition", condition_}});
  }
  auto each = [&](const char* field, void (Agent::*fn)(const Json&)) {
    if (!reply.contains(field)) return;
    if (!reply[field].is_array()) {
      Log("warn", std::string("reply field '") + field + "' is not a list");
      return;
    }
    for (const Json& item : reply[field]) (this->*fn)(item);
  };
  // Forgets before starts: a replica forgotten and placed here again in one reply (a requeued
  // job) is then started afresh rather than taken for the old one.
  each("stop", &Agent::StopReplica);
  each("forget", &Agent::ForgetReplica);
  // A refusal is reported for as long as the daemon asks for that layout.
  std::erase_if(mig_errors_, [&](const auto& e) {
    if (!reply.contains("mig") || !reply["mig"].is_array()) return true;
    return std::none_of(reply["mig"].begin(), reply["mig"].end(), [&](const Json& m) {
      return m.is_object() && m.value("gpu", Json()) == e.second["gpu"] &&
             m.value("layout", Json()) == e.second["layout"];
    });
  });
  each("mig", &Agent::ApplyMig);
  each("start", &Agent::StartReplica);
  // A held start the daemon no longer sends (cancelled, placed elsewhere) is forgotten.
  std::erase_if(start_held_, [&](const auto& e) {
    if (!reply.contains("start") || !reply["start"].is_array()) return true;
    return std::none_of(reply["start"].begin(), reply["start"].end(), [&](const Json& s) {
      const std::optional<std::string> job = JobOf(s);
      const std::optional<int64_t> index = ReplicaOf(s);
      return job && index && KeyOf(*job, *index) == e.first;
    });
  });
}








int Agent::Run() {
  g_signalled.store(false);
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{}, old_pipe{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &old_pipe);

  int rc = 0;
  RunAcceptance();
  Duration backoff = options_.register_backoff_initial;
  while (!StopRequested()) {
    const Status s = Register();
    if (s.ok()) break;
    if (s.error().code != ErrorCode::kUnavailable) {
      Log("error", "registration refused", {{"error", s.error().message}});
      rc = 1;
      break;
    }
    Log("warn", "registration failed; retrying",
        {{"error", s.error().message}, {"retry_in_ms", backoff.millis()}});
    if (!SleepFor(backoff)) break;
    backoff = std::min(backoff + backoff, options_.register_backoff_max);
  }

  if (rc == 0 && registered_) {
    Time next = SteadyNow();
    std::string last_error;
    while (!StopRequested()) {
      const Time now = SteadyNow();
      if (now < next) {
        SleepFor(std::min(next - now, Duration::Millis(50)));
        continue;
      }
      const Status s = HeartbeatOnce(now);
      if (!s.ok()) {
        Log("warn", "heartbeat failed", {{"error", s.error().message}});
      }
      next = now + heartbeat_interval();
    }
  }
  Log("info", "shutting down");
  Shutdown();

  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGPIPE, &old_pipe, nullptr);
  return rc;
}

}  // namespace gpupool
