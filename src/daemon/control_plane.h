// ControlPlane: the daemon's state machine, single-threaded, free of HTTP and threads so tests can
// drive it directly. It owns a JournaledState (everything the journal determines) and the
// journal, and holds beside them only how this process runs and what it has heard since it
// started. Every change is committed to the journaled state and staged as a journal record;
// Flush appends the staged records in one durable transaction (group commit). The server
// answers a request only after the Flush that covers it; if the journal fails, the journaled
// state is loaded afresh from the journal (so memory never runs ahead of disk) and those
// requests fail with 503.
//
// Scoping: every read and write goes through the caller's Principal; another tenant's job is
// "not found", never "forbidden", so ids leak nothing.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <vector>

#include "accounting/ledger.h"
#include "accounting/report.h"
#include "api/agent_protocol.h"
#include "api/auth.h"
#include "auth/oidc.h"
#include "burst/provider.h"
#include "daemon/change.h"
#include "daemon/config.h"
#include "daemon/job_history.h"
#include "daemon/journaled_state.h"
#include "executor/executor.h"
#include "policy/quota/quota.h"
#include "scheduler/config.h"
#include "scheduler/plan.h"
#include "store/journal.h"

namespace gpupool {

struct Reply {
  int status = 200;
  std::string body;  // JSON, unless content_type says otherwise
  std::string content_type = "application/json";
};

struct CallContext {
  const Principal* principal = nullptr;  // nullptr: not authenticated
  std::string remote;
  Time now;
};

class ControlPlane {
 public:
  // Replays the journal onto `initial` (the catalogue and nothing else), or, for an empty
  // journal, returns a core the caller bootstraps.
  static Result<std::unique_ptr<ControlPlane>> Open(std::unique_ptr<Journal> journal,
                                                  SchedulerConfig config);
  bool empty() const { return js_->empty(); }

  // First start: tenants, classes and nodes, journaled as configuration; and the bootstrap
  // admin token, whose secret is returned once.
  Result<std::string> Bootstrap(const State& config, Time now, const PriceList& prices = {});
  // A token for a named principal (the demo's tenant tokens).
  // `expires`: Time() for never (the bootstrap admin's and the demo's tokens).
  Result<std::string> IssueToken(const Principal& p, Time now, Time expires = Time());
  // API tokens expire after `expires_in_days` (default 90) of at most `max_days` (default 365).
  void SetTokenMaxDays(int64_t max_days) { token_max_days_ = max_days; }
  static constexpr int64_t kTokenDefaultDays = 90;
  // How stale a journaled last use may be (ControlPlane::Authenticate), and the longest an old
  // secret keeps working after a rotation.
  static constexpr Duration kLastUsedStep = Duration::Hours(1);
  static constexpr Duration kMaxRotationGrace = Duration::Hours(24 * 7);

  // The principal of an API token, noting its use (GET /v1/tokens shows it at once; Tick
  // journals it when it is an hour past the journaled last use, so a restart loses at most that).
  const Principal* Authenticate(const std::string& token, Time now);
  // The principal of a verified OIDC caller: the union of the issuer's mappings that name the
  // user or one of its groups (the widest role per tenant; cluster-admin above all), or
  // kPermissionDenied naming what is missing. Mappings to tenants that do not exist are skipped.
  Result<Principal> OidcPrincipal(const OidcIdentity& id) const;
  // The node agent a verified client certificate speaks for (http::Request::client_names): the
  // first of its names that is a node of the cluster, else its first name (which then
  // registers nothing). Role node-agent, for that node only.
  Principal CertificatePrincipal(const std::vector<std::string>& names) const;
  // The issuers `auth: oidc:` trusts (serve sets them): API mappings may name only these.
  void SetOidcIssuers(std::vector<std::string> issuers) { oidc_issuers_ = std::move(issuers); }
  // /v1/oidc-mappings (cluster admins, audited): the configuration's mappings (source "config")
  // and those made here (source "api", journaled), which add to them for their issuer.
  Reply ListOidcMappings(const CallContext& c) const;
  Reply CreateOidcMapping(const CallContext& c, const std::string& body);
  Reply DeleteOidcMapping(const CallContext& c, const std::string& id);

