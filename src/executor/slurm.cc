// The Slurm executor's worker (slurm.h; docs/design/executors.md, "Slurm").
#include "executor/slurm.h"

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

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

std::optional<std::vector<std::string>> ExpandHostlist(const std::string& list, size_t limit) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < list.size()) {
    // One item: a prefix, then optionally [ranges] and a suffix, up to a comma outside brackets.
    size_t end = i;
    int depth = 0;
    while (end < list.size() && (depth > 0 || list[end] != ',')) {
      if (list[end] == '[') ++depth;
      if (list[end] == ']') --depth;
      if (depth < 0 || depth > 1) return std::nullopt;
      ++end;
    }
    if (depth != 0) return std::nullopt;
    const std::string item = list.substr(i, end - i);
    i = end + 1;
    if (item.empty()) return std::nullopt;
    const size_t open = item.find('[');
    if (open == std::string::npos) {
      out.push_back(item);
    } else {
      const size_t close = item.find(']', open);
      const std::string prefix = item.substr(0, open), suffix = item.substr(close + 1);
      if (suffix.find_first_of("[]") != std::string::npos) return std::nullopt;
      std::stringstream ranges(item.substr(open + 1, close - open - 1));
      for (std::string r; std::getline(ranges, r, ',');) {
        const size_t dash = r.find('-');
        const std::string lo = r.substr(0, dash), hi = dash == std::string::npos ? lo : r.substr(dash + 1);
        auto digits = [](const std::string& x) { return !x.empty() && x.size() <= 9 && std::all_of(x.begin(), x.end(), ::isdigit); };
        if (!digits(lo) || !digits(hi)) return std::nullopt;
        const long a = std::stol(lo), b = std::stol(hi);
        if (b < a || static_cast<size_t>(b - a) >= limit) return std::nullopt;
        for (long k = a; k <= b; ++k) {
          std::string n = std::to_string(k);
          if (n.size() < lo.size()) n.insert(0, lo.size() - n.size(), '0');  // gpu[01-03]: width kept
          out.push_back(prefix + n + suffix);
          if (out.size() > limit) return std::nullopt;
        }
      }
    }
    if (out.size() > limit) return std::nullopt;
  }
  return out;
}

std::vector<int> GpusPerNode(size_t nodes, const std::vector<std::string>& gres_detail, int total) {
  std::vector<int> per(nodes, 0);
  if (nodes == 0) return per;
  if (gres_detail.size() == nodes) {
    for (size_t i = 0; i < nodes; ++i) per[i] = ParseGres(gres_detail[i]).count;
    return per;
  }
  for (size_t i = 0; i < nodes; ++i) {
    per[i] = total / static_cast<int>(nodes) + (static_cast<int>(i) < total % static_cast<int>(nodes) ? 1 : 0);
  }
  return per;
}

namespace {

// "1733490000" -> 1733490000; "Unknown", "None", "" -> 0.
int64_t EpochOrZero(const std::string& s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), ::isdigit) || s.size() > 18) return 0;
  return std::stoll(s);
}

}  // namespace

Result<std::vector<AccountedRun>> ParseSacct(const std::string& out) {
  std::vector<AccountedRun> runs;
  std::map<std::string, size_t> by_id;  // the job id before any "+": its entry in runs
  std::stringstream lines(out);
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, '|');) f.push_back(x);
    if (!line.empty() && line.back() == '|') f.emplace_back();
    if (f.size() != 8) {
      return Error{ErrorCode::kInvalidArgument, "sacct line " + std::to_string(n) + ": " + std::to_string(f.size()) +
                                                   " fields where JobID|JobName|Account|State|Submit|Start|End|AllocTRES "
                                                   "has 8"};
    }
    const std::string& name = f[1];
    constexpr std::string_view kPrefix = "gpupool-";
    if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size() || name.size() > kPrefix.size() + 19 ||
        !std::all_of(name.begin() + kPrefix.size(), name.end(), ::isdigit)) {
      continue;  // not one of gpupool's
    }
    const std::string id = f[0].substr(0, f[0].find_first_of("+._"));
    if (id.empty()) continue;
    int gpus = 0;
    for (size_t at = f[7].find("gres/gpu="); at != std::string::npos; at = f[7].find("gres/gpu=", at + 1)) {
      if (at == 0 || f[7][at - 1] == ',') gpus += std::atoi(f[7].c_str() + at + 9);
    }
    const std::string state = f[3].substr(0, f[3].find(' '));  // "CANCELLED by 0"
    auto [it, fresh] = by_id.try_emplace(id, runs.size());
    if (fresh) {
      AccountedRun r;
      r.job = std::stoull(name.substr(kPrefix.size()));
      r.backend_id = id;
      r.account = f[2];
      r.state = state;
      r.submit_s = EpochOrZero(f[4]);
      // Slurm gives a job cancelled while pending its cancel time as start; nothing was
      // allocated (AllocTRES is empty), and it never started.
      r.start_s = f[7].empty() ? 0 : EpochOrZero(f[5]);
      r.end_s = EpochOrZero(f[6]);
      r.gpus = gpus;
      runs.push_back(std::move(r));
      continue;
    }
    AccountedRun& r = runs[it->second];  // another component of a heterogeneous job
    r.gpus += gpus;
    auto earliest = [](int64_t a, int64_t b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); };
    r.submit_s = earliest(r.submit_s, EpochOrZero(f[4]));
    r.start_s = earliest(r.start_s, f[7].empty() ? 0 : EpochOrZero(f[5]));
    const int64_t end = EpochOrZero(f[6]);
    r.end_s = r.end_s == 0 || end == 0 ? 0 : std::max(r.end_s, end);  // 0 while a component runs
    if (RunStateOf(state) != RunState::kSucceeded) r.state = state;
  }
  return runs;
}

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

