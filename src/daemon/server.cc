#include "daemon/server.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "api/decode.h"
#include "api/openapi.h"
#include "daemon/config.h"
#include "daemon/control_plane.h"
#include "daemon/data_dir.h"
#include "store/store_url.h"
#include "daemon/demo.h"
#include "daemon/http_api.h"
#include "daemon/loop.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/server_threads.h"
#include "daemon/web_assets.h"
#include "policy/calendar/calendar.h"
#include "model/demo_cluster.h"
#include "burst/async_provider.h"
#include "burst/command_provider.h"
#include "burst/sim_provider.h"
#include "store/journal.h"

namespace gpupool {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};
void OnSignal(int) { g_stop = true; }
void OnHangup(int) { g_reload = true; }

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

Time Now() { return WallNow(); }

Status WriteSecret(const std::filesystem::path& p, const std::string& text) {
  // A new file created with mode 0600 (never readable by others, not even for a moment), synced,
  // then renamed over the old one.
  const std::string tmp = p.string() + ".tmp";
  const auto failed = [&](const std::string& what) {
    return Error{ErrorCode::kUnavailable, "cannot write " + tmp + ": " + what + ": " + std::strerror(errno)};
  };
  (void)::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return failed("open");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return failed("write");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return failed("fsync");
  }
  ::close(fd);
  std::error_code ec;
  std::filesystem::rename(tmp, p, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "cannot write " + p.string() + ": " + ec.message()};
  return Ok();
}

// One daemon per data directory: a second would append to the same journal behind the first's
// back. The lock is released when the process exits, however it exits.
Status LockDataDir(const std::filesystem::path& dir) {
  const std::string path = (dir / "lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Error{ErrorCode::kUnavailable, "cannot open " + path + ": " + std::strerror(errno)};
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Error{ErrorCode::kFailedPrecondition,
                 "another gpupool serve is using " + dir.string() + " (" + path + " is locked)"};
  }
  return Ok();  // fd stays open, and locked, for the life of the process
}

Result<std::pair<std::string, int>> ParseListen(const std::string& s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return InvalidArgument("--listen wants HOST:PORT, got '" + s + "'");
  const std::string port = s.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return InvalidArgument("bad port in '" + s + "'");
  }
  return std::make_pair(s.substr(0, colon), std::stoi(port));
}

}  // namespace

namespace {

// A new cluster into the empty store, from the configuration (or the demo cluster), and its
// secrets into the data directory.
Status BootstrapCore(const ServeOptions& o, DaemonConfig& config, const std::string& data_dir, ControlPlane& core,
                     const DataDirFiles& files) {
  namespace fs = std::filesystem;
  GP_RETURN_IF_ERROR(RefuseEmptyJournalIfBootstrapped(files));
  // An executor's nodes join from its backend (docs/design/executors.md).
  if (!o.demo && config.cluster.nodes().empty() && config.executors.empty()) {
    return InvalidArgument("a new data directory needs a cluster: pass --config FILE.yaml with nodes "
                           "(or executors) and tenants, or --demo");
  }
  const State cluster = o.demo ? DemoCluster() : std::move(config.cluster);
  const PriceList prices = o.demo && config.prices == PriceList() ? DemoPrices(cluster) : config.prices;
  Result<std::string> admin = core.Bootstrap(cluster, Now(), prices);
  if (!admin.ok()) return admin.error();
  // The secrets reach the disk before the journal that holds their hashes, the admin's as
  // admin.token.new: a crash before the flush leaves an empty journal and no admin.token, and
  // the next start bootstraps again with new secrets (data_dir.h).
  if (o.demo) {
    Result<std::string> tokens = IssueDemoTokens(core, Now());
    if (!tokens.ok()) return tokens.error();
    GP_RETURN_IF_ERROR(WriteSecret(fs::path(data_dir) / "demo-tokens.json", *tokens));
  }
  GP_RETURN_IF_ERROR(WriteSecret(files.admin_token_new, *admin + "\n"));
  GP_RETURN_IF_ERROR(core.Flush());
  GP_RETURN_IF_ERROR(PublishAdminToken(files));
  GP_RETURN_IF_ERROR(WriteSecret(files.bootstrapped, Rfc3339(Now()) + "\n"));
  Log("info", "bootstrapped a new cluster", {{"admin_token_file", files.admin_token.string()}});
  return Ok();
}

// The replica's id, made at its first start (store/journal.h, Candidate): the data directory's
// lock holds one process per id.
Result<std::string> ReplicaId(const std::filesystem::path& data_dir) {
  const std::filesystem::path p = data_dir / "replica-id";
  std::string id;
  if (std::ifstream in(p); in) std::getline(in, id);
  if (!id.empty()) return id;
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) id += kHex[rd() % 16];
  GP_RETURN_IF_ERROR(WriteSecret(p, id + "\n"));
  return id;
}

