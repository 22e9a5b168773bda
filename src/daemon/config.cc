#include "daemon/config.h"

#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/config_json.h"
#include "api/decode.h"
#include "model/builder.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

Status Nodes(State& s, const Json& nodes, const ConfigLimits& limits) {
  if (!nodes.is_array()) return InvalidArgument("'nodes' must be a list");
  int64_t total_nodes = 0, total_gpus = 0, total_labels = 0, total_label_bytes = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Json& n = nodes[i];
    const std::string where = "nodes[" + std::to_string(i) + "]";
    GP_RETURN_IF_ERROR(OnlyKeys(n, {"name", "count", "flavor", "gpus", "mig_gpus", "mig_layout",
                                "shared_gpus", "max_clients", "block", "nvlink_domain", "labels",
                                "cpu_milli", "memory_mib", "dedicated_to", "gpu_sharing"}, where));
    NodeTemplate t;
    Result<std::string> name = StrOf(n, "name", where, true);
    if (!name.ok()) return name.error();
    Result<std::string> flavor = StrOf(n, "flavor", where, true);
    if (!flavor.ok()) return flavor.error();
    t.flavor = *flavor;
    Result<int64_t> count = IntOf(n, "count", 0, 0, 100000, where);
    Result<int64_t> gpus = IntOf(n, "gpus", 8, 1, 64, where);
    Result<int64_t> mig = IntOf(n, "mig_gpus", 0, 0, 64, where);
    Result<int64_t> shared = IntOf(n, "shared_gpus", 0, 0, 64, where);
    Result<int64_t> clients = IntOf(n, "max_clients", 0, 0, 255, where);
    Result<int64_t> cpu = IntOf(n, "cpu_milli", 0, 0, int64_t{1} << 40, where);
    Result<int64_t> mem = IntOf(n, "memory_mib", 0, 0, int64_t{1} << 40, where);
    for (const auto* r : {&count, &gpus, &mig, &shared, &clients, &cpu, &mem}) {
      if (!r->ok()) return r->error();
    }
    t.gpus = static_cast<int>(*gpus);
    t.mig_gpus = static_cast<int>(*mig);
    t.shared_gpus = static_cast<int>(*shared);
    t.max_clients = static_cast<uint8_t>(*clients);
    t.cpu_milli = *cpu;
    t.memory_mib = *mem;
    Result<std::string> sharing = StrOf(n, "gpu_sharing", where, false);
    if (!sharing.ok()) return sharing.error();
    if (!sharing->empty() && *sharing != "static" && *sharing != "dynamic") {
      return InvalidArgument(where + ": gpu_sharing must be static or dynamic, not '" + *sharing + "'");
    }
    t.dynamic = *sharing == "dynamic";
    for (const char* key : {"mig_layout", "block", "nvlink_domain", "dedicated_to"}) {
      Result<std::string> v = StrOf(n, key, where, false);
      if (!v.ok()) return v.error();
      const std::string k = key;
      (k == "mig_layout" ? t.mig_layout : k == "block" ? t.block
                                          : k == "nvlink_domain" ? t.nvlink_domain
                                                                 : t.dedicated_to) = *v;
    }
    int64_t label_bytes = 0;
    if (n.contains("labels")) {
      const Json& labels = n["labels"];
      if (!labels.is_array() || labels.size() > kMaxLabelsPerNode) {
        return InvalidArgument(where + ": 'labels' must be a list of at most " + std::to_string(kMaxLabelsPerNode) +
                               " key=value");
      }
      for (const Json& l : labels) {
        if (!l.is_string() || l.get_ref<const std::string&>().size() > kMaxLabelBytes) {
          return InvalidArgument(where + ": 'labels' must be key=value strings of at most " +
                                 std::to_string(kMaxLabelBytes) + " bytes");
        }
        t.labels.push_back(l.get<std::string>());
        label_bytes += static_cast<int64_t>(t.labels.back().size());
      }
    }
    const int copies = *count == 0 ? 1 : static_cast<int>(*count);
    total_nodes += copies;
    total_gpus += int64_t{copies} * t.gpus;
    if (total_nodes > limits.nodes || total_gpus > limits.gpus) {
      return InvalidArgument(where + ": the cluster would have " + std::to_string(total_nodes) + " nodes and " +
                             std::to_string(total_gpus) + " GPUs; at most " + std::to_string(limits.nodes) +
                             " nodes and " + std::to_string(limits.gpus) + " GPUs in all");
    }
    total_labels += int64_t{copies} * static_cast<int64_t>(t.labels.size());
    total_label_bytes += int64_t{copies} * label_bytes;
    if (total_labels > limits.labels || total_label_bytes > limits.label_bytes) {
      return InvalidArgument(where + ": the nodes would carry " + std::to_string(total_labels) + " labels of " +
                             std::to_string(total_label_bytes) + " bytes; at most " + std::to_string(limits.labels) +
                             " labels and " + std::to_string(limits.label_bytes) + " bytes in all");
    }
    for (int c = 0; c < copies; ++c) {
      const std::string node_name = *count == 0 ? *name : *name + "-" + std::to_string(c);
      Result<NodeId> id = AddNode(s, node_name, t);
      if (!id.ok()) return InvalidArgument(where + " (" + node_name + "): " + id.error().message);
    }
  }
  return Ok();
}