  Reply SubmitJob(const CallContext& c, const std::string& body, const std::string& idempotency_key);
  Reply GetJob(const CallContext& c, const std::string& id);
  // GET /v1/jobs?tenant&state&limit&cursor and GET /v1/audit?limit&cursor: newest first, a page
  // at a time with a next_cursor (api/page.h; docs/design/daemon.md, "Lists and pages"). Without
  // limit, the whole list. A page walks the ordered jobs (the audit log) back from the cursor,
  // so its cost grows with the page, and with the items that other filters or scopes skip.
  Reply ListJobs(const CallContext& c, const std::map<std::string, std::string>& query);
  Reply CancelJob(const CallContext& c, const std::string& id);
  Reply ListTenants(const CallContext& c);
  Reply GetTenant(const CallContext& c, const std::string& name);
  Reply CreateTenant(const CallContext& c, const std::string& body);
  Reply UpdateTenant(const CallContext& c, const std::string& name, const std::string& body);
  Reply DeleteTenant(const CallContext& c, const std::string& name);
  Reply ListPriorityClasses(const CallContext& c);
  Reply CreatePriorityClass(const CallContext& c, const std::string& body);
  // devices: each GPU with its mode, health, MIG slices and occupants (the cluster map).
  Reply ListNodes(const CallContext& c, bool devices = false);
  Reply GetNode(const CallContext& c, const std::string& name);
  // action: "cordon", "uncordon" or "drain" (cordon, and requeue the node's jobs).
  Reply NodeAction(const CallContext& c, const std::string& name, const std::string& action);
  // DELETE /v1/nodes/{name}: only a drained node that holds no work (409 otherwise).
  Reply DeleteNode(const CallContext& c, const std::string& name);
  Reply CreateToken(const CallContext& c, const std::string& body);
  Reply ListTokens(const CallContext& c);
  Reply RevokeToken(const CallContext& c, const std::string& id);
  // POST /v1/tokens/{id}/rotate {expires_in_days, grace_s}: a new secret for the same caller
  // (name, role, tenant, service account); the old one stops at once or after grace_s (at most
  // 7 days). Its tenant's admins, cluster admins, or the token itself may rotate it.
  Reply RotateToken(const CallContext& c, const std::string& id, const std::string& body);
  // Service accounts (/v1/tenants/{name}/service-accounts): a tenant's admins (cluster admins
  // for tenant-admin accounts) create, list and delete them and issue their tokens.
  Reply ListServiceAccounts(const CallContext& c, const std::string& tenant);
  Reply CreateServiceAccount(const CallContext& c, const std::string& tenant, const std::string& body);
  Reply DeleteServiceAccount(const CallContext& c, const std::string& tenant, const std::string& name);
  Reply CreateServiceAccountToken(const CallContext& c, const std::string& tenant, const std::string& name,
                                  const std::string& body);
  Reply ListAudit(const CallContext& c, const std::map<std::string, std::string>& query = {});

  // Reservations and maintenance windows (DESIGN.md §5). Creation books the flavor's calendar
  // and applies the event in the same loop turn: no double booking, however many requests race.
  Reply CreateReservation(const CallContext& c, const std::string& body);
  Reply ListReservations(const CallContext& c);
  Reply GetReservation(const CallContext& c, const std::string& id);
  Reply CancelReservation(const CallContext& c, const std::string& id);
  // GET /v1/availability: flavor with gpus and duration_s [and after] gives the earliest start;
  // flavor with start and end gives how many GPUs can still be reserved.
  Reply Availability(const CallContext& c, const std::map<std::string, std::string>& query);
  // GET /v1/calendar?flavor&start&end&step_s: capacity, guaranteed, reserved, maintenance, free.
  Reply CalendarView(const CallContext& c, const std::map<std::string, std::string>& query);
  Reply Summary(const CallContext& c);

