#include "daemon/server.h"

#include <httplib.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

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
#include <mutex>
#include <thread>

#include "api/decode.h"
#include "api/openapi.h"
#include "daemon/config.h"
#include "daemon/core.h"
#include "daemon/demo.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/web_assets.h"
#include "policy/calendar/calendar.h"
#include "model/demo_cluster.h"
#include "burst/sim_provider.h"
#include "store/journal.h"

namespace gpupool {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

Time Now() {
  return Time::FromMillis(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Work for the loop: runs on the loop thread; its reply is released once the batch is durable.
struct Task {
  std::function<Reply(DaemonCore&, Time)> run;
  std::promise<Reply> done;
};

class Loop {
 public:
  Loop(DaemonCore& core, Metrics& metrics, int tick_ms, bool executor, bool traffic)
      : core_(core), metrics_(metrics), tick_ms_(tick_ms), executor_(executor), traffic_(traffic) {}

  Reply Call(std::function<Reply(DaemonCore&, Time)> fn) {
    Task t{std::move(fn), {}};
    std::future<Reply> f = t.done.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return {503, ErrorBody({ErrorCode::kUnavailable, "shutting down"})};
      queue_.push_back(std::move(t));
    }
    cv_.notify_one();
    return f.get();
  }

  void Run() {
    auto next_tick = std::chrono::steady_clock::now();
    auto next_demo_job = next_tick;
    std::mt19937_64 rng(7);
    int64_t serial = 0;
    while (true) {
      std::deque<Task> batch;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_until(lock, next_tick, [&] { return !queue_.empty() || g_stop.load(); });
        batch.swap(queue_);
        if (g_stop) stopped_ = true;
      }
      const Time now = Now();
      std::vector<Reply> replies;
      replies.reserve(batch.size());
      for (Task& t : batch) {
        try {
          replies.push_back(t.run(core_, now));
        } catch (const std::exception& e) {  // a handler bug must not take the daemon down
          Log("error", "request handler threw", {{"what", e.what()}});
          replies.push_back({500, ErrorBody({ErrorCode::kInternal, "internal error"})});
        }
      }
      const auto start = std::chrono::steady_clock::now();
      if (start >= next_tick) {
        if (traffic_ && start >= next_demo_job) {
          SubmitDemoJob(rng, ++serial, now);
          next_demo_job = start + std::chrono::milliseconds(std::uniform_int_distribution<int>(1000, 4000)(rng));
        }
        const int64_t cycles = core_.cycles();
        core_.Tick(now, executor_);
        const bool ran = core_.cycles() != cycles;
        metrics_.AfterCycle(core_.state(), now, ran ? &core_.last_plan() : nullptr, SecondsSince(start));
        next_tick = std::chrono::steady_clock::now() + std::chrono::milliseconds(tick_ms_);
      }
      const size_t records = core_.staged();
      const auto flush_start = std::chrono::steady_clock::now();
      const Status flushed = core_.Flush();
      if (records) metrics_.ObserveFlush(records, SecondsSince(flush_start), flushed.ok());
      if (!flushed.ok()) Log("error", "journal append failed", {{"error", flushed.error().message}});
      for (size_t i = 0; i < batch.size(); ++i) {
        batch[i].done.set_value(
            flushed.ok() ? std::move(replies[i])
                         : Reply{503, ErrorBody({ErrorCode::kUnavailable,
                                                 "journal write failed: " + flushed.error().message})});
      }
      if (stopped_) break;
    }
  }

 private:
  void SubmitDemoJob(std::mt19937_64& rng, int64_t serial, Time now) {
    const DemoJob job = RandomDemoJob(rng, serial);
    Result<TenantId> t = core_.state().FindTenant(job.tenant);
    if (!t.ok()) return;
    const Principal demo{job.tenant + "-demo", Role::kMember, *t, ""};
    const Reply r = core_.SubmitJob({&demo, "demo", now}, job.body, "");
    if (r.status != 201) Log("warn", "demo submission refused", {{"reply", r.body}});
  }

  DaemonCore& core_;
  Metrics& metrics_;
  const int tick_ms_;
  const bool executor_, traffic_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stopped_ = false;  // guarded by mu_
};

std::string Bearer(const httplib::Request& req) {
  const std::string h = req.get_header_value("Authorization");
  return h.rfind("Bearer ", 0) == 0 ? h.substr(7) : "";
}

using CoreFn = std::function<Reply(DaemonCore&, const CallContext&, const httplib::Request&)>;

// Registers `fn` for METHOD PATH: it authenticates and runs on the loop thread, the reply goes
// out once durable, and the request is counted under its route.
class Router {
 public:
  Router(httplib::Server& srv, Loop& loop, Metrics& metrics) : srv_(srv), loop_(loop), metrics_(metrics) {}

