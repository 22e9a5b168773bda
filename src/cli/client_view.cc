#include "cli/client_view.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <vector>

#include "cli/table.h"
#include "cli/terminal.h"
#include "cli/view_util.h"

namespace gpupool::cli {

using namespace view;  // NOLINT: this file is the views

namespace {

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

// Flavors with a quota or usage, in name order.
std::vector<std::string> TenantFlavors(const Json& tenant) {
  std::vector<std::string> flavors;
  for (const char* key : {"quotas", "usage"}) {
    const Json& m = Field(tenant, key);
    if (!m.is_object()) continue;
    for (const auto& [f, v] : m.items()) flavors.push_back(f);
  }
  std::sort(flavors.begin(), flavors.end());
  flavors.erase(std::unique(flavors.begin(), flavors.end()), flavors.end());
  return flavors;
}

// Strings (ids, "key=value" labels) joined by ", ".
std::string JoinWords(const Json& words) {
  std::string out;
  for (const Json& w : Items(words)) out += (out.empty() ? "" : ", ") + (w.is_string() ? w.get<std::string>() : w.dump());
  return out;
}

// "7/8": healthy GPUs of all; just the count when the server sends no total.
std::string HealthyCell(const Json& node) {
  const std::string healthy = Str(node, "healthy_gpus"), all = Str(node, "gpus");
  return all.empty() ? healthy : healthy + "/" + all;
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
    t.Row({Str(n, "name"), Str(n, "flavor"), Str(n, "condition"), Str(n, "gpus"), HealthyCell(n),
           Str(n, "free_whole_gpus"), Str(n, "mig_gpus"), Str(n, "shared_gpus"), OrNone(Str(n, "block")),
           OrNone(Str(n, "nvlink_domain"))});
  }
  t.Print(out);
}

void PrintTenants(const Json& items, std::ostream& out) {
  // One row per tenant and flavor with a quota or usage: guarantees of different GPU models are
  // not summed. A tenant with neither gets one row with no flavor.
  Table t({"NAME", "WEIGHT", "FLAVOR", "GUARANTEED", "ALLOCATED", "BORROWED", "PENDING", "ACTIVE"});
  for (const Json& tenant : Items(items)) {
    const Json& quotas = Field(tenant, "quotas");
    const Json& usage = Field(tenant, "usage");
    std::vector<std::string> flavors = TenantFlavors(tenant);
    if (flavors.empty()) flavors.push_back("");
    for (const std::string& f : flavors) {
      const Json& q = Field(quotas, f.c_str());
      const Json& u = Field(usage, f.c_str());
      t.Row({Str(tenant, "name"), Gpus(Num(tenant, "weight")), OrNone(f), Gpus(Num(q, "guaranteed")),
             Gpus(Num(u, "allocated")), Gpus(Num(u, "borrowed")), Str(tenant, "pending_jobs"),
             Str(tenant, "active_jobs")});
    }
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

void PrintReconcile(const Json& report, std::ostream& out) {
  out << "ledger against executor " << Str(report, "executor") << "'s accounting (read "
      << Str(report, "accounting_read_at") << ") from " << Str(report, "from") << " to " << Str(report, "to")
      << ", tolerance " << Str(report, "tolerance_s") << " s\n";
  Table t({"JOB", "TENANT", "STATUS", "GPUS", "CHARGED-S", "BACKEND-JOB", "BACKEND-GPUS", "HELD-S", "RUN-S", "PROBLEMS"});
  for (const Json& r : Items(Field(report, "items"))) {
    const Json& ledger = Field(r, "ledger");
    const Json& runs = Items(Field(r, "backend"));
    const Json none;
    const Json& b = runs.empty() ? none : runs.front();
    std::string problems;
    for (const Json& p : Items(Field(r, "problems"))) {
      if (p.is_string()) problems += (problems.empty() ? "" : "; ") + p.get<std::string>();
    }
    t.Row({Str(r, "job"), OrNone(Str(r, "tenant")), Str(r, "status"),
           ledger.is_object() ? Fixed(Num(ledger, "gpus"), 2) : "-",
           ledger.is_object() ? (Field(ledger, "end").is_null() ? "open" : Fixed(Num(ledger, "charged_s"), 0)) : "-",
           OrNone(Str(b, "id")), b.is_object() ? Str(b, "gpus") : "-", OrNone(Str(b, "held_s")), OrNone(Str(b, "run_s")),
           OrNone(StripControls(problems))});
  }
  t.Print(out);
  const Json& sum = Field(report, "summary");
  out << Str(sum, "match") << " match, " << Str(sum, "mismatch") << " mismatch, " << Str(sum, "missing_in_backend")
      << " missing in the backend, " << Str(sum, "missing_in_ledger") << " missing in the ledger, "
      << Str(sum, "pending") << " pending\n";
  if (!Str(report, "accounting_error").empty()) {
    out << "warning: the last accounting read failed: " << StripControls(Str(report, "accounting_error")) << "\n";
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
  // Why an admitted job has not started yet: an earlier attempt may still run somewhere.
  if (!Str(job, "start_held").empty()) p.Add("Start held", StripControls(Str(job, "start_held")));
  if (!Str(job, "reservation").empty()) p.Add("Reservation", Str(job, "reservation"));
  p.Add("Resources", ResourcesCell(Field(job, "resources")) + " per replica");
  p.Add("Replicas", Str(job, "replicas"));
  if (Field(job, "duration_estimate_s").is_number()) {
    const auto s = Field(job, "duration_estimate_s").get<int64_t>();
    p.Add("Duration estimate", CompactDuration(s, 4) + " (" + std::to_string(s) + " s)");
  }
  if (const Json& svc = Field(job, "service"); svc.is_object()) {
    // What queue policies order by: las by attained service, srsf by what remains.
    const auto gpu_h = [&](const char* k) { return Fixed(Field(svc, k).get<double>() / 3600.0, 2) + " GPU-h"; };
    if (Field(svc, "attained_gpu_s").is_number()) {
      std::string ran;
      if (Field(svc, "ran_s").is_number()) ran = " (ran " + CompactDuration(Field(svc, "ran_s").get<int64_t>(), 3) + ")";
      p.Add("Attained service", gpu_h("attained_gpu_s") + ran);
    }
    if (Field(svc, "remaining_gpu_s").is_number()) p.Add("Remaining (estimate)", gpu_h("remaining_gpu_s"));
  }
  p.Add("Command", ShellJoin(Field(job, "command")));
  if (Field(job, "submitted_at_ms").is_number()) {
    p.Add("Submitted", IsoTime(Field(job, "submitted_at_ms").get<int64_t>()) + " (" + Age(job, now_ms) + " ago)");
  }
  const Json& placement = Items(Field(job, "placement"));
  if (placement.empty()) p.Add("Placement", "<none>");
  const Json& events = Field(job, "events");  // absent from servers that keep no history
  const bool no_events = events.is_array() && events.empty();
  p.Print(out);
  if (!placement.empty()) {
    Table t({"REPLICA", "NODE", "GPUS"});
    for (size_t i = 0; i < placement.size(); ++i) {
      t.Row({std::to_string(i), Str(placement[i], "node"), GrantsCell(Field(placement[i], "gpus"))});
    }
    Section("Placement", t, out);
  }
  if (no_events) out << "Events:  <none>\n";
  if (!events.is_array() || no_events) return;
  // Oldest first, as the server sends them and as kubectl describe prints them.
  Table t({"TIME", "TYPE", "MESSAGE"});
  for (const Json& e : events) t.Row({Str(e, "at"), Str(e, "type"), Str(e, "message")});
  Section("Events", t, out);
}

void DescribeNode(const Json& node, std::ostream& out) {
  Page p;
  p.Add("Name", Str(node, "name"));
  p.Add("Flavor", Str(node, "flavor"));
  const std::string why = Str(node, "condition_reason");  // e.g. the XID that drained it
  p.Add("Condition", Str(node, "condition") + (why.empty() ? "" : " (" + why + ")"));
  p.Add("GPUs", Str(node, "gpus") + " (" + Str(node, "healthy_gpus") + " healthy)");
  p.Add("Free whole GPUs", Str(node, "free_whole_gpus"));
  p.Add("MIG GPUs", Str(node, "mig_gpus"));
  p.Add("Shared GPUs", Str(node, "shared_gpus"));
  p.Add("Block", OrNone(Str(node, "block")));
  p.Add("NVLink domain", OrNone(Str(node, "nvlink_domain")));
  if (Field(node, "labels").is_array()) p.Add("Labels", OrNone(JoinWords(Field(node, "labels"))));
  if (node.is_object() && node.contains("dedicated_to")) {  // null: shared by every tenant
    p.Add("Dedicated to", OrNone(Str(node, "dedicated_to")));
  }
  p.Add("Jobs", OrNone(JoinWords(Field(node, "jobs"))));
  p.Print(out);
  Table t({"GPU", "REASON"});
  bool unhealthy = false;
  for (const Json& d : Items(Field(node, "devices"))) {
    if (Field(d, "healthy") != false) continue;
    t.Row({Str(d, "index"), Str(d, "health_reason").empty() ? "<no reason given>" : Str(d, "health_reason")});
    unhealthy = true;
  }
  if (unhealthy) Section("Unhealthy GPUs", t, out);
}

void DescribeTenant(const Json& tenant, std::ostream& out) {
  Page p;
  p.Add("Name", Str(tenant, "name"));
  p.Add("Weight", Gpus(Num(tenant, "weight")));
  p.Add("GPU co-tenancy", Field(tenant, "allow_gpu_cotenancy") == true ? "allowed" : "not allowed");
  if (!Str(tenant, "queue_policy").empty()) {
    p.Add("Queue policy", Str(tenant, "queue_policy") +
                              (Str(tenant, "queue_policy_source") == "tenant" ? "" : " (the scheduler's)"));
  }
  p.Add("Pending jobs", Str(tenant, "pending_jobs"));
  p.Add("Active jobs", Str(tenant, "active_jobs"));
  std::string limits;
  const Json& l = Field(tenant, "limits");
  if (l.is_object()) {
    for (const auto& [k, v] : l.items()) limits += (limits.empty() ? "" : ", ") + k + "=" + v.dump();
  }
  p.Add("Limits", OrNone(limits));
  const Json& quotas = Field(tenant, "quotas");
  const Json& usage = Field(tenant, "usage");
  const std::vector<std::string> flavors = TenantFlavors(tenant);
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
