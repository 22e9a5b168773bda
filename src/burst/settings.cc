// The `burst:` section of a configuration (docs/design/burst.md), shared by the daemon's
// --config and the simulator's --burst file.
#include "burst/settings.h"

#include "api/config_json.h"
#include "api/decode.h"

namespace gpupool {

using Json = nlohmann::json;

Status DecodeBurstSettings(const Catalogue& cat, const nlohmann::json& b, BurstSettings* out) {
  GP_RETURN_IF_ERROR(OnlyKeys(b, {"provider", "create_command", "delete_command", "command_timeout_s", "offers", "tenants"}, "burst"));
  out->present = true;
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
      GP_RETURN_IF_ERROR(OnlyKeys(o, {"gpus_per_node", "per_gpu_hour", "provisioning_delay_s", "max_nodes", "cpu_milli",
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
      GP_RETURN_IF_ERROR(OnlyKeys(t, {"flavors", "max_gpus", "budget", "period_s", "max_wait_s", "idle_timeout_s"}, where));
      BurstPolicy p;
      if (!t.contains("flavors") || !t["flavors"].is_array() || t["flavors"].empty()) {
        return InvalidArgument(where + ": 'flavors' must be a non-empty list");
      }
      for (const Json& f : t["flavors"]) {
        Result<FlavorId> id = f.is_string() ? cat.Find(f.get<std::string>()) : Result<FlavorId>(InvalidArgument(""));
        if (!id.ok()) return InvalidArgument(where + ": unknown flavor " + JsonText(f));
        if (!out->offers.count(*id)) return InvalidArgument(where + ": no offer in burst.offers for " + JsonText(f));
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

Json BurstSettingsToJson(const Catalogue& cat, const BurstSettings& s) {
  Json out = {{"provider", s.provider}};
  if (s.provider == "command") {
    out["create_command"] = s.command.create_command;
    out["delete_command"] = s.command.delete_command;
    out["command_timeout_s"] = s.command.timeout.seconds();
  }
  Json offers = Json::object();
  for (const auto& [f, o] : s.offers) {
    Json j = {{"gpus_per_node", o.gpus_per_node},
              {"per_gpu_hour", MicrosToDecimal(o.micros_per_gpu_hour)},
              {"provisioning_delay_s", o.provisioning_delay.seconds()},
              {"max_nodes", o.max_nodes},
              {"cpu_milli", o.cpu_milli},
              {"memory_mib", o.memory_mib}};
    if (!o.labels.empty()) j["labels"] = o.labels;
    offers[cat.model(f).name] = std::move(j);
  }
  Json tenants = Json::object();
  for (const auto& [name, p] : s.tenants) {
    Json flavors = Json::array();
    for (FlavorId f : p.flavors) flavors.push_back(cat.model(f).name);
    tenants[name] = {{"flavors", flavors},
                     {"max_gpus", p.max_gpus},
                     {"budget", MicrosToDecimal(p.budget_micros)},
                     {"period_s", p.period.seconds()},
                     {"max_wait_s", p.max_wait.seconds()},
                     {"idle_timeout_s", p.idle_timeout.seconds()}};
  }
  out["offers"] = std::move(offers);
  out["tenants"] = std::move(tenants);
  return out;
}

}  // namespace gpupool
