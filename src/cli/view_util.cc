#include "cli/view_util.h"

#include <algorithm>
#include <ctime>
#include <sstream>

namespace gpupool::cli::view {

const Json& Field(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string Str(const Json& j, const char* key) {
  const Json& v = Field(j, key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return "";
}

double Num(const Json& j, const char* key) {
  const Json& v = Field(j, key);
  return v.is_number() ? v.get<double>() : 0;
}

const Json& Items(const Json& list) {
  static const Json kEmpty = Json::array();
  return list.is_array() ? list : kEmpty;
}

std::string Gpus(double v) {
  std::string s = Fixed(v, 3);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string OrNone(const std::string& s) { return s.empty() ? "<none>" : s; }

std::string IsoTime(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void Page::Print(std::ostream& out) const {
  size_t width = 0;
  for (const auto& [k, v] : lines_) width = std::max(width, k.size() + 1);
  for (const auto& [k, v] : lines_) {
    std::string line = k + ":" + std::string(width - k.size() - 1, ' ') + "  " + v;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

void Section(const std::string& heading, const Table& t, std::ostream& out) {
  std::ostringstream text;
  t.Print(text);
  out << heading << ":\n";
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
}

}  // namespace gpupool::cli::view
