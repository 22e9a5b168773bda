// A small CSV reader for the trace files: a header row, comma-separated fields, no quoting (the
// traces have none; a quote character is rejected rather than misread).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpupool {

class CsvTable {
 public:
  // Reads the whole file. `required` columns must all be in the header.
  static Result<CsvTable> Read(const std::string& path, const std::vector<std::string>& required);
  // Same, from text already in memory (tests).
  static Result<CsvTable> Parse(const std::string& text, const std::vector<std::string>& required,
                                const std::string& origin);

  size_t rows() const { return rows_.size(); }
  bool Has(const std::string& column) const { return columns_.count(column) > 0; }
  const std::string& Field(size_t row, const std::string& column) const;
  Result<int64_t> Int(size_t row, const std::string& column) const;
  Result<double> Real(size_t row, const std::string& column) const;
  // "path:line" of a data row, for error messages.
  std::string Where(size_t row) const;

 private:
  std::string origin_;
  std::map<std::string, size_t> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace gpupool
