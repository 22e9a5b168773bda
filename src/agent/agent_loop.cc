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

Result<Agent::Url> Agent::ParseServerUrl(const std::string& text) {
  Url url;
  std::string rest = text;
  std::string scheme = "http";
  if (const size_t p = rest.find("://"); p != std::string::npos) {
    scheme = rest.substr(0, p);
    rest = rest.substr(p + 3);
  }
  if (scheme != "http" && scheme != "https") {
    return InvalidArgument("server URL '" + text + "': scheme must be http or https");
  }
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    url.prefix = rest.substr(slash);
    rest = rest.substr(0, slash);
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
  }
  if (rest.empty()) return InvalidArgument("server URL '" + text + "' has no host");
  url.origin = scheme + "://" + rest;
  if (!httplib::Client(url.origin).is_valid()) return InvalidArgument("cannot use server URL '" + text + "'");
  return url;
}

Result<std::unique_ptr<Agent>> Agent::Create(AgentOptions options, GpuProbe& probe,
                                             Executor& executor) {
  if (!ValidNodeName(options.node)) {
    return InvalidArgument("node name '" + options.node +
                           "' must be 1-128 characters of [A-Za-z0-9._-]");
  }
  std::vector<Url> servers;
  for (size_t from = 0; from <= options.server_url.size();) {
    size_t comma = options.server_url.find(',', from);
    if (comma == std::string::npos) comma = options.server_url.size();
    Result<Url> u = ParseServerUrl(options.server_url.substr(from, comma - from));
    if (!u.ok()) return u.error();
    servers.push_back(*u);
    from = comma + 1;
  }
  if (options.client_cert.empty() != options.client_key.empty()) {
    return InvalidArgument("a client certificate needs both its certificate and its key (--client-cert, --client-key)");
  }
  if (!options.client_cert.empty()) {
    for (const Url& u : servers) {
      if (u.origin.rfind("https://", 0) != 0) {
        return InvalidArgument("a client certificate is sent only over https; the server URL " + u.origin + " is plain http");
      }
    }
    if (!httplib::Client(servers.front().origin, options.client_cert, options.client_key).is_valid()) {
      return InvalidArgument("cannot use the client certificate " + options.client_cert + " with the key " +
                             options.client_key + " (PEM files of one key pair)");
    }
  }
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
  std::unique_ptr<Agent> agent(new Agent(std::move(options), std::move(servers), probe, executor, fake));
  agent->RecoverReplicas();
  return agent;
}

Agent::Agent(AgentOptions options, std::vector<Url> servers, GpuProbe& probe, Executor& executor, FakeProbe* fake)
    : options_(std::move(options)),
      servers_(std::move(servers)),
      probe_(probe),
      executor_(executor),
      fake_(fake) {
  if (!options_.log) options_.log = StderrJsonLog();
  Connect(servers_.front());
}

void Agent::Connect(const Url& u) {
  url_ = u;
  http_ = options_.client_cert.empty()
              ? std::make_unique<httplib::Client>(url_.origin)
              : std::make_unique<httplib::Client>(url_.origin, options_.client_cert, options_.client_key);
  http_->set_connection_timeout(5);
  http_->set_read_timeout(io_timeout_ms_ / 1000, (io_timeout_ms_ % 1000) * 1000);
  http_->set_write_timeout(io_timeout_ms_ / 1000, (io_timeout_ms_ % 1000) * 1000);
  if (!options_.token.empty()) http_->set_bearer_token_auth(options_.token);
  // https: the server is verified (cpp-httplib's default) against the system's certificates, or
  // against --ca: the agent runs nothing a reply tells it to from a server it has not verified.
  if (!options_.ca_file.empty()) http_->set_ca_cert_path(options_.ca_file);
  http_->enable_server_certificate_verification(true);
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

// A daemon's replicas (docs/design/daemon.md, "Replicas"): a follower answers 307 with the
// leader's URL, and the agent talks to the leader from then on; a URL that does not answer, or
// answers 503, makes the next request go to the next URL given.
Agent::Reply Agent::Post(const std::string& path, const std::string& body) {
  for (int hop = 0;; ++hop) {
    Reply out = PostOnce(path, body);
    if ((out.status == 307 || out.status == 308) && hop < 3) {
      const std::string wanted = url_.prefix + path;
      const std::string& to = out.location;
      Result<Url> leader = to.size() > wanted.size() && to.compare(to.size() - wanted.size(), wanted.size(), wanted) == 0
                               ? ParseServerUrl(to.substr(0, to.size() - wanted.size()) + url_.prefix)
                               : Result<Url>(InvalidArgument("a redirect to '" + to + "'"));
      if (leader.ok()) {
        Log("info", "following the daemon's leader", {{"from", url_.origin}, {"to", leader->origin}});
        Connect(*leader);
        continue;
      }
      out.error = leader.error().message;
    }
    if ((out.status == 0 || out.status == 503) && servers_.size() > 1) {
      server_ = (server_ + 1) % servers_.size();
      Connect(servers_[server_]);
    }
    return out;
  }
}

Status Agent::CheckEpoch(const char* what, std::optional<int64_t> epoch) {
  if (!epoch) return Ok();
  if (*epoch < epoch_seen_) {
    if (servers_.size() > 1) {
      server_ = (server_ + 1) % servers_.size();
      Connect(servers_[server_]);
    }
    return Error{ErrorCode::kUnavailable, std::string(what) + ": a reply of the daemon's epoch " + std::to_string(*epoch) +
                                              ", older than epoch " + std::to_string(epoch_seen_) +
                                              " seen before (a deposed leader): ignored"};
  }
  epoch_seen_ = *epoch;
  return Ok();
}

Agent::Reply Agent::PostOnce(const std::string& path, const std::string& body) {
  Reply out;
  httplib::Result r = http_->Post(url_.prefix + path, body, "application/json");
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
    out.error = "cannot reach the daemon at " + url_.origin + url_.prefix + ": " + why;
    return out;
  }
  out.status = r->status;
  out.body = std::move(r->body);
  out.location = r->get_header_value("Location");
  if (out.status < 200 || out.status > 299) {
    // The daemon's error body: {"error": {"message": ...}}; anything else is quoted.
    const Json j = Json::parse(out.body, nullptr, /*allow_exceptions=*/false);
    const Json* msg = j.is_object() && j.contains("error") && j["error"].is_object() &&
                              j["error"].contains("message") && j["error"]["message"].is_string()
                          ? &j["error"]["message"]
                          : nullptr;
    out.error = msg != nullptr ? msg->get<std::string>() : out.body.substr(0, 200);
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
