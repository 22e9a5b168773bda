// `gpupool get KIND [NAME]` and `gpupool describe KIND NAME`: reading objects (client_kinds.h).
#include <iostream>

#include "api/page.h"
#include "api/url.h"
#include "cli/client_kinds.h"
#include "cli/commands.h"
#include "cli/invocation.h"

namespace gpupool::cli {

const char* const kGetUsage =
    "usage: gpupool get KIND [NAME] [-o table|json|yaml]\n"
    "  KIND: jobs, nodes, tenants, reservations, tokens, priority-classes or audit (or the\n"
    "  singular: job, node, ...); NAME: one of them (a job's, reservation's or token's ID, a node's,\n"
    "  tenant's or priority class's name): gpupool get job 42\n"
    "       gpupool get jobs [--tenant T] [--state S] [--limit N] [--cursor C]\n"
    "       gpupool get audit [--limit N] [--cursor C]\n"
    "  Jobs and audit entries are listed newest first. Without --limit, every page is fetched\n"
    "  (1000 a request) and printed as one list. --limit N (1..1000) prints one page; when there\n"
    "  are older ones, the cursor for the next page is printed on stderr (table) or is the reply's\n"
    "  next_cursor (json, yaml): pass it back with --cursor C, with the same --tenant and --state.\n";
const char* const kDescribeUsage =
    "usage: gpupool describe job ID | node NAME | tenant NAME [-o table|json|yaml]\n"
    "  a job's state, pending reason, placement and events; a node's GPUs, labels and unhealthy\n"
    "  GPUs; a tenant's quotas and usage per GPU model\n";

namespace {

bool Any(const Kind&) { return true; }
bool Paged(const Kind& k) { return k.paged; }
bool Describable(const Kind& k) { return k.describe != nullptr; }

// -1, or the usage error of a bad --limit or --state.
int CheckListFlags(const Invocation& inv, const Kind& kind, bool named) {
  const Args& args = inv.args();
  if (kind.plural != std::string("jobs") && (args.Has("tenant") || args.Has("state"))) {
    return inv.Usage("--tenant and --state filter jobs only");
  }
  if (!kind.paged && (args.Has("limit") || args.Has("cursor"))) {
    return inv.Usage("--limit and --cursor page through " + KindNames(Paged) + " only");
  }
  if (named && (args.Has("tenant") || args.Has("state") || args.Has("limit") || args.Has("cursor"))) {
    return inv.Usage("a NAME goes without --tenant, --state, --limit and --cursor");
  }
  const std::string limit = args.Str("limit", "");
  if (args.Has("limit") && (limit.empty() || limit.size() > 4 || limit[0] == '0' ||
                            limit.find_first_not_of("0123456789") != std::string::npos ||
                            std::stoi(limit) > kMaxPageLimit)) {
    return inv.Usage("--limit must be a whole number from 1 to " + std::to_string(kMaxPageLimit));
  }
  const std::string state = args.Str("state", "");
  if (!state.empty() && state != "pending" && state != "admitted" && state != "running" &&
      state != "succeeded" && state != "failed" && state != "cancelled") {
    return inv.Usage("--state must be pending, admitted, running, succeeded, failed or cancelled");
  }
  return -1;
}

// `get KIND NAME` of a kind the API lists but does not serve one by one: the list's item whose
// key is NAME.
Result<Json> PickFromList(ApiClient& api, const Kind& kind, const std::string& name) {
  Result<Json> list = api.Get(kind.path);
  if (!list.ok()) return list.error();
  for (const Json& item : list->value("items", Json::array())) {
    if (item.is_object() && item.value(kind.key, "") == name) return item;
  }
  return NotFound(std::string("no ") + kind.singular + " '" + name + "'");
}

}  // namespace

int Get(const std::vector<std::string>& argv) {
  Invocation inv("get", kGetUsage);
  if (int rc = inv.Parse(argv, {"tenant", "state", "limit", "cursor"}); rc >= 0) return rc;
  const auto& pos = inv.args().positional();
  const Kind* kind = pos.empty() ? nullptr : FindKind(pos[0]);
  if (kind == nullptr || pos.size() > 2) return inv.Usage("what to get: " + KindNames(Any) + " [NAME]");
  const bool named = pos.size() == 2;
  if (int rc = CheckListFlags(inv, *kind, named); rc >= 0) return rc;
  const int64_t now = NowMillis();
  const auto one = [&](const Json& object) { kind->print(Json::array({object}), now, std::cout); };
  if (named && kind->get_one) return inv.Call("GET", ObjectPath(*kind, pos[1]), nullptr, one);
  if (int rc = inv.Connect(); rc >= 0) return rc;
  if (named) {
    if (kind->paged) return inv.Usage(std::string("get ") + kind->plural + " takes no NAME");
    return inv.Show(PickFromList(inv.api(), *kind, pos[1]), one);
  }
  std::string query;
  for (const char* key : {"tenant", "state"}) {
    const std::string v = inv.args().Str(key, "");
    if (!v.empty()) query += (query.empty() ? "?" : "&") + std::string(key) + "=" + UrlEncode(v);
  }
  Result<Json> reply = kind->paged ? GetPages(inv.api(), kind->path, query, inv.args().Str("limit", ""),
                                              inv.args().Str("cursor", ""))
                                   : inv.api().Get(kind->path + query);
  return inv.Show(reply, [&](const Json& r) {
    if (r.is_object() && r.contains("next_cursor") && r["next_cursor"].is_string()) {
      std::cerr << "older " << kind->plural << " remain: add --cursor " << r["next_cursor"].get<std::string>() << "\n";
    }
    kind->print(r.is_object() && r.contains("items") ? r["items"] : Json::array(), now, std::cout);
  });
}

int Describe(const std::vector<std::string>& argv) {
  Invocation inv("describe", kDescribeUsage);
  if (int rc = inv.Parse(argv, {}); rc >= 0) return rc;
  const Kind* kind = KindOfObject(inv.args().positional(), Describable);
  if (kind == nullptr) return inv.Usage("describe what: " + KindNames(Describable) + ", and its ID or NAME");
  const int64_t now = NowMillis();
  return inv.Call("GET", ObjectPath(*kind, inv.args().positional()[1]), nullptr,
                  [&](const Json& object) { kind->describe(object, now, std::cout); });
}

}  // namespace gpupool::cli