// The data directory's journal, opened (after --recover, if asked) and replayed; a new SQLite
// one is bootstrapped. A shared store (PostgreSQL) opens as a follower: the replica that takes
// the lease first bootstraps it (Serve's on_promote).
Result<std::unique_ptr<ControlPlane>> OpenCore(const ServeOptions& o, DaemonConfig& config, const std::string& data_dir,
                                               const StoreUrl& store) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "cannot create " + data_dir + ": " + ec.message()};
  GP_RETURN_IF_ERROR(LockDataDir(data_dir));
  // The journal holds every tenant's jobs and the tokens' hashes: the data directory is the
  // owner's only (0700, its files 0600), also one made by an older gpupool with 0755 and 0644.
  fs::permissions(data_dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "cannot make " + data_dir + " private: " + ec.message()};
  for (const fs::directory_entry& e : fs::directory_iterator(data_dir, ec)) {
    if (e.is_regular_file(ec) && (e.status(ec).permissions() & (fs::perms::group_all | fs::perms::others_all)) != fs::perms::none) {
      fs::permissions(e.path(), fs::perms::group_all | fs::perms::others_all, fs::perm_options::remove, ec);
    }
  }
  // The journal refuses to open when it is damaged or lost records (store/journal.h); --recover
  // first cuts it back to its last intact record, once an operator accepts the loss.
  const DataDirFiles files = StoreFiles(data_dir, store);
  const bool shared = store.kind == StoreUrl::Kind::kPostgres;
  if (o.recover) {
    if (shared) {
      return InvalidArgument("--recover cuts back SQLite journals; a damaged PostgreSQL store is restored from its "
                             "backup or its standby");
    }
    GP_RETURN_IF_ERROR(RecoverJournal(files));
  }
  Result<std::unique_ptr<Journal>> journal = OpenStore(store, data_dir, /*follower=*/shared);
  if (!journal.ok()) return journal.error();
  Log("info", "journal opened", {{"store", store.shown}});
  Result<std::unique_ptr<ControlPlane>> opened = ControlPlane::Open(std::move(*journal), config.scheduler);
  if (!opened.ok()) return opened.error();
  ControlPlane& core = **opened;
  core.SetTokenMaxDays(o.max_token_days);
  std::vector<std::string> issuers;
  for (const OidcIssuer& i : config.oidc) issuers.push_back(i.issuer);
  core.SetOidcIssuers(std::move(issuers));
  if (core.empty()) {
    if (!shared) GP_RETURN_IF_ERROR(BootstrapCore(o, config, data_dir, core, files));
  } else {
    GP_RETURN_IF_ERROR(PublishAdminToken(files));  // a crash between the bootstrap's flush and the rename
    // A data directory from before the marker existed gets it now.
    if (!fs::exists(files.bootstrapped)) GP_RETURN_IF_ERROR(WriteSecret(files.bootstrapped, Rfc3339(Now()) + "\n"));
    Log("info", "recovered state from the journal",
        {{"jobs", std::to_string(core.state().jobs().size())},
         {"tenants", std::to_string(core.state().tenants().size())},
         {"nodes", std::to_string(core.state().nodes().size())}});
  }

  return std::move(*opened);
}

// The configuration's burst: section (or the demo's) with its provider.
Status StartBurst(const ServeOptions& o, const DaemonConfig& config, ControlPlane& core) {
  BurstSettings burst = config.burst;
  if (o.demo && !burst.enabled()) burst = DemoBurst(core.state());
  if (burst.enabled() || burst.present) {  // a burst: section runs its provider, with tenants or not
    std::unique_ptr<Provider> provider;
    if (burst.provider == "command") {
      // The scripts run on the provider's own thread, never on the loop (a script may take
      // minutes); the core hands it the tenant's name with each request.
      provider = std::make_unique<AsyncProvider>(
          std::make_unique<CommandProvider>(core.state().catalogue(), burst.command));
    } else {
      auto sim = std::make_unique<SimulatedProvider>(core.state().catalogue(), burst.offers);
      sim->SkipSequence(core.burst_requests_seen());  // ids and names stay unique across restarts
      provider = std::move(sim);
    }
    GP_RETURN_IF_ERROR(core.EnableBurst(burst, std::move(provider)));
    Log("info", "burst to on-demand enabled", {{"provider", burst.provider}, {"tenants", std::to_string(burst.tenants.size())}});
  }

  return Ok();
}

