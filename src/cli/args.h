// A small command-line parser: `--name value` flags, `--name` booleans and positionals.
// Unknown flags and malformed numbers are errors, never silently ignored. A flag given twice
// keeps its last value for Str and Int; All gives every value, in order (repeatable flags).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpupool::cli {

class Args {
 public:
  // `known` lists the accepted flags; `booleans` those that take no value. A command that knows
  // "help" (as a boolean) also gets it from `-h`.
  static Result<Args> Parse(const std::vector<std::string>& argv, const std::set<std::string>& known,
                            const std::set<std::string>& booleans = {});

  bool Has(const std::string& name) const { return flags_.count(name) > 0; }
  std::string Str(const std::string& name, const std::string& fallback) const;
  std::vector<std::string> All(const std::string& name) const;
  Result<int64_t> Int(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::vector<std::string>> flags_;
  std::vector<std::string> positional_;
};

}  // namespace gpupool::cli
