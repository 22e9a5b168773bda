// `gpupool submit | cancel | reserve | availability | usage | logs`: jobs, reservations and
// reports from the terminal. Exit codes: 0 done, 1 the server refused or could not be reached,
// 2 a usage error (nothing sent).
#include <cstdio>
#include <ctime>
#include <iostream>

#include "api/url.h"
#include "cli/client_request.h"
#include "cli/commands.h"
#include "cli/terminal.h"
#include "cli/invocation.h"

namespace gpupool::cli {

const char* const kReserveUsage =
    "usage: gpupool reserve --tenant T --flavor F --gpus N --start RFC3339 --end RFC3339\n"
    "       gpupool reserve --maintenance --flavor F --gpus N --start RFC3339 --end RFC3339  (admins)\n"
    "  gpupool get reservations lists them, gpupool delete reservation ID cancels one\n";
const char* const kAvailabilityUsage =
    "usage: gpupool availability --flavor F --gpus N --duration D [--after RFC3339]   (earliest start)\n"
    "       gpupool availability --flavor F --start RFC3339 --end RFC3339            (GPUs reservable)\n";
const char* const kUsageUsage =
    "usage: gpupool usage [--tenant T] [--from RFC3339] [--to RFC3339] [--group-by flavor,kind|none]\n"
    "         [-o table|json|yaml|csv]   (from: the start of this month, UTC; to: now)\n"
    "       gpupool usage reconcile [--executor NAME] [--from RFC3339] [--to RFC3339] [--tolerance-s S]\n"
    "         [-o table|json|yaml]   (cluster-admin: the ledger beside the executor's accounting, e.g. sacct)\n";
const char* const kWhoamiUsage =
    "usage: gpupool whoami [-o table|json|yaml]   (who the token is: tenants, roles, issuer, expiry)\n";
const char* const kLogsUsage =
    "usage: gpupool logs JOB [--replica N] [--stderr]   (the last 64 KiB its agent sent)\n";
const char* const kSubmitUsage =
    "usage: gpupool submit --tenant T --name N [--priority-class P] [--replicas R] --flavor F\n"
    "         (--gpus N | --mig-profile P | --gpu-fraction X --memory-gb G)\n"
    "         [--duration D] [--reservation ID] [--idempotency-key K]\n"
    "         [--selector EXPR]... [--topology LEVEL[:preferred]] -- COMMAND ARGS...\n"
    "       gpupool submit -f JOB.yaml [--idempotency-key K]   (- reads standard input)\n"
    "  --duration: the run-time estimate (seconds, or 30m, 2h, 1h30m); without it the tenant's\n"
    "    default. --priority-class: without it the cluster's default class.\n"
    "  --flavor: a GPU model, or several by preference (h100-80gb,a100-80gb): the job runs on the\n"
    "    first with room, and is charged to the one it runs on\n"
    "  --selector: labels the job's nodes must have, as kubectl writes them; repeatable, and one\n"
    "    may hold several, comma-separated: k=v  k!=v  'k in (a,b)'  'k notin (a,b)'  k  '!k'\n"
    "  --topology: all replicas in one node, nvlink-domain or block; LEVEL:preferred if possible\n";
const char* const kCancelUsage = "usage: gpupool cancel ID [-o table|json|yaml]   (as gpupool delete job ID)\n";

int Submit(const std::vector<std::string>& argv) {
  Invocation inv("submit", kSubmitUsage);
  const std::set<std::string> body_flags = {"tenant", "name", "priority-class", "replicas", "flavor",
                                            "gpus", "mig-profile", "gpu-fraction", "memory-gb", "duration",
                                            "reservation", "selector", "topology"};
  std::set<std::string> flags = body_flags;
  flags.insert({"file", "idempotency-key"});
  if (int rc = inv.Parse(argv, flags, /*takes_command=*/true); rc >= 0) return rc;
  const Args& args = inv.args();
  if (!args.positional().empty()) {
    return inv.Usage("unexpected '" + args.positional()[0] + "' (the job's command goes after '--')");
  }
  Result<Json> body = InvalidArgument("");
  if (args.Has("file")) {
    for (const std::string& f : body_flags) {
      if (args.Has(f)) return inv.Usage("-f and --" + f + " do not go together: the file holds the job");
    }
    if (!inv.command().empty()) return inv.Usage("-f and a command after '--' do not go together");
    Result<std::string> text = ReadTextFile(args.Str("file", ""));
    if (!text.ok()) return inv.Usage(text.error().message);
    body = JobRequestFromYaml(*text);
    if (!body.ok()) return inv.Usage(args.Str("file", "") + ": " + body.error().message);
  } else {
    body = JobRequestFromArgs(args, inv.command());
    if (!body.ok()) return inv.Usage(body.error().message);
  }
  ApiClient::Headers headers;
  if (args.Has("idempotency-key")) headers["Idempotency-Key"] = args.Str("idempotency-key", "");
  return inv.Call("POST", "/v1/jobs", &*body, [](const Json& r) {
    const std::string id = r.value("id", "?"), state = r.value("state", "?");
    if (r.value("replayed", false) == true) {
      std::cout << "job " << id << " was already submitted with this idempotency key (" << state << ")\n";
    } else {
      std::cout << "job " << id << " submitted (" << state << ")\n";
    }
  }, headers);
}

int Cancel(const std::vector<std::string>& argv) {
  Invocation inv("cancel", kCancelUsage);
  if (int rc = inv.Parse(argv, {}); rc >= 0) return rc;
  if (int rc = inv.ExpectPositionals(1, "cancel one job: its ID"); rc >= 0) return rc;
  const std::string id = inv.args().positional()[0];
  return inv.Call("DELETE", "/v1/jobs/" + UrlEncode(id), nullptr,
                  [&](const Json&) { std::cout << "job " << id << " cancelled\n"; });
}

int Reserve(const std::vector<std::string>& argv) {
  Invocation inv("reserve", kReserveUsage);
  if (int rc = inv.Parse(argv, {"tenant", "flavor", "gpus", "start", "end"}, false, {"maintenance"}); rc >= 0) {
    return rc;
  }
  if (int rc = inv.ExpectPositionals(0, "reserve takes flags only"); rc >= 0) return rc;
  const Args& args = inv.args();
  const bool maintenance = args.Has("maintenance");
  if (maintenance == args.Has("tenant")) return inv.Usage("give --tenant, or --maintenance (no tenant)");
  for (const char* f : {"flavor", "gpus", "start", "end"}) {
    if (!args.Has(f)) return inv.Usage(std::string("--") + f + " is required");
  }
  Result<int64_t> gpus = args.Int("gpus", 0, 1, 100000);
  if (!gpus.ok()) return inv.Usage(gpus.error().message);
  Json body = {{"flavor", args.Str("flavor", "")}, {"gpus", *gpus}, {"start", args.Str("start", "")},
               {"end", args.Str("end", "")}};
  if (maintenance) body["maintenance"] = true;
  else body["tenant"] = args.Str("tenant", "");
  return inv.Call("POST", "/v1/reservations", &body, [&](const Json& r) {
    std::cout << (maintenance ? "maintenance window " : "reservation ") << r.value("id", "?") << ": " << *gpus
              << " x " << args.Str("flavor", "") << " from " << args.Str("start", "") << " to "
              << args.Str("end", "") << "\n";
  });
}

int Availability(const std::vector<std::string>& argv) {
  Invocation inv("availability", kAvailabilityUsage);
  if (int rc = inv.Parse(argv, {"flavor", "gpus", "duration", "after", "start", "end"}); rc >= 0) return rc;
  if (int rc = inv.ExpectPositionals(0, "availability takes flags only"); rc >= 0) return rc;
  const Args& args = inv.args();
  if (!args.Has("flavor")) return inv.Usage("--flavor is required");
  const bool earliest = args.Has("gpus") || args.Has("duration") || args.Has("after");
  const bool window = args.Has("start") || args.Has("end");
  if (earliest == window) return inv.Usage("give --gpus and --duration, or --start and --end");
  std::string query = "?flavor=" + UrlEncode(args.Str("flavor", ""));
  if (earliest) {
    if (!args.Has("gpus") || !args.Has("duration")) return inv.Usage("--gpus and --duration go together");
    Result<int64_t> secs = ParseDuration(args.Str("duration", ""));
    if (!secs.ok()) return inv.Usage(secs.error().message);
    query += "&gpus=" + UrlEncode(args.Str("gpus", "")) + "&duration_s=" + std::to_string(*secs);
    if (args.Has("after")) query += "&after=" + UrlEncode(args.Str("after", ""));
  } else {
    if (!args.Has("start") || !args.Has("end")) return inv.Usage("--start and --end go together");
    query += "&start=" + UrlEncode(args.Str("start", "")) + "&end=" + UrlEncode(args.Str("end", ""));
  }
  return inv.Call("GET", "/v1/availability" + query, nullptr, [&](const Json& r) {
    const std::string what = args.Str("gpus", "") + " x " + args.Str("flavor", "");
    const Json start = r.value("earliest_start", Json());
    if (!earliest) {
      std::cout << r.value("reservable_gpus", Json()) << " x " << args.Str("flavor", "") << " can be reserved from "
                << args.Str("start", "") << " to " << args.Str("end", "") << "\n";
    } else if (!start.is_string()) {
      std::cout << "no start within a year fits " << what << "\n";
    } else {
      std::cout << "earliest start for " << what << ": " << start.get<std::string>() << "\n";
    }
  });
}

// The first instant of the current month in UTC, as RFC 3339.
std::string StartOfThisMonth() {
  const std::time_t now = static_cast<std::time_t>(NowMillis() / 1000);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-01T00:00:00Z", tm.tm_year + 1900, tm.tm_mon + 1);
  return buf;
}

int UsageReconcile(const std::vector<std::string>& argv) {
  Invocation inv("usage", kUsageUsage);
  if (int rc = inv.Parse(argv, {"executor", "from", "to", "tolerance-s"}); rc >= 0) return rc;
  const Args& args = inv.args();
  if (!args.positional().empty()) return inv.Usage("unexpected '" + args.positional()[0] + "'");
  std::string query;
  for (auto [flag, key] : {std::pair{"executor", "executor"}, std::pair{"from", "from"}, std::pair{"to", "to"},
                           std::pair{"tolerance-s", "tolerance_s"}}) {
    if (args.Has(flag)) query += std::string(query.empty() ? "?" : "&") + key + "=" + UrlEncode(args.Str(flag, ""));
  }
  return inv.Call("GET", "/v1/usage/reconcile" + query, nullptr, [&](const Json& r) { PrintReconcile(r, std::cout); });
}

int UsageReport(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv.front() == "reconcile") return UsageReconcile({argv.begin() + 1, argv.end()});
  Invocation inv("usage", kUsageUsage);
  if (int rc = inv.Parse(argv, {"tenant", "from", "to", "group-by"}); rc >= 0) return rc;
  const Args& args = inv.args();
  if (!args.positional().empty()) return inv.Usage("unexpected '" + args.positional()[0] + "'");
  std::string query = "?from=" + UrlEncode(args.Str("from", StartOfThisMonth()));
  if (args.Has("to")) query += "&to=" + UrlEncode(args.Str("to", ""));
  if (args.Has("tenant")) query += "&tenant=" + UrlEncode(args.Str("tenant", ""));
  if (args.Has("group-by")) query += "&group_by=" + UrlEncode(args.Str("group-by", ""));
  if (int rc = inv.Connect(); rc >= 0) return rc;
  if (inv.format() == Format::kCsv) {
    Result<std::string> csv = inv.api().GetText("/v1/usage" + query + "&format=csv");
    if (!csv.ok()) return inv.Fail(csv.error(), 1);
    std::cout << *csv;
    return 0;
  }
  Result<Json> reply = inv.api().Get("/v1/usage" + query);
  if (!reply.ok()) return inv.Fail(reply.error(), 1);
  if (inv.PrintedAsData(*reply)) return 0;
  PrintUsage(*reply, std::cout);
  return 0;
}

