#include "cli/client_kinds.h"

#include "api/url.h"
#include "cli/client_view.h"

namespace gpupool::cli {

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"jobs", "job", "/v1/jobs", "id", true, true, PrintJobs, DescribeJob, "cancelled"},
      {"nodes", "node", "/v1/nodes", "name", true, false,
       [](const Json& items, int64_t, std::ostream& out) { PrintNodes(items, out); },
       [](const Json& node, int64_t, std::ostream& out) { DescribeNode(node, out); }, "deleted"},
      {"tenants", "tenant", "/v1/tenants", "name", true, false,
       [](const Json& items, int64_t, std::ostream& out) { PrintTenants(items, out); },
       [](const Json& tenant, int64_t, std::ostream& out) { DescribeTenant(tenant, out); }, "deleted"},
      {"reservations", "reservation", "/v1/reservations", "id", true, false,
       [](const Json& items, int64_t, std::ostream& out) { PrintReservations(items, out); }, nullptr,
       "cancelled"},
      {"tokens", "token", "/v1/tokens", "id", false, false,
       [](const Json& items, int64_t, std::ostream& out) { PrintTokens(items, out); }, nullptr, "revoked"},
      {"priority-classes", "priority-class", "/v1/priority-classes", "name", false, false,
       [](const Json& items, int64_t, std::ostream& out) { PrintPriorityClasses(items, out); }, nullptr,
       nullptr},
      {"audit", "audit", "/v1/audit", "id", false, true,
       [](const Json& items, int64_t, std::ostream& out) { PrintAudit(items, out); }, nullptr, nullptr},
  };
  return kinds;
}

const Kind* FindKind(const std::string& word) {
  for (const Kind& k : Kinds()) {
    if (word == k.plural || word == k.singular) return &k;
  }
  return nullptr;
}

const Kind* KindOfObject(const std::vector<std::string>& positional, bool (*has)(const Kind&)) {
  const Kind* kind = positional.size() == 2 ? FindKind(positional[0]) : nullptr;
  return kind != nullptr && has(*kind) ? kind : nullptr;
}

std::string ObjectPath(const Kind& kind, const std::string& name) { return std::string(kind.path) + "/" + UrlEncode(name); }

std::string KindNames(bool (*has)(const Kind&)) {
  std::string out;
  for (const Kind& k : Kinds()) {
    if (has(k)) out += (out.empty() ? "" : ", ") + std::string(k.plural);
  }
  return out;
}

}  // namespace gpupool::cli