  void Add(const std::string& method, const std::string& pattern, const std::string& route, CoreFn fn) {
    Loop* loop = &loop_;
    Metrics* metrics = &metrics_;
    auto handler = [loop, metrics, route, fn](const httplib::Request& req, httplib::Response& res) {
      const auto start = std::chrono::steady_clock::now();
      const std::string token = Bearer(req);
      const std::string remote = req.remote_addr;
      const Reply r = loop->Call([&](DaemonCore& core, Time now) {
        CallContext c{core.Authenticate(token), remote, now};
        // A node agent's credential opens the agent routes and nothing else.
        if (c.principal && c.principal->role == Role::kNodeAgent && route.rfind("/v1/agents/", 0) != 0) {
          return Reply{403, ErrorBody({ErrorCode::kPermissionDenied, "a node-agent token may only register and heartbeat its node"})};
        }
        return fn(core, c, req);
      });
      res.status = r.status;
      res.set_content(r.body, r.content_type);
      metrics->ObserveRequest(req.method + " " + route, r.status, SecondsSince(start));
    };
    if (method == "GET") srv_.Get(pattern, handler);
    if (method == "POST") srv_.Post(pattern, handler);
    if (method == "PATCH") srv_.Patch(pattern, handler);
    if (method == "PUT") srv_.Put(pattern, handler);
    if (method == "DELETE") srv_.Delete(pattern, handler);
  }

