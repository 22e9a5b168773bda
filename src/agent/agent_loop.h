// Agent: the node agent's loop. It registers the node with the daemon and then heartbeats,
// reporting the replicas it runs (through an Executor), their log tails and the GPUs' health
// events (from a GpuProbe), and applies what each reply asks: start, stop, forget. The agent
// pulls; the daemon never calls it. The contract is docs/design/agent.md, "Protocol between the
// agent and the daemon".
//
// Replicas are keyed "JOB-REPLICA" in the executor ("12-0"). The daemon sends the command as an
// argv list (execvp semantics); the executor runs `/bin/sh -c STRING`, so the argv is quoted into
// `exec 'arg0' 'arg1' ...` (ShellCommandFor). A replica that cannot be started (bad device UUID,
// bad environment, fork failure) is reported as exited with code 127 and the reason as its stderr
// tail, so that the daemon fails it instead of asking again forever.
//
// Attempts: every start carries the daemon's attempt number, which the agent keeps with the
// replica and sends back in every report, log and matching stop/forget, so that a replica left
// from an earlier attempt of the same job (requeued and placed here again) is never taken for
// the new one. A start for a replica key that still holds another attempt waits (the daemon
// stops and forgets the old one first).
//
// MIG: a reply may list target layouts ("mig": [{"gpu": 0, "layout": "1g.10gb@0,3g.40gb@4"}]).
// The agent applies one (GpuProbe::ApplyMigLayout) only when AgentOptions::allow_mig_changes is
// set and none of its replicas that still run uses that GPU (else it waits and asks again at the
// next reply). The apply runs on a MigWorker thread (mig_worker.h), so heartbeats keep flowing
// while GPUs are re-partitioned; no start may use a GPU while it is, and a start naming one
// waits (the daemon sends it again). Without the flag, or when the probe fails, the agent
// reports the refusal in "mig_errors" of the following heartbeats, for as long as the daemon
// asks. Every heartbeat carries the MIG GPUs' current instances ("gpus"), as registration does,
// so the daemon learns the new MIG UUIDs.
//
// Rediscovery (agent_rediscover.cc): every AgentOptions::rediscover_interval, after each MIG
// apply, and right after a replica with devices exits non-zero, the agent reads its GPUs again.
// A changed MIG layout or MIG UUID is reported in "gpus"; a GPU UUID that is no longer seen is a
// "gpu_lost" health event, and a MIG device that disappeared under a replica a "device_lost"
// one (the daemon drains the node and requeues its jobs: an infrastructure failure). The exit of
// a replica whose device was lost (or whose GPU had a drain-class health event) is reported
// only once a heartbeat carrying the loss has been accepted, so the daemon never fails the job
// for it. A GPU UUID replaced at the same index makes the agent register again (new UUIDs) after
// that heartbeat. A start naming a device the agent does not see waits and triggers a
// rediscovery.
//
// Ownership and fencing (docs/design/agent.md, "Owning and fencing replicas"): every replica runs
// under a shim (spawn.h) with a state file, so a new agent finds what an earlier one started
// (Executor::Recover) and reports it in its first heartbeat; the daemon answers which to keep
// (the stale ones get a stop). Each accepted registration or heartbeat renews the node's lease:
// the lease file holds the steady-clock time the request was sent plus the daemon's `lease_ms`.
// The shims stop their replicas by themselves once it has passed, whatever the agent is doing
// (dead, stopped, cut off); such an exit is reported with "fenced": true and requeues the job.
// Starts carry attempts; a start older than the newest attempt seen for that replica is refused.
// A start waits while a replica told to stop still holds one of its devices.
//
// Sandbox: with AgentOptions::users, a job runs as its tenant's user; an agent running as root
// refuses a tenant without one, and runs a tenant as root only if allow_root lists it ("*":
// every tenant). Device nodes of GPUs not granted (AgentOptions::device_nodes) are hidden.
//
// Fault injection (FakeProbe only): when AgentOptions::fault_file is set, each HeartbeatOnce reads
// the file and truncates it. One fault a line:
//   xid GPU CODE | ecc GPU COUNT | row_remap GPU | row_remap_pending GPU | gpu_lost GPU |
//   temp GPU CELSIUS | lose_heartbeats SECONDS | gpu_gone GPU | mig_delay MS
// The probe faults reach the health list of the same heartbeat. gpu_gone removes the GPU from
// the fake (FakeProbe::RemoveGpu: the next rediscovery finds it lost); mig_delay makes each MIG
// apply take MS milliseconds (FakeProbe::SetMigDelay). lose_heartbeats stops sending
// (as if the network were cut) until SECONDS have passed; replicas keep running and their exits
// are reported once heartbeats resume. Unknown or malformed lines are logged and skipped.
//
// Thread-safety: one thread calls everything except Stop(), which any thread (or a signal
// handler, through Run's own handler) may call. The MigWorker's thread shares only the probe
// with it, through probe_mu_ (the loop try-locks it and never waits for a MIG change).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/executor.h"
#include "agent/gpu_probe.h"
#include "api/agent_protocol.h"
#include "core/result.h"
#include "core/time.h"
#include "model/catalogue.h"

