// Cursor pagination of the long lists, GET /v1/jobs and GET /v1/audit (docs/design/daemon.md,
// "Lists and pages"). Lists are newest first. A cursor is opaque to clients: base64url of
// "<list>:<position>", where the position is that of the last item a page returned (a job id,
// an audit entry's number). The next page holds the matching items strictly older than it, so
// items added meanwhile (always newer) never shift a page: across the pages of a fixed set,
// each item appears exactly once. A cursor is only a position: it carries no filter and no
// caller, and whoever presents it still sees only what their token may see.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpupool {

// The largest page a client may ask for. Without `limit` the whole list is returned (the
// behaviour before pagination, kept for existing scripts).
inline constexpr int kMaxPageLimit = 1000;

struct PageQuery {
  std::optional<int> limit;        // 1..kMaxPageLimit; absent: no limit
  std::optional<uint64_t> before;  // from the cursor: only items older than this position
};

// Checks `limit` and `cursor` in `query`, and that every other key is one of `filters`.
// `list` names the list the cursor must come from ("jobs", "audit"). An empty cursor is the
// same as none (the first page). Changes nothing; every refusal is invalid_argument.
Result<PageQuery> DecodePageQuery(const std::map<std::string, std::string>& query, std::string_view list,
                                  const std::vector<std::string_view>& filters = {});

// The cursor a page hands out: the position of its last item. REQUIRES: position >= 1.
std::string EncodeCursor(std::string_view list, uint64_t position);

}  // namespace gpupool
