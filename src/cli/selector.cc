#include "cli/selector.h"

#include <cctype>

namespace gpupool::cli {
namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// 1..63 of [A-Za-z0-9-_.], beginning and ending with a letter or digit (a label value or name).
bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 63 || !Alnum(s.front()) || !Alnum(s.back())) return false;
  for (char c : s) {
    if (!Alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// A DNS subdomain: dot-separated lower-case labels of letters, digits and '-'.
bool ValidPrefix(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  for (;;) {
    const size_t dot = s.find('.', start);
    const std::string label = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) {
        return false;
      }
    }
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

Status CheckKey(const std::string& key, const std::string& where) {
  const size_t slash = key.find('/');
  const bool ok = slash == std::string::npos ? ValidName(key)
                                             : ValidPrefix(key.substr(0, slash)) && ValidName(key.substr(slash + 1));
  if (ok) return Status();
  return InvalidArgument(where + ": bad label key '" + key +
                         "' (want [PREFIX/]NAME: letters, digits, '-', '_', '.', up to 63, "
                         "beginning and ending with a letter or digit)");
}

Status CheckValue(const std::string& value, const std::string& where) {
  if (value.empty() || ValidName(value)) return Status();
  return InvalidArgument(where + ": bad label value '" + value +
                         "' (letters, digits, '-', '_', '.', up to 63, beginning and ending with a "
                         "letter or digit)");
}

// "(a, b)" -> ["a", "b"].
Result<Json> ParseSet(const std::string& text, const std::string& where) {
  const std::string t = Trim(text);
  if (t.size() < 2 || t.front() != '(' || t.back() != ')') {
    return InvalidArgument(where + ": expected a set in parentheses, such as (a, b)");
  }
  Json values = Json::array();
  const std::string inner = t.substr(1, t.size() - 2);
  if (Trim(inner).empty()) return InvalidArgument(where + ": the set is empty");
  size_t start = 0;
  for (;;) {
    const size_t comma = inner.find(',', start);
    const std::string v = Trim(inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (v.empty()) return InvalidArgument(where + ": an empty value in the set");
    GP_RETURN_IF_ERROR(CheckValue(v, where));
    values.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return values;
}

Json Requirement(const std::string& key, const char* op, Json values) {
  Json r = {{"key", key}, {"operator", op}};
  if (!values.is_null()) r["values"] = std::move(values);
  return r;
}

// One requirement, already split from its neighbours.
Result<Json> ParseRequirement(const std::string& text) {
  const std::string t = Trim(text);
  const std::string where = "selector '" + t + "'";
  if (t.empty()) return InvalidArgument("an empty requirement in the selector (two commas, or one at an end)");
  if (t[0] == '!') {
    const std::string key = Trim(t.substr(1));
    GP_RETURN_IF_ERROR(CheckKey(key, where));
    return Requirement(key, "DoesNotExist", nullptr);
  }
  const size_t end = t.find_first_of(" \t=!(");
  const std::string key = t.substr(0, end);
  GP_RETURN_IF_ERROR(CheckKey(key, where));
  if (end == std::string::npos) return Requirement(key, "Exists", nullptr);
  std::string rest = Trim(t.substr(end));
  for (const char* op : {"!=", "==", "="}) {
    const std::string o = op;
    if (rest.rfind(o, 0) != 0) continue;
    const std::string value = Trim(rest.substr(o.size()));
    GP_RETURN_IF_ERROR(CheckValue(value, where));
    return Requirement(key, o == "!=" ? "NotIn" : "In", Json::array({value}));
  }
  for (const char* op : {"notin", "in"}) {
    const std::string o = op;
    if (rest.rfind(o, 0) != 0 || (rest.size() > o.size() && Alnum(rest[o.size()]))) continue;
    Result<Json> values = ParseSet(rest.substr(o.size()), where);
    if (!values.ok()) return values.error();
    return Requirement(key, o == "in" ? "In" : "NotIn", std::move(*values));
  }
  return InvalidArgument(where + ": expected =, ==, !=, in (...) or notin (...) after '" + key + "'");
}

}  // namespace

Result<Json> ParseSelector(const std::string& text) {
  Json out = Json::array();
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == '(' && ++depth > 1) return InvalidArgument("selector '" + text + "': nested '('");
    if (c == ')' && --depth < 0) return InvalidArgument("selector '" + text + "': ')' without '('");
    if (c != ',' || depth > 0) continue;
    Result<Json> r = ParseRequirement(text.substr(start, i - start));
    if (!r.ok()) return r.error();
    out.push_back(std::move(*r));
    start = i + 1;
  }
  if (depth != 0) return InvalidArgument("selector '" + text + "': missing ')'");
  return out;
}

Result<Json> ParseSelectors(const std::vector<std::string>& texts) {
  Json out = Json::array();
  for (const std::string& t : texts) {
    Result<Json> one = ParseSelector(t);
    if (!one.ok()) return one.error();
    for (Json& r : *one) out.push_back(std::move(r));
  }
  return out;
}

Result<Json> ParseTopology(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string level = text.substr(0, colon);
  const std::string mode = colon == std::string::npos ? "required" : text.substr(colon + 1);
  if (level != "node" && level != "nvlink-domain" && level != "block") {
    return InvalidArgument("--topology: the level must be node, nvlink-domain or block, not '" + level + "'");
  }
  if (mode != "required" && mode != "preferred") {
    return InvalidArgument("--topology " + text + ": after ':' comes 'preferred' (or 'required', the default)");
  }
  return Json({{"level", level}, {"required", mode == "required"}});
}

}  // namespace gpupool::cli
