#include "cli/client_request.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "cli/selector.h"
#include "core/node_budget.h"

namespace gpupool::cli {
namespace {

// The job's fields whose scalars stay strings even when they read as numbers or booleans.
const std::set<std::string> kJobStringFields = {"tenant", "name", "priority_class", "command[]",
                                                "resources.flavor", "resources.flavors[]", "resources.mig_profile",
                                                "reservation", "node_selector[].key",
                                                "node_selector[].values[]"};

// A plain YAML scalar as JSON: true/false, integers and decimals become booleans and numbers;
// quoted scalars and everything else stay strings.
Json ScalarToJson(const YAML::Node& n, bool as_string) {
  const std::string s = n.Scalar();
  if (as_string || n.Tag() == "!") return s;
  if (s == "true") return true;
  if (s == "false") return false;
  if (s == "~" || s == "null") return nullptr;
  if (!s.empty() && s.size() < 19 && s.find_first_not_of("-0123456789") == std::string::npos &&
      s.find('-', 1) == std::string::npos && s != "-") {
    return std::stoll(s);
  }
  if (!s.empty() && s.find_first_not_of("-0123456789.eE+") == std::string::npos) {
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end && *end == '\0' && std::isfinite(d)) return d;
  }
  return s;
}

struct OverBudget {};

Json YamlToJson(const YAML::Node& n, const std::string& path, const std::set<std::string>& strings,
                NodeBudget& budget, size_t depth = 0) {
  if (!budget.Take(depth)) throw OverBudget{};
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : n) {
        const std::string key = kv.first.as<std::string>();
        out[key] = YamlToJson(kv.second, path.empty() ? key : path + "." + key, strings, budget, depth + 1);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : n) out.push_back(YamlToJson(item, path + "[]", strings, budget, depth + 1));
      return out;
    }
    case YAML::NodeType::Scalar: return ScalarToJson(n, strings.count(path) > 0);
    default: return nullptr;
  }
}

Result<double> Number(const Args& args, const std::string& name) {
  const std::string s = args.Str(name, "");
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || *end != '\0' || !std::isfinite(v)) {
    return InvalidArgument("--" + name + " must be a number, not '" + s + "'");
  }
  return v;
}

// --priority-class, --duration, --reservation, --selector and --topology, where given; the
// server fills in its defaults for the first two.
Status AddOptionalFields(const Args& args, Json& job) {
  if (args.Has("priority-class")) job["priority_class"] = args.Str("priority-class", "");
  if (args.Has("duration")) {
    Result<int64_t> duration = ParseDuration(args.Str("duration", ""));
    if (!duration.ok()) return InvalidArgument("--duration: " + duration.error().message);
    job["duration_estimate_s"] = *duration;
  }
  if (args.Has("reservation")) job["reservation"] = args.Str("reservation", "");
  if (args.Has("selector")) {
    Result<Json> selector = ParseSelectors(args.All("selector"));
    if (!selector.ok()) return InvalidArgument("--selector: " + selector.error().message);
    job["node_selector"] = *selector;
  }
  if (args.Has("topology")) {
    Result<Json> topology = ParseTopology(args.Str("topology", ""));
    if (!topology.ok()) return topology.error();
    job["topology"] = *topology;
  }
  return Ok();
}

}  // namespace

Result<SplitArgs> SplitCommandLine(const std::vector<std::string>& argv,
                                   const std::set<std::string>& booleans) {
  SplitArgs out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    if (s == "--") {
      out.has_separator = true;
      out.command.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
      break;
    }
    if (s.rfind("--", 0) == 0) {
      out.flags.push_back(s);
      // The value of `--name value` is copied untouched, even when it starts with '-'.
      if (s.find('=') == std::string::npos && !booleans.count(s.substr(2)) && i + 1 < argv.size()) {
        out.flags.push_back(argv[++i]);
      }
      continue;
    }
    if (s.size() < 2 || s[0] != '-') {
      out.flags.push_back(s);
      continue;
    }
    const char letter = s[1];
    const std::string name = letter == 'o' ? "output" : letter == 'f' ? "file" : letter == 'h' ? "help" : "";
    if (name.empty() || (letter == 'h' && s.size() > 2)) return InvalidArgument("unknown flag " + s);
    if (letter == 'h') {
      out.flags.push_back("--help");
    } else if (s.size() > 2) {
      out.flags.push_back("--" + name + "=" + s.substr(s[2] == '=' ? 3 : 2));
    } else {
      out.flags.push_back("--" + name);
    }
  }
  return out;
}

