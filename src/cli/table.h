// Plain-text tables for the terminal: columns sized to their content, numbers right-aligned.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gpupool::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void Row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string Fixed(double v, int decimals);

}  // namespace gpupool::cli