namespace httplib {
class Client;
}

namespace gpupool {

class FakeProbe;
class MigWorker;

// One log record: {"level": "info"|"warn"|"error", "msg": "...", "node": NAME, ...fields}. The
// default sink adds "ts_ms" (wall clock, ms since the epoch, as the daemon's logs do) and writes
// one JSON line to stderr.
using AgentLog = std::function<void(const nlohmann::json& record)>;
AgentLog StderrJsonLog();

struct AgentOptions {
  // http(s)://host[:port][/prefix], or host:port; several, comma-separated, for a daemon's
  // replicas: the agent follows the leader's 307s and tries the next URL when one is silent.
  std::string server_url;
  std::string token;               // bearer token ("" sends none)
  std::string ca_file;             // https: a PEM file trusted besides the system's certificates
  // https: a client certificate (PEM) and its key the agent authenticates with instead of, or
  // besides, a token; the daemon's --tls-client-ca signed it and it names this node.
  std::string client_cert, client_key;
  std::string node;                // the node's name
  std::string acceptance_command;  // "": none; else run once before registering
  Duration acceptance_timeout = Duration::Minutes(10);
  std::string fault_file;  // "": none; requires a FakeProbe
  // 0: the daemon's heartbeat_interval_ms (1 s until it answers).
  Duration heartbeat_interval = Duration::Millis(0);
  Duration shutdown_grace = Duration::Seconds(30);  // for replicas never asked to stop
  Duration register_backoff_initial = Duration::Seconds(1);
  Duration register_backoff_max = Duration::Seconds(30);
  std::vector<std::string> labels;  // sent at registration
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  // Let the daemon's MIG layouts be applied to the GPUs (--allow-mig-changes). Off: refused and
  // reported.
  bool allow_mig_changes = false;
  // How often the agent reads its GPUs again to find GPUs lost, UUIDs changed and MIG layouts
  // changed outside gpupool (--rediscover-interval-s). 0: only after its own MIG changes (no
  // periodic rediscovery, none after a failed exit or for a start naming an unknown device).
  Duration rediscover_interval = Duration::Seconds(30);
  AgentLog log;  // empty: StderrJsonLog()
  // Tenant name -> the user its jobs run as ("*": any other tenant).
  std::map<std::string, RunAs> users;
  std::set<std::string> allow_root;  // tenants that may run as root ("*": all)
  // GPU index -> its device node (/dev/nvidia0); the nodes of GPUs a job was not granted are
  // hidden from it. Empty: none hidden (CUDA_VISIBLE_DEVICES only).
  std::map<uint32_t, std::string> device_nodes;
};

class Agent {
 public:
  // InvalidArgument for a bad URL, an empty or malformed node name, a negative interval, or a
  // fault file without a FakeProbe. The probe and executor must outlive the agent.
  static Result<std::unique_ptr<Agent>> Create(AgentOptions options, GpuProbe& probe,
                                               Executor& executor);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs the acceptance command once (later calls do nothing): `/bin/sh -c CMD` with stderr
  // merged into stdout and every GPU visible; killed after acceptance_timeout. Register calls it
  // when it has not run yet.
  void RunAcceptance();

  // POST /v1/agents/register with what Discover sees. Errors: kUnavailable when the server did
  // not answer or answered 5xx (worth retrying), else the server's refusal (409: kConflict, ...)
  // or the probe's error.
  Status Register();

  // One heartbeat at `now` (the same monotonic clock for every call): reaps exits, applies the
  // fault file, sends the report (registering first when the last good heartbeat is older than
  // the daemon's heartbeat timeout), and applies the reply. A 404 re-registers and sends again.
  // On a failed send the health events are kept for the next one. Ok while heartbeats are
  // suspended by lose_heartbeats (nothing is sent).
  Status HeartbeatOnce(Time now);

  // Acceptance, registration (retried with backoff while the server does not answer; a refusal
  // ends it with 1), then a heartbeat every interval until Stop(), SIGINT or SIGTERM; then every
  // replica still running gets SIGTERM and, after its grace, SIGKILL. Returns the exit code:
  // 0 after a requested stop, 1 when registration was refused.
  int Run();
  void Stop() { stop_.store(true); }