// tls: and metrics:, how the daemon serves.
Status ParseServing(const Json& root, DaemonConfig& out) {
  if (root.contains("tls")) {
    const Json& t = root["tls"];
    if (!t.is_object()) return InvalidArgument("'tls' must be a map of cert_file, key_file and client_ca_file");
    GP_RETURN_IF_ERROR(OnlyKeys(t, {"cert_file", "key_file", "client_ca_file"}, "tls"));
    for (auto [key, field] : {std::pair{"cert_file", &out.tls_cert}, std::pair{"key_file", &out.tls_key},
                              std::pair{"client_ca_file", &out.tls_client_ca}}) {
      Result<std::string> v = StrOf(t, key, "tls", false);
      if (!v.ok()) return v.error();
      *field = *v;
    }
  }
  if (root.contains("auth")) {
    Result<std::vector<OidcIssuer>> oidc = ParseAuthConfig(root["auth"]);
    if (!oidc.ok()) return oidc.error();
    out.oidc = std::move(oidc).value();
  }
  if (root.contains("metrics")) {
    const Json& m = root["metrics"];
    if (!m.is_object()) return InvalidArgument("'metrics' must be a map");
    GP_RETURN_IF_ERROR(OnlyKeys(m, {"require_token"}, "metrics"));
    if (m.contains("require_token")) {
      if (!m["require_token"].is_boolean()) return InvalidArgument("metrics: 'require_token' must be true or false");
      out.metrics_require_token = m["require_token"].get<bool>();
    }
  }
  return Ok();
}

