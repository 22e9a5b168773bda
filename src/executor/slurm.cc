// The Slurm executor's worker (slurm.h; docs/design/executors.md, "Slurm").
#include "executor/slurm.h"

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/base64url.h"

extern char** environ;

namespace gpupool::executor {

using Json = nlohmann::json;

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }

bool Active(const std::string& state) {
  return state == "PENDING" || state == "RUNNING" || state == "CONFIGURING" || state == "COMPLETING" ||
         state == "SUSPENDED" || state == "REQUEUED" || state == "RESIZING" || state == "SIGNALING" ||
         state == "STAGE_OUT" || state == "REQUEUE_HOLD" || state == "REQUEUE_FED" || state == "RESV_DEL_HOLD";
}

// The order in which the components of a heterogeneous job decide its merged state: the worst.
int Rank(RunState s) {
  switch (s) {
    case RunState::kSucceeded: return 0;
    case RunState::kWaiting: return 1;
    case RunState::kRunning: return 2;
    case RunState::kFailed: return 3;
    case RunState::kLost: return 4;
  }
  return 0;
}

std::string Str(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
int64_t Int(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

}  // namespace

std::string ExitText(int64_t status) {
  // v0.0.38 reports the batch step's wait status: the exit code in bits 8-15, a signal in 0-6.
  const int64_t signal = status & 0x7f, code = (status >> 8) & 0xff;
  return signal != 0 ? "killed by signal " + std::to_string(signal) : "exit code " + std::to_string(code);
}

GresGpus ParseGres(const std::string& gres) {
  GresGpus out;
  std::stringstream in(gres);
  std::string entry;
  // Entries are comma-separated; a socket binding "(S:0-1)" holds no comma in 22.05.
  while (std::getline(in, entry, ',')) {
    entry = entry.substr(0, entry.find('('));
    std::vector<std::string> parts;
    std::stringstream e(entry);
    for (std::string p; std::getline(e, p, ':');) parts.push_back(p);
    if (parts.empty() || parts[0] != "gpu") continue;
    std::string type;
    std::string count = "1";
    if (parts.size() == 2) count = parts[1];
    if (parts.size() >= 3) type = parts[1], count = parts[2];
    if (count.empty() || !std::all_of(count.begin(), count.end(), ::isdigit) || count.size() > 6) continue;
    if (out.type.empty()) out.type = type;
    out.count += std::stoi(count);
  }
  return out;
}

std::string Comment(uint64_t job, int64_t attempt) {
  return "gpupool job=" + std::to_string(job) + " attempt=" + std::to_string(attempt);
}

std::optional<std::pair<uint64_t, int64_t>> ParseComment(const std::string& comment) {
  unsigned long long job = 0;
  long long attempt = 0;
  char tail = 0;
  if (std::sscanf(comment.c_str(), "gpupool job=%llu attempt=%lld%c", &job, &attempt, &tail) != 2) return std::nullopt;
  if (comment != Comment(job, attempt)) return std::nullopt;  // no sign, no leading zeros, nothing after
  return std::pair<uint64_t, int64_t>{job, attempt};
}

RunState RunStateOf(const std::string& s) {
  if (s == "RUNNING" || s == "COMPLETING" || s == "SUSPENDED" || s == "SIGNALING" || s == "STAGE_OUT" ||
      s == "RESIZING") {
    return RunState::kRunning;
  }
  if (s == "COMPLETED") return RunState::kSucceeded;
  if (s == "NODE_FAIL" || s == "BOOT_FAIL" || s == "PREEMPTED") return RunState::kLost;
  if (s == "FAILED" || s == "CANCELLED" || s == "TIMEOUT" || s == "OUT_OF_MEMORY" || s == "DEADLINE" ||
      s == "SPECIAL_EXIT" || s == "REVOKED") {
    return RunState::kFailed;
  }
  return RunState::kWaiting;  // PENDING, CONFIGURING, REQUEUED and holds
}

std::string ShellQuote(const std::string& word) {
  std::string out = "'";
  for (char ch : word) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

Json SubmitBody(const Placement& p, const SlurmConfig& c) {
  std::string argv;
  for (const std::string& w : p.command) argv += " " + ShellQuote(w);
  int replicas = 0;
  bool uniform = true;
  for (const NodeShare& s : p.nodes) {
    replicas += s.replicas;
    uniform = uniform && s.replicas == p.nodes.front().replicas && s.gpus == p.nodes.front().gpus;
  }
  std::string script = "#!/bin/sh\n# " + Comment(p.job, p.attempt) + " (tenant " + p.tenant + ")\n";
  if (replicas <= 1) {
    script += "exec" + argv + "\n";
  } else if (uniform) {
    script += "exec srun --kill-on-bad-exit=1 --ntasks=" + std::to_string(replicas) + " --ntasks-per-node=" +
              std::to_string(p.nodes.front().replicas) + " --" + argv + "\n";
  } else {
    script += "exec srun --kill-on-bad-exit=1 --het-group=0-" + std::to_string(p.nodes.size() - 1) + " --" + argv + "\n";
  }
  Json env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}};
  for (const auto& [k, v] : p.env) env[k] = v;
  const std::string output = !c.output.empty() ? c.output
                                               : c.working_directory + "/gpupool-" + std::to_string(p.job) + "-" +
                                                     std::to_string(p.attempt) + ".out";
  auto component = [&](const std::vector<NodeShare>& shares) {
    Json j = {{"name", "gpupool-" + std::to_string(p.job)},
              {"comment", Comment(p.job, p.attempt)},
              {"partition", c.partition},
              {"current_working_directory", c.working_directory},
              {"environment", env},
              {"standard_output", output},
              {"requeue", false}};
    std::string nodelist;
    for (const NodeShare& s : shares) nodelist += (nodelist.empty() ? "" : ",") + s.node;
    j["nodelist"] = nodelist;
    const NodeShare& s = shares.front();
    if (s.gpus > 0) j["gres"] = "gpu:" + (p.gpu_type.empty() ? "" : p.gpu_type + ":") + std::to_string(s.gpus);
    int tasks = 0;
    for (const NodeShare& x : shares) tasks += std::max(1, x.replicas);
    j["tasks"] = tasks;
    if (p.cpu_milli > 0) j["cpus_per_task"] = static_cast<int64_t>((p.cpu_milli + 999) / 1000);
    if (p.memory_mib > 0) j["memory_per_node"] = p.memory_mib * std::max(1, s.replicas);
    if (c.accounts) j["account"] = p.tenant;
    return j;
  };
  Json body = {{"script", script}};
  if (uniform) {
    body["job"] = component(p.nodes);
  } else {
    body["jobs"] = Json::array();
    for (const NodeShare& s : p.nodes) body["jobs"].push_back(component({s}));
  }
  return body;
}

