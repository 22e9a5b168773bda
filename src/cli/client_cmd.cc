// `gpupool get | describe | submit | cancel`: the REST API from the terminal.
// Exit codes: 0 done, 1 the server refused or could not be reached, 2 a usage error.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/page.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/client_request.h"
#include "cli/client_view.h"
#include "cli/commands.h"

namespace gpupool::cli {
namespace {

constexpr const char* kConnectionFlags =
    "  --url URL  --token TOKEN  (else GPUPOOL_URL, GPUPOOL_TOKEN, or url:/token: in\n"
    "  $GPUPOOL_CONFIG or ~/.config/gpupool/config.yaml)  -o table|json|yaml\n";

constexpr const char* kGetUsage =
    "usage: gpupool get jobs|nodes|tenants|reservations [--tenant T] [--state S] [-o table|json|yaml]\n"
    "       gpupool get jobs [--limit N] [--cursor C]\n"
    "  Jobs are listed newest first. Without --limit, every page is fetched (1000 jobs a request)\n"
    "  and printed as one list. --limit N (1..1000) prints one page; when there are older jobs,\n"
    "  the cursor for the next page is printed on stderr (table) or is the reply's next_cursor\n"
    "  (json, yaml): pass it back with --cursor C, with the same --tenant and --state.\n";
constexpr const char* kReserveUsage =
    "usage: gpupool reserve --tenant T --flavor F --gpus N --start RFC3339 --end RFC3339\n"
    "       gpupool reserve --maintenance --flavor F --gpus N --start RFC3339 --end RFC3339  (admins)\n";
constexpr const char* kAvailabilityUsage =
    "usage: gpupool availability --flavor F --gpus N --duration D [--after RFC3339]   (earliest start)\n"
    "       gpupool availability --flavor F --start RFC3339 --end RFC3339            (GPUs reservable)\n";
constexpr const char* kUsageUsage =
    "usage: gpupool usage [--tenant T] [--from RFC3339] [--to RFC3339] [--group-by flavor,kind|none]\n"
    "         [-o table|json|yaml|csv]   (from: the start of this month, UTC; to: now)\n";
constexpr const char* kLogsUsage =
    "usage: gpupool logs JOB [--replica N] [--stderr]   (the last 64 KiB its agent sent)\n";
constexpr const char* kDescribeUsage =
    "usage: gpupool describe job ID | node NAME | tenant NAME [-o table|json|yaml]\n";
constexpr const char* kSubmitUsage =
    "usage: gpupool submit --tenant T --name N [--priority-class P] [--replicas R] --flavor F\n"
    "         (--gpus N | --mig-profile P | --gpu-fraction X --memory-gb G)\n"
    "         [--duration D] [--reservation ID] [--idempotency-key K]\n"
    "         [--selector EXPR]... [--topology LEVEL[:preferred]] -- COMMAND ARGS...\n"
    "       gpupool submit -f JOB.yaml [--idempotency-key K]   (- reads standard input)\n"
    "  --duration: the run-time estimate (seconds, or 30m, 2h, 1h30m); without it the tenant's\n"
    "    default. --priority-class: without it the cluster's default class.\n"
    "  --selector: labels the job's nodes must have, as kubectl writes them; repeatable, and one\n"
    "    may hold several, comma-separated: k=v  k!=v  'k in (a,b)'  'k notin (a,b)'  k  '!k'\n"
    "  --topology: all replicas in one node, nvlink-domain or block; LEVEL:preferred if possible\n";
constexpr const char* kCancelUsage = "usage: gpupool cancel ID [-o table|json|yaml]\n";

const std::set<std::string> kCommonFlags = {"url", "token", "output", "help"};

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What every verb does first: split and parse the command line, connect, pick the format.
class Invocation {
 public:
  Invocation(std::string verb, const char* usage) : verb_(std::move(verb)), usage_(usage) {}

