// `gpupool delete | create | cordon | uncordon | drain`: changing what the cluster is made of.
// `create tenant` and `edit tenant` are in tenant_cmd.cc.
#include <iostream>

#include "api/url.h"
#include "cli/client_kinds.h"
#include "cli/commands.h"
#include "cli/invocation.h"
#include "cli/tenant_cmd.h"

namespace gpupool::cli {

const char* const kDeleteUsage =
    "usage: gpupool delete KIND NAME [-o table|json|yaml]\n"
    "  job ID           cancel the job (as gpupool cancel ID)\n"
    "  node NAME        remove a drained node that runs nothing (admins)\n"
    "  tenant NAME      delete a tenant with no pending or active jobs and no reservations (admins)\n"
    "  reservation ID   cancel a reservation or maintenance window\n"
    "  token ID         revoke a token (gpupool get tokens shows the IDs)\n";
const char* const kCreateUsage =
    "usage: gpupool create token NAME --role ROLE [--tenant T] [--expires-in-days N (90)]\n"
    "         ROLE: cluster-admin, tenant-admin, member, viewer (these three with --tenant),\n"
    "         node-agent (NAME is then its node) or metrics-reader; the secret is printed once\n"
    "       gpupool create tenant NAME [--weight W] [--quota FLAVOR=G[,borrow=B][,lend=L]]...\n"
    "         [--limit KEY=VALUE]... [--allow-gpu-cotenancy true|false]   (admins)\n"
    "       gpupool create tenant -f TENANT.yaml   (the fields of the POST /v1/tenants body)\n"
    "  --quota: G GPUs guaranteed, may borrow B more and lend L of them (none: no limit)\n"
    "  --limit: max-replicas=N, max-job-gpus=G, default-duration=D, max-duration=D (none: no limit)\n";
const char* const kCordonUsage = "usage: gpupool cordon NODE   (no new work on the node; admins)\n";
const char* const kUncordonUsage = "usage: gpupool uncordon NODE   (the node takes work again; admins)\n";
const char* const kDrainUsage =
    "usage: gpupool drain NODE   (cordon the node and requeue its jobs; admins)\n"
    "  then gpupool delete node NODE removes it once nothing runs there\n";

namespace {

bool Deletable(const Kind& k) { return k.deleted != nullptr; }

// POST /v1/nodes/NODE/ACTION for cordon, uncordon and drain.
int NodeAction(const std::string& action, const char* usage, const std::vector<std::string>& argv) {
  Invocation inv(action, usage);
  if (int rc = inv.Parse(argv, {}); rc >= 0) return rc;
  if (int rc = inv.ExpectPositionals(1, "which node: gpupool " + action + " NODE"); rc >= 0) return rc;
  const std::string node = inv.args().positional()[0];
  const Json none = Json::object();
  return inv.Call("POST", "/v1/nodes/" + UrlEncode(node) + "/" + action, &none, [&](const Json& r) {
    std::cout << "node " << node << (action == "cordon"     ? " cordoned"
                                     : action == "uncordon" ? " uncordoned"
                                                            : " draining");
    if (action == "drain") std::cout << ": " << r.value("requeued_jobs", 0) << " jobs requeued";
    std::cout << "\n";
  });
}

int CreateToken(Invocation& inv) {
  const Args& args = inv.args();
  if (int rc = inv.ExpectPositionals(2, "create token NAME --role ROLE [--tenant T] [--expires-in-days N]"); rc >= 0) {
    return rc;
  }
  if (!args.Has("role")) return inv.Usage("--role is required");
  for (const char* f : {"weight", "quota", "limit", "allow-gpu-cotenancy", "file"}) {
    if (args.Has(f)) return inv.Usage(std::string("--") + f + " is for tenants");
  }
  Json body = {{"name", args.positional()[1]}, {"role", args.Str("role", "")}};
  if (args.Has("tenant")) body["tenant"] = args.Str("tenant", "");
  if (args.Has("expires-in-days")) {
    Result<int64_t> days = args.Int("expires-in-days", 90, 1, 100000);
    if (!days.ok()) return inv.Usage(days.error().message);
    body["expires_in_days"] = *days;
  }
  return inv.Call("POST", "/v1/tokens", &body, ShowSecret);
}

}  // namespace

int Delete(const std::vector<std::string>& argv) {
  Invocation inv("delete", kDeleteUsage);
  if (int rc = inv.Parse(argv, {}); rc >= 0) return rc;
  const Kind* kind = KindOfObject(inv.args().positional(), Deletable);
  if (kind == nullptr) return inv.Usage("delete what: " + KindNames(Deletable) + ", and its ID or NAME");
  const std::string name = inv.args().positional()[1];
  return inv.Call("DELETE", ObjectPath(*kind, name), nullptr, [&](const Json&) {
    std::cout << kind->singular << " " << name << " " << kind->deleted << "\n";
  });
}

int Create(const std::vector<std::string>& argv) {
  Invocation inv("create", kCreateUsage);
  if (int rc = inv.Parse(argv, {"role", "tenant", "expires-in-days", "weight", "quota", "limit", "allow-gpu-cotenancy", "file"});
      rc >= 0) {
    return rc;
  }
  const auto& pos = inv.args().positional();
  const std::string what = pos.empty() ? "" : pos[0];
  if (what == "token" || what == "tokens") return CreateToken(inv);
  if (what == "tenant" || what == "tenants") return CreateTenant(inv);
  return inv.Usage("create what: token or tenant");
}

int Cordon(const std::vector<std::string>& argv) { return NodeAction("cordon", kCordonUsage, argv); }
int Uncordon(const std::vector<std::string>& argv) { return NodeAction("uncordon", kUncordonUsage, argv); }
int Drain(const std::vector<std::string>& argv) { return NodeAction("drain", kDrainUsage, argv); }

}  // namespace gpupool::cli
