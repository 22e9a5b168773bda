#include "cli/table.h"

#include <algorithm>
#include <cstdio>

namespace gpupool::cli {
namespace {

bool Numeric(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789.-%") == std::string::npos;
}

}  // namespace

void Table::Print(std::ostream& out) const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& r : rows_) {
    for (size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string text;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string v = c < cells.size() ? cells[c] : "";
      const std::string pad(width[c] - v.size(), ' ');
      text += (c ? "  " : "") + (!header && Numeric(v) ? pad + v : v + pad);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  line(header_, true);
  for (const auto& r : rows_) line(r, false);
}

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace gpupool::cli
