// Configuration files (the daemon's --config, the simulator's --burst) are YAML, read as JSON so
// that the API's decoders check their entries exactly as they check requests. These are the
// helpers both readers use.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpupool {

// YAML text to JSON: plain scalars become booleans or numbers when they read as one, quoted
// scalars stay strings; an empty document is {}. Errors: not UTF-8, not YAML.
Result<nlohmann::json> YamlToJson(std::string_view text);

// The JSON as text; bytes that are not UTF-8 become U+FFFD instead of throwing.
std::string JsonText(const nlohmann::json& j);

// `j` is a mapping whose keys are all in `keys`; `where` names it in errors ("burst.offers").
Status OnlyKeys(const nlohmann::json& j, std::initializer_list<const char*> keys, const std::string& where);
// A string (a number is taken as its text); "" when absent and not required.
Result<std::string> StrOf(const nlohmann::json& j, const char* key, const std::string& where, bool required);
// An integer in [lo, hi]; `def` when absent.
Result<int64_t> IntOf(const nlohmann::json& j, const char* key, int64_t def, int64_t lo, int64_t hi,
                      const std::string& where);
// A price per GPU-hour in micros (DecodePriceMicros); required.
Result<int64_t> PriceOf(const nlohmann::json& j, const char* key, const std::string& where);

}  // namespace gpupool
