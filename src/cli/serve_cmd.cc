// `gpupool serve`: flags to ServeOptions; the daemon itself is daemon/server.cc.
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/http.h"
#include "cli/login.h"
#include "daemon/server.h"

namespace gpupool::cli {
namespace {

int UsageError(const std::string& message) {
  std::cerr << "gpupool serve: " << message << "\n" << kServeUsage;
  return 2;
}

// OIDC discovery and key sets: a GET over HTTPS with the system's trust and the issuer's
// ca_file, 3 s to connect and 5 s per read, at most 1 MiB.
Result<std::string> FetchOverHttps(const std::string& url, const std::string& ca_file) {
  Result<ServerUrl> u = ParseServerUrl(url);
  if (!u.ok()) return u.error();
  if (u->scheme != "https") return InvalidArgument("not an https:// URL: " + url);
  HttpRequest req;
  req.method = "GET";
  req.tls = true;
  req.host = u->host;
  req.port = u->port;
  req.target = u->prefix.empty() ? "/" : u->prefix;
  req.headers = {{"Accept", "application/json"}};
  req.connect_timeout_s = 3;
  req.io_timeout_s = 5;
  req.ca_file = ca_file;
  Result<HttpResponse> r = HttpSend(req, size_t{1} << 20);
  if (!r.ok()) return r.error();
  if (r->status != 200) return Error{ErrorCode::kUnavailable, "HTTP " + std::to_string(r->status) + " from " + url};
  return r->body;
}

// The console's sign-in through the same OpenID Connect client as `gpupool login`: the issuer's
// endpoints by discovery (kept an hour, so that anonymous sign-in pages do not each cost the
// provider a fetch), the authorization URL, and the code and refresh grants.
OidcCodeFlow ConsoleFlow() {
  struct Endpoints {
    std::mutex mu;
    std::map<std::string, std::pair<OidcEndpoints, std::chrono::steady_clock::time_point>> by_issuer;
  };
  auto cache = std::make_shared<Endpoints>();
  auto client = [cache](const OidcIssuer& i) -> Result<LoginClient> {
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(cache->mu);
      const auto it = cache->by_issuer.find(i.issuer);
      if (it != cache->by_issuer.end() && now - it->second.second < std::chrono::hours(1)) {
        return LoginClient{it->second.first, i.client_id, i.scopes};
      }
    }
    Result<OidcEndpoints> e = Discover(i.issuer, i.ca_file);
    if (!e.ok()) return e.error();
    std::lock_guard<std::mutex> lock(cache->mu);
    cache->by_issuer[i.issuer] = {*e, now};
    return LoginClient{*e, i.client_id, i.scopes};
  };
  OidcCodeFlow flow;
  flow.authorize_url = [client](const OidcIssuer& i, const CodeRequest& r) -> Result<std::string> {
    Result<LoginClient> c = client(i);
    if (!c.ok()) return c.error();
    if (c->endpoints.authorization_endpoint.empty()) return InvalidArgument(i.issuer + " names no authorization_endpoint");
    return AuthorizationUrl(*c, r.redirect_uri, r.state, r.nonce, r.code_verifier);
  };
  flow.exchange = [client](const OidcIssuer& i, const CodeRequest& r, const std::string& code) -> Result<CodeTokens> {
    Result<LoginClient> c = client(i);
    if (!c.ok()) return c.error();
    Result<Tokens> t = ExchangeCode(*c, code, r.redirect_uri, r.code_verifier, r.nonce);
    if (!t.ok()) return t.error();
    return CodeTokens{t->id_token, t->refresh_token};
  };
  flow.refresh = [client](const OidcIssuer& i, const std::string& refresh_token) -> Result<CodeTokens> {
    Result<LoginClient> c = client(i);
    if (!c.ok()) return c.error();
    Result<Tokens> t = Refresh(*c, refresh_token);
    if (!t.ok()) return t.error();
    return CodeTokens{t->id_token, t->refresh_token};
  };
  return flow;
}

}  // namespace