  // Returns an exit code to stop with (0 for --help, 2 for a usage error), or -1 to go on.
  // `switches` are the flags that take no value (--help is always one).
  int Parse(const std::vector<std::string>& argv, std::set<std::string> flags, bool takes_command = false,
            std::set<std::string> switches = {}) {
    switches.insert("help");
    Result<SplitArgs> split = SplitCommandLine(argv, switches);
    if (!split.ok()) return Usage(split.error().message);
    if (split->has_separator && !takes_command) return Usage("unexpected '--'");
    command_ = split->command;
    flags.insert(kCommonFlags.begin(), kCommonFlags.end());
    flags.insert(switches.begin(), switches.end());
    Result<Args> args = Args::Parse(split->flags, flags, switches);
    if (!args.ok()) return Usage(args.error().message);
    args_ = std::move(*args);
    if (args_.Has("help")) {
      std::cout << usage_ << kConnectionFlags;
      return 0;
    }
    Result<Format> format = ParseFormat(args_.Str("output", "table"));
    if (!format.ok()) return Usage(format.error().message);
    if (*format == Format::kCsv && verb_ != "usage") return Usage("-o csv is for gpupool usage");
    format_ = *format;
    return -1;
  }

  // Resolves the server and token; returns an exit code on failure, -1 on success.
  int Connect() {
    Result<ClientConfig> config = ResolveClientConfig(args_.Str("url", ""), args_.Str("token", ""),
                                                      [](const char* name) { return std::getenv(name); });
    if (!config.ok()) return Fail(config.error(), 2);
    Result<std::unique_ptr<ApiClient>> api = ApiClient::Connect(*config);
    if (!api.ok()) return Fail(api.error(), 2);
    api_ = std::move(*api);
    return -1;
  }

  int Usage(const std::string& message) const {
    std::cerr << "gpupool " << verb_ << ": " << message << "\n" << usage_;
    return 2;
  }
  int Fail(const Error& e, int code) const {
    std::cerr << "gpupool " << verb_ << ": " << e.message << "\n";
    return code;
  }
  // Prints `reply` as JSON or YAML; false for table output, which the verb renders itself.
  bool PrintedAsData(const Json& reply) const {
    if (format_ == Format::kTable) return false;
    std::cout << (format_ == Format::kJson ? ToJsonText(reply) : ToYaml(reply));
    return true;
  }

  const Args& args() const { return args_; }
  Format format() const { return format_; }
  const std::vector<std::string>& command() const { return command_; }
  ApiClient& api() { return *api_; }

 private:
  std::string verb_;
  const char* usage_;
  Args args_;
  std::vector<std::string> command_;
  Format format_ = Format::kTable;
  std::unique_ptr<ApiClient> api_;
};

// "jobs", "job" -> "jobs"; "" when it is no kind of object.
std::string Kind(const std::string& word) {
  for (const char* kind : {"jobs", "nodes", "tenants", "reservations"}) {
    const std::string k = kind;
    if (word == k || word == k.substr(0, k.size() - 1)) return k;
  }
  return "";
}

Result<std::string> ReadJobFile(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path);
  if (!in) return InvalidArgument("cannot read " + path);
  text << in.rdbuf();
  return text.str();
}

// GET /v1/jobs: one page of `limit` jobs (the reply as the server sent it, next_cursor and all),
// or, without a limit, every page from `cursor` on, as one list whose next_cursor is null.
Result<Json> GetJobPages(ApiClient& api, const std::string& query, const std::string& limit, std::string cursor) {
  const std::string base = "/v1/jobs" + query + (query.empty() ? "?" : "&") + "limit=";
  if (!limit.empty()) return api.Get(base + limit + (cursor.empty() ? "" : "&cursor=" + UrlEncode(cursor)));
  Json items = Json::array();
  for (;;) {
    Result<Json> page = api.Get(base + std::to_string(kMaxPageLimit) + (cursor.empty() ? "" : "&cursor=" + UrlEncode(cursor)));
    if (!page.ok()) return page.error();
    if (!page->is_object() || !page->contains("items") || !(*page)["items"].is_array()) return page;
    for (Json& j : (*page)["items"]) items.push_back(std::move(j));
    const Json next = page->value("next_cursor", Json());
    // A server without pages sends no next_cursor; a cursor that does not move would loop.
    if (!next.is_string() || next.get<std::string>() == cursor) break;
    cursor = next.get<std::string>();
  }
  return Json({{"items", std::move(items)}, {"next_cursor", nullptr}});
}

}  // namespace