  // Chargeback (DESIGN.md §8). GET /v1/usage?from&to&tenant&group_by&format: the ledger's
  // report, scoped to the caller's tenant; GET/PUT /v1/prices: the price list (PUT: admins).
  Reply Usage(const CallContext& c, const std::map<std::string, std::string>& query);
  Reply GetPrices(const CallContext& c);
  Reply ReconcileUsage(const CallContext& c, const std::map<std::string, std::string>& query);
  Reply SetPrices(const CallContext& c, const std::string& body);

  // Burst to on-demand (DESIGN.md §6; docs/design/burst.md). Call after Open (and Bootstrap):
  // the policies name tenants of the state. Each Tick then polls the provider for ready nodes
  // (they join as nodes dedicated to their tenant), plans (PlanBurst), provisions and releases.
  // `settings` are the configuration file's; offers and tenants changed through the API since
  // (journaled) take their place. Errors: a policy of an unknown tenant.
  Status EnableBurst(const BurstSettings& settings, std::unique_ptr<Provider> provider);
  // GET /v1/burst: the on-demand nodes and each tenant's spend in its budget window (scoped).
  Reply BurstView(const CallContext& c);
  // GET/PUT /v1/burst/settings (cluster admins): the offers and tenants' policies in force, in
  // the shape of the configuration's burst: section; a PUT replaces both from now on without a
  // restart (journaled "burst_settings" record, audited). The provider stays the file's.
  Reply GetBurstSettings(const CallContext& c);
  Reply SetBurstSettings(const CallContext& c, const std::string& body);
  const std::vector<BurstNode>& burst_fleet() const { return js_->fleet(); }
  // How many on-demand nodes were ever requested (journaled): a restarted simulated provider
  // numbers its requests after these.
  uint64_t burst_requests_seen() const { return js_->burst_requests_seen(); }

  // Node agents (docs/design/agent.md, "Protocol between the agent and the daemon"). POST
  // /v1/agents/register, POST /v1/agents/{node}/heartbeat, GET /v1/jobs/{id}/logs. Registered
  // agents (their GPUs' and MIG slices' UUIDs and layouts) and replicas' successful exits are
  // journaled and survive a restart; log tails are memory only.
  Reply RegisterAgent(const CallContext& c, const std::string& body);
  Reply AgentHeartbeat(const CallContext& c, const std::string& node, const std::string& body);
  Reply JobLogs(const CallContext& c, const std::string& id);
  void SetHeartbeat(Duration interval, Duration timeout);
  // Node agents run the jobs (control_plane_starts.cc): from the next Tick, a node without a registered
  // agent is not_ready, and a placement not started within `start_deadline` is withdrawn (the
  // job requeued with the cause, the node marked). Without this call (the simulated executor,
  // tests of the API alone) neither happens.
  void SetAgentExecutor(Duration start_deadline);

  // Executors (control_plane_executors.cc; docs/design/executors.md): a node pool that a backend
  // runs instead of node agents. Its nodes join from what the executor lists (labelled
  // gpupool.io/executor=NAME, the GPU type mapped to a flavor by `gpu_flavors`, else by name) and
  // follow its availability; each Tick maps the attempts it reports onto the jobs and tells it what
  // should run. Call after Open (and Bootstrap), on the leader.
  void AddExecutor(std::unique_ptr<executor::Executor> e, std::map<std::string, FlavorId> gpu_flavors);
  // The executor that runs the node's jobs: an executor's name, or "agent".
  std::string ExecutorOf(const Node& n) const;

  // One scheduling cycle at `now`, and the simulated executor: admitted jobs start, running jobs
  // end after their estimate (demo).
  void Tick(Time now, bool simulate_executor);

