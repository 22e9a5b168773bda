#include "daemon/config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/decode.h"
#include "model/builder.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

// YAML to JSON, so the API's decoders check config entries exactly as they check requests.
// Plain scalars become booleans or numbers when they read as one; quoted scalars stay strings.
Json ToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : n) out[kv.first.as<std::string>()] = ToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : n) out.push_back(ToJson(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      if (s == "true") return true;
      if (s == "false") return false;
      int64_t i = 0;
      const auto [stop, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
      if (!s.empty() && ec == std::errc() && stop == s.data() + s.size()) return i;
      if (!s.empty() && s.find_first_not_of("-0123456789.eE+") == std::string::npos) {
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (end && *end == '\0') return d;
      }
      return s;
    }
    default: return nullptr;
  }
}

// Defensive: should a scalar hold bytes that are not UTF-8 (the text as a whole was checked),
// the decoders see U+FFFD instead of an exception from dump(), and reject it where names must
// be plain.
std::string Text(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Status Only(const Json& j, std::initializer_list<const char*> keys, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + " must be a mapping");
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (const char* key : keys) known = known || k == key;
    if (!known) return InvalidArgument("unknown key '" + where + (where.empty() ? "" : ".") + k + "'");
  }
  return Ok();
}

Result<std::string> StrOf(const Json& j, const char* key, const std::string& where, bool required) {
  if (!j.contains(key)) {
    if (required) return InvalidArgument(where + ": missing '" + key + "'");
    return std::string();
  }
  if (j[key].is_string()) return j[key].get<std::string>();
  if (j[key].is_number()) return j[key].dump();
  return InvalidArgument(where + ": '" + key + "' must be a string");
}