int Get(const std::vector<std::string>& argv) {
  Invocation inv("get", kGetUsage);
  if (int rc = inv.Parse(argv, {"tenant", "state", "limit", "cursor"}); rc >= 0) return rc;
  const auto& pos = inv.args().positional();
  if (pos.size() != 1 || Kind(pos[0]).empty()) return inv.Usage("what to get: jobs, nodes, tenants or reservations");
  const std::string kind = Kind(pos[0]);
  if (kind != "jobs" && (inv.args().Has("tenant") || inv.args().Has("state"))) {
    return inv.Usage("--tenant and --state filter jobs only");
  }
  if (kind != "jobs" && (inv.args().Has("limit") || inv.args().Has("cursor"))) {
    return inv.Usage("--limit and --cursor page through jobs only");
  }
  const std::string limit = inv.args().Str("limit", "");
  if (inv.args().Has("limit") && (limit.empty() || limit.size() > 4 || limit[0] == '0' ||
                                  limit.find_first_not_of("0123456789") != std::string::npos ||
                                  std::stoi(limit) > kMaxPageLimit)) {
    return inv.Usage("--limit must be a whole number from 1 to " + std::to_string(kMaxPageLimit));
  }
  const std::string state = inv.args().Str("state", "");
  if (!state.empty() && state != "pending" && state != "admitted" && state != "running" &&
      state != "succeeded" && state != "failed" && state != "cancelled") {
    return inv.Usage("--state must be pending, admitted, running, succeeded, failed or cancelled");
  }
  if (int rc = inv.Connect(); rc >= 0) return rc;
  std::string query;
  for (const char* key : {"tenant", "state"}) {
    const std::string v = inv.args().Str(key, "");
    if (!v.empty()) query += (query.empty() ? "?" : "&") + std::string(key) + "=" + UrlEncode(v);
  }
  Result<Json> reply = kind == "jobs" ? GetJobPages(inv.api(), query, limit, inv.args().Str("cursor", ""))
                                      : inv.api().Get("/v1/" + kind + query);
  if (!reply.ok()) return inv.Fail(reply.error(), 1);
  if (inv.PrintedAsData(*reply)) return 0;
  const Json items = reply->is_object() && reply->contains("items") ? (*reply)["items"] : Json::array();
  if (reply->is_object() && reply->contains("next_cursor") && (*reply)["next_cursor"].is_string()) {
    std::cerr << "older jobs remain: add --cursor " << (*reply)["next_cursor"].get<std::string>() << "\n";
  }
  if (kind == "jobs") PrintJobs(items, NowMillis(), std::cout);
  if (kind == "nodes") PrintNodes(items, std::cout);
  if (kind == "tenants") PrintTenants(items, std::cout);
  if (kind == "reservations") PrintReservations(items, std::cout);
  return 0;
}

int Describe(const std::vector<std::string>& argv) {
  Invocation inv("describe", kDescribeUsage);
  if (int rc = inv.Parse(argv, {}); rc >= 0) return rc;
  const auto& pos = inv.args().positional();
  if (pos.size() != 2 || Kind(pos[0]).empty() || Kind(pos[0]) == "reservations") {
    return inv.Usage("describe what: job ID, node NAME or tenant NAME");
  }
  const std::string kind = Kind(pos[0]);
  if (int rc = inv.Connect(); rc >= 0) return rc;
  Result<Json> reply = inv.api().Get("/v1/" + kind + "/" + UrlEncode(pos[1]));
  if (!reply.ok()) return inv.Fail(reply.error(), 1);
  if (inv.PrintedAsData(*reply)) return 0;
  if (kind == "jobs") DescribeJob(*reply, NowMillis(), std::cout);
  if (kind == "nodes") DescribeNode(*reply, std::cout);
  if (kind == "tenants") DescribeTenant(*reply, std::cout);
  return 0;
}

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
    Result<std::string> text = ReadJobFile(args.Str("file", ""));
    if (!text.ok()) return inv.Usage(text.error().message);
    body = JobRequestFromYaml(*text);
    if (!body.ok()) return inv.Usage(args.Str("file", "") + ": " + body.error().message);
  } else {
    body = JobRequestFromArgs(args, inv.command());
    if (!body.ok()) return inv.Usage(body.error().message);
  }
  if (int rc = inv.Connect(); rc >= 0) return rc;
  std::map<std::string, std::string> headers;
  if (args.Has("idempotency-key")) headers["Idempotency-Key"] = args.Str("idempotency-key", "");
  Result<Json> reply = inv.api().Post("/v1/jobs", *body, headers);
  if (!reply.ok()) return inv.Fail(reply.error(), 1);
  if (inv.PrintedAsData(*reply)) return 0;
  const Json& r = *reply;
  const std::string id = r.contains("id") && r["id"].is_string() ? r["id"].get<std::string>() : "?";
  const std::string state = r.contains("state") && r["state"].is_string() ? r["state"].get<std::string>() : "?";
  if (r.contains("replayed") && r["replayed"] == true) {
    std::cout << "job " << id << " was already submitted with this idempotency key (" << state << ")\n";
  } else {
    std::cout << "job " << id << " submitted (" << state << ")\n";
  }
  return 0;
}