  // Appends staged records durably. On failure the core is rebuilt from the journal and the
  // error returned: callers answer 503 for everything since the last successful Flush. If the
  // journal cannot be read back either (the store is unreachable), the core is stale: memory may
  // be ahead of the store, so nothing may be served from it until Reload succeeds.
  Status Flush();
  // Drops every change since the last Flush and rebuilds from the journal (a handler threw
  // halfway through its change: nothing of that batch may reach the journal); stale, as Flush
  // leaves it, if the journal cannot be read back.
  void Abandon();
  // The state in memory may differ from the store's (a failed append whose rebuild failed too).
  bool stale() const { return stale_; }
  // Loads the journaled state afresh from the store: after the store came back (stale), or on
  // becoming the leader of a shared store (what the predecessor left). Clears stale on success.
  Status Reload();

  // --- replicas (docs/design/daemon.md, "Replicas") ---
  // A follower's catch-up: the records the leader appended since the last call are applied; if
  // the journal was compacted past them or one does not apply, the state is loaded afresh.
  // Returns how many records were applied; an error (the store unreachable) leaves the state
  // as it was, only older.
  Result<int64_t> CatchUp();
  // The epoch this process leads a shared store in (0: a store of its own): the agents' replies
  // carry it, and agents act on none older than the newest they saw.
  void SetEpoch(int64_t epoch) { epoch_ = epoch; }

  const State& state() const { return js_->state(); }
  const Ledger& ledger() const { return js_->ledger(); }
  const JobHistory& history() const { return js_->history(); }
  // Price lists over time, oldest first (a price change takes effect from a time on, and never
  // re-prices what was used before it).
  const PriceHistory& price_history() const { return js_->prices(); }
  // Idempotency keys are remembered this long after their submit (as payment APIs keep theirs
  // for a day); a retry after that makes a new job.
  static constexpr Duration kIdempotencyWindow = JournaledState::kIdempotencyWindow;
  size_t idempotency_keys() const { return js_->idempotency_keys(); }
  size_t staged() const { return js_->staged(); }
  const Plan& last_plan() const { return last_plan_; }
  int64_t cycles() const { return cycles_; }

  // --- snapshots (control_plane.cc, journaled_state_snapshot.cc; docs/design/daemon.md, "Snapshots") ---
  static constexpr int kSnapshotFormat = JournaledState::kSnapshotFormat;
  // A copy of everything a snapshot holds: taken on the loop (a memory copy, no encoding), then
  // encoded anywhere. REQUIRES: nothing staged (right after a Flush), so that the copy is the
  // state after the journal's last record.
  struct SnapshotCopy;
  std::shared_ptr<const SnapshotCopy> CopyForSnapshot() const;
  static int64_t SnapshotSeq(const SnapshotCopy& copy);
  // Thread-safe: reads only the copy.
  static Snapshot EncodeSnapshot(const SnapshotCopy& copy);
  // Records and record bytes appended since the last snapshot this core loaded or wrote.
  int64_t records_since_snapshot() const { return journal_->last_seq() - snapshot_seq_; }
  uint64_t bytes_since_snapshot() const { return bytes_since_snapshot_; }
  // The journal record of the snapshot this core loaded or was last told of (0: none).
  int64_t snapshot_seq() const { return snapshot_seq_; }
  // The snapshot at `seq` is durable (Journal::WriteSnapshot returned Ok): the journal drops the
  // records it covers (SnapshotDurable, then CompactThrough(seq)).
  Status SnapshotWritten(int64_t seq);
  // The same in parts, so that the loop drops the records a step at a time: the snapshot at
  // `seq` is durable (counting starts again), and the journal drops records 1..seq (each call
  // one move of their history and one delete). REQUIRES: a durable snapshot at `seq` or later.
  void SnapshotDurable(int64_t seq);
  Status CompactThrough(int64_t seq) { return journal_->Compact(seq); }
  Journal& journal() { return *journal_; }