// scheduler: queue_policy: NAME, or {policy, starvation_after_s, max_preemptions_per_cycle,
// las_thresholds_gpu_s: [..]} (policy/priority/queue_policy.h).
Status QueuePolicy(const Json& q, QueuePolicyConfig& out) {
  const std::string where = "scheduler: queue_policy";
  if (q.is_string()) {
    Result<QueueOrder> o = ParseQueueOrder(q.get<std::string>());
    if (!o.ok()) return InvalidArgument(where + ": " + o.error().message);
    out.order = *o;
    return Ok();
  }
  if (!q.is_object()) return InvalidArgument(where + " must be a policy name or a map");
  GP_RETURN_IF_ERROR(
      OnlyKeys(q, {"policy", "starvation_after_s", "max_preemptions_per_cycle", "las_thresholds_gpu_s"}, where));
  Result<std::string> name = StrOf(q, "policy", where, false);
  if (!name.ok()) return name.error();
  if (!name->empty()) {
    Result<QueueOrder> o = ParseQueueOrder(*name);
    if (!o.ok()) return InvalidArgument(where + ": " + o.error().message);
    out.order = *o;
  }
  Result<int64_t> starve = IntOf(q, "starvation_after_s", out.starvation_after.millis() / 1000, 60,
                                 int64_t{366} * 86400, where);
  if (!starve.ok()) return starve.error();
  out.starvation_after = Duration::Seconds(*starve);
  Result<int64_t> budget = IntOf(q, "max_preemptions_per_cycle", out.max_preemptions_per_cycle, 0, 10'000, where);
  if (!budget.ok()) return budget.error();
  out.max_preemptions_per_cycle = static_cast<int>(*budget);
  if (q.contains("las_thresholds_gpu_s")) {
    const Json& t = q["las_thresholds_gpu_s"];
    if (!t.is_array() || t.empty() || t.size() > 16) {
      return InvalidArgument(where + ": las_thresholds_gpu_s must be a list of 1 to 16 GPU-second thresholds");
    }
    out.las_thresholds_gpu_s.clear();
    for (const Json& v : t) {
      if (!v.is_number_integer()) return InvalidArgument(where + ": las_thresholds_gpu_s must hold whole numbers");
      out.las_thresholds_gpu_s.push_back(v.get<int64_t>());
    }
  }
  Status v = Validate(out);
  if (!v.ok()) return InvalidArgument(where + ": " + v.error().message);
  return Ok();
}

// executors: [{name, kind: slurm, slurmrestd, user, token_file | jwt_key_file, partition, ...}].
Status Executors(const Catalogue& cat, const Json& list, DaemonConfig& out) {
  if (!list.is_array()) return InvalidArgument("'executors' must be a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& e = list[i];
    std::string where = "executors[" + std::to_string(i) + "]";
    if (!e.is_object()) return InvalidArgument(where + " must be a map");
    GP_RETURN_IF_ERROR(OnlyKeys(e, {"name", "kind", "slurmrestd", "api", "user", "token_file", "jwt_key_file",
                                    "partition", "accounts", "scontrol", "slurm_conf", "working_directory", "output",
                                    "poll_ms", "gpu_flavors", "sacct", "accounting_poll_s", "accounting_window_days",
                                    "command_timeout_s"},
                                where));
    ExecutorSettings x;
    executor::SlurmConfig& c = x.slurm;
    Result<std::string> kind = StrOf(e, "kind", where, true);
    if (!kind.ok()) return kind.error();
    if (*kind != "slurm") return InvalidArgument(where + ": unknown kind '" + *kind + "' (known: slurm)");
    for (auto [key, field, required] :
         {std::tuple{"name", &c.name, true}, std::tuple{"slurmrestd", &c.url, true}, std::tuple{"api", &c.api, false},
          std::tuple{"user", &c.user, false}, std::tuple{"token_file", &c.token_file, false},
          std::tuple{"jwt_key_file", &c.jwt_key_file, false}, std::tuple{"partition", &c.partition, true},
          std::tuple{"scontrol", &c.scontrol, false}, std::tuple{"slurm_conf", &c.slurm_conf, false},
          std::tuple{"working_directory", &c.working_directory, false}, std::tuple{"output", &c.output, false},
          std::tuple{"sacct", &c.sacct, false}}) {
      Result<std::string> v = StrOf(e, key, where, required);
      if (!v.ok()) return v.error();
      if (!v->empty()) *field = *v;
    }
    where = "executor " + c.name;
    if (c.name == "agent") return InvalidArgument(where + ": 'agent' names gpupool's own node agents");
    for (const ExecutorSettings& other : out.executors) {
      if (other.slurm.name == c.name) return InvalidArgument(where + ": two executors of that name");
    }
    if (c.token_file.empty() == c.jwt_key_file.empty()) {
      return InvalidArgument(where + ": give exactly one of 'token_file' and 'jwt_key_file'");
    }
    if (e.contains("accounts")) {
      if (!e["accounts"].is_boolean()) return InvalidArgument(where + ": 'accounts' must be true or false");
      c.accounts = e["accounts"].get<bool>();
    }
    Result<int64_t> poll = IntOf(e, "poll_ms", 1000, 100, 60'000, where);
    if (!poll.ok()) return poll.error();
    c.poll = Duration::Millis(*poll);
    Result<int64_t> command_timeout = IntOf(e, "command_timeout_s", 60, 1, 3'600, where);
    if (!command_timeout.ok()) return command_timeout.error();
    c.command_timeout = Duration::Seconds(*command_timeout);
    Result<int64_t> acct_poll = IntOf(e, "accounting_poll_s", 60, 1, 86'400, where);
    if (!acct_poll.ok()) return acct_poll.error();
    c.accounting_poll = Duration::Seconds(*acct_poll);
    Result<int64_t> window = IntOf(e, "accounting_window_days", 35, 1, 3'660, where);
    if (!window.ok()) return window.error();
    c.accounting_window = Duration::Hours(24 * *window);
    if (c.sacct.empty() && (e.contains("accounting_poll_s") || e.contains("accounting_window_days"))) {
      return InvalidArgument(where + ": accounting_poll_s and accounting_window_days need 'sacct' (the command that "
                                     "reads Slurm's accounting, e.g. sacct)");
    }
    if (e.contains("gpu_flavors")) {
      const Json& m = e["gpu_flavors"];
      if (!m.is_object()) return InvalidArgument(where + ": 'gpu_flavors' must map GPU types to flavors");
      for (const auto& [type, flavor] : m.items()) {
        if (!flavor.is_string()) return InvalidArgument(where + ": gpu_flavors: '" + type + "' must name a flavor");
        Result<FlavorId> f = cat.Find(flavor.get<std::string>());
        if (!f.ok()) return InvalidArgument(where + ": gpu_flavors: unknown flavor '" + flavor.get<std::string>() + "'");
        x.gpu_flavors[type] = *f;
      }
    }
    out.executors.push_back(std::move(x));
  }
  return Ok();
}

}  // namespace

Result<DaemonConfig> ParseDaemonConfig(const std::string& yaml_text, const ConfigLimits& limits) {
  Result<Json> parsed = YamlToJson(yaml_text);
  if (!parsed.ok()) return parsed.error();
  const Json& root = *parsed;
  GP_RETURN_IF_ERROR(OnlyKeys(root, {"scheduler", "agents", "listen", "data_dir", "store", "tls", "metrics", "auth", "priority_classes", "tenants",
                                      "nodes", "prices", "burst", "executors"}, ""));
  DaemonConfig out;
  if (root.contains("agents")) {
    const Json& a = root["agents"];
    GP_RETURN_IF_ERROR(OnlyKeys(a, {"start_deadline_s"}, "agents"));
    Result<int64_t> deadline = IntOf(a, "start_deadline_s", 120, 1, 86400, "agents");
    if (!deadline.ok()) return deadline.error();
    out.start_deadline = Duration::Seconds(*deadline);
  }
  if (root.contains("scheduler")) {
    const Json& s = root["scheduler"];
    GP_RETURN_IF_ERROR(OnlyKeys(s, {"placement", "tick_ms", "preemption", "backfill", "mig_reconfigure", "queue_policy",
                                    "pairing_window", "flavor_choice"},
                                "scheduler"));
    Result<int64_t> window = IntOf(s, "pairing_window", 1000, 1, 1000000, "scheduler");
    if (!window.ok()) return window.error();
    out.scheduler.pairing_window = static_cast<size_t>(*window);
    if (s.contains("queue_policy")) GP_RETURN_IF_ERROR(QueuePolicy(s["queue_policy"], out.scheduler.queue));
    Result<std::string> choice = StrOf(s, "flavor_choice", "scheduler", false);
    if (!choice.ok()) return choice.error();
    if (*choice == "best") {
      out.scheduler.flavor_choice = FlavorChoice::kBest;
    } else if (!choice->empty() && *choice != "order") {
      return InvalidArgument("scheduler: flavor_choice must be order or best, not '" + *choice + "'");
    }
    Result<std::string> placement = StrOf(s, "placement", "scheduler", false);
    if (!placement.ok()) return placement.error();
    if (!placement->empty()) out.scheduler.placement = *placement;
    Result<int64_t> tick = IntOf(s, "tick_ms", 200, 10, 60000, "scheduler");
    if (!tick.ok()) return tick.error();
    out.tick_ms = static_cast<int>(*tick);
    for (const char* key : {"preemption", "backfill", "mig_reconfigure"}) {
      if (!s.contains(key)) continue;
      if (!s[key].is_boolean()) return InvalidArgument(std::string("scheduler: '") + key + "' must be true or false");
      const bool v = s[key].get<bool>();
      const std::string k = key;
      (k == "preemption" ? out.scheduler.preemption.enabled
                         : k == "backfill" ? out.scheduler.backfill.enabled : out.scheduler.mig_reconfigure) = v;
    }
    GP_RETURN_IF_ERROR(Validate(out.scheduler));
  }
  for (auto [key, field] : {std::pair{"listen", &out.listen}, std::pair{"data_dir", &out.data_dir},
                            std::pair{"store", &out.store}}) {
    Result<std::string> v = StrOf(root, key, "config", false);
    if (!v.ok()) return v.error();
    *field = *v;
  }
  GP_RETURN_IF_ERROR(ParseServing(root, out));
  State& s = out.cluster;
  if (root.contains("priority_classes")) {
    if (!root["priority_classes"].is_array()) return InvalidArgument("'priority_classes' must be a list");
    for (const Json& pc : root["priority_classes"]) {
      Result<PriorityClass> c = DecodePriorityClassRequest(JsonText(pc));
      if (!c.ok()) return InvalidArgument("priority_classes: " + c.error().message);
      Result<PriorityClassId> id = s.AddPriorityClass(*c);
      if (!id.ok()) return InvalidArgument("priority_classes: " + id.error().message);
    }
  } else {
    AddDefaultPriorityClasses(s);
  }
  if (root.contains("tenants")) {
    if (!root["tenants"].is_array()) return InvalidArgument("'tenants' must be a list");
    for (const Json& tj : root["tenants"]) {
      Result<Tenant> t = DecodeTenantRequest(s, JsonText(tj), nullptr);
      if (!t.ok()) return InvalidArgument("tenants: " + t.error().message);
      Result<TenantId> id = s.AddTenant(*t);
      if (!id.ok()) return InvalidArgument("tenants: " + id.error().message);
    }
  }
  if (root.contains("nodes")) GP_RETURN_IF_ERROR(Nodes(s, root["nodes"], limits));
  if (root.contains("burst")) GP_RETURN_IF_ERROR(DecodeBurstSettings(s.catalogue(), root["burst"], &out.burst));
  if (root.contains("executors")) GP_RETURN_IF_ERROR(Executors(s.catalogue(), root["executors"], out));
  if (root.contains("prices")) {
    Result<PriceList> p = DecodePriceList(s, JsonText(root["prices"]));
    if (!p.ok()) return InvalidArgument("prices: " + p.error().message);
    out.prices = std::move(p).value();
  }
  return out;
}

Result<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read config file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  Result<DaemonConfig> c = ParseDaemonConfig(text.str());
  if (!c.ok()) return InvalidArgument(path + ": " + c.error().message);
  return c;
}

}  // namespace gpupool