int Serve(const std::vector<std::string>& argv) {
  Result<Args> args = Args::Parse(argv, {"config", "data-dir", "store", "listen", "demo", "no-demo-traffic", "http-threads", "agent-listen",
                                         "max-connections", "max-connections-per-source",
                                         "simulate-executor", "recover", "heartbeat-interval-ms", "heartbeat-timeout-ms",
                                         "snapshot-every-records", "snapshot-every-mb", "retention-s", "max-finished-jobs", "history-scrub-s",
                                         "advertise-url", "lease-ms", "max-auth-failures", "tls-cert", "tls-key", "tls-client-ca",
                                         "insecure-listen", "metrics-require-token", "max-token-days", "help"},
                                  {"demo", "no-demo-traffic", "simulate-executor", "recover", "insecure-listen",
                                   "metrics-require-token", "help"});
  if (!args.ok()) return UsageError(args.error().message);
  if (args->Has("help")) {
    std::cout << kServeUsage;
    return 0;
  }
  if (!args->positional().empty()) return UsageError("unexpected '" + args->positional()[0] + "'");
  ServeOptions o;
  o.config_path = args->Str("config", "");
  o.data_dir = args->Str("data-dir", "");
  o.store = args->Str("store", "");
  o.listen = args->Str("listen", "");
  o.demo = args->Has("demo");
  o.demo_traffic = !args->Has("no-demo-traffic");
  o.recover = args->Has("recover");
  o.simulate_executor = args->Has("simulate-executor");
  o.agent_listen = args->Str("agent-listen", "");
  o.advertise_url = args->Str("advertise-url", "");
  o.tls_cert = args->Str("tls-cert", "");
  o.tls_key = args->Str("tls-key", "");
  o.tls_client_ca = args->Str("tls-client-ca", "");
  o.insecure_listen = args->Has("insecure-listen");
  o.metrics_require_token = args->Has("metrics-require-token");
  o.oidc_fetch = FetchOverHttps;
  o.console_flow = ConsoleFlow();
  Result<int64_t> token_days = args->Int("max-token-days", o.max_token_days, 1, 36500);
  if (!token_days.ok()) return UsageError(token_days.error().message);
  o.max_token_days = *token_days;
  if (!o.advertise_url.empty() && o.advertise_url.rfind("http://", 0) != 0 && o.advertise_url.rfind("https://", 0) != 0) {
    return UsageError("--advertise-url wants http://HOST:PORT or https://HOST:PORT, got '" + o.advertise_url + "'");
  }
  while (!o.advertise_url.empty() && o.advertise_url.back() == '/') o.advertise_url.pop_back();
  Result<int64_t> lease = args->Int("lease-ms", o.lease_ms, 300, 600000);
  if (!lease.ok()) return UsageError(lease.error().message);
  o.lease_ms = *lease;
  Result<int64_t> auth = args->Int("max-auth-failures", o.max_auth_failures, 0, 1 << 20);
  if (!auth.ok()) return UsageError(auth.error().message);
  o.max_auth_failures = static_cast<int>(*auth);
  Result<int64_t> threads = args->Int("http-threads", 2, 1, 64);
  if (!threads.ok()) return UsageError(threads.error().message);
  o.http_threads = static_cast<int>(*threads);
  Result<int64_t> conns = args->Int("max-connections", o.http_limits.max_connections, 1, 1 << 20);
  Result<int64_t> per_source =
      args->Int("max-connections-per-source", o.http_limits.max_connections_per_source, 1, 1 << 20);
  if (!conns.ok() || !per_source.ok()) return UsageError((conns.ok() ? per_source : conns).error().message);
  o.http_limits.max_connections = static_cast<int>(*conns);
  o.http_limits.max_connections_per_source = static_cast<int>(*per_source);
  Result<int64_t> interval = args->Int("heartbeat-interval-ms", 1000, 50, 600000);
  Result<int64_t> timeout = args->Int("heartbeat-timeout-ms", 10000, 100, 3600000);
  if (!interval.ok() || !timeout.ok()) return UsageError((interval.ok() ? timeout : interval).error().message);
  if (*timeout <= *interval) return UsageError("--heartbeat-timeout-ms must be longer than --heartbeat-interval-ms");
  o.heartbeat_interval_ms = static_cast<int>(*interval);
  o.heartbeat_timeout_ms = static_cast<int>(*timeout);
  Result<int64_t> snap_records = args->Int("snapshot-every-records", o.snapshots.every_records, 0, int64_t{1} << 40);
  Result<int64_t> snap_mb = args->Int("snapshot-every-mb", static_cast<int64_t>(o.snapshots.every_bytes >> 20), 0, 1 << 20);
  if (!snap_records.ok() || !snap_mb.ok()) return UsageError((snap_records.ok() ? snap_mb : snap_records).error().message);
  o.snapshots.every_records = *snap_records;
  o.snapshots.every_bytes = static_cast<uint64_t>(*snap_mb) << 20;
  Result<int64_t> retention = args->Int("retention-s", o.retention_s, 0, int64_t{10} * 365 * 86400);
  if (!retention.ok()) return UsageError(retention.error().message);
  o.retention_s = *retention;
  Result<int64_t> max_finished = args->Int("max-finished-jobs", o.max_finished_jobs, 1, int64_t{100'000'000});
  if (!max_finished.ok()) return UsageError(max_finished.error().message);
  o.max_finished_jobs = *max_finished;
  Result<int64_t> scrub = args->Int("history-scrub-s", o.history_scrub_s, 0, int64_t{10} * 365 * 86400);
  if (!scrub.ok()) return UsageError(scrub.error().message);
  o.history_scrub_s = *scrub;
  const Status s = gpupool::Serve(o);
  if (!s.ok()) {
    std::cerr << "gpupool serve: " << s.error().message << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gpupool::cli