std::string MintSlurmToken(const std::string& key, const std::string& user, int64_t now_s, int64_t lifetime_s) {
  const std::string head = Base64Url(R"({"alg":"HS256","typ":"JWT"})");
  const std::string claims = Base64Url(Json{{"exp", now_s + lifetime_s}, {"iat", now_s}, {"sun", user}}.dump());
  const std::string input = head + "." + claims;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(input.data()),
       input.size(), mac, &len);
  return input + "." + Base64Url(std::string_view(reinterpret_cast<const char*>(mac), len));
}

// --- the worker ---

Result<std::unique_ptr<SlurmExecutor>> SlurmExecutor::Start(SlurmConfig config) {
  if (config.url.empty()) return InvalidArgument("executor " + config.name + ": 'slurmrestd' is required");
  if (config.partition.empty()) return InvalidArgument("executor " + config.name + ": 'partition' is required");
  if (config.token_file.empty() == config.jwt_key_file.empty()) {
    return InvalidArgument("executor " + config.name + ": give exactly one of 'token_file' and 'jwt_key_file'");
  }
  if (!httplib::Client(config.url).is_valid()) {
    return InvalidArgument("executor " + config.name + ": cannot use slurmrestd URL '" + config.url + "'");
  }
  std::unique_ptr<SlurmExecutor> e(new SlurmExecutor(std::move(config)));
  e->worker_ = std::thread([p = e.get()] { p->Run(); });
  return e;
}

SlurmExecutor::~SlurmExecutor() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void SlurmExecutor::Want(std::vector<Placement> run, std::map<std::string, std::string> out_of_service) {
  std::lock_guard<std::mutex> l(mu_);
  want_ = std::move(run);
  drain_ = std::move(out_of_service);
}

