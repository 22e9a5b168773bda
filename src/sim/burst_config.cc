// The simulator's --burst file: the daemon's `burst:` section, read by the same decoder
// (burst/settings.h), with the replay's catalogue.
#include "sim/burst_config.h"

#include <fstream>
#include <sstream>

#include "api/config_json.h"
#include "burst/settings.h"

namespace gpupool {

Result<ReplayBurst> ParseReplayBurst(const std::string& yaml_text, const Catalogue& catalogue) {
  Result<nlohmann::json> root = YamlToJson(yaml_text);
  if (!root.ok()) return root.error();
  // A daemon configuration file is fine: its other sections are not the simulator's business.
  GP_RETURN_IF_ERROR(OnlyKeys(*root,
                              {"scheduler", "listen", "data_dir", "priority_classes", "tenants",
                               "nodes", "prices", "burst"},
                              ""));
  if (!root->contains("burst")) return InvalidArgument("no 'burst:' section");
  BurstSettings settings;
  GP_RETURN_IF_ERROR(DecodeBurstSettings(catalogue, (*root)["burst"], &settings));
  return ReplayBurst{std::move(settings.offers), std::move(settings.tenants)};
}

Result<ReplayBurst> LoadReplayBurst(const std::string& path, const Catalogue& catalogue) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read burst file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  Result<ReplayBurst> b = ParseReplayBurst(text.str(), catalogue);
  if (!b.ok()) return InvalidArgument(path + ": " + b.error().message);
  return b;
}

}  // namespace gpupool