  // --- retention (control_plane_archive.cc; docs/design/daemon.md, "Bounded memory") ---
  // Finished jobs leave memory this long after they finished (default an hour); the API serves
  // them from the store's history after that.
  void SetRetention(Duration retention);
  // And at most this many finished jobs stay in memory (default 20,000), the oldest leaving
  // first whatever the window: memory (and the snapshot a start loads) is bounded at any rate of
  // jobs, not only by rate x window.
  // REQUIRES: n >= 1.
  void SetMaxFinishedInMemory(size_t n);
  // How many finished jobs this core has archived (since it was opened, replay included).
  int64_t archived() const { return js_->archived(); }
  // At most this many jobs are archived per tick.
  static constexpr size_t kArchiveBatch = 10000;

 private:
  explicit ControlPlane(std::unique_ptr<Journal> journal, SchedulerConfig config);
  // After a failed append: the journaled state is loaded afresh from the journal, and what this
  // process remembers of what the journal no longer has is dropped.
  Status Rebuild();
  // Every durable change goes through here: JournaledState::Commit (checked, applied, staged),
  // then what this process remembers of what the change ended is dropped.
  Status Commit(const Change& c);
  // Retention's parts (control_plane_archive.cc): the ticks' archiving; an archived job as the
  // caller may see it (nullopt: none it may see); the archived jobs' usage intervals that
  // overlap [from, to).
  void ArchiveFinished(Time now);
  // An error (500): the store's history could not read it (damaged, or an I/O error), never
  // "no such job".
  Result<std::optional<nlohmann::json>> ArchivedJobView(const CallContext& c, uint64_t id, bool events) const;
  Result<std::vector<UsageInterval>> ArchivedUsage(Time from, Time to) const;
  // The job as the API shows it to `caller`, with its events or without (lists).
  nlohmann::json JobView(const Principal& caller, const Job& j, bool events, Time now) const;
  Status ApplyAndStage(const Event& e, const std::string& meta = "");
  void Audit(const CallContext& c, const std::string& action, const std::string& object);
  // Tick's part for tokens: the uses an hour past the journaled last use become token records.
  void JournalTokenUse();
  // A token's last use: the journaled one, or a later one this process has seen.
  Time LastUse(const TokenRecord& t) const;
  // The expiry a token request asks for (expires_in_days: 1 to the maximum; default 90).
  Result<Time> RequestedExpiry(const nlohmann::json& request, Time now) const;
  // A token issued for `p`, journaled and audited: its id, and what the reply shows of it (the
  // secret, once). Defined in control_plane_tokens.cc.
  struct Issued;
  Result<Issued> Issue(const CallContext& c, Principal p, const std::string& account, Time expires);
  Reply IssueAndShow(const CallContext& c, Principal p, const std::string& account, Time expires);
  // The tenant of a service-account route that the caller administers, or the error refusing it.
  Result<TenantId> AdministeredTenant(const CallContext& c, const std::string& name) const;
  // The service account `name` of that tenant, if the caller may manage it.
  Result<const ServiceAccount*> AdministeredAccount(const CallContext& c, const std::string& tenant,
                                                    const std::string& name) const;
  const Job* VisibleJob(const CallContext& c, const std::string& id) const;
  // A reservation the caller may see: its tenant's, or any maintenance window.
  const Reservation* VisibleReservation(const CallContext& c, const std::string& id) const;
  nlohmann::json ReservationView(const Reservation& r) const;
  // The tenant named `name` if it exists, is not deleted and the caller sees it.
  const Tenant* VisibleTenant(const CallContext& c, const std::string& name) const;
  // Non-admins see the nodes that run their tenant's work.
  bool SeesNode(const CallContext& c, const Node& n) const;
  // The tenant as the API shows it; usage against the guarantees in force (reservations
  // included) from `book`, job counts from JobCounts.
  nlohmann::json TenantView(const Tenant& t, const QuotaBook& book,
                            const std::map<TenantId, std::pair<int, int>>& counts,
                            const std::vector<GuaranteeCheck>& overcommits) const;
  nlohmann::json TenantView(const Tenant& t, Time now) const;
  // 409 with the shortfall when `t` (new or changed) raises guarantees above what can be
  // promised, unless the request allows it: then the overcommit is audited.
  Status CheckGuarantees(const CallContext& c, const Tenant& t, bool allow_overcommit);
  static std::map<TenantId, std::pair<int, int>> JobCounts(const State& s);
  nlohmann::json NodeView(const CallContext& c, const Node& n, bool detail, bool devices = false) const;
  nlohmann::json DevicesView(const CallContext& c, const Node& n) const;
  // A job holding part of a GPU: its id and tenant, or nulls when the caller may not see it.
  nlohmann::json OccupantView(const CallContext& c, JobId id) const;
  Status StageTenant(const Tenant& t);
  // Requeues every job with a replica on the node, whole gangs (JobLost: the lost time is
  // infrastructure's); returns how many. Drains, silent agents, health and burst releases.
  int RequeueJobsOn(NodeId id, Time now, RequeueCause cause, const std::string& detail);
  // Sets the node's condition (with `detail` as its reason), then RequeueJobsOn.
  void RequeueNode(NodeId id, NodeCondition to, Time now, RequeueCause cause, const std::string& detail);
  // Nodes whose agent has been silent longer than the timeout become unreachable.
  void CheckHeartbeats(Time now);
  // How long after its last heartbeat a silent node's replicas are surely stopped by their
  // shims: the lease (the heartbeat timeout), the longest grace of its jobs' classes, a margin.
  Duration FenceDeadline(NodeId id) const;
  // With agents as the executor (control_plane_starts.cc): ready nodes no agent registered for become
  // not_ready; placements not started by their deadline are withdrawn.
  void MarkNodesWithoutAgents(Time now);
  void CheckStartDeadlines(Time now);
  // Why `node` has not started its replicas of `job`, for the job's events and the node.
  std::string WhyNotStarted(const Job& job, NodeId node) const;
  // Parts of AgentHeartbeat (control_plane_agents.cc). Replica reports: job states, and the stop and
  // forget lists; `occupied` gets the (job, replica) keys the agent holds for the current
  // attempt or still runs for an old one (no start for those).
  Status AgentReplicas(const CallContext& c, NodeId node, const std::vector<ReplicaReport>& reports,
                       std::vector<ReplicaStop>& stop, std::vector<ReplicaForget>& forget,
                       std::set<std::pair<uint64_t, int>>& occupied);
  struct ReplicaLogs;
  // The log tails of a heartbeat that the daemon accepts, by (job, replica), each merged over
  // what is stored: only for a replica placed on `node` now, with the current attempt.
  std::map<std::pair<JobId, int>, ReplicaLogs> AgentLogs(NodeId node, const std::vector<LogTailReport>& logs) const;
  void AgentHealth(const CallContext& c, NodeId node, const std::vector<HealthReport>& events);
  // The target layouts of the node's MIG GPUs that differ from what the agent last reported;
  // `pending` gets those GPUs.
  std::vector<MigTarget> MigTargets(NodeId node, const AgentRecorded& a, std::set<int>& pending) const;
  // What the node should run and has not reported, except replicas on a MIG GPU in `pending`
  // and the jobs in `held` (an earlier attempt may still run).
  std::vector<ReplicaStart> StartList(NodeId node, const AgentRecorded& a,
                                      const std::set<std::pair<uint64_t, int>>& occupied,
                                      const std::set<int>& pending, const std::set<JobId>& held) const;
  // Why an earlier attempt of `job` may still run on some node, or nothing: a replica an agent
  // still reports (until it reports it gone, or its node has been silent past the lease, the
  // grace and the margin); after a daemon restart, for a job past its first attempt, an agent
  // that has not reported since (within the same bound).
  std::optional<std::string> EarlierAttemptMayRun(const Job& job, Time now);
  // Whether `node` has been silent past its lease, `grace` and the margin at `now`.
  bool SilentPastFence(NodeId node, Duration grace, Time now) const;
  // A heartbeat's replicas reported running on `node` replace what it reported before.
  void RecordRunning(NodeId node, std::map<std::pair<JobId, int>, int64_t> running);
  // One more replica counted as running on `node` (a start handed out).
  void NoteRunning(NodeId node, std::pair<JobId, int> key, int64_t attempt);
  // Why an admitted job on an agent's node may not start yet (EarlierAttemptMayRun), or nothing:
  // for the start deadline and the job's view.
  std::optional<std::string> StartHeldReason(const Job& job, Time now);
  // The margin FenceDeadline adds for the shims' polling, the kill and the clocks' drift.
  Duration FenceMargin() const;
  // Nodes the provider has ready join the cluster (journaled "burst_node"); what an
  // asynchronous provider failed at is handled as a synchronous one's errors are.
  void BurstJoin(Time now);
  // The daemon's BurstSteps (burst/carry_out.h, control_plane_burst.cc): journals the fleet's changes,
  // logs them; a failed provisioning (at once, or later through Failures) backs the tenant off
  // 30 s and is said in the job's pending reason (in this tick's BurstTick, after the cycle).
  class Burst;
  // The burst part of Tick; the journal records of the fleet ("burst_request", "burst_node").
  void BurstTick(Time now);
  // The file's provider with the last change's offers and tenants (or the file's): resolves the
  // policies' tenants (deleted ones are skipped) and gives the provider the offers.
  Status UseBurstInForce();
  // What a PUT body asks for, checked against the state and the fleet (nothing changes).
  Result<BurstSettings> CheckBurstSettings(const std::string& body) const;
  // The price list with each offered flavor's on-demand price filled in where the list has none.
  PriceHistory BillingPrices() const;

