// `gpupool service-account list|create|delete|token` and `gpupool token rotate`: a tenant's
// non-human callers and their secrets (docs/design/auth.md, "Service accounts and rotation").
#include <iostream>

#include "api/url.h"
#include "cli/client_request.h"
#include "cli/commands.h"
#include "cli/invocation.h"
#include "cli/table.h"
#include "cli/view_util.h"

namespace gpupool::cli {

const char* const kServiceAccountUsage =
    "usage: gpupool service-account list --tenant T\n"
    "       gpupool service-account create NAME --tenant T --role member|viewer|tenant-admin\n"
    "       gpupool service-account delete NAME --tenant T   (revokes every token of it)\n"
    "       gpupool service-account token NAME --tenant T [--expires-in-days N (90)]\n"
    "  a tenant's admins manage its accounts (tenant-admin accounts: cluster admins); a token's\n"
    "  secret is printed once\n";
const char* const kTokenUsage =
    "usage: gpupool token rotate ID [--grace DURATION (0)] [--expires-in-days N (90)]\n"
    "  a new secret for the same caller, printed once; the old one stops now, or after the grace\n"
    "  (at most 7d: time to roll the new one out). The token itself may rotate itself.\n";

void ShowSecret(const Json& r) {
  std::cout << "token " << r.value("id", "?") << " (" << r.value("name", "") << ", " << r.value("role", "")
            << ", expires " << r.value("expires", "never") << "): " << r.value("token", "") << "\n";
  std::cerr << "keep the secret: it is shown only this once\n";
}

int ServiceAccount(const std::vector<std::string>& argv) {
  using namespace view;
  Invocation inv("service-account", kServiceAccountUsage);
  if (int rc = inv.Parse(argv, {"tenant", "role", "expires-in-days"}); rc >= 0) return rc;
  const Args& args = inv.args();
  const auto& pos = args.positional();
  const std::string action = pos.empty() ? "" : pos[0];
  if (!args.Has("tenant")) return inv.Usage("--tenant is required");
  const std::string base = "/v1/tenants/" + UrlEncode(args.Str("tenant", "")) + "/service-accounts";
  if (action == "list") {
    if (int rc = inv.ExpectPositionals(1, "service-account list takes no NAME"); rc >= 0) return rc;
    return inv.Call("GET", base, nullptr, [](const Json& r) {
      Table t({"NAME", "ROLE", "CREATED", "BY", "TOKENS", "LAST-USED"});
      const Json items = r.is_object() && r.contains("items") ? r["items"] : Json::array();
      for (const Json& a : Items(items)) {
        t.Row({Str(a, "name"), Str(a, "role"), Str(a, "created"), Str(a, "created_by"),
               std::to_string(Field(a, "tokens").is_array() ? Field(a, "tokens").size() : 0),
               OrNone(Str(a, "last_used"))});
      }
      t.Print(std::cout);
    });
  }
  if (action != "create" && action != "delete" && action != "token") {
    return inv.Usage("service-account what: list, create, delete or token");
  }
  if (int rc = inv.ExpectPositionals(2, "which account: gpupool service-account " + action + " NAME --tenant T");
      rc >= 0) {
    return rc;
  }
  const std::string name = pos[1];
  if (action == "create") {
    if (!args.Has("role")) return inv.Usage("--role is required");
    const Json body = {{"name", name}, {"role", args.Str("role", "")}};
    return inv.Call("POST", base, &body, [&](const Json& r) {
      std::cout << "service account " << name << " (" << r.value("role", "") << ") created in "
                << r.value("tenant", "") << "\n";
    });
  }
  if (action == "delete") {
    return inv.Call("DELETE", base + "/" + UrlEncode(name), nullptr, [&](const Json& r) {
      std::cout << "service account " << name << " deleted; " << r.value("revoked_tokens", 0) << " tokens revoked\n";
    });
  }
  Json body = Json::object();
  if (args.Has("expires-in-days")) {
    Result<int64_t> days = args.Int("expires-in-days", 90, 1, 100000);
    if (!days.ok()) return inv.Usage(days.error().message);
    body["expires_in_days"] = *days;
  }
  return inv.Call("POST", base + "/" + UrlEncode(name) + "/tokens", &body, ShowSecret);
}

int Token(const std::vector<std::string>& argv) {
  Invocation inv("token", kTokenUsage);
  if (int rc = inv.Parse(argv, {"grace", "expires-in-days"}); rc >= 0) return rc;
  const Args& args = inv.args();
  if (args.positional().empty() || args.positional()[0] != "rotate") return inv.Usage("token what: rotate ID");
  if (int rc = inv.ExpectPositionals(2, "which token: gpupool token rotate ID"); rc >= 0) return rc;
  Json body = Json::object();
  if (args.Has("grace")) {
    Result<int64_t> grace = ParseDuration(args.Str("grace", ""));
    if (!grace.ok()) return inv.Usage("--grace: " + grace.error().message);
    body["grace_s"] = *grace;
  }
  if (args.Has("expires-in-days")) {
    Result<int64_t> days = args.Int("expires-in-days", 90, 1, 100000);
    if (!days.ok()) return inv.Usage(days.error().message);
    body["expires_in_days"] = *days;
  }
  return inv.Call("POST", "/v1/tokens/" + UrlEncode(args.positional()[1]) + "/rotate", &body, [](const Json& r) {
    ShowSecret(r);
    std::cout << "token " << r.value("replaces", "?") << " stops at " << r.value("replaced_expires", "?") << "\n";
  });
}

}  // namespace gpupool::cli