Result<int64_t> IntOf(const Json& j, const char* key, int64_t def, int64_t lo, int64_t hi,
                      const std::string& where) {
  if (!j.contains(key)) return def;
  if (!j[key].is_number_integer()) return InvalidArgument(where + ": '" + key + "' must be an integer");
  const int64_t v = j[key].get<int64_t>();
  if (v < lo || v > hi) {
    return InvalidArgument(where + ": '" + key + "' must be in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  }
  return v;
}

Result<int64_t> PriceOf(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return InvalidArgument(where + ": missing '" + key + "'");
  return DecodePriceMicros(Text(j[key]), where + "." + key);
}

Status Burst(const Catalogue& cat, const Json& b, BurstSettings* out) {
  GP_RETURN_IF_ERROR(Only(b, {"provider", "create_command", "delete_command", "command_timeout_s", "offers", "tenants"}, "burst"));
  Result<std::string> provider = StrOf(b, "provider", "burst", false);
  if (!provider.ok()) return provider.error();
  if (!provider->empty()) out->provider = *provider;
  if (out->provider != "simulated" && out->provider != "command") {
    return InvalidArgument("burst: 'provider' must be simulated or command");
  }
  if (out->provider == "command") {
    for (const char* key : {"create_command", "delete_command"}) {
      Result<std::string> cmd = StrOf(b, key, "burst", true);
      if (!cmd.ok()) return cmd.error();
      (std::string(key) == "create_command" ? out->command.create_command : out->command.delete_command) = *cmd;
    }
    Result<int64_t> timeout = IntOf(b, "command_timeout_s", 600, 1, 86400, "burst");
    if (!timeout.ok()) return timeout.error();
    out->command.timeout = Duration::Seconds(*timeout);
  }
  if (b.contains("offers")) {
    if (!b["offers"].is_object()) return InvalidArgument("burst.offers must be a mapping");
    for (const auto& [name, o] : b["offers"].items()) {
      const std::string where = "burst.offers." + name;
      Result<FlavorId> f = cat.Find(name);
      if (!f.ok()) return InvalidArgument(where + ": unknown flavor");
      GP_RETURN_IF_ERROR(Only(o, {"gpus_per_node", "per_gpu_hour", "provisioning_delay_s", "max_nodes", "cpu_milli",
                                  "memory_mib", "labels"}, where));
      OnDemandOffer offer;
      offer.flavor = *f;
      Result<int64_t> gpus = IntOf(o, "gpus_per_node", 8, 1, 16, where);
      if (!gpus.ok()) return gpus.error();
      offer.gpus_per_node = static_cast<int>(*gpus);
      Result<int64_t> price = PriceOf(o, "per_gpu_hour", where);
      if (!price.ok()) return price.error();
      offer.micros_per_gpu_hour = *price;
      Result<int64_t> delay = IntOf(o, "provisioning_delay_s", 120, 0, 86400, where);
      if (!delay.ok()) return delay.error();
      offer.provisioning_delay = Duration::Seconds(*delay);
      Result<int64_t> max_nodes = IntOf(o, "max_nodes", 4, 1, 10000, where);
      if (!max_nodes.ok()) return max_nodes.error();
      offer.max_nodes = static_cast<int>(*max_nodes);
      for (const char* key : {"cpu_milli", "memory_mib"}) {
        Result<int64_t> v = IntOf(o, key, 0, 0, int64_t{1} << 40, where);
        if (!v.ok()) return v.error();
        (std::string(key) == "cpu_milli" ? offer.cpu_milli : offer.memory_mib) = *v;
      }
      if (o.contains("labels")) {
        if (!o["labels"].is_array()) return InvalidArgument(where + ": 'labels' must be a list of key=value");
        for (const Json& l : o["labels"]) {
          if (!l.is_string() || l.get<std::string>().find('=') == std::string::npos) {
            return InvalidArgument(where + ": 'labels' must be a list of key=value");
          }
          offer.labels.push_back(l.get<std::string>());
        }
      }
      if (Status v = ValidateOffer(offer, cat); !v.ok()) return InvalidArgument(where + ": " + v.error().message);
      out->offers[*f] = offer;
    }
  }
  if (b.contains("tenants")) {
    if (!b["tenants"].is_object()) return InvalidArgument("burst.tenants must be a mapping");
    for (const auto& [name, t] : b["tenants"].items()) {
      const std::string where = "burst.tenants." + name;
      GP_RETURN_IF_ERROR(Only(t, {"flavors", "max_gpus", "budget", "period_s", "max_wait_s", "idle_timeout_s"}, where));
      BurstPolicy p;
      if (!t.contains("flavors") || !t["flavors"].is_array() || t["flavors"].empty()) {
        return InvalidArgument(where + ": 'flavors' must be a non-empty list");
      }
      for (const Json& f : t["flavors"]) {
        Result<FlavorId> id = f.is_string() ? cat.Find(f.get<std::string>()) : Result<FlavorId>(InvalidArgument(""));
        if (!id.ok()) return InvalidArgument(where + ": unknown flavor " + Text(f));
        if (!out->offers.count(*id)) return InvalidArgument(where + ": no offer in burst.offers for " + Text(f));
        p.flavors.push_back(*id);
      }
      Result<int64_t> max_gpus = IntOf(t, "max_gpus", 8, 1, 100000, where);
      if (!max_gpus.ok()) return max_gpus.error();
      p.max_gpus = static_cast<int>(*max_gpus);
      Result<int64_t> budget = PriceOf(t, "budget", where);
      if (!budget.ok()) return budget.error();
      p.budget_micros = *budget;
      Result<int64_t> period = IntOf(t, "period_s", 86400, 60, 366LL * 86400, where);
      if (!period.ok()) return period.error();
      p.period = Duration::Seconds(*period);
      Result<int64_t> wait = IntOf(t, "max_wait_s", 600, 0, 30LL * 86400, where);
      if (!wait.ok()) return wait.error();
      p.max_wait = Duration::Seconds(*wait);
      Result<int64_t> idle = IntOf(t, "idle_timeout_s", 600, 1, 30LL * 86400, where);
      if (!idle.ok()) return idle.error();
      p.idle_timeout = Duration::Seconds(*idle);
      if (Status v = ValidateBurstPolicy(p, cat); !v.ok()) return InvalidArgument(where + ": " + v.error().message);
      out->tenants[name] = p;
    }
  }
  return Ok();
}

Status Nodes(State& s, const Json& nodes) {
  if (!nodes.is_array()) return InvalidArgument("'nodes' must be a list");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Json& n = nodes[i];
    const std::string where = "nodes[" + std::to_string(i) + "]";
    GP_RETURN_IF_ERROR(Only(n, {"name", "count", "flavor", "gpus", "mig_gpus", "mig_layout",
                                "shared_gpus", "max_clients", "block", "nvlink_domain", "labels",
                                "cpu_milli", "memory_mib", "dedicated_to"}, where));
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
    for (const char* key : {"mig_layout", "block", "nvlink_domain", "dedicated_to"}) {
      Result<std::string> v = StrOf(n, key, where, false);
      if (!v.ok()) return v.error();
      const std::string k = key;
      (k == "mig_layout" ? t.mig_layout : k == "block" ? t.block
                                          : k == "nvlink_domain" ? t.nvlink_domain
                                                                 : t.dedicated_to) = *v;
    }
    if (n.contains("labels")) {
      if (!n["labels"].is_array()) return InvalidArgument(where + ": 'labels' must be a list of key=value");
      for (const Json& l : n["labels"]) {
        if (!l.is_string()) return InvalidArgument(where + ": 'labels' must be a list of key=value");
        t.labels.push_back(l.get<std::string>());
      }
    }
    const int copies = *count == 0 ? 1 : static_cast<int>(*count);
    for (int c = 0; c < copies; ++c) {
      const std::string node_name = *count == 0 ? *name : *name + "-" + std::to_string(c);
      Result<NodeId> id = AddNode(s, node_name, t);
      if (!id.ok()) return InvalidArgument(where + " (" + node_name + "): " + id.error().message);
    }
  }
  return Ok();
}

}  // namespace

