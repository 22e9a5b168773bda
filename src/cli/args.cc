#include "cli/args.h"

#include <cerrno>
#include <cstdlib>

namespace gpupool::cli {

Result<Args> Args::Parse(const std::vector<std::string>& argv, const std::set<std::string>& known,
                         const std::set<std::string>& booleans) {
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    if (s == "-h" && known.count("help")) {  // the one short flag: help, where a command has it
      a.flags_["help"].push_back("");
      continue;
    }
    if (s.rfind("--", 0) != 0) {
      a.positional_.push_back(s);
      continue;
    }
    std::string name = s.substr(2), value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (!booleans.count(name)) {
      if (i + 1 >= argv.size()) return InvalidArgument("--" + name + " needs a value");
      value = argv[++i];
    }
    if (!known.count(name)) return InvalidArgument("unknown flag --" + name);
    a.flags_[name].push_back(value);
  }
  return a;
}

std::string Args::Str(const std::string& name, const std::string& fallback) const {
  auto it = flags_.find(name);
  return it == flags_.end() ? fallback : it->second.back();
}

std::vector<std::string> Args::All(const std::string& name) const {
  auto it = flags_.find(name);
  return it == flags_.end() ? std::vector<std::string>() : it->second;
}

Result<int64_t> Args::Int(const std::string& name, int64_t fallback, int64_t lo,
                          int64_t hi) const {
  auto it = flags_.find(name);
  if (it == flags_.end()) return fallback;
  const std::string& text = it->second.back();
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') {
    return InvalidArgument("--" + name + " must be an integer, not '" + text + "'");
  }
  if (v < lo || v > hi) {
    return InvalidArgument("--" + name + " must be in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  }
  return static_cast<int64_t>(v);
}

}  // namespace gpupool::cli
