// The `burst:` section of a configuration (DESIGN.md §6, docs/design/burst.md): which provider,
// what it offers, and each tenant's policy. The daemon reads it on every start (the on-demand
// nodes themselves are in its journal); the simulator reads the same section from --burst.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "burst/command_provider.h"
#include "core/result.h"
#include "model/catalogue.h"
#include "policy/burst/burst.h"

namespace gpupool {

struct BurstSettings {
  std::string provider = "simulated";  // simulated | command
  CommandProviderConfig command;       // provider: command
  std::map<FlavorId, OnDemandOffer> offers;
  std::map<std::string, BurstPolicy> tenants;  // by tenant name, resolved by the reader
  bool present = false;  // decoded from a section: a provider to run, with tenants or not
  bool enabled() const { return !tenants.empty(); }
};

// Decodes the section (already JSON, api/config_json.h) into `out`. Every key is checked;
// errors name the key ("burst.tenants.research: 'max_gpus' must be in [1, 100000]").
Status DecodeBurstSettings(const Catalogue& catalogue, const nlohmann::json& section, BurstSettings* out);

// The section DecodeBurstSettings reads back to the same settings: provider (and, for the
// command provider, its commands and timeout), offers and tenants, prices as decimal strings.
nlohmann::json BurstSettingsToJson(const Catalogue& catalogue, const BurstSettings& settings);

}  // namespace gpupool
