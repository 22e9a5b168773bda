// Small helpers the client views share: lenient field access (a missing or mistyped field reads
// as empty, never throws), GPU amounts, times, and the two layouts of `describe` (aligned
// "Key:  value" lines and indented tables under a heading).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cli/client.h"
#include "cli/table.h"

namespace gpupool::cli::view {

const Json& Field(const Json& j, const char* key);
// A string field as is, a number or boolean as its JSON text, anything else as "".
std::string Str(const Json& j, const char* key);
double Num(const Json& j, const char* key);
// An array as is, anything else as an empty array.
const Json& Items(const Json& list);
// GPU amounts are exact to 1/7000 GPU; three decimals, trailing zeros dropped: 16, 0.25, 0.143.
std::string Gpus(double v);
std::string OrNone(const std::string& s);
std::string IsoTime(int64_t ms);  // UTC, whole seconds

// Aligned "Key:  value" lines.
class Page {
 public:
  void Add(std::string key, std::string value) { lines_.emplace_back(std::move(key), std::move(value)); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::pair<std::string, std::string>> lines_;
};

// A table under a heading, indented by two spaces.
void Section(const std::string& heading, const Table& t, std::ostream& out);

}  // namespace gpupool::cli::view