  struct ExecutorSlot {
    std::unique_ptr<executor::Executor> executor;
    std::map<std::string, FlavorId> flavors;      // the backend's GPU type -> flavor
    std::map<std::string, std::string> gpu_type;  // node -> its GPU type as the backend names it
    std::map<JobId, std::string> waiting;         // what the backend says of attempts it has not started
    std::set<std::string> refused;                // nodes not imported (logged once)
    int64_t round = 0;
    std::string error;
    int foreign_jobs = 0;
    // The jobs handed to the executor since the daemon started, with when last (for
    // GET /v1/usage/reconcile; forgotten after the accounting window).
    std::map<JobId, Time> handed;
    Time handed_pruned;
  };
  const ExecutorSlot* ExecutorFor(NodeId id) const;
  Result<FlavorId> ExecutorFlavor(const ExecutorSlot& slot, const std::string& type) const;
  // Tick's parts: what the executors saw (before the cycle), what they should run (after it).
  void ExecutorsObserve(Time now);
  // Hands each executor what it should run. Called by Flush once the tick's changes are durable:
  // a backend never acts on a decision (a preemption, an end) that a failed write takes back.
  void ExecutorsWant(Time now);
  void ExecutorNodes(ExecutorSlot& slot, const executor::Observation& obs, Time now);
  void ForeignGpus(NodeId id, const executor::NodeInfo& info, const std::string& prefix, Time now);
  void ExecutorAttempts(ExecutorSlot& slot, const executor::Observation& obs, Time now);