int Logs(const std::vector<std::string>& argv) {
  Invocation inv("logs", kLogsUsage);
  if (int rc = inv.Parse(argv, {"replica"}, false, {"stderr"}); rc >= 0) return rc;
  const Args& args = inv.args();
  if (args.positional().size() != 1) return inv.Usage("which job: gpupool logs JOB");
  Result<int64_t> replica = args.Int("replica", -1, 0, 65535);
  if (!replica.ok()) return inv.Usage(replica.error().message);
  const std::string job = args.positional()[0];
  return inv.Call("GET", "/v1/jobs/" + UrlEncode(job) + "/logs", nullptr, [&](const Json& reply) {
    const Json items = reply.value("items", Json::array());
    const char* stream = args.Has("stderr") ? "stderr" : "stdout";
    int shown = 0;
    for (const Json& r : items) {
      if (*replica >= 0 && r.value("replica", -1) != *replica) continue;
      if (items.size() > 1 && *replica < 0) std::cout << "==> replica " << r.value("replica", -1) << " <==\n";
      std::cout << r.value(stream, "");
      ++shown;
    }
    if (shown == 0) std::cerr << "gpupool logs: no output from job " << job << " yet\n";
  });
}

int Whoami(const std::vector<std::string>& argv) {
  Invocation inv("whoami", kWhoamiUsage);
  if (int rc = inv.Parse(argv, {}, false, {}); rc >= 0) return rc;
  if (!inv.args().positional().empty()) return inv.Usage("whoami takes no arguments");
  if (int rc = inv.Connect(); rc >= 0) return rc;
  Result<Json> reply = inv.api().Get("/v1/summary");
  if (!reply.ok()) return inv.Fail(reply.error(), 1);
  const Json me = reply->value("me", Json::object());
  if (inv.PrintedAsData(me)) return 0;
  std::cout << "name:     " << StripControls(me.value("name", "")) << "\n";
  if (me.contains("issuer")) {
    std::cout << "issuer:   " << StripControls(me.value("issuer", "")) << "\n"
              << "subject:  " << StripControls(me.value("subject", "")) << "\n";
  }
  const Json grants = me.value("grants", Json::array());
  if (grants.empty()) std::cout << "role:     " << StripControls(me.value("role", "")) << " (no tenant)\n";
  for (const Json& g : grants) {
    std::cout << "tenant:   " << StripControls(g.value("tenant", "")) << " (" << StripControls(g.value("role", "")) << ")\n";
  }
  std::cout << "expires:  " << (me["expires"].is_string() ? StripControls(me["expires"].get<std::string>()) : "never") << "\n";
  return 0;
}

}  // namespace gpupool::cli
