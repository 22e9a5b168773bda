// The Slurm executor's mapping between gpupool's words and Slurm's, pure (slurm.h; tested in
// slurm_test.cc).
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/base64url.h"
#include "executor/slurm.h"

namespace gpupool::executor {

using Json = nlohmann::json;

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

int TresGpus(const std::string& tres) {
  // "cpu=1,gres/gpu:h100=4,gres/gpu=4,mem=1M": the untyped total, not the typed share again.
  int gpus = 0;
  for (size_t at = tres.find("gres/gpu="); at != std::string::npos; at = tres.find("gres/gpu=", at + 1)) {
    if (at == 0 || tres[at - 1] == ',') gpus += std::atoi(tres.c_str() + at + 9);
  }
  return gpus;
}

}  // namespace gpupool::executor
