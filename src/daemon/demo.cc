#include "daemon/demo.h"

#include <array>
#include <map>
#include <nlohmann/json.hpp>

namespace gpupool {

Result<std::string> IssueDemoTokens(ControlPlane& core, Time now) {
  nlohmann::json out = nlohmann::json::object();
  for (const Tenant& t : core.state().tenants()) {
    Result<std::string> secret = core.IssueToken({t.name + "-admin", Role::kTenantAdmin, t.id, ""}, now);
    if (!secret.ok()) return secret.error();
    out[t.name] = *secret;
  }
  return out.dump(2) + "\n";
}

DemoJob RandomDemoJob(std::mt19937_64& rng, int64_t serial) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  nlohmann::json j;
  std::string tenant;
  const int who = uni(0, 9);
  if (who < 3) {
    tenant = "research";
    j["name"] = "train-" + std::to_string(serial);
    j["priority_class"] = uni(0, 3) == 0 ? "batch" : "training";
    j["replicas"] = uni(1, 2);
    j["resources"] = {{"flavor", "h100-80gb"}, {"gpus", std::array{4, 8}[uni(0, 1)]}};
    j["topology"] = {{"level", "block"}, {"required", false}};
  } else if (who < 7) {
    tenant = "product";
    j["name"] = "serve-" + std::to_string(serial);
    j["priority_class"] = uni(0, 2) == 0 ? "inference" : "training";
    j["replicas"] = 1;
    if (uni(0, 1)) {
      j["resources"] = {{"flavor", "h100-80gb"},
                        {"mig_profile", std::array{"3g.40gb", "2g.20gb", "1g.10gb"}[uni(0, 2)]}};
    } else {
      j["resources"] = {{"flavor", "h100-80gb"}, {"gpus", uni(1, 2)}};
    }
  } else {
    tenant = "interns";
    j["name"] = "notebook-" + std::to_string(serial);
    j["priority_class"] = "batch";
    j["replicas"] = 1;
    if (uni(0, 1)) {
      j["resources"] = {{"flavor", "a100-80gb"}, {"gpu_fraction", uni(0, 1) ? 0.25 : 0.5}, {"memory_gb", 16}};
    } else {
      j["resources"] = {{"flavor", "h100-80gb"}, {"mig_profile", "1g.10gb"}};
    }
  }
  j["tenant"] = tenant;
  j["duration_estimate_s"] = uni(60, 600);
  j["command"] = {"python", "run.py", "--step", std::to_string(serial)};
  return {tenant, j.dump()};
}

PriceList DemoPrices(const State& cluster) {
  // Roughly public cloud list prices per GPU-hour in late 2026; on demand costs about twice.
  const std::map<std::string, std::pair<int64_t, int64_t>> known = {
      {"h100-80gb", {2'990'000, 6'980'000}}, {"h200-141gb", {3'790'000, 8'450'000}},
      {"a100-80gb", {1'790'000, 4'100'000}}, {"a100-40gb", {1'290'000, 3'060'000}}};
  PriceList p;
  for (const Node& n : cluster.nodes()) {
    const std::string& name = cluster.catalogue().model(n.flavor).name;
    auto it = known.find(name);
    const auto [list, od] = it != known.end() ? it->second : std::pair<int64_t, int64_t>{1'000'000, 2'500'000};
    p.micros_per_gpu_hour[n.flavor] = list;
    p.on_demand_micros_per_gpu_hour[n.flavor] = od;
  }
  return p;
}

BurstSettings DemoBurst(const State& cluster) {
  BurstSettings b;
  const FlavorId h100 = *cluster.catalogue().Find("h100-80gb");
  OnDemandOffer o;
  o.flavor = h100;
  o.gpus_per_node = 8;
  o.micros_per_gpu_hour = 6'980'000;
  o.provisioning_delay = Duration::Seconds(30);
  o.max_nodes = 2;
  b.offers[h100] = o;
  BurstPolicy p;
  p.flavors = {h100};
  p.max_gpus = 16;
  p.budget_micros = 150'000'000;
  p.period = Duration::Hours(24);
  p.max_wait = Duration::Minutes(2);
  p.idle_timeout = Duration::Minutes(2);
  b.tenants["research"] = p;
  return b;
}

}  // namespace gpupool