 private:
  httplib::Server& srv_;
  Loop& loop_;
  Metrics& metrics_;
};

void Routes(httplib::Server& srv, Loop& loop, Metrics& metrics) {
  using R = const httplib::Request&;
  using C = const CallContext&;
  srv.Get("/healthz", [](R, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  srv.Get("/v1/openapi.json", [](R, httplib::Response& res) {
    res.set_content(OpenApiDocument(), "application/json");
  });
  srv.Get("/metrics", [&metrics](R, httplib::Response& res) {
    res.set_content(metrics.Render(), "text/plain; version=0.0.4");
  });
  // The console: static files from memory. The policy lets the page load only its own script
  // and style and talk only to this daemon.
  for (const WebAsset& a : WebAssets()) {
    std::string pattern;
    for (char ch : a.url) pattern += ch == '.' ? std::string("\\.") : std::string(1, ch);
    srv.Get(pattern, [&a](R, httplib::Response& res) {
      res.set_header("Content-Security-Policy",
                     "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                     "img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Referrer-Policy", "no-referrer");
      res.set_header("Cache-Control", "no-cache");
      res.set_content(std::string(a.bytes), std::string(a.content_type));
    });
  }
  Router r(srv, loop, metrics);
  const std::string id = "([^/]+)";
  r.Add("GET", "/v1/summary", "/v1/summary", [](DaemonCore& c, C ctx, R) { return c.Summary(ctx); });
  r.Add("POST", "/v1/jobs", "/v1/jobs", [](DaemonCore& c, C ctx, R req) {
    return c.SubmitJob(ctx, req.body, req.get_header_value("Idempotency-Key"));
  });
  r.Add("GET", "/v1/jobs/" + id, "/v1/jobs/{id}", [](DaemonCore& c, C ctx, R req) { return c.GetJob(ctx, req.matches[1]); });
  r.Add("DELETE", "/v1/jobs/" + id, "/v1/jobs/{id}", [](DaemonCore& c, C ctx, R req) { return c.CancelJob(ctx, req.matches[1]); });
  r.Add("GET", "/v1/tenants", "/v1/tenants", [](DaemonCore& c, C ctx, R) { return c.ListTenants(ctx); });
  r.Add("POST", "/v1/tenants", "/v1/tenants", [](DaemonCore& c, C ctx, R req) { return c.CreateTenant(ctx, req.body); });
  r.Add("GET", "/v1/tenants/" + id, "/v1/tenants/{name}", [](DaemonCore& c, C ctx, R req) { return c.GetTenant(ctx, req.matches[1]); });
  r.Add("PATCH", "/v1/tenants/" + id, "/v1/tenants/{name}", [](DaemonCore& c, C ctx, R req) {
    return c.UpdateTenant(ctx, req.matches[1], req.body);
  });
  r.Add("DELETE", "/v1/tenants/" + id, "/v1/tenants/{name}", [](DaemonCore& c, C ctx, R req) { return c.DeleteTenant(ctx, req.matches[1]); });
  r.Add("GET", "/v1/priority-classes", "/v1/priority-classes", [](DaemonCore& c, C ctx, R) { return c.ListPriorityClasses(ctx); });
  r.Add("POST", "/v1/priority-classes", "/v1/priority-classes", [](DaemonCore& c, C ctx, R req) {
    return c.CreatePriorityClass(ctx, req.body);
  });
  r.Add("GET", "/v1/tokens", "/v1/tokens", [](DaemonCore& c, C ctx, R) { return c.ListTokens(ctx); });
  r.Add("POST", "/v1/tokens", "/v1/tokens", [](DaemonCore& c, C ctx, R req) { return c.CreateToken(ctx, req.body); });
  r.Add("DELETE", "/v1/tokens/" + id, "/v1/tokens/{id}", [](DaemonCore& c, C ctx, R req) { return c.RevokeToken(ctx, req.matches[1]); });
  r.Add("GET", "/v1/nodes", "/v1/nodes", [](DaemonCore& c, C ctx, R req) {
    return c.ListNodes(ctx, req.get_param_value("detail") == "devices");
  });
  r.Add("GET", "/v1/nodes/" + id, "/v1/nodes/{name}", [](DaemonCore& c, C ctx, R req) { return c.GetNode(ctx, req.matches[1]); });
  r.Add("DELETE", "/v1/nodes/" + id, "/v1/nodes/{name}", [](DaemonCore& c, C ctx, R req) { return c.DeleteNode(ctx, req.matches[1]); });
  for (const char* action : {"cordon", "uncordon", "drain"}) {
    const std::string a = action;
    r.Add("POST", "/v1/nodes/" + id + "/" + a, "/v1/nodes/{name}/" + a, [a](DaemonCore& c, C ctx, R req) {
      return c.NodeAction(ctx, req.matches[1], a);
    });
  }
  r.Add("POST", "/v1/reservations", "/v1/reservations", [](DaemonCore& c, C ctx, R req) {
    return c.CreateReservation(ctx, req.body);
  });
  r.Add("GET", "/v1/reservations", "/v1/reservations", [](DaemonCore& c, C ctx, R) { return c.ListReservations(ctx); });
  r.Add("GET", "/v1/reservations/" + id, "/v1/reservations/{id}", [](DaemonCore& c, C ctx, R req) {
    return c.GetReservation(ctx, req.matches[1]);
  });
  r.Add("DELETE", "/v1/reservations/" + id, "/v1/reservations/{id}", [](DaemonCore& c, C ctx, R req) {
    return c.CancelReservation(ctx, req.matches[1]);
  });
  // Query parameters as a map (the last value of a repeated key wins).
  const auto query = [](R req) {
    std::map<std::string, std::string> q;
    for (const auto& [k, v] : req.params) q[k] = v;
    return q;
  };
  r.Add("GET", "/v1/jobs", "/v1/jobs", [query](DaemonCore& c, C ctx, R req) { return c.ListJobs(ctx, query(req)); });
  r.Add("GET", "/v1/audit", "/v1/audit", [query](DaemonCore& c, C ctx, R req) { return c.ListAudit(ctx, query(req)); });
  r.Add("GET", "/v1/availability", "/v1/availability", [query](DaemonCore& c, C ctx, R req) {
    return c.Availability(ctx, query(req));
  });
  r.Add("GET", "/v1/calendar", "/v1/calendar", [query](DaemonCore& c, C ctx, R req) {
    return c.CalendarView(ctx, query(req));
  });
  r.Add("GET", "/v1/usage", "/v1/usage", [query](DaemonCore& c, C ctx, R req) { return c.Usage(ctx, query(req)); });
  r.Add("POST", "/v1/agents/register", "/v1/agents/register", [](DaemonCore& c, C ctx, R req) {
    return c.RegisterAgent(ctx, req.body);
  });
  r.Add("POST", "/v1/agents/" + id + "/heartbeat", "/v1/agents/{node}/heartbeat", [](DaemonCore& c, C ctx, R req) {
    return c.AgentHeartbeat(ctx, req.matches[1], req.body);
  });
  r.Add("GET", "/v1/jobs/" + id + "/logs", "/v1/jobs/{id}/logs", [](DaemonCore& c, C ctx, R req) { return c.JobLogs(ctx, req.matches[1]); });
  r.Add("GET", "/v1/burst", "/v1/burst", [](DaemonCore& c, C ctx, R) { return c.BurstView(ctx); });
  r.Add("GET", "/v1/burst/settings", "/v1/burst/settings", [](DaemonCore& c, C ctx, R) { return c.GetBurstSettings(ctx); });
  r.Add("PUT", "/v1/burst/settings", "/v1/burst/settings", [](DaemonCore& c, C ctx, R req) { return c.SetBurstSettings(ctx, req.body); });
  r.Add("GET", "/v1/prices", "/v1/prices", [](DaemonCore& c, C ctx, R) { return c.GetPrices(ctx); });
  r.Add("PUT", "/v1/prices", "/v1/prices", [](DaemonCore& c, C ctx, R req) { return c.SetPrices(ctx, req.body); });
  srv.set_error_handler([](R req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ErrorCode code = ErrorCode::kInvalidArgument;
    std::string msg = "bad request";
    const bool writes = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
    if (res.status == 400 && writes && !req.has_header("Content-Length")) msg = EmptyBodyMessage(req.method, req.path);
    if (res.status == 413) code = ErrorCode::kResourceExhausted, msg = "request body too large";
    if (res.status == 404) code = ErrorCode::kNotFound, msg = "no such route";
    if (res.status == 405) msg = "method not allowed";
    res.set_content(ErrorBody({code, msg}), "application/json");
  });
  srv.set_exception_handler([](R, httplib::Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content(ErrorBody({ErrorCode::kInternal, "internal error"}), "application/json");
  });
}

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

Status Serve(const ServeOptions& o) {
  namespace fs = std::filesystem;
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

  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "cannot create " + data_dir + ": " + ec.message()};
  GP_RETURN_IF_ERROR(LockDataDir(data_dir));
  Result<std::unique_ptr<Journal>> journal = OpenSqliteJournal((fs::path(data_dir) / "journal.db").string());
  if (!journal.ok()) return journal.error();
  Result<std::unique_ptr<DaemonCore>> opened = DaemonCore::Open(std::move(*journal), config.scheduler);
  if (!opened.ok()) return opened.error();
  DaemonCore& core = **opened;
  // Written once the bootstrap's journal is durable: from then on an empty journal is damage
  // (deleted, truncated, another file), never a new cluster. Without it, an admin.token beside
  // an empty journal is a crash during the bootstrap, which is safe to do again.
  const fs::path bootstrapped = fs::path(data_dir) / "bootstrapped";
  if (core.empty() && fs::exists(bootstrapped)) {
    return FailedPrecondition("the journal " + (fs::path(data_dir) / "journal.db").string() +
                              " is empty or missing, but this data directory held a cluster (" + bootstrapped.string() +
                              "): refusing to start a new cluster over it. Restore the journal from a backup, or "
                              "move the data directory away to start afresh");
  }
  if (core.empty()) {
    if (!o.demo && config.cluster.nodes().empty()) {
      return InvalidArgument("a new data directory needs a cluster: pass --config FILE.yaml with nodes "
                             "and tenants, or --demo");
    }
    const State cluster = o.demo ? DemoCluster() : std::move(config.cluster);
    const PriceList prices = o.demo && config.prices == PriceList() ? DemoPrices(cluster) : config.prices;
    Result<std::string> admin = core.Bootstrap(cluster, Now(), prices);
    if (!admin.ok()) return admin.error();
    // The secrets reach the disk before the journal that holds their hashes: a crash between
    // the two leaves an empty journal, and the next start bootstraps again with new secrets.
    if (o.demo) {
      Result<std::string> tokens = IssueDemoTokens(core, Now());
      if (!tokens.ok()) return tokens.error();
      GP_RETURN_IF_ERROR(WriteSecret(fs::path(data_dir) / "demo-tokens.json", *tokens));
    }
    GP_RETURN_IF_ERROR(WriteSecret(fs::path(data_dir) / "admin.token", *admin + "\n"));
    GP_RETURN_IF_ERROR(core.Flush());
    GP_RETURN_IF_ERROR(WriteSecret(bootstrapped, Rfc3339(Now()) + "\n"));
    Log("info", "bootstrapped a new cluster", {{"admin_token_file", (fs::path(data_dir) / "admin.token").string()}});
  } else {
    // A data directory from before the marker existed gets it now.
    if (!fs::exists(bootstrapped)) GP_RETURN_IF_ERROR(WriteSecret(bootstrapped, Rfc3339(Now()) + "\n"));
    Log("info", "recovered state from the journal",
        {{"jobs", std::to_string(core.state().jobs().size())},
         {"tenants", std::to_string(core.state().tenants().size())},
         {"nodes", std::to_string(core.state().nodes().size())}});
  }

  core.SetHeartbeat(Duration::Millis(o.heartbeat_interval_ms), Duration::Millis(o.heartbeat_timeout_ms));
  if (!o.demo && !o.simulate_executor) core.SetAgentExecutor(config.start_deadline);
  BurstSettings burst = config.burst;
  if (o.demo && !burst.enabled()) burst = DemoBurst(core.state());
  if (burst.enabled() || burst.present) {  // a burst: section runs its provider, with tenants or not
    std::unique_ptr<Provider> provider;
    if (burst.provider == "command") {
      CommandProviderConfig cc = burst.command;
      cc.tenant_name = [&core](TenantId t) { return core.state().tenant(t).name; };
      provider = std::make_unique<CommandProvider>(core.state().catalogue(), std::move(cc));
    } else {
      auto sim = std::make_unique<SimulatedProvider>(core.state().catalogue(), burst.offers);
      sim->SkipSequence(core.burst_requests_seen());  // ids and names stay unique across restarts
      provider = std::move(sim);
    }
    GP_RETURN_IF_ERROR(core.EnableBurst(burst, std::move(provider)));
    Log("info", "burst to on-demand enabled", {{"provider", burst.provider}, {"tenants", std::to_string(burst.tenants.size())}});
  }

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  Metrics metrics;
  metrics.AfterCycle(core.state(), Now(), nullptr, 0);
  Loop loop(core, metrics, config.tick_ms, o.demo || o.simulate_executor, o.demo && o.demo_traffic);
  httplib::Server srv;
  srv.set_payload_max_length(o.max_body_bytes);
  srv.set_tcp_nodelay(true);  // small JSON replies must not wait for delayed ACKs
  // Each keep-alive connection holds an HTTP thread while it lasts: closing it after 100
  // requests lets connections beyond the pool size take turns (httplib's default, 5, makes
  // clients reconnect all the time).
  srv.set_keep_alive_max_count(100);
  // httplib listens with a backlog of 5, which drops SYNs when many clients connect at once (a
  // 1 s retransmit each). Linux lets a second listen() on the socket raise it.
  socket_t listen_fd = INVALID_SOCKET;
  srv.set_socket_options([&listen_fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd = sock;
  });
  const int threads = o.http_threads;
  srv.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  Routes(srv, loop, metrics);
  const int port = want_port == 0 ? srv.bind_to_any_port(host) : (srv.bind_to_port(host, want_port) ? want_port : -1);
  if (port < 0) return Error{ErrorCode::kUnavailable, "cannot listen on " + host + ":" + std::to_string(want_port)};
  if (listen_fd != INVALID_SOCKET) (void)::listen(listen_fd, SOMAXCONN);
  {
    std::ofstream(fs::path(data_dir) / "port.tmp") << port << "\n";
    fs::rename(fs::path(data_dir) / "port.tmp", fs::path(data_dir) / "port", ec);
  }
  const std::string url = "http://" + host + ":" + std::to_string(port);
  Log("info", "gpupool serving", {{"url", url}, {"data_dir", data_dir}});
  if (o.demo) {
    std::cout << "gpupool demo is running at " << url << "\n"
              << "  console: open " << url << "/ and sign in with a token below\n"
              << "  tenant tokens: " << (fs::path(data_dir) / "demo-tokens.json").string() << "\n"
              << "  admin token:   " << (fs::path(data_dir) / "admin.token").string() << "\n"
              << "  try: GPUPOOL_URL=" << url << " GPUPOOL_TOKEN=$(cat "
              << (fs::path(data_dir) / "admin.token").string() << ") gpupool get jobs\n"
              << "  stop with Ctrl-C" << std::endl;
  }
  std::thread http([&] { srv.listen_after_bind(); });
  loop.Run();
  srv.stop();
  http.join();
  const Status s = core.Flush();
  Log("info", "gpupool stopped");
  return s;
}

}  // namespace gpupool
