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

#include "agent/fake_probe.h"
#include "agent/health.h"
#include "agent/mig_worker.h"
#include "api/url.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

constexpr size_t kLogTailBytes = 64 * 1024;
constexpr size_t kAcceptanceTailBytes = 4 * 1024;
constexpr size_t kMaxPendingHealth = 1024;
constexpr const char* kAcceptanceReplica = "acceptance";  // never "JOB-REPLICA": no '-'

// Set by Run's signal handler.
std::atomic<bool> g_signalled{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void OnSignal(int) { g_signalled.store(true); }

// Process output may be binary or cut inside a UTF-8 sequence: never let dump() throw.
std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Time SteadyNow() {
  return Time::FromMillis(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count());
}

bool ValidNodeName(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

bool ValidEnvName(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

std::optional<uint64_t> ParseU64(const std::string& s) {
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// (size, mtime in ns) of a file; (-1, -1) when it does not exist.
std::pair<int64_t, int64_t> FileSignature(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return {-1, -1};
  return {static_cast<int64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

std::string TailOrEmpty(const std::string& path, size_t n) {
  Result<std::string> r = ReadTail(path, n);
  return r.ok() ? *r : std::string();
}

// The job id as the daemon sent it: a string, or a number rendered as one.
std::optional<std::string> JobOf(const Json& j) {
  if (!j.is_object() || !j.contains("job")) return std::nullopt;
  const Json& v = j["job"];
  if (v.is_string() && !v.get<std::string>().empty()) return v.get<std::string>();
  if (v.is_number_unsigned() || v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return std::nullopt;
}

std::optional<int64_t> ReplicaOf(const Json& j) {
  if (!j.is_object() || !j.contains("replica") || !j["replica"].is_number_integer()) {
    return std::nullopt;
  }
  const int64_t r = j["replica"].get<int64_t>();
  return r >= 0 ? std::optional<int64_t>(r) : std::nullopt;
}

std::optional<int64_t> AttemptOf(const Json& j) {
  if (!j.is_object() || !j.contains("attempt") || !j["attempt"].is_number_integer()) {
    return std::nullopt;
  }
  const int64_t a = j["attempt"].get<int64_t>();
  return a >= 0 ? std::optional<int64_t>(a) : std::nullopt;
}

// A GPU as registration and heartbeats describe it; the instances only for MIG GPUs.
Json GpuJson(const GpuInfo& g) {
  const bool mig = g.mig_current == MigMode::kEnabled;
  Json entry = {{"index", g.index}, {"uuid", g.uuid}, {"mig", mig}};
  if (!mig) return entry;
  Json inst = Json::array();
  for (const GpuInstanceInfo& gi : g.gpu_instances) {
    inst.push_back({{"start", gi.start},
                    {"size", gi.size},
                    {"profile", gi.profile},
                    {"uuid", gi.mig_uuids.empty() ? "" : gi.mig_uuids.front()}});
  }
  entry["instances"] = inst;
  return entry;
}

std::string KeyOf(const std::string& job, int64_t replica) {
  return job + "-" + std::to_string(replica);
}

std::string HealthKind(HealthEventKind k) {
  switch (k) {
    case HealthEventKind::kXid:
      return "xid";
    case HealthEventKind::kEccUncorrectable:
      return "ecc";
    case HealthEventKind::kRowRemapFailure:
      return "row_remap_failure";
    case HealthEventKind::kRowRemapPending:
      return "row_remap_pending";
    case HealthEventKind::kTemperature:
      return "temperature";
    case HealthEventKind::kGpuLost:
      return "gpu_lost";
    case HealthEventKind::kDeviceLost:
      return "device_lost";
  }
  return "unknown";
}

Json HealthJson(const HealthEvent& e) {
  Json j = {{"gpu", e.gpu}, {"kind", HealthKind(e.kind)}};
  switch (e.kind) {
    case HealthEventKind::kXid:
      j["code"] = e.value;
      if (e.gpu_instance_id != kUnknownU32) j["gpu_instance_id"] = e.gpu_instance_id;
      break;
    case HealthEventKind::kEccUncorrectable:
      j["count"] = e.value;
      break;
    case HealthEventKind::kTemperature:
      j["celsius"] = e.value;
      break;
    default:
      break;
  }
  return j;
}

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

void Agent::ApplyFaultFile(Time now) {
  const int fd = open(options_.fault_file.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) {
      Log("warn", "cannot open the fault file",
          {{"path", options_.fault_file}, {"error", std::strerror(errno)}});
    }
    return;
  }
  std::string text;
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  if (!text.empty() && ftruncate(fd, 0) != 0) {
    Log("warn", "cannot truncate the fault file", {{"error", std::strerror(errno)}});
  }
  close(fd);

  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty() || w[0][0] == '#') continue;
    auto gpu = [&](const std::string& s) -> std::optional<uint32_t> {
      const std::optional<uint64_t> g = ParseU64(s);
      if (!g || *g >= fake_->gpu_count()) return std::nullopt;
      return static_cast<uint32_t>(*g);
    };
    bool ok = false;
    if (w[0] == "xid" && w.size() == 3) {
      const auto g = gpu(w[1]);
      const auto code = ParseU64(w[2]);
      if ((ok = g && code)) fake_->InjectXid(*g, *code);
    } else if (w[0] == "ecc" && w.size() == 3) {
      const auto g = gpu(w[1]);
      const auto count = ParseU64(w[2]);
      if ((ok = g && count)) fake_->InjectEcc(*g, *count);
    } else if (w[0] == "row_remap" && w.size() == 2) {
      const auto g = gpu(w[1]);
      if ((ok = g.has_value())) fake_->InjectRowRemapFailure(*g);
    } else if (w[0] == "row_remap_pending" && w.size() == 2) {
      const auto g = gpu(w[1]);
      if ((ok = g.has_value())) fake_->InjectRowRemapPending(*g);
    } else if (w[0] == "gpu_lost" && w.size() == 2) {
      const auto g = gpu(w[1]);
      if ((ok = g.has_value())) fake_->InjectGpuLost(*g);
    } else if (w[0] == "gpu_gone" && w.size() == 2) {
      const auto g = gpu(w[1]);
      if ((ok = g.has_value())) fake_->RemoveGpu(*g);
    } else if (w[0] == "mig_delay" && w.size() == 2) {
      const auto ms = ParseU64(w[1]);
      if ((ok = ms && *ms <= 3'600'000)) {
        fake_->SetMigDelay(Duration::Millis(static_cast<int64_t>(*ms)));
      }
    } else if (w[0] == "temp" && w.size() == 3) {
      const auto g = gpu(w[1]);
      const auto c = ParseU64(w[2]);
      if ((ok = g && c && *c <= 1000)) fake_->SetTemperature(*g, static_cast<uint32_t>(*c));
    } else if (w[0] == "lose_heartbeats" && w.size() == 2) {
      char* end = nullptr;
      const double secs = std::strtod(w[1].c_str(), &end);
      if ((ok = end != w[1].c_str() && *end == '\0' && std::isfinite(secs) && secs >= 0 &&
                secs <= 7 * 24 * 3600)) {
        lost_until_ = now + Duration::Millis(static_cast<int64_t>(std::llround(secs * 1000)));
        fake_->SetHeartbeatLost(true);
      }
    }
    if (ok) {
      Log("warn", "fault injected", {{"fault", line}});
    } else {
      Log("warn", "fault file: skipping an unknown or malformed line", {{"line", line}});
    }
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

void Agent::StartReplica(const Json& s) {
  const std::optional<std::string> job = JobOf(s);
  const std::optional<int64_t> index = ReplicaOf(s);
  if (!job || !index) {
    Log("warn", "start without a job or replica: skipped", {{"item", s}});
    return;
  }
  const std::optional<int64_t> attempt = AttemptOf(s);
  if (!attempt) {
    Log("warn", "start without an attempt number: skipped", {{"item", s}});
    return;
  }
  const std::string key = KeyOf(*job, *index);
  if (auto n = newest_attempt_.find(key); n != newest_attempt_.end() && *attempt < n->second) {
    Log("warn", "start of an attempt older than one seen here: refused",
        {{"job", *job}, {"replica", *index}, {"attempt", *attempt}, {"newest", n->second}});
    return;
  }
  if (auto it = replicas_.find(key); it != replicas_.end()) {
    // Idempotent for the same attempt; another attempt waits until the old one is forgotten.
    if (it->second.attempt != *attempt) {
      Log("warn", "start of a new attempt while the previous one is still here: waiting",
          {{"job", *job},
           {"replica", *index},
           {"attempt", *attempt},
           {"previous_attempt", it->second.attempt}});
    }
    return;
  }

  Replica rec;
  rec.job = *job;
  rec.index = *index;
  rec.attempt = *attempt;
  std::string error;
  LaunchSpec spec;
  spec.replica = key;
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> exports;
  if (!s.contains("command") || !s["command"].is_array() || s["command"].empty()) {
    error = "'command' must be a non-empty list of strings";
  } else {
    for (const Json& a : s["command"]) {
      if (!a.is_string()) {
        error = "'command' must be a list of strings";
        break;
      }
      argv.push_back(a.get<std::string>());
    }
  }
  if (error.empty() && s.contains("devices")) {
    if (!s["devices"].is_array()) error = "'devices' must be a list of UUIDs";
    for (const Json& d : s["devices"]) {
      if (!d.is_string()) {
        error = "'devices' must be a list of UUIDs";
        break;
      }
      spec.devices.push_back(d.get<std::string>());
    }
  }
  if (error.empty() && s.contains("env")) {
    if (!s["env"].is_object()) error = "'env' must be an object of strings";
    for (const auto& [k, v] : s["env"].items()) {
      if (!v.is_string()) {
        error = "environment variable " + k + " is not a string";
        break;
      }
      if (k == "GPUPOOL_REPLICA") {
        // The executor sets GPUPOOL_REPLICA to its key ("12-0"); the daemon's value wins.
        exports.emplace_back(k, v.get<std::string>());
      } else if (k == "CUDA_VISIBLE_DEVICES" || k.rfind("CUDA_MPS_", 0) == 0) {
        Log("warn", "ignoring an environment variable the agent sets itself",
            {{"job", *job}, {"replica", *index}, {"name", k}});
      } else {
        spec.env.emplace_back(k, v.get<std::string>());
      }
    }
  }
  std::string tenant = s.value("tenant", Json()).is_string() ? s["tenant"].get<std::string>() : "";
  if (tenant.empty() && s.contains("env") && s["env"].is_object() &&
      s["env"].value("GPUPOOL_TENANT", Json()).is_string()) {
    tenant = s["env"]["GPUPOOL_TENANT"].get<std::string>();
  }
  if (error.empty()) {
    Result<std::optional<RunAs>> user = UserFor(tenant);
    if (!user.ok()) {
      error = user.error().message;
    } else {
      spec.user = *user;
    }
  }
  if (const Json g = s.value("grace_s", Json()); g.is_number() && g.get<double>() >= 0) {
    spec.fence_grace = Duration::Millis(static_cast<int64_t>(g.get<double>() * 1000));
  }
  for (auto [field, out] : {std::pair{"cpu_milli", &spec.cpu_milli}, std::pair{"memory_mib", &spec.memory_mib}}) {
    if (const Json v = s.value(field, Json()); v.is_number_integer() && v.get<int64_t>() > 0) {
      *out = v.get<int64_t>();
    }
  }
  if (error.empty() && s.contains("mps_active_thread_percentage")) {
    const Json& v = s["mps_active_thread_percentage"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 100) {
      error = "'mps_active_thread_percentage' must be 1..100";
    } else {
      spec.mps_active_thread_percentage = static_cast<uint32_t>(v.get<int64_t>());
    }
  }
  if (error.empty() && s.contains("mps_pinned_memory_mib")) {
    const Json& v = s["mps_pinned_memory_mib"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1) {
      error = "'mps_pinned_memory_mib' must be a positive integer";
    } else {
      spec.mps_pinned_memory_mib = static_cast<uint64_t>(v.get<int64_t>());
    }
  }
  if (error.empty()) {
    // Not on a GPU being re-partitioned, nor on a device this node no longer has: the start
    // waits (not recorded, so the daemon sends it again) instead of failing as the job's fault.
    if (const std::string why = StartBlocked(spec.devices); !why.empty()) {
      if (start_held_[key] != why) {
        Log("warn", "start waits", {{"job", *job}, {"replica", *index}, {"reason", why}});
      }
      start_held_[key] = why;
      return;
    }
    start_held_.erase(key);
    // The device nodes of the GPUs it was not granted are hidden from it.
    for (const auto& [gpu_index, node] : options_.device_nodes) {
      const bool granted = std::any_of(spec.devices.begin(), spec.devices.end(), [&](const std::string& d) {
        const GpuInfo* g = GpuOfDevice(d);
        return g != nullptr && g->index == gpu_index;
      });
      if (!granted) spec.hide.push_back(node);
    }
    spec.meta = Dump({{"job", *job}, {"replica", *index}, {"attempt", *attempt},
                      {"devices", spec.devices}, {"tenant", tenant}});
    Result<std::string> cmd = ShellCommandFor(argv, exports);
    if (!cmd.ok()) {
      error = cmd.error().message;
    } else {
      spec.command = *cmd;
      if (Status st = executor_.Start(spec); !st.ok()) error = st.error().message;
    }
  }
  rec.devices = spec.devices;
  int64_t& newest = newest_attempt_[key];
  newest = std::max(newest, *attempt);
  if (newest_attempt_.size() > 100000) newest_attempt_.erase(newest_attempt_.begin());
  if (!error.empty()) {
    rec.exited = true;
    rec.exit = ExitInfo{false, 127};
    rec.start_error = error;
    Log("error", "cannot start the replica",
        {{"job", *job}, {"replica", *index}, {"error", error}});
  } else {
    Log("info", "replica started",
        {{"job", *job},
         {"replica", *index},
         {"attempt", *attempt},
         {"pid", executor_.pid(key)},
         {"devices", spec.devices}});
  }
  replicas_[key] = std::move(rec);
}

void Agent::StopReplica(const Json& s) {
  const std::optional<std::string> job = JobOf(s);
  const std::optional<int64_t> index = ReplicaOf(s);
  if (!job || !index) {
    Log("warn", "stop without a job or replica: skipped", {{"item", s}});
    return;
  }
  const std::string key = KeyOf(*job, *index);
  int64_t grace_s = 30;
  if (s.contains("grace_s") && s["grace_s"].is_number() && s["grace_s"].get<double>() >= 0) {
    grace_s = static_cast<int64_t>(s["grace_s"].get<double>());
  }
  if (auto it = replicas_.find(key);
      it != replicas_.end() && AttemptOf(s) && *AttemptOf(s) != it->second.attempt) {
    Log("warn", "stop for another attempt than the one here: ignored",
        {{"job", *job},
         {"replica", *index},
         {"attempt", *AttemptOf(s)},
         {"here", it->second.attempt}});
    return;
  }
  if (!executor_.running(key)) {
    if (!replicas_.count(key)) {
      Log("warn", "stop for a replica this agent does not run",
          {{"job", *job}, {"replica", *index}});
    }
    return;  // already exited: its exit is (or will be) reported
  }
  Replica* rec = replicas_.count(key) ? &replicas_[key] : nullptr;
  if (rec != nullptr && rec->stopping) return;  // the daemon repeats it until the exit is reported
  if (Status st = executor_.RequestTerminate(key, Duration::Seconds(grace_s)); !st.ok()) {
    Log("warn", "stop failed", {{"job", *job}, {"replica", *index}, {"error", st.error().message}});
    return;
  }
  if (rec != nullptr) rec->stopping = true;
  Log("info", "stopping replica", {{"job", *job}, {"replica", *index}, {"grace_s", grace_s}});
}

void Agent::ForgetReplica(const Json& s) {
  const std::optional<std::string> job = JobOf(s);
  const std::optional<int64_t> index = ReplicaOf(s);
  if (!job || !index) return;
  const std::string key = KeyOf(*job, *index);
  auto it = replicas_.find(key);
  if (it == replicas_.end()) return;
  if (AttemptOf(s) && *AttemptOf(s) != it->second.attempt) return;  // not this attempt's exit
  if (!it->second.exited) {
    Log("warn", "forget for a replica that still runs: kept", {{"job", *job}, {"replica", *index}});
    return;
  }
  replicas_.erase(it);
  executor_.Release(key);
  Log("info", "replica forgotten", {{"job", *job}, {"replica", *index}});
}

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
    rec.adopted = true;
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

void Agent::RenewLease(Time sent, const Json& reply) {
  const Json ms = reply.is_object() ? reply.value("lease_ms", Json()) : Json();
  if (!ms.is_number() || ms.get<double>() <= 0 || executor_.lease_path().empty()) return;
  const Time until = sent + Duration::Millis(static_cast<int64_t>(ms.get<double>()));
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
