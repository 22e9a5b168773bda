#include "api/page.h"

#include <charconv>

#include "core/base64url.h"

namespace gpupool {
namespace {

// A whole decimal number without sign, leading zeros or anything after it.
std::optional<uint64_t> Whole(std::string_view s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return n;
}

}  // namespace

std::string EncodeCursor(std::string_view list, uint64_t position) {
  return Base64Url(std::string(list) + ":" + std::to_string(position));
}

Result<PageQuery> DecodePageQuery(const std::map<std::string, std::string>& query, std::string_view list,
                                  const std::vector<std::string_view>& filters) {
  for (const auto& [k, v] : query) {
    bool known = k == "limit" || k == "cursor";
    for (std::string_view f : filters) known = known || k == f;
    if (!known) return InvalidArgument("unknown query parameter '" + k.substr(0, 64) + "'");
  }
  PageQuery out;
  if (auto it = query.find("limit"); it != query.end()) {
    const std::optional<uint64_t> n = Whole(it->second, 4);
    if (!n || *n < 1 || *n > static_cast<uint64_t>(kMaxPageLimit)) {
      return InvalidArgument("'limit' must be a whole number from 1 to " + std::to_string(kMaxPageLimit) +
                             ", not '" + it->second.substr(0, 32) + "'");
    }
    out.limit = static_cast<int>(*n);
  }
  if (auto it = query.find("cursor"); it != query.end() && !it->second.empty()) {
    const std::string& c = it->second;
    const std::string refusal = "'cursor' is not a cursor of GET /v1/" + std::string(list) +
                                ": pass the next_cursor of one of its pages, unchanged";
    const std::optional<std::string> text = c.size() <= 64 ? FromBase64Url(c) : std::nullopt;
    const std::string prefix = std::string(list) + ":";
    if (!text || text->rfind(prefix, 0) != 0) return InvalidArgument(refusal);
    const std::optional<uint64_t> pos = Whole(std::string_view(*text).substr(prefix.size()), 19);
    // Only the canonical spelling: the cursor this daemon would have handed out.
    if (!pos || *pos < 1 || *pos > static_cast<uint64_t>(INT64_MAX) || EncodeCursor(list, *pos) != c) {
      return InvalidArgument(refusal);
    }
    out.before = *pos;
  }
  return out;
}

}  // namespace gpupool