  std::unique_ptr<Journal> journal_;
  std::unique_ptr<JournaledState> js_;
  std::vector<ExecutorSlot> executors_;
  std::optional<Time> executors_due_;  // a tick ran at this time; its wants go out at the next good flush
  SchedulerConfig config_;
  // The burst settings in force: the file's, with the journal's last change over them.
  std::map<TenantId, BurstPolicy> burst_policies_;
  std::map<FlavorId, OnDemandOffer> burst_offers_;
  BurstSettings burst_file_;  // EnableBurst's: the configuration file's burst: section
  std::unique_ptr<Provider> provider_;  // null: no burst
  std::map<TenantId, Time> burst_retry_at_;   // after a failed provisioning: back off
  std::vector<std::string> release_retry_;    // nodes the provider failed to release
  // Failed provisionings since the last BurstTick, for their jobs' pending reasons (the cycle
  // rewrites the reasons, so they are added after it).
  std::vector<std::pair<JobId, std::string>> burst_errors_;
  // What this process has heard from a registered agent (the journaled part is
  // JournaledState::agents()). An agent known from the journal and not heard since this daemon
  // started has none: its silence counts from the first tick after the restart.
  struct AgentHeard {
    Time last_heartbeat;
    std::map<int, std::string> mig_error;  // GPU -> the agent's refusal of its target (logged once)
    bool beat = false;                     // a heartbeat (with its replica reports) came since this start
  };
  // Registration's parts (control_plane_agents.cc): the reported GPUs (and their MIG layouts) as GPUs
  // of `model`; a node that registers for the first time.
  static Status ReadRegisteredGpus(const GpuModel& model, const std::vector<GpuReport>& gpus, AgentRecorded& agent,
                                   std::vector<Gpu>& built);
  Status AddRegisteredNode(const CallContext& c, const RegisterRequest& r, FlavorId flavor, std::vector<Gpu> built);
  Status CheckKnownNode(const Node& n, FlavorId flavor, const std::vector<Gpu>& built) const;
  Result<NodeCondition> AfterAcceptance(const CallContext& c, NodeId id, bool passed, const std::string& output);
  struct ReplicaLogs {
    std::string out, err;  // the last 64 KiB the agent sent
  };
  std::map<NodeId, AgentHeard> heard_;
  // Replicas of the current attempt an agent has reported running (memory only: every
  // heartbeat reports them again); forgotten when the attempt ends.
  std::map<JobId, std::set<int>> started_;
  // What each agent reported running in its last heartbeat, by node, (job, replica) -> attempt;
  // and the same by job, (node, replica) -> attempt. A replica drained, preempted or lost away
  // stays here until its node reports it gone (or is silent past its lease and grace), and the
  // job's next attempt starts on no node until then, also where it went to another node: two
  // attempts of a replica are never alive at once (DESIGN.md §4). Memory only; after a restart,
  // re-attempts wait for every agent's first report (EarlierAttemptMayRun).
  std::map<NodeId, std::map<std::pair<JobId, int>, int64_t>> reported_running_;
  std::map<JobId, std::map<std::pair<NodeId, int>, int64_t>> running_where_;
  // When each admitted job's start was last held back for an earlier attempt: its start
  // deadline counts from then, so the node it waits on is not blamed.
  struct StartHeld {
    Time first, last;     // when the hold was first and last seen
    bool warned = false;  // held past grace + start deadline: logged once
  };
  std::map<JobId, StartHeld> start_held_;
  // Agents known from the journal that have not sent a heartbeat since this daemon started
  // (built on first use, only shrinks): re-attempts wait for them (EarlierAttemptMayRun).
  std::optional<std::set<NodeId>> unreported_;
  // A removed node's last heartbeat: its replicas count as fenced from it (SilentPastFence).
  std::map<NodeId, Time> removed_heard_;
  std::optional<Duration> start_deadline_;  // set: agents are the executor
  std::optional<Time> deadlines_from_;      // the first tick with agents as the executor
  std::map<JobId, std::map<int, ReplicaLogs>> logs_;
  Duration heartbeat_interval_ = Duration::Seconds(1);
  Duration heartbeat_timeout_ = Duration::Seconds(10);
  Plan last_plan_;
  int64_t cycles_ = 0;
  Duration retention_ = Duration::Hours(1);
  size_t max_finished_ = 20000;        // finished jobs in memory at most (SetMaxFinishedInMemory)
  int64_t snapshot_seq_ = 0;           // the snapshot loaded or last written
  bool stale_ = false;                 // memory may be ahead of the store (Flush)
  int64_t epoch_ = 0;                  // SetEpoch
  int64_t token_max_days_ = 365;       // SetTokenMaxDays
  std::map<std::string, Time> token_seen_;  // token id -> its last use seen by this process
  std::set<std::string> token_use_due_;     // tokens whose seen use is an hour past the journaled one
  std::vector<std::string> oidc_issuers_;   // SetOidcIssuers
  uint64_t bytes_since_snapshot_ = 0;  // record bytes appended since (by this process)
};

}  // namespace gpupool
