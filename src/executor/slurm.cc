// The Slurm executor's worker: its thread, its calls to slurmrestd and its rounds (slurm.h;
// docs/design/executors.md, "Slurm"). The mapping is in slurm_mapping.cc, the subprocesses in
// slurm_tool.cc, the accounting in slurm_accounting.cc.
#include "executor/slurm.h"

#include <httplib.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "executor/slurm_internal.h"

namespace gpupool::executor {

using Json = nlohmann::json;
using slurm_internal::Int;
using slurm_internal::NowMs;
using slurm_internal::Str;
using slurm_internal::Trim;
using slurm_internal::Unavailable;

namespace {

bool Active(const std::string& state) {
  return state == "PENDING" || state == "RUNNING" || state == "CONFIGURING" || state == "COMPLETING" ||
         state == "SUSPENDED" || state == "REQUEUED" || state == "RESIZING" || state == "SIGNALING" ||
         state == "STAGE_OUT" || state == "REQUEUE_HOLD" || state == "REQUEUE_FED" || state == "RESV_DEL_HOLD";
}

// Holding the GPUs of its nodes: allocated and not yet let go.
bool Holding(const std::string& state) {
  return state == "RUNNING" || state == "CONFIGURING" || state == "COMPLETING" || state == "SUSPENDED";
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

}  // namespace

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
    ReadAccounting();
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
  obs.nodes = ReadNodes((*nodes)["nodes"], drain, &last_error);
  const std::map<Key, Ours> ours = ReadJobs((*jobs)["jobs"], &obs);
  const std::set<Key> wanted = Drive(want, ours, listed_ms, &obs, &last_error);
  Reclaim(wanted, ours, &last_error);

