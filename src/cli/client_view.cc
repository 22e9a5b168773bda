#include "cli/client_view.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <vector>

#include "cli/table.h"

namespace gpupool::cli {
namespace {

const Json& Field(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// A string field as is, a number or boolean as its JSON text, anything else as "".
std::string Str(const Json& j, const char* key) {
  const Json& v = Field(j, key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return "";
}

double Num(const Json& j, const char* key) {
  const Json& v = Field(j, key);
  return v.is_number() ? v.get<double>() : 0;
}

const Json& Items(const Json& list) {
  static const Json kEmpty = Json::array();
  return list.is_array() ? list : kEmpty;
}

// GPU amounts are exact to 1/7000 GPU; three decimals, trailing zeros dropped: 16, 0.25, 0.143.
std::string Gpus(double v) {
  std::string s = Fixed(v, 3);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string OrNone(const std::string& s) { return s.empty() ? "<none>" : s; }

std::string IsoTime(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Age(const Json& job, int64_t now_ms) {
  const Json& at = Field(job, "submitted_at_ms");
  if (!at.is_number()) return "";
  return CompactDuration(std::max<int64_t>(0, (now_ms - at.get<int64_t>()) / 1000), 2);
}

// Words joined for a shell: a word with anything but safe characters is single-quoted.
std::string ShellJoin(const Json& words) {
  std::string out;
  for (const Json& w : Items(words)) {
    const std::string s = w.is_string() ? w.get<std::string>() : w.dump();
    const bool safe = !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
      return std::isalnum(c) || std::string("-_./=:,+@%").find(static_cast<char>(c)) != std::string::npos;
    });
    std::string quoted = "'";
    for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += (out.empty() ? "" : " ") + (safe ? s : quoted + "'");
  }
  return out;
}

std::string GrantsCell(const Json& gpus) {
  std::string out;
  for (const Json& g : Items(gpus)) {
    std::string cell = Str(g, "gpu");
    if (Field(g, "mig_start").is_number()) cell += ":slice" + Str(g, "mig_start");
    if (Field(g, "milli").is_number()) cell += ":" + Gpus(Num(g, "milli") / 1000) + "gpu";
    out += (out.empty() ? "" : ",") + cell;
  }
  return out;
}

// Aligned "Key:  value" lines.
class Page {
 public:
  void Add(std::string key, std::string value) { lines_.emplace_back(std::move(key), std::move(value)); }
  void Print(std::ostream& out) const {
    size_t width = 0;
    for (const auto& [k, v] : lines_) width = std::max(width, k.size() + 1);
    for (const auto& [k, v] : lines_) {
      std::string line = k + ":" + std::string(width - k.size() - 1, ' ') + "  " + v;
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << "\n";
    }
  }

 private:
  std::vector<std::pair<std::string, std::string>> lines_;
};

// A table under a heading, indented by two spaces.
void Section(const std::string& heading, const Table& t, std::ostream& out) {
  std::ostringstream text;
  t.Print(text);
  out << heading << ":\n";
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
}

// Would a plain YAML scalar with this text load as something other than this string?
bool NeedsQuotes(const std::string& s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ') return true;
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"}) {
    if (lower == word) return true;
  }
  if (lower == ".inf" || lower == "-.inf" || lower == "+.inf" || lower == ".nan") return true;
  char* end = nullptr;
  (void)std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

void Emit(YAML::Emitter& out, const Json& j) {
  switch (j.type()) {
    case Json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, v] : j.items()) {
        out << YAML::Key;
        if (NeedsQuotes(k)) out << YAML::DoubleQuoted;
        out << k << YAML::Value;
        Emit(out, v);
      }
      out << YAML::EndMap;
      break;
    case Json::value_t::array:
      out << YAML::BeginSeq;
      for (const Json& v : j) Emit(out, v);
      out << YAML::EndSeq;
      break;
    case Json::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case Json::value_t::boolean: out << (j.get<bool>() ? "true" : "false"); break;
    case Json::value_t::null:
    case Json::value_t::discarded: out << YAML::Null; break;
    default: out << j.dump(); break;  // numbers: JSON's shortest round-trip text
  }
}

}  // namespace

Result<Format> ParseFormat(const std::string& name) {
  if (name == "table") return Format::kTable;
  if (name == "json") return Format::kJson;
  if (name == "yaml") return Format::kYaml;
  if (name == "csv") return Format::kCsv;
  return InvalidArgument("-o must be table, json or yaml (csv for usage), not '" + name + "'");
}

std::string ToJsonText(const Json& j) { return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"; }

std::string ToYaml(const Json& j) {
  YAML::Emitter out;
  Emit(out, j);
  return std::string(out.c_str()) + "\n";
}

std::string CompactDuration(int64_t seconds, int max_parts) {
  if (seconds <= 0) return "0s";
  const std::pair<int64_t, char> units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
  std::string out;
  int parts = 0;
  for (const auto& [size, letter] : units) {
    if (parts == max_parts) break;
    const int64_t n = seconds / size;
    if (n == 0 && parts == 0) continue;
    if (n > 0) out += std::to_string(n) + letter;
    seconds %= size;
    ++parts;
    if (seconds == 0) break;
  }
  return out;
}

std::string ResourcesCell(const Json& r) {
  const std::string flavor = Str(r, "flavor");
  if (Field(r, "gpus").is_number()) return flavor + ":" + Str(r, "gpus") + "gpu";
  if (Field(r, "mig_profile").is_string()) return flavor + ":" + Str(r, "mig_profile");
  if (Field(r, "gpu_fraction").is_number()) {
    return flavor + ":" + Gpus(Num(r, "gpu_fraction")) + "gpu," + Str(r, "memory_gb") + "GB";
  }
  return flavor;
}

void PrintJobs(const Json& items, int64_t now_ms, std::ostream& out) {
  Table t({"ID", "NAME", "TENANT", "STATE", "RESOURCES", "REPLICAS", "AGE", "REASON"});
  for (const Json& j : Items(items)) {
    t.Row({Str(j, "id"), Str(j, "name"), Str(j, "tenant"), Str(j, "state"),
           ResourcesCell(Field(j, "resources")), Str(j, "replicas"), Age(j, now_ms),
           Str(Field(j, "reason"), "code")});
  }
  t.Print(out);
}

void PrintNodes(const Json& items, std::ostream& out) {
  Table t({"NAME", "FLAVOR", "CONDITION", "GPUS", "HEALTHY", "FREE", "MIG", "SHARED", "BLOCK", "NVLINK"});
  for (const Json& n : Items(items)) {
    t.Row({Str(n, "name"), Str(n, "flavor"), Str(n, "condition"), Str(n, "gpus"), Str(n, "healthy_gpus"),
           Str(n, "free_whole_gpus"), Str(n, "mig_gpus"), Str(n, "shared_gpus"), OrNone(Str(n, "block")),
           OrNone(Str(n, "nvlink_domain"))});
  }
  t.Print(out);
}

void PrintTenants(const Json& items, std::ostream& out) {
  // GPU-equivalents summed over flavors; `describe tenant` has them per flavor.
  Table t({"NAME", "WEIGHT", "GUARANTEED", "ALLOCATED", "BORROWED", "PENDING", "ACTIVE"});
  for (const Json& tenant : Items(items)) {
    double guaranteed = 0, allocated = 0, borrowed = 0;
    const Json& quotas = Field(tenant, "quotas");
    if (quotas.is_object()) {
      for (const auto& [flavor, q] : quotas.items()) guaranteed += Num(q, "guaranteed");
    }
    const Json& usage = Field(tenant, "usage");
    if (usage.is_object()) {
      for (const auto& [flavor, u] : usage.items()) {
        allocated += Num(u, "allocated");
        borrowed += Num(u, "borrowed");
      }
    }
    t.Row({Str(tenant, "name"), Gpus(Num(tenant, "weight")), Gpus(guaranteed), Gpus(allocated), Gpus(borrowed),
           Str(tenant, "pending_jobs"), Str(tenant, "active_jobs")});
  }
  t.Print(out);
}

void PrintReservations(const Json& items, std::ostream& out) {
  Table t({"ID", "TENANT", "FLAVOR", "GPUS", "START", "END"});
  for (const Json& r : Items(items)) {
    const bool maintenance = Field(r, "maintenance") == true;
    t.Row({Str(r, "id"), maintenance ? "<maintenance>" : Str(r, "tenant"), Str(r, "flavor"), Gpus(Num(r, "gpus")),
           Str(r, "start"), Str(r, "end")});
  }
  t.Print(out);
}

void PrintUsage(const Json& report, std::ostream& out) {
  out << "usage from " << Str(report, "from") << " to " << Str(report, "to") << "\n";
  Table t({"TENANT", "FLAVOR", "KIND", "GPU-HOURS", "COST"});
  for (const Json& r : Items(Field(report, "items"))) {
    t.Row({Str(r, "tenant"), OrNone(Str(r, "flavor")), OrNone(Str(r, "kind")), Fixed(Num(r, "gpu_hours"), 3),
           Str(r, "cost")});
  }
  const Json& total = Field(report, "total");
  t.Row({"TOTAL", "", "", Fixed(Num(total, "gpu_hours"), 3), Str(total, "cost")});
  t.Print(out);
  for (const Json& w : Items(Field(report, "warnings"))) {
    if (w.is_string()) out << "warning: " << w.get<std::string>() << "\n";
  }
}

void DescribeJob(const Json& job, int64_t now_ms, std::ostream& out) {
  Page p;
  p.Add("ID", Str(job, "id"));
  p.Add("Name", Str(job, "name"));
  p.Add("Tenant", Str(job, "tenant"));
  p.Add("Priority class", Str(job, "priority_class"));
  p.Add("State", Str(job, "state"));
  const Json& reason = Field(job, "reason");
  const std::string message = Str(reason, "message");
  p.Add("Reason", OrNone(Str(reason, "code") + (message.empty() ? "" : ": " + message)));
  if (!Str(job, "admitted_as").empty()) p.Add("Admitted as", Str(job, "admitted_as"));
  if (!Str(job, "reservation").empty()) p.Add("Reservation", Str(job, "reservation"));
  p.Add("Resources", ResourcesCell(Field(job, "resources")) + " per replica");
  p.Add("Replicas", Str(job, "replicas"));
  if (Field(job, "duration_estimate_s").is_number()) {
    const auto s = Field(job, "duration_estimate_s").get<int64_t>();
    p.Add("Duration estimate", CompactDuration(s, 4) + " (" + std::to_string(s) + " s)");
  }
  p.Add("Command", ShellJoin(Field(job, "command")));
  if (Field(job, "submitted_at_ms").is_number()) {
    p.Add("Submitted", IsoTime(Field(job, "submitted_at_ms").get<int64_t>()) + " (" + Age(job, now_ms) + " ago)");
  }
  const Json& placement = Items(Field(job, "placement"));
  if (placement.empty()) p.Add("Placement", "<none>");
  p.Print(out);
  if (placement.empty()) return;
  Table t({"REPLICA", "NODE", "GPUS"});
  for (size_t i = 0; i < placement.size(); ++i) {
    t.Row({std::to_string(i), Str(placement[i], "node"), GrantsCell(Field(placement[i], "gpus"))});
  }
  Section("Placement", t, out);
}

void DescribeNode(const Json& node, std::ostream& out) {
  Page p;
  p.Add("Name", Str(node, "name"));
  p.Add("Flavor", Str(node, "flavor"));
  p.Add("Condition", Str(node, "condition"));
  p.Add("GPUs", Str(node, "gpus") + " (" + Str(node, "healthy_gpus") + " healthy)");
  p.Add("Free whole GPUs", Str(node, "free_whole_gpus"));
  p.Add("MIG GPUs", Str(node, "mig_gpus"));
  p.Add("Shared GPUs", Str(node, "shared_gpus"));
  p.Add("Block", OrNone(Str(node, "block")));
  p.Add("NVLink domain", OrNone(Str(node, "nvlink_domain")));
  std::string jobs;
  for (const Json& id : Items(Field(node, "jobs"))) jobs += (jobs.empty() ? "" : ", ") + (id.is_string() ? id.get<std::string>() : id.dump());
  p.Add("Jobs", OrNone(jobs));
  p.Print(out);
}

void DescribeTenant(const Json& tenant, std::ostream& out) {
  Page p;
  p.Add("Name", Str(tenant, "name"));
  p.Add("Weight", Gpus(Num(tenant, "weight")));
  p.Add("GPU co-tenancy", Field(tenant, "allow_gpu_cotenancy") == true ? "allowed" : "not allowed");
  p.Add("Pending jobs", Str(tenant, "pending_jobs"));
  p.Add("Active jobs", Str(tenant, "active_jobs"));
  std::string limits;
  const Json& l = Field(tenant, "limits");
  if (l.is_object()) {
    for (const auto& [k, v] : l.items()) limits += (limits.empty() ? "" : ", ") + k + "=" + v.dump();
  }
  p.Add("Limits", OrNone(limits));
  // Flavors with a quota or usage, in name order (both maps are ordered by key).
  const Json& quotas = Field(tenant, "quotas");
  const Json& usage = Field(tenant, "usage");
  std::vector<std::string> flavors;
  for (const Json* m : {&quotas, &usage}) {
    if (!m->is_object()) continue;
    for (const auto& [f, v] : m->items()) flavors.push_back(f);
  }
  std::sort(flavors.begin(), flavors.end());
  flavors.erase(std::unique(flavors.begin(), flavors.end()), flavors.end());
  if (flavors.empty()) p.Add("Quotas", "<none>");
  p.Print(out);
  if (flavors.empty()) return;
  Table t({"FLAVOR", "GUARANTEED", "BORROW-LIMIT", "LEND-LIMIT", "ALLOCATED", "BORROWED"});
  for (const std::string& f : flavors) {
    const Json& q = Field(quotas, f.c_str());
    const Json& u = Field(usage, f.c_str());
    auto limit = [&](const char* key) {
      return Field(q, key).is_number() ? Gpus(Num(q, key)) : "-";  // right-aligned like the numbers
    };
    t.Row({f, Gpus(Num(q, "guaranteed")), limit("borrow_limit"), limit("lend_limit"),
           Gpus(Num(u, "allocated")), Gpus(Num(u, "borrowed"))});
  }
  Section("Quotas and usage (GPUs; - is no limit)", t, out);
}

}  // namespace gpupool::cli
