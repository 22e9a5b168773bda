#include "sim/csv.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpupool {
namespace {

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

Result<CsvTable> CsvTable::Read(const std::string& path, const std::vector<std::string>& required) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return Parse(text.str(), required, path);
}

Result<CsvTable> CsvTable::Parse(const std::string& text, const std::vector<std::string>& required,
                                 const std::string& origin) {
  CsvTable t;
  t.origin_ = origin;
  std::istringstream in(text);
  std::string line;
  size_t lineno = 0, width = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line.find('"') != std::string::npos) {
      return InvalidArgument(origin + ":" + std::to_string(lineno) + ": quoted fields are not supported");
    }
    std::vector<std::string> fields = Split(line);
    if (t.columns_.empty()) {
      for (size_t i = 0; i < fields.size(); ++i) t.columns_[fields[i]] = i;
      width = fields.size();
      continue;
    }
    if (fields.size() != width) {
      return InvalidArgument(origin + ":" + std::to_string(lineno) + ": " +
                             std::to_string(fields.size()) + " fields, header has " +
                             std::to_string(width));
    }
    t.rows_.push_back(std::move(fields));
  }
  if (t.columns_.empty()) return InvalidArgument(origin + ": empty file");
  for (const std::string& c : required) {
    if (!t.columns_.count(c)) return InvalidArgument(origin + ": missing column '" + c + "'");
  }
  return t;
}

const std::string& CsvTable::Field(size_t row, const std::string& column) const {
  return rows_[row][columns_.at(column)];
}

std::string CsvTable::Where(size_t row) const {
  return origin_ + ": data row " + std::to_string(row + 1);
}

Result<int64_t> CsvTable::Int(size_t row, const std::string& column) const {
  const std::string& f = Field(row, column);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(f.c_str(), &end, 10);
  if (f.empty() || errno != 0 || *end != '\0') {
    return InvalidArgument(Where(row) + ": " + column + " is not an integer: '" + f + "'");
  }
  return static_cast<int64_t>(v);
}

Result<double> CsvTable::Real(size_t row, const std::string& column) const {
  const std::string& f = Field(row, column);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(f.c_str(), &end);
  if (f.empty() || errno != 0 || *end != '\0') {
    return InvalidArgument(Where(row) + ": " + column + " is not a number: '" + f + "'");
  }
  return v;
}

}  // namespace gpupool