Observation SlurmExecutor::Observe() const {
  std::lock_guard<std::mutex> l(mu_);
  return seen_;
}

void SlurmExecutor::Run() {
  for (;;) {
    Status s = Round();
    {
      std::unique_lock<std::mutex> l(mu_);
      if (!s.ok()) {
        seen_.error = s.error().message;
        ++seen_.round;
      }
      if (cv_.wait_for(l, std::chrono::milliseconds(config_.poll.millis()), [&] { return stop_; })) return;
    }
  }
}

Result<std::string> SlurmExecutor::Token() {
  if (!config_.token_file.empty()) {
    std::ifstream in(config_.token_file);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string t = Trim(ss.str());
    if (!in || t.empty()) return Unavailable("cannot read the token file " + config_.token_file);
    if (t.rfind("SLURM_JWT=", 0) == 0) t = t.substr(10);  // as `scontrol token` prints it
    return t;
  }
  const int64_t now_s = NowMs() / 1000;
  if (now_s + 60 < token_until_s_) return token_;
  std::ifstream in(config_.jwt_key_file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in || ss.str().empty()) return Unavailable("cannot read the JWT key " + config_.jwt_key_file);
  token_ = MintSlurmToken(ss.str(), config_.user, now_s, 600);
  token_until_s_ = now_s + 600;
  return token_;
}

Result<Json> SlurmExecutor::Call(const std::string& method, const std::string& path, const std::string& body) {
  Result<std::string> token = Token();
  if (!token.ok()) return token.error();
  httplib::Client cli(config_.url);
  const int64_t ms = config_.request_timeout.millis();
  cli.set_connection_timeout(ms / 1000, (ms % 1000) * 1000);
  cli.set_read_timeout(ms / 1000, (ms % 1000) * 1000);
  cli.set_write_timeout(ms / 1000, (ms % 1000) * 1000);
  httplib::Headers h = {{"X-SLURM-USER-NAME", config_.user}, {"X-SLURM-USER-TOKEN", *token}};
  const std::string full = "/slurm/" + config_.api + path;
  httplib::Result r = method == "GET"      ? cli.Get(full, h)
                      : method == "DELETE" ? cli.Delete(full, h)
                                           : cli.Post(full, h, body, "application/json");
  if (!r) return Unavailable("slurmrestd " + config_.url + ": " + httplib::to_string(r.error()) + " (" + method + " " + path + ")");
  Json j = Json::parse(r->body, nullptr, false);
  std::string errors;
  if (j.is_object() && j.contains("errors") && j["errors"].is_array()) {
    for (const Json& e : j["errors"]) {
      if (!e.is_object()) continue;
      const std::string text = Str(e, "error") + (Str(e, "description").empty() ? "" : ": " + Str(e, "description"));
      if (!text.empty()) errors += (errors.empty() ? "" : "; ") + text;
    }
  }
  if (r->status / 100 != 2 || !j.is_object() || !errors.empty()) {
    return Unavailable("slurmrestd " + method + " " + path + ": HTTP " + std::to_string(r->status) +
                       (errors.empty() ? "" : ": " + errors));
  }
  return j;
}

Status SlurmExecutor::Scontrol(const std::vector<std::string>& args) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::string(*e).rfind("SLURM_CONF=", 0) != 0) env.push_back(*e);
  }
  if (!config_.slurm_conf.empty()) env.push_back("SLURM_CONF=" + config_.slurm_conf);
  std::vector<char*> argv{const_cast<char*>(config_.scontrol.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, config_.scontrol.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) {
    return Unavailable("cannot run " + config_.scontrol);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Unavailable(config_.scontrol + " " + args.front() + " " + args[1] + " failed");
  }
  return Ok();
}

