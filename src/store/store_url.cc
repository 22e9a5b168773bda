#include "store/store_url.h"

#include <cctype>
#include <filesystem>

#include "store/pg_journal.h"

namespace gpupool {
namespace {

bool ValidSchema(const std::string& s) {
  if (s.empty() || s.size() > 63 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (unsigned char c : s) {
    if (!(std::islower(c) || std::isdigit(c) || c == '_')) return false;
  }
  return true;
}

// postgresql://user:secret@host/db -> postgresql://user:***@host/db
std::string WithoutPassword(const std::string& uri) {
  const size_t scheme = uri.find("://");
  const size_t at = uri.find('@', scheme + 3);
  const size_t slash = uri.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return uri;
  const size_t colon = uri.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return uri;
  return uri.substr(0, colon + 1) + "***" + uri.substr(at);
}

}  // namespace

Result<StoreUrl> ParseStoreUrl(const std::string& url) {
  StoreUrl out;
  if (url.empty() || url == "sqlite:" || url.rfind("sqlite:", 0) == 0) {
    out.sqlite_dir = url.size() > 7 ? url.substr(7) : "";
    out.shown = url.empty() ? "sqlite:" : url;
    return out;
  }
  if (url.rfind("postgresql://", 0) != 0 && url.rfind("postgres://", 0) != 0) {
    return InvalidArgument("the store '" + WithoutPassword(url) +
                           "' is neither sqlite:[DIR] nor a postgresql:// URI");
  }
  out.kind = StoreUrl::Kind::kPostgres;
  std::string uri = url;
  // Take gpupool_schema=NAME out of the query.
  const size_t q = uri.find('?');
  if (q != std::string::npos) {
    std::string query = uri.substr(q + 1), kept;
    size_t from = 0;
    while (from <= query.size()) {
      size_t amp = query.find('&', from);
      if (amp == std::string::npos) amp = query.size();
      const std::string param = query.substr(from, amp - from);
      if (param.rfind("gpupool_schema=", 0) == 0) {
        out.schema = param.substr(15);
      } else if (!param.empty()) {
        kept += (kept.empty() ? "" : "&") + param;
      }
      from = amp + 1;
    }
    uri = uri.substr(0, q) + (kept.empty() ? "" : "?" + kept);
  }
  if (!ValidSchema(out.schema)) {
    return InvalidArgument("gpupool_schema '" + out.schema + "' must be [a-z_][a-z0-9_]*, at most 63 characters");
  }
  out.conninfo = uri;
  out.shown = WithoutPassword(uri) + " (schema " + out.schema + ")";
  return out;
}

Result<std::unique_ptr<Journal>> OpenStore(const StoreUrl& url, const std::string& data_dir, bool follower) {
  if (url.kind == StoreUrl::Kind::kPostgres) {
    return OpenPostgresJournal(url.conninfo, {.schema = url.schema, .take_over = !follower});
  }
  const std::string dir = url.sqlite_dir.empty() ? data_dir : url.sqlite_dir;
  return OpenSqliteJournal((std::filesystem::path(dir) / "journal.db").string());
}

}  // namespace gpupool