Status SlurmExecutor::Scontrol(const std::vector<std::string>& args) {
  return Tool(config_.scontrol, args, {}, nullptr);
}

Status SlurmExecutor::Tool(const std::string& program, const std::vector<std::string>& args,
                           const std::vector<std::string>& extra_env, std::string* out) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::string(*e).rfind("SLURM_CONF=", 0) != 0) env.push_back(*e);
  }
  if (!config_.slurm_conf.empty()) env.push_back("SLURM_CONF=" + config_.slurm_conf);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  // Its standard output and error come through pipes, read together so that neither fills.
  int po[2], pe[2];
  if (pipe2(po, O_CLOEXEC) != 0) return Unavailable("cannot run " + program + ": no pipe");
  if (pipe2(pe, O_CLOEXEC) != 0) {
    close(po[0]);
    close(po[1]);
    return Unavailable("cannot run " + program + ": no pipe");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, po[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, program.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(po[1]);
  close(pe[1]);
  std::string so, se;
  if (spawned == 0) {
    // A Slurm command that hangs (slurmdbd unreachable) is killed after a minute: the worker's
    // rounds must go on.
    const int64_t deadline = NowMs() + 60'000;
    pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
      const int64_t left = deadline - NowMs();
      if (left <= 0 || poll(fds, 2, static_cast<int>(left)) < 0) {
        if (errno == EINTR && left > 0) continue;
        kill(pid, SIGKILL);
        se += " (killed after 60 s)";
        break;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        char buf[65536];
        const ssize_t k = read(fds[i].fd, buf, sizeof buf);
        if (k > 0) {
          (i == 0 ? so : se).append(buf, static_cast<size_t>(k));
        } else if (k == 0 || errno != EINTR) {
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
  }
  close(po[0]);
  close(pe[0]);
  if (spawned != 0) return Unavailable("cannot run " + program);
  int status = 0;
  const bool exited = waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!exited) {
    std::string why = Trim(se);
    if (why.size() > 300) why = why.substr(0, 300) + "...";
    return Unavailable(program + " " + (args.empty() ? "" : args.front()) + " failed" + (why.empty() ? "" : ": " + why));
  }
  if (out) *out = std::move(so);
  return Ok();
}

Accounting SlurmExecutor::Accounted() const {
  std::lock_guard<std::mutex> l(mu_);
  return accounted_;
}

void SlurmExecutor::ReadAccounting() {
  if (config_.sacct.empty() || NowMs() < accounting_due_ms_) return;
  accounting_due_ms_ = NowMs() + config_.accounting_poll.millis();
  const int64_t from_s = NowMs() / 1000 - config_.accounting_window.millis() / 1000;
  // gpupool's jobs run as its Slurm user in its partition; SLURM_TIME_FORMAT=%s gives Unix
  // seconds, whatever the time zone of either side.
  std::string out;
  Status s = Tool(config_.sacct,
                  {"-X", "-P", "-n", "-u", config_.user, "-r", config_.partition, "-S", "now-" + std::to_string(
                       config_.accounting_window.millis() / 1000) + "seconds", "-E", "now", "-o",
                   "JobID,JobName,Account,State,Submit,Start,End,AllocTRES"},
                  {"SLURM_TIME_FORMAT=%s"}, &out);
  Result<std::vector<AccountedRun>> runs = s.ok() ? ParseSacct(out) : Result<std::vector<AccountedRun>>(s.error());
  std::lock_guard<std::mutex> l(mu_);
  if (!runs.ok()) {
    accounted_.error = runs.error().message;  // the last good read stays
    return;
  }
  accounted_ = Accounting{NowMs(), from_s, "", config_.accounts, std::move(runs).value()};
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
  std::map<std::string, std::pair<int, std::string>> foreign;  // node -> GPUs held by others, by which jobs
  for (const Json& j : (*jobs)["jobs"]) {
    if (!j.is_object()) continue;
    const std::string state = Str(j, "job_state");
    auto key = ParseComment(Str(j, "comment"));
    if (!key || Str(j, "name") != "gpupool-" + std::to_string(key->first)) {
      if (Str(j, "partition") == config_.partition && Active(state)) {
        ++obs.foreign_jobs;
        // What it holds: the GPUs of the nodes it was allocated, until it has let them go.
        if (state == "RUNNING" || state == "CONFIGURING" || state == "COMPLETING" || state == "SUSPENDED") {
          const std::string tres = Str(j, "tres_alloc_str");
          int total = 0;
          for (size_t at = tres.find("gres/gpu="); at != std::string::npos; at = tres.find("gres/gpu=", at + 1)) {
            if (at == 0 || tres[at - 1] == ',') total += std::atoi(tres.c_str() + at + 9);
          }
          obs.foreign_gpus += total;
          std::vector<std::string> detail;
          for (const Json& g : j.value("gres_detail", Json::array())) {
            if (g.is_string()) detail.push_back(g.get<std::string>());
          }
          const std::optional<std::vector<std::string>> hosts = ExpandHostlist(Str(j, "nodes"));
          if (hosts) {
            const std::vector<int> per = GpusPerNode(hosts->size(), detail, total);
            const std::string id = std::to_string(Int(j, "job_id"));
            for (size_t h = 0; h < hosts->size(); ++h) {
              if (per[h] <= 0) continue;
              auto& [gpus, names] = foreign[(*hosts)[h]];
              gpus += per[h];
              names += (names.empty() ? "Slurm job " : ", ") + id;
            }
          }
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

  for (NodeInfo& info : obs.nodes) {
    if (auto f = foreign.find(info.name); f != foreign.end()) {
      info.foreign_gpus = std::min(f->second.first, info.gpus);
      info.foreign = f->second.second;
    }
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