// The listeners: the API's, and the agents' if asked; the port files and the start-up lines.
Result<std::unique_ptr<http::Server>> StartFrontEnd(const ServeOptions& o, const std::string& host, int want_port,
                                                    const std::string& data_dir, Loop& loop, Metrics& metrics,
                                                    const std::shared_ptr<http::TlsCredentials>& tls,
                                                    const DaemonConfig& config, http::Server*& server) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<http::Listener> listeners;
  http::Limits api_limits = o.http_limits;
  listeners.push_back({"api", host, want_port, api_limits, o.http_threads, {}, tls});
  if (!o.agent_listen.empty()) {
    Result<std::pair<std::string, int>> agents = ParseListen(o.agent_listen);
    if (!agents.ok()) return agents.error();
    // Agents are few and known: a smaller budget per source, the same bounds on every request.
    http::Limits agent_limits = api_limits;
    agent_limits.max_connections_per_source = std::min(agent_limits.max_connections_per_source, 64);
    if (!tls && !o.insecure_listen && !IsLoopback(agents->first)) {
      return InvalidArgument("--agent-listen " + o.agent_listen + " is not a loopback address and there is no TLS: give "
                             "--tls-cert and --tls-key, or --insecure-listen to serve plain HTTP there");
    }
    listeners.push_back({"agents", agents->first, agents->second, agent_limits, 1, {}, tls});
  }
  std::shared_ptr<OidcAuthenticator> oidc;
  if (!config.oidc.empty()) {
    OidcAuthenticator::Fetch fetch = o.oidc_fetch;
    if (!fetch) {
      fetch = [](const std::string& url, const std::string&) -> Result<std::string> {
        return Error{ErrorCode::kUnavailable, "this build fetches no URL (" + url + "); give a jwks_file"};
      };
    }
    oidc = std::make_shared<OidcAuthenticator>(config.oidc, std::move(fetch));
    for (const OidcIssuer& i : config.oidc) Log("info", "accepting OIDC tokens", {{"issuer", i.issuer}, {"audience", i.audience}});
    for (const std::string& e : oidc->LoadAll()) Log("warn", "an OIDC issuer's keys could not be loaded; retried on its next token", {{"error", e}});
  }
  std::shared_ptr<ConsoleAuth> console;
  const bool has_client = std::any_of(config.oidc.begin(), config.oidc.end(), [](const OidcIssuer& i) { return !i.client_id.empty(); });
  if (oidc && has_client && o.console_flow.authorize_url) {
    console = std::make_shared<ConsoleAuth>(oidc, o.console_flow, tls != nullptr, o.advertise_url);
  }
  listeners[0].handler = ApiHandler(loop, metrics, [&server, &metrics, n = listeners.size()] {
    if (server == nullptr) return;
    for (size_t i = 0; i < n; ++i) {
      const http::ListenerStats s = server->stats(i);
      metrics.SetConnections(i == 0 ? "api" : "agents", {s.open, s.accepted, s.refused, s.timed_out, s.rejected});
    }
  }, o.max_auth_failures, o.metrics_require_token || config.metrics_require_token, oidc, console);
  if (listeners.size() > 1) listeners[1].handler = AgentHandler(loop, metrics, o.max_auth_failures);
  Result<std::unique_ptr<http::Server>> started = http::Server::Start(std::move(listeners));
  if (!started.ok()) return started.error();
  server = started->get();
  const int port = server->port(0);
  {
    std::ofstream(fs::path(data_dir) / "port.tmp") << port << "\n";
    fs::rename(fs::path(data_dir) / "port.tmp", fs::path(data_dir) / "port", ec);
  }
  const std::string scheme = tls ? "https://" : "http://";
  const std::string url = scheme + host + ":" + std::to_string(port);
  LogFields fields = {{"url", url}, {"data_dir", data_dir},
                      {"tls", tls ? "on" : o.insecure_listen ? "off (--insecure-listen)" : "off (loopback only)"}};
  if (!o.agent_listen.empty()) {
    const std::string agent_url = scheme + ParseListen(o.agent_listen)->first + ":" + std::to_string(server->port(1));
    fields.emplace_back("agent_url", agent_url);
    std::ofstream(fs::path(data_dir) / "agent-port.tmp") << server->port(1) << "\n";
    fs::rename(fs::path(data_dir) / "agent-port.tmp", fs::path(data_dir) / "agent-port", ec);
  }
  Log("info", "gpupool serving", fields);
  if (o.demo) {
    std::cout << "gpupool demo is running at " << url << "\n"
              << "  console: open " << url << "/ and sign in with a token below\n"
              << "  tenant tokens: " << (fs::path(data_dir) / "demo-tokens.json").string() << "\n"
              << "  admin token:   " << (fs::path(data_dir) / "admin.token").string() << "\n"
              << "  try: GPUPOOL_URL=" << url << " GPUPOOL_TOKEN=$(cat "
              << (fs::path(data_dir) / "admin.token").string() << ") gpupool get jobs\n"
              << "  stop with Ctrl-C" << std::endl;
  }
  return started;
}