  // For tests and logs.
  bool registered() const { return registered_; }
  const std::string& condition() const { return condition_; }
  Duration heartbeat_interval() const;
  std::vector<std::string> replicas() const;  // keys of the replicas not yet forgotten
  bool heartbeats_suspended(Time now) const;
  const std::optional<AcceptanceReport>& acceptance_result() const { return acceptance_; }
  // Whether a MIG layout is being applied to GPU `gpu` (submitted, and its result or the GPUs
  // as they are after it not yet taken).
  size_t held_starts() const { return start_held_.size(); }  // starts waiting, as last sent
  bool mig_applying(uint32_t gpu) const {
    return mig_applying_.count(gpu) > 0 || mig_applied_.count(gpu) > 0;
  }

 private:
  struct Replica {
    std::string job;
    int64_t index = 0;
    int64_t attempt = 0;               // the daemon's attempt number, from the start
    std::vector<std::string> devices;  // GPU or MIG UUIDs (CUDA_VISIBLE_DEVICES)
    bool exited = false;
    bool stopping = false;  // a stop was applied (logged once)
    ExitInfo exit;
    std::string start_error;  // set when Start failed (reported as exit 127)
    bool start_error_sent = false;
    bool exit_sent = false;    // a heartbeat reporting the exit was accepted
    bool device_lost = false;  // a device it used disappeared or failed (drain-class event)
    bool loss_sent = false;    // a heartbeat carrying that loss was accepted: the exit may go
    // It failed with devices: its exit waits for a rediscovery and a health poll that look for
    // a lost device (both skipped while a MIG apply holds the probe), then goes unless
    // device_lost holds it.
    bool exit_unchecked = false;
    // (size, mtime ns) of stdout and stderr when last sent; -1: never.
    int64_t out_size = -1, out_mtime = -1, err_size = -1, err_mtime = -1;
  };
  struct Url {
    std::string origin;  // scheme://host:port
    std::string prefix;  // "" or "/path"
  };
  // What a heartbeat body claimed, applied once the daemon accepted it.
  struct Sent {
    std::vector<std::pair<std::string, Replica>> log_marks;
    std::vector<std::string> held;   // device_lost replicas reported (exits held back)
    std::vector<std::string> exits;  // replicas reported exited
    size_t health = 0;  // the first `health` of pending_health_ (only appended to until the ack)
  };
  struct Reply {
    int status = 0;  // 0: no reply
    std::string body;
    std::string error;     // transport error or the server's message
    std::string location;  // a redirect's
  };

  Agent(AgentOptions options, std::vector<Url> servers, GpuProbe& probe, Executor& executor, FakeProbe* fake);
  static Result<Url> ParseServerUrl(const std::string& text);
  // Talks to `u` from the next request on (a new connection, the same timeouts and token).
  void Connect(const Url& u);
  Reply PostOnce(const std::string& path, const std::string& body);
  // A reply of the daemon's epoch `epoch` (none: a daemon without replicas) may be acted on: it
  // is not older than the newest epoch seen. A deposed leader's reply is an error.
  Status CheckEpoch(const char* what, std::optional<int64_t> epoch);
  void Log(const char* level, const std::string& msg,
           nlohmann::json fields = nlohmann::json::object());
  Reply Post(const std::string& path, const std::string& body);
  static Error ReplyToError(const std::string& what, const Reply& r);