Result<int64_t> ParseDuration(const std::string& text) {
  if (text.empty()) return InvalidArgument("empty duration");
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == start || i - start > 9) {
      return InvalidArgument("bad duration '" + text + "' (want seconds, or e.g. 30m, 2h, 1h30m)");
    }
    const int64_t n = std::stoll(text.substr(start, i - start));
    int64_t unit = 1;
    if (i < text.size()) {
      switch (text[i]) {
        case 's': unit = 1; break;
        case 'm': unit = 60; break;
        case 'h': unit = 3600; break;
        case 'd': unit = 86400; break;
        default:
          return InvalidArgument("bad duration '" + text + "': unknown unit '" + text[i] + "' (s, m, h, d)");
      }
      ++i;
    } else if (start > 0) {
      return InvalidArgument("bad duration '" + text + "': a unit is needed after " + text.substr(start));
    }
    total += n * unit;
    if (total > int64_t{1} << 40) return InvalidArgument("duration '" + text + "' is too long");
  }
  return total;
}

Result<Json> JobRequestFromArgs(const Args& args, const std::vector<std::string>& command) {
  for (const char* flag : {"tenant", "name", "flavor"}) {
    if (!args.Has(flag) || args.Str(flag, "").empty()) {
      return InvalidArgument(std::string("--") + flag + " is required (or give the job in -f FILE.yaml)");
    }
  }
  for (const char* flag : {"priority-class", "duration"}) {
    if (args.Has(flag) && args.Str(flag, "").empty()) return InvalidArgument(std::string("--") + flag + " is empty");
  }
  const int forms = args.Has("gpus") + args.Has("mig-profile") + args.Has("gpu-fraction");
  if (forms != 1) return InvalidArgument("give exactly one of --gpus, --mig-profile, --gpu-fraction");
  if (args.Has("gpu-fraction") != args.Has("memory-gb")) {
    return InvalidArgument("--gpu-fraction and --memory-gb go together");
  }
  if (command.empty()) return InvalidArgument("the job's command goes after '--'");
  Result<int64_t> replicas = args.Int("replicas", 1, 1, 1 << 20);
  if (!replicas.ok()) return replicas.error();

  // --flavor h100-80gb,a100-80gb: the job accepts either, the first by preference.
  Json resources;
  const std::string flavor = args.Str("flavor", "");
  if (flavor.find(',') == std::string::npos) {
    resources["flavor"] = flavor;
  } else {
    Json list = Json::array();
    for (size_t at = 0; at <= flavor.size();) {
      const size_t comma = std::min(flavor.find(',', at), flavor.size());
      list.push_back(flavor.substr(at, comma - at));
      at = comma + 1;
    }
    resources["flavors"] = list;
  }
  if (args.Has("gpus")) {
    Result<int64_t> gpus = args.Int("gpus", 0, 1, 1 << 20);
    if (!gpus.ok()) return gpus.error();
    resources["gpus"] = *gpus;
  } else if (args.Has("mig-profile")) {
    resources["mig_profile"] = args.Str("mig-profile", "");
  } else {
    Result<double> fraction = Number(args, "gpu-fraction");
    if (!fraction.ok()) return fraction.error();
    Result<int64_t> memory = args.Int("memory-gb", 0, 1, 1 << 20);
    if (!memory.ok()) return memory.error();
    resources["gpu_fraction"] = *fraction;
    resources["memory_gb"] = *memory;
  }
  Json job = {{"tenant", args.Str("tenant", "")},
              {"name", args.Str("name", "")},
              {"replicas", *replicas},
              {"resources", resources},
              {"command", command}};
  GP_RETURN_IF_ERROR(AddOptionalFields(args, job));
  return job;
}

Result<Json> ObjectFromYaml(const std::string& yaml_text, const std::set<std::string>& string_fields) {
  Json j;
  NodeBudget budget(yaml_text.size());
  try {
    j = YamlToJson(YAML::Load(yaml_text), "", string_fields, budget);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("not valid YAML: ") + e.what());
  } catch (const OverBudget&) {
    return InvalidArgument("the file " + budget.Why());
  }
  if (!j.is_object()) return InvalidArgument("the file must be a mapping of the fields");
  return j;
}

Result<Json> JobRequestFromYaml(const std::string& yaml_text) {
  Result<Json> j = ObjectFromYaml(yaml_text, kJobStringFields);
  if (!j.ok()) return j.error();
  if (auto d = j->find("duration_estimate_s"); d != j->end() && d->is_string()) {
    Result<int64_t> seconds = ParseDuration(d->get<std::string>());
    if (!seconds.ok()) return InvalidArgument("duration_estimate_s: " + seconds.error().message);
    *d = *seconds;
  }
  return j;
}

}  // namespace gpupool::cli