// HTTPS, or plain HTTP on loopback only (unless asked otherwise): tokens must not cross a
// network in the clear by default. Null: plain HTTP.
Result<std::shared_ptr<http::TlsCredentials>> OpenTls(const ServeOptions& o, const DaemonConfig& config,
                                                      const std::string& host, int want_port) {
  const std::string tls_cert = !o.tls_cert.empty() ? o.tls_cert : config.tls_cert;
  const std::string tls_key = !o.tls_key.empty() ? o.tls_key : config.tls_key;
  const std::string client_ca = !o.tls_client_ca.empty() ? o.tls_client_ca : config.tls_client_ca;
  if (tls_cert.empty() != tls_key.empty()) return InvalidArgument("TLS needs both a certificate and a key (--tls-cert, --tls-key)");
  if (tls_cert.empty() && !client_ca.empty()) {
    return InvalidArgument("a client CA (--tls-client-ca, tls: client_ca_file) needs TLS: give --tls-cert and --tls-key");
  }
  if (!tls_cert.empty()) {
    Result<std::shared_ptr<http::TlsCredentials>> tls = http::TlsCredentials::Load(tls_cert, tls_key, client_ca);
    if (tls.ok() && !client_ca.empty()) {
      Log("info", "node agents may authenticate with client certificates", {{"client_ca_file", client_ca}});
    }
    return tls;
  }
  if (!o.insecure_listen && !IsLoopback(host)) {
    return InvalidArgument("--listen " + host + ":" + std::to_string(want_port) + " is not a loopback address and there is "
                           "no TLS: give --tls-cert and --tls-key (or tls: in the configuration), or --insecure-listen to "
                           "serve plain HTTP there");
  }
  return std::shared_ptr<http::TlsCredentials>();
}

// How this process campaigns for a shared store's lease: its advertised URL (`listening` unless
// --advertise-url), its data directory's replica id, the lease.
Result<ReplicaOptions> ReplicaFor(const ServeOptions& o, const std::string& data_dir, const std::string& listening) {
  Result<std::string> id = ReplicaId(data_dir);
  if (!id.ok()) return id.error();
  ReplicaOptions replica;
  replica.candidate = {.url = !o.advertise_url.empty() ? o.advertise_url : listening, .id = *id, .lease_ms = o.lease_ms};
  Log("info", "replica of a shared store: campaigning for its lease",
      {{"url", replica.candidate.url}, {"id", *id}, {"lease_ms", std::to_string(o.lease_ms)}});
  return replica;
}

}  // namespace