Result<DaemonConfig> ParseDaemonConfig(const std::string& yaml_text) {
  if (!ValidUtf8(yaml_text)) return InvalidArgument("the configuration is not valid UTF-8");
  Json root;
  try {
    root = ToJson(YAML::Load(yaml_text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("not valid YAML: ") + e.what());
  }
  if (root.is_null()) root = Json::object();
  GP_RETURN_IF_ERROR(Only(root, {"scheduler", "listen", "data_dir", "priority_classes", "tenants", "nodes", "prices", "burst"}, ""));
  DaemonConfig out;
  if (root.contains("scheduler")) {
    const Json& s = root["scheduler"];
    GP_RETURN_IF_ERROR(Only(s, {"placement", "tick_ms", "preemption", "backfill", "mig_reconfigure"}, "scheduler"));
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
  for (const char* key : {"listen", "data_dir"}) {
    Result<std::string> v = StrOf(root, key, "config", false);
    if (!v.ok()) return v.error();
    (std::string(key) == "listen" ? out.listen : out.data_dir) = *v;
  }
  State& s = out.cluster;
  if (root.contains("priority_classes")) {
    if (!root["priority_classes"].is_array()) return InvalidArgument("'priority_classes' must be a list");
    for (const Json& pc : root["priority_classes"]) {
      Result<PriorityClass> c = DecodePriorityClassRequest(Text(pc));
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
      Result<Tenant> t = DecodeTenantRequest(s, Text(tj), nullptr);
      if (!t.ok()) return InvalidArgument("tenants: " + t.error().message);
      Result<TenantId> id = s.AddTenant(*t);
      if (!id.ok()) return InvalidArgument("tenants: " + id.error().message);
    }
  }
  if (root.contains("nodes")) GP_RETURN_IF_ERROR(Nodes(s, root["nodes"]));
  if (root.contains("burst")) GP_RETURN_IF_ERROR(Burst(s.catalogue(), root["burst"], &out.burst));
  if (root.contains("prices")) {
    Result<PriceList> p = DecodePriceList(s, Text(root["prices"]));
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