Status SlurmExecutor::Round() {
  Result<Json> nodes = Call("GET", "/nodes");
  if (!nodes.ok()) return nodes.error();
  Result<Json> jobs = Call("GET", "/jobs");
  if (!jobs.ok()) return jobs.error();
  const int64_t listed_ms = NowMs();
  std::vector<Placement> want;
  std::map<std::string, std::string> drain;
  {
    std::lock_guard<std::mutex> l(mu_);
    want = want_;
    drain = drain_;
  }
  Observation obs;
  std::string last_error;

  // Nodes of the partition; drain and resume where gpupool's operators asked.
  for (const Json& n : (*nodes)["nodes"]) {
    if (!n.is_object()) continue;
    const Json parts = n.value("partitions", Json::array());
    if (!parts.is_array() || std::find(parts.begin(), parts.end(), config_.partition) == parts.end()) continue;
    NodeInfo info;
    info.name = Str(n, "name");
    const GresGpus g = ParseGres(Str(n, "gres"));
    info.gpu_type = g.type;
    info.gpus = g.count;
    info.cpu_milli = Int(n, "cpus") * 1000;
    info.memory_mib = Int(n, "real_memory");
    std::stringstream features(Str(n, "features"));
    for (std::string f; std::getline(features, f, ',');) {
      if (!f.empty()) info.labels.push_back("slurm.gpupool.io/" + f + "=true");
    }
    std::string state = Str(n, "state");
    std::transform(state.begin(), state.end(), state.begin(), ::toupper);
    std::set<std::string> flags{state};
    for (const Json& f : n.value("state_flags", Json::array())) {
      if (f.is_string()) flags.insert(f.get<std::string>());
    }
    const std::string reason = Str(n, "reason");
    const bool ours = reason.rfind("gpupool:", 0) == 0;
    const bool drained = flags.count("DRAIN") || flags.count("DRAINED") || flags.count("DRAINING");
    const bool down = flags.count("DOWN") || flags.count("FAIL") || flags.count("FAILING") || flags.count("ERROR") ||
                      flags.count("FUTURE") || flags.count("UNKNOWN");
    // NOT_RESPONDING alone is a missed ping (it shows for a moment after a resume): Slurm marks
    // the node DOWN itself after SlurmdTimeout, and that is what counts.
    if (down || (drained && !ours)) {
      info.unavailable = true;
      std::string words;
      for (const std::string& f : flags) words += (words.empty() ? "" : "+") + f;
      info.reason = "Slurm marks it " + words + (reason.empty() ? "" : ": " + reason);
    }
    if (auto d = drain.find(info.name); d != drain.end() && !drained) {
      Status s = Scontrol({"update", "NodeName=" + info.name, "State=DRAIN", "Reason=gpupool: " + d->second});
      if (!s.ok()) last_error = s.error().message;
    } else if (drain.count(info.name) == 0 && drained && ours) {
      Status s = Scontrol({"update", "NodeName=" + info.name, "State=RESUME"});
      if (!s.ok()) last_error = s.error().message;
    }
    obs.nodes.push_back(std::move(info));
  }

  // Jobs: gpupool's by their comment, the components of a heterogeneous job merged; foreign jobs
  // of the partition counted.
  std::map<std::pair<uint64_t, int64_t>, Ours> ours;
  std::map<std::pair<uint64_t, int64_t>, RunState> merged;
  for (const Json& j : (*jobs)["jobs"]) {
    if (!j.is_object()) continue;
    const std::string state = Str(j, "job_state");
    auto key = ParseComment(Str(j, "comment"));
    if (!key || Str(j, "name") != "gpupool-" + std::to_string(key->first)) {
      if (Str(j, "partition") == config_.partition && Active(state)) {
        ++obs.foreign_jobs;
        if (state == "RUNNING") {
          const std::string tres = Str(j, "tres_alloc_str");
          if (auto at = tres.find("gres/gpu="); at != std::string::npos) obs.foreign_gpus += std::atoi(tres.c_str() + at + 9);
        }
      }
      continue;
    }
    const uint64_t het = static_cast<uint64_t>(Int(j, "het_job_id"));
    const uint64_t id = het != 0 ? het : static_cast<uint64_t>(Int(j, "job_id"));
    const RunState rs = RunStateOf(state);
    auto [it, fresh] = ours.try_emplace(*key);
    auto m = merged.find(*key);
    if (fresh || Rank(rs) > Rank(m->second)) {
      it->second.slurm_id = id;
      it->second.state = state;
      it->second.reason = Str(j, "state_reason");
      it->second.exit_code = Int(j, "exit_code");
      it->second.nodes = Str(j, "nodes");
      merged[*key] = rs;
    }
    submitted_.erase(*key);
  }

  // What should run: status of what Slurm has, submissions of what it lacks.
  std::set<std::pair<uint64_t, int64_t>> wanted;
  for (const Placement& p : want) {
    const std::pair<uint64_t, int64_t> key{p.job, p.attempt};
    wanted.insert(key);
    grace_[key] = p.grace;
    AttemptStatus st{p.job, p.attempt, RunState::kWaiting, ""};
    if (auto o = ours.find(key); o != ours.end()) {
      st.state = merged[key];
      st.detail = "Slurm job " + std::to_string(o->second.slurm_id) + ": " + o->second.state;
      if (st.state == RunState::kWaiting && !o->second.reason.empty() && o->second.reason != "None") {
        st.detail += " (" + o->second.reason + ")";
      }
      if (st.state == RunState::kRunning) st.detail += " on " + o->second.nodes;
      if (st.state == RunState::kFailed || st.state == RunState::kSucceeded) st.detail += ", " + ExitText(o->second.exit_code);
      obs.attempts.push_back(st);
      continue;
    }
    auto sub = submitted_.find(key);
    if (p.started || (sub != submitted_.end() && listed_ms - sub->second.second > 30'000)) {
      // It ran (or was accepted) and Slurm no longer lists it: whatever became of it is not
      // known, and it must not be started twice behind gpupool's back.
      st.state = RunState::kLost;
      st.detail = sub != submitted_.end() ? "Slurm no longer knows job " + std::to_string(sub->second.first)
                                          : "Slurm no longer knows this attempt";
      obs.attempts.push_back(st);
      continue;
    }
    if (sub != submitted_.end()) {  // accepted a moment ago, not listed yet
      st.detail = "submitted to Slurm as job " + std::to_string(sub->second.first);
      obs.attempts.push_back(st);
      continue;
    }
    if (auto r = retry_at_.find(key); r != retry_at_.end() && NowMs() < r->second) {
      st.detail = "submission to Slurm failed; retrying";
      obs.attempts.push_back(st);
      continue;
    }
    Result<Json> reply = Call("POST", "/job/submit", SubmitBody(p, config_).dump());
    if (!reply.ok()) {
      // A timeout may still have made the job: the next listings find it by its comment, and
      // the retry waits long enough for them to.
      retry_at_[key] = NowMs() + 10'000;
      st.detail = "submission to Slurm failed: " + reply.error().message;
      last_error = reply.error().message;
    } else {
      retry_at_.erase(key);
      const uint64_t id = static_cast<uint64_t>(Int(*reply, "job_id"));
      submitted_[key] = {id, NowMs()};
      st.detail = "submitted to Slurm as job " + std::to_string(id);
    }
    obs.attempts.push_back(st);
  }

  // What gpupool no longer wants: SIGTERM, and after the attempt's grace, cancelled.
  for (const auto& [key, o] : ours) {
    if (wanted.count(key) || !Active(o.state)) continue;
    const int64_t now = NowMs();
    const auto g = grace_.find(key);
    const int64_t grace_ms = g != grace_.end() ? g->second.millis() : 30'000;
    auto sig = signalled_.find(o.slurm_id);
    const std::string path = "/job/" + std::to_string(o.slurm_id);
    Result<Json> r = Json();
    if (o.state == "PENDING" || (sig != signalled_.end() && now - sig->second >= grace_ms)) {
      r = Call("DELETE", path + "?signal=KILL");
    } else if (sig == signalled_.end()) {
      r = Call("DELETE", path + "?signal=TERM");
      if (r.ok()) signalled_[o.slurm_id] = now;
    }
    if (!r.ok()) last_error = r.error().message;
  }
  for (auto it = grace_.begin(); it != grace_.end();) {
    it = wanted.count(it->first) || ours.count(it->first) ? std::next(it) : grace_.erase(it);
  }
  for (auto it = signalled_.begin(); it != signalled_.end();) {
    bool live = false;
    for (const auto& [key, o] : ours) live = live || o.slurm_id == it->first;
    it = live ? std::next(it) : signalled_.erase(it);
  }

  std::lock_guard<std::mutex> l(mu_);
  obs.round = seen_.round + 1;
  obs.error = last_error;
  seen_ = std::move(obs);
  return Ok();
}

}  // namespace gpupool::executor