  std::lock_guard<std::mutex> l(mu_);
  obs.round = seen_.round + 1;
  obs.error = last_error;
  seen_ = std::move(obs);
  return Ok();
}

std::vector<NodeInfo> SlurmExecutor::ReadNodes(const Json& nodes, const std::map<std::string, std::string>& drain,
                                               std::string* error) {
  std::vector<NodeInfo> out;
  for (const Json& n : nodes) {
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
      if (!s.ok()) *error = s.error().message;
    } else if (drain.count(info.name) == 0 && drained && ours) {
      Status s = Scontrol({"update", "NodeName=" + info.name, "State=RESUME"});
      if (!s.ok()) *error = s.error().message;
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::map<SlurmExecutor::Key, SlurmExecutor::Ours> SlurmExecutor::ReadJobs(const Json& jobs, Observation* obs) {
  std::map<Key, Ours> ours;
  std::map<std::string, std::pair<int, std::string>> foreign;  // node -> GPUs held by others, by which jobs
  for (const Json& j : jobs) {
    if (!j.is_object()) continue;
    const std::string state = Str(j, "job_state");
    const std::optional<Key> key = ParseComment(Str(j, "comment"));
    if (key && Str(j, "name") == "gpupool-" + std::to_string(key->first)) {
      const uint64_t het = static_cast<uint64_t>(Int(j, "het_job_id"));
      const RunState rs = RunStateOf(state);
      auto [it, fresh] = ours.try_emplace(*key);
      if (fresh || Rank(rs) > Rank(it->second.run)) {
        it->second = {het != 0 ? het : static_cast<uint64_t>(Int(j, "job_id")), state, rs, Str(j, "state_reason"),
                      Int(j, "exit_code"), Str(j, "nodes")};
      }
      submitted_.erase(*key);
      continue;
    }
    if (Str(j, "partition") != config_.partition || !Active(state)) continue;
    ++obs->foreign_jobs;
    if (!Holding(state)) continue;
    const int total = TresGpus(Str(j, "tres_alloc_str"));
    obs->foreign_gpus += total;
    std::vector<std::string> detail;
    for (const Json& g : j.value("gres_detail", Json::array())) {
      if (g.is_string()) detail.push_back(g.get<std::string>());
    }
    const std::optional<std::vector<std::string>> hosts = ExpandHostlist(Str(j, "nodes"));
    if (!hosts) continue;
    const std::vector<int> per = GpusPerNode(hosts->size(), detail, total);
    const std::string id = std::to_string(Int(j, "job_id"));
    for (size_t h = 0; h < hosts->size(); ++h) {
      if (per[h] <= 0) continue;
      auto& [gpus, names] = foreign[(*hosts)[h]];
      gpus += per[h];
      names += (names.empty() ? "Slurm job " : ", ") + id;
    }
  }
  for (NodeInfo& info : obs->nodes) {
    if (auto f = foreign.find(info.name); f != foreign.end()) {
      info.foreign_gpus = std::min(f->second.first, info.gpus);
      info.foreign = f->second.second;
    }
  }
  return ours;
}

std::string EarlierAttemptAlive(const std::vector<SlurmAttempt>& listed, int64_t attempt) {
  for (const SlurmAttempt& a : listed) {
    if (a.attempt >= attempt || !Active(a.state)) continue;
    if (a.slurm_id == 0) return "waiting for attempt " + std::to_string(a.attempt) + " (a submission Slurm has not listed) to end";
    return "waiting for attempt " + std::to_string(a.attempt) + " (Slurm job " + std::to_string(a.slurm_id) + ", " +
           a.state + ") to end";
  }
  return "";
}

std::set<SlurmExecutor::Key> SlurmExecutor::Drive(const std::vector<Placement>& want, const std::map<Key, Ours>& ours,
                                                   int64_t listed_ms, Observation* obs, std::string* error) {
  std::set<Key> wanted;
  for (const Placement& p : want) {
    const Key key{p.job, p.attempt};
    wanted.insert(key);
    grace_[key] = p.grace;
    AttemptStatus st{p.job, p.attempt, RunState::kWaiting, ""};
    if (auto o = ours.find(key); o != ours.end()) {
      st.state = o->second.run;
      st.detail = "Slurm job " + std::to_string(o->second.slurm_id) + ": " + o->second.state;
      if (st.state == RunState::kWaiting && !o->second.reason.empty() && o->second.reason != "None") {
        st.detail += " (" + o->second.reason + ")";
      }
      if (st.state == RunState::kRunning) st.detail += " on " + o->second.nodes;
      if (st.state == RunState::kFailed || st.state == RunState::kSucceeded) st.detail += ", " + ExitText(o->second.exit_code);
      obs->attempts.push_back(st);
      continue;
    }
    auto sub = submitted_.find(key);
    if (p.started || (sub != submitted_.end() && listed_ms - sub->second.second > 30'000)) {
      // It ran (or was accepted) and Slurm no longer lists it: whatever became of it is not
      // known, and it must not be started twice behind gpupool's back.
      st.state = RunState::kLost;
      st.detail = sub != submitted_.end() ? "Slurm no longer knows job " + std::to_string(sub->second.first)
                                          : "Slurm no longer knows this attempt";
      obs->attempts.push_back(st);
      continue;
    }
    if (sub != submitted_.end()) {  // accepted a moment ago, not listed yet
      st.detail = "submitted to Slurm as job " + std::to_string(sub->second.first);
      obs->attempts.push_back(st);
      continue;
    }
    // An earlier attempt Slurm still has (cancelled, within its grace, or completing): the next
    // one is submitted only once it has ended, so two attempts never run at once (DESIGN.md §4).
    std::vector<SlurmAttempt> listed;
    for (auto it = ours.lower_bound({p.job, INT64_MIN}); it != ours.end() && it->first.first == p.job; ++it) {
      listed.push_back({it->first.second, it->second.slurm_id, it->second.state});
    }
    // Earlier attempts Slurm may have without listing them yet: accepted less than 30 s ago, or
    // a submission that failed (it may have made the job) and whose listings are not all in.
    for (auto it = submitted_.lower_bound({p.job, INT64_MIN}); it != submitted_.end() && it->first.first == p.job; ++it) {
      if (!ours.count(it->first) && listed_ms - it->second.second <= 30'000) {
        listed.push_back({it->first.second, it->second.first, "PENDING"});
      }
    }
    for (auto it = retry_at_.lower_bound({p.job, INT64_MIN}); it != retry_at_.end() && it->first.first == p.job; ++it) {
      if (!ours.count(it->first) && NowMs() < it->second) listed.push_back({it->first.second, 0, "PENDING"});
    }
    if (std::string older = EarlierAttemptAlive(listed, p.attempt); !older.empty()) {
      st.detail = older;
      obs->attempts.push_back(st);
      continue;
    }
    if (auto r = retry_at_.find(key); r != retry_at_.end() && NowMs() < r->second) {
      st.detail = "submission to Slurm failed; retrying";
      obs->attempts.push_back(st);
      continue;
    }
    Result<Json> reply = Call("POST", "/job/submit", SubmitBody(p, config_).dump());
    if (!reply.ok()) {
      // A timeout may still have made the job: the next listings find it by its comment, and
      // the retry waits long enough for them to.
      retry_at_[key] = NowMs() + 10'000;
      st.detail = "submission to Slurm failed: " + reply.error().message;
      *error = reply.error().message;
    } else {
      retry_at_.erase(key);
      const uint64_t id = static_cast<uint64_t>(Int(*reply, "job_id"));
      submitted_[key] = {id, NowMs()};
      st.detail = "submitted to Slurm as job " + std::to_string(id);
    }
    obs->attempts.push_back(st);
  }
  return wanted;
}

void SlurmExecutor::Reclaim(const std::set<Key>& wanted, const std::map<Key, Ours>& ours, std::string* error) {
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
    if (!r.ok()) *error = r.error().message;
  }
  for (auto it = grace_.begin(); it != grace_.end();) {
    it = wanted.count(it->first) || ours.count(it->first) ? std::next(it) : grace_.erase(it);
  }
  std::set<uint64_t> live;
  for (const auto& [key, o] : ours) live.insert(o.slurm_id);
  for (auto it = signalled_.begin(); it != signalled_.end();) {
    it = live.count(it->first) ? std::next(it) : signalled_.erase(it);
  }
}

}  // namespace gpupool::executor
