#include "api/config_json.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdlib>

#include "api/decode.h"
#include "core/node_budget.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

struct OverBudget {};

Json ToJson(const YAML::Node& n, NodeBudget& budget, size_t depth = 0) {
  if (!budget.Take(depth)) throw OverBudget{};
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : n) out[kv.first.as<std::string>()] = ToJson(kv.second, budget, depth + 1);
      return out;
    }
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : n) out.push_back(ToJson(item, budget, depth + 1));
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

}  // namespace

Result<Json> YamlToJson(std::string_view text) {
  if (!ValidUtf8(text)) return InvalidArgument("the configuration is not valid UTF-8");
  Json root;
  NodeBudget budget(text.size());
  try {
    root = ToJson(YAML::Load(std::string(text)), budget);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("not valid YAML: ") + e.what());
  } catch (const OverBudget&) {
    return InvalidArgument("the configuration " + budget.Why());
  }
  if (root.is_null()) root = Json::object();
  return root;
}

// Defensive: should a scalar hold bytes that are not UTF-8 (the text as a whole was checked),
// the decoders see U+FFFD instead of an exception from dump(), and reject it where names must
// be plain.
std::string JsonText(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Status OnlyKeys(const Json& j, std::initializer_list<const char*> keys, const std::string& where) {
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
  return DecodePriceMicros(JsonText(j[key]), where + "." + key);
}


}  // namespace gpupool