Status Serve(const ServeOptions& o) {
  namespace fs = std::filesystem;
  ::umask(077);  // what the daemon creates (journal, snapshots, history, port files) is its own
  DaemonConfig config;
  if (!o.config_path.empty()) {
    Result<DaemonConfig> loaded = LoadDaemonConfig(o.config_path);
    if (!loaded.ok()) return loaded.error();
    config = std::move(*loaded);
  }
  if (o.demo && !o.config_path.empty() &&
      (!config.cluster.tenants().empty() || !config.cluster.nodes().empty())) {
    return InvalidArgument("--demo brings its own cluster; drop the tenants and nodes from --config");
  }
  const std::string data_dir = !o.data_dir.empty() ? o.data_dir : !config.data_dir.empty() ? config.data_dir : "gpupool-data";
  Result<std::pair<std::string, int>> listen =
      ParseListen(!o.listen.empty() ? o.listen : !config.listen.empty() ? config.listen : "127.0.0.1:8080");
  if (!listen.ok()) return listen.error();
  const auto& [host, want_port] = *listen;

  Result<std::shared_ptr<http::TlsCredentials>> tls_loaded = OpenTls(o, config, host, want_port);
  if (!tls_loaded.ok()) return tls_loaded.error();
  const std::shared_ptr<http::TlsCredentials> tls = *tls_loaded;
  Result<StoreUrl> store = ParseStoreUrl(!o.store.empty() ? o.store : config.store);
  if (!store.ok()) return store.error();
  Result<std::unique_ptr<ControlPlane>> opened = OpenCore(o, config, data_dir, *store);
  if (!opened.ok()) return opened.error();
  ControlPlane& core = **opened;
  core.SetHeartbeat(Duration::Millis(o.heartbeat_interval_ms), Duration::Millis(o.heartbeat_timeout_ms));
  const bool shared = store->kind == StoreUrl::Kind::kPostgres;
  // What only the leader runs: at once with a store of its own, on taking the lease with a
  // shared one.
  bool leader_started = false;
  auto start_leading = [&](ControlPlane& c) -> Status {
    if (c.empty()) GP_RETURN_IF_ERROR(BootstrapCore(o, config, data_dir, c, StoreFiles(data_dir, *store)));
    if (leader_started) return Ok();
    if (!o.demo && !o.simulate_executor) c.SetAgentExecutor(config.start_deadline);
    GP_RETURN_IF_ERROR(StartBurst(o, config, c));
    for (const ExecutorSettings& e : config.executors) {  // docs/design/executors.md
      Result<std::unique_ptr<executor::SlurmExecutor>> slurm = executor::SlurmExecutor::Start(e.slurm);
      if (!slurm.ok()) return slurm.error();
      c.AddExecutor(std::move(*slurm), e.gpu_flavors);
      Log("info", "executor started", {{"executor", e.slurm.name}, {"kind", "slurm"}, {"slurmrestd", e.slurm.url},
                                       {"partition", e.slurm.partition}});
    }
    leader_started = true;
    return Ok();
  };
  if (!shared) GP_RETURN_IF_ERROR(start_leading(core));

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGHUP, OnHangup);
  Metrics metrics;
  metrics.AfterCycle(core.state(), Now(), nullptr, 0);
  Loop loop(core, metrics, config.tick_ms, o.demo || o.simulate_executor);
  loop.SetSnapshots(o.snapshots);
  core.SetRetention(Duration::Seconds(o.retention_s));
  core.SetMaxFinishedInMemory(static_cast<size_t>(o.max_finished_jobs));

  http::Server* server = nullptr;  // set before the first request can reach /metrics
  Result<std::unique_ptr<http::Server>> started = StartFrontEnd(o, host, want_port, data_dir, loop, metrics, tls, config, server);
  if (!started.ok()) return started.error();
  if (shared) {
    Result<ReplicaOptions> replica = ReplicaFor(o, data_dir, (tls ? "https://" : "http://") + host + ":" +
                                                                 std::to_string(server->port(0)));
    if (!replica.ok()) return replica.error();
    replica->on_promote = start_leading;
    loop.SetReplica(std::move(*replica));
  }
  {
    std::optional<DemoTraffic> traffic;
    if (o.demo && o.demo_traffic) traffic.emplace(loop, g_stop);
    std::optional<TlsReloader> reloader;
    if (tls) reloader.emplace(tls, g_reload, g_stop);
    std::optional<HistoryScrubber> scrubber;
    if (o.history_scrub_s > 0 && store->kind == StoreUrl::Kind::kSqlite) {  // PostgreSQL checks its own pages
      scrubber.emplace(HistoryPath(StoreFiles(data_dir, *store).journal, {}), o.history_scrub_s, metrics, g_stop);
    }
    loop.Run(g_stop);
  }
  server->Stop();
  const Status s = core.Flush();
  Log("info", "gpupool stopped");
  if (!loop.ended().ok()) return loop.ended();
  return s;
}

}  // namespace gpupool