  void ReapExits();
  void ApplyFaultFile(Time now);
  void PollHealthEvents();
  HeartbeatRequest BuildHeartbeat(Sent& sent);
  void AckHeartbeat(const Sent& sent);
  void ApplyReply(const HeartbeatReply& reply);
  void StartReplica(const ReplicaStart& s);
  // Whether a start may go ahead: not an attempt older than one seen, not a replica here already.
  bool StartWanted(const ReplicaStart& s, const std::string& key);
  // The launch of a start (its environment, user, limits); an error when it cannot run here.
  Result<LaunchSpec> LaunchSpecFor(const ReplicaStart& s, const std::string& key, std::string& tenant);
  // Starts `spec`, the device nodes it was not granted hidden; "" or why it did not start.
  std::string Launch(const ReplicaStart& s, LaunchSpec& spec, const std::string& tenant);
  void StopReplica(const ReplicaStop& s);
  void ForgetReplica(const ReplicaForget& s);
  void ApplyMig(const MigTarget& m);
  // Records (and logs, once per distinct text) why GPU `gpu` is not given `layout`.
  void MigRefused(uint32_t gpu, const std::string& layout, const std::string& why);
  // Whether a replica that still runs uses GPU `g` or one of its MIG devices.
  bool GpuBusy(const GpuInfo& g) const;
  // Collects the MIG applies the worker finished.
  void TakeMigResults();
  // Rediscovery (agent_rediscover.cc).
  bool RediscoveryDue(Time now);
  void Rediscover(Time now);
  // Compares `seen` with gpus_, reports and marks what was lost, then makes it gpus_.
  void TakeDiscovery(std::vector<GpuInfo> seen);
  void MarkDeviceLost(Replica& r, const std::string& device, const std::string& why);
  // GPU `index` in gpus_, or the GPU that has `device` (its UUID or a MIG UUID); null if none.
  const GpuInfo* GpuAt(uint32_t index) const;
  const GpuInfo* GpuOfDevice(const std::string& device) const;
  // Why a start with these devices must wait ("" if it need not).
  std::string StartBlocked(const std::vector<std::string>& devices);
  void Shutdown();
  // Takes over what an earlier agent on this state directory started (once, from Create).
  void RecoverReplicas();
  // After an accepted registration or heartbeat sent at `sent` (steady clock).
  void RenewLease(Time sent, std::optional<int64_t> lease_ms);
  // Whose user a start for `tenant` runs as; an error text when it may not run here.
  Result<std::optional<RunAs>> UserFor(const std::string& tenant) const;
  bool StopRequested() const;
  // Sleeps up to d in small steps; false if a stop was requested.
  bool SleepFor(Duration d);

  AgentOptions options_;
  std::vector<Url> servers_;  // as given; url_ is one of them or the leader a 307 named
  size_t server_ = 0;         // the one of servers_ tried last
  Url url_;
  int64_t io_timeout_ms_ = 15000;
  int64_t epoch_seen_ = 0;  // the newest daemon epoch a reply carried
  GpuProbe& probe_;
  Executor& executor_;
  FakeProbe* fake_;                                   // the probe when it is a FakeProbe, else null
  const Catalogue catalogue_ = Catalogue::BuiltIn();  // MIG profile names of the GPUs' model
  std::unique_ptr<httplib::Client> http_;

  bool acceptance_ran_ = false;
  std::optional<AcceptanceReport> acceptance_;
  bool registered_ = false;
  std::string condition_;
  Duration server_interval_ = Duration::Seconds(1);
  Duration server_timeout_ = Duration::Seconds(10);
  std::optional<Time> last_contact_;  // last good heartbeat since the last registration
  std::optional<Time> lost_until_;    // lose_heartbeats
  std::map<std::string, Replica> replicas_;
  std::vector<HealthReport> pending_health_;  // polled, not yet delivered
  std::vector<GpuInfo> gpus_;  // the last Discover (registration, or a rediscovery)
  std::map<uint32_t, MigRefusalReport> mig_errors_;  // by GPU
  std::map<uint32_t, std::string> mig_waiting_;    // by GPU: the layout waiting for idle (logged)
  std::set<uint32_t> mig_applying_;                // GPUs the worker applies a layout to
  std::set<uint32_t> mig_applied_;  // GPUs whose MIG UUIDs we changed since the last Discover
  std::optional<Time> next_rediscover_;
  bool rediscover_now_ = false;
  std::set<std::string> lost_uuids_;  // GPU UUIDs reported lost (once each)
  bool reregister_after_ack_ = false;  // a GPU UUID changed: register once the loss is delivered
  std::map<std::string, std::string> start_held_;  // replica key -> why its start waits (logged)
  SystemInfo system_;  // the driver's versions, read with each discovery at registration
  std::optional<Time> lease_until_;  // steady clock; unset: no lease yet
  bool lease_expiry_logged_ = false;
  std::map<std::string, int64_t> newest_attempt_;  // replica key -> the newest attempt seen
  std::atomic<bool> stop_{false};
  // Shared with the MigWorker's thread (see the file comment); declared last so the worker is
  // joined before anything it uses goes.
  std::mutex probe_mu_;
  std::unique_ptr<MigWorker> mig_worker_;
};

// Single-quotes one argument for /bin/sh: 'it'\''s'.
std::string ShellQuote(std::string_view arg);
// The /bin/sh -c string that runs argv as execvp would: "exec 'a' 'b' ..." (without `exec` when
// argv[0] starts with '-', which some shells' exec would read as an option). `exports` are set
// first with `export K='V';`. InvalidArgument for an empty argv, a NUL byte or a bad name.
Result<std::string> ShellCommandFor(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& exports = {});

}  // namespace gpupool