int Cancel(const std::vector<std::string>& argv) {
  Invocation inv("cancel", kCancelUsage);
  if (int rc = inv.Parse(argv, {}); rc >= 0) return rc;
  const auto& pos = inv.args().positional();
  if (pos.size() != 1) return inv.Usage("cancel one job: its ID");
  if (int rc = inv.Connect(); rc >= 0) return rc;
  Result<Json> reply = inv.api().Delete("/v1/jobs/" + UrlEncode(pos[0]));
  if (!reply.ok()) return inv.Fail(reply.error(), 1);
  if (inv.PrintedAsData(*reply)) return 0;
  std::cout << "job " << pos[0] << " cancelled\n";
  return 0;
}

int Reserve(const std::vector<std::string>& argv) {
  Invocation inv("reserve", kReserveUsage);
  if (int rc = inv.Parse(argv, {"tenant", "flavor", "gpus", "start", "end"}, false, {"maintenance"}); rc >= 0) {
    return rc;
  }
  const Args& args = inv.args();
  if (!args.positional().empty()) return inv.Usage("unexpected '" + args.positional()[0] + "'");
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
  if (int rc = inv.Connect(); rc >= 0) return rc;
  Result<Json> reply = inv.api().Post("/v1/reservations", body, {});
  if (!reply.ok()) return inv.Fail(reply.error(), 1);
  if (inv.PrintedAsData(*reply)) return 0;
  std::cout << (maintenance ? "maintenance window " : "reservation ") << (*reply)["id"].get<std::string>()
            << ": " << *gpus << " x " << args.Str("flavor", "") << " from " << args.Str("start", "") << " to "
            << args.Str("end", "") << "\n";
  return 0;
}

int Availability(const std::vector<std::string>& argv) {
  Invocation inv("availability", kAvailabilityUsage);
  if (int rc = inv.Parse(argv, {"flavor", "gpus", "duration", "after", "start", "end"}); rc >= 0) return rc;
  const Args& args = inv.args();
  if (!args.positional().empty()) return inv.Usage("unexpected '" + args.positional()[0] + "'");
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
  if (int rc = inv.Connect(); rc >= 0) return rc;
  Result<Json> reply = inv.api().Get("/v1/availability" + query);
  if (!reply.ok()) return inv.Fail(reply.error(), 1);
  if (inv.PrintedAsData(*reply)) return 0;
  const Json& r = *reply;
  if (earliest) {
    if (r["earliest_start"].is_null()) {
      std::cout << "no start within a year fits " << args.Str("gpus", "") << " x " << args.Str("flavor", "") << "\n";
    } else {
      std::cout << "earliest start for " << args.Str("gpus", "") << " x " << args.Str("flavor", "") << ": "
                << r["earliest_start"].get<std::string>() << "\n";
    }
  } else {
    std::cout << r["reservable_gpus"] << " x " << args.Str("flavor", "") << " can be reserved from "
              << args.Str("start", "") << " to " << args.Str("end", "") << "\n";
  }
  return 0;
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

int UsageReport(const std::vector<std::string>& argv) {
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
  if (int rc = inv.Connect(); rc >= 0) return rc;
  Result<Json> reply = inv.api().Get("/v1/jobs/" + UrlEncode(args.positional()[0]) + "/logs");
  if (!reply.ok()) return inv.Fail(reply.error(), 1);
  if (inv.PrintedAsData(*reply)) return 0;
  const Json items = reply->value("items", Json::array());
  const char* stream = args.Has("stderr") ? "stderr" : "stdout";
  int shown = 0;
  for (const Json& r : items) {
    if (*replica >= 0 && r.value("replica", -1) != *replica) continue;
    if (items.size() > 1 && *replica < 0) std::cout << "==> replica " << r.value("replica", -1) << " <==\n";
    std::cout << r.value(stream, "");
    ++shown;
  }
  if (shown == 0) std::cerr << "gpupool logs: no output from job " << args.positional()[0] << " yet\n";
  return 0;
}

}  // namespace gpupool::cli
