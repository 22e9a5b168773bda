// PlanBurst and OnDemandDeadlines: the planner (docs/design/burst.md, "What the planner decides").
#include "policy/burst/burst.h"

#include <algorithm>
#include <tuple>

#include "policy/burst/internal.h"

namespace gpupool {
namespace {

using namespace burst_internal;

// "12.50": micros as currency units, rounded half up to the cent.
std::string Money(int64_t micros) {
  const int64_t cents = micros / 10'000 + (micros % 10'000 >= 5'000 ? 1 : 0);
  const int64_t frac = cents % 100;
  return std::to_string(cents / 100) + (frac < 10 ? ".0" : ".") + std::to_string(frac);
}

// Free room on one on-demand node (live, in flight, or planned in this call), and what using it
// longer costs: a job placed there starts at `from` and the node is paid for until `paid_until`
// (then its idle tail); a job that ends later extends that at `gpus_billed` x `price`.
struct Room {
  int gpus = 0;
  int64_t cpu = -1, mem = -1;  // -1: not tracked, any demand fits
  Time from, paid_until;
  int64_t gpus_billed = 0, price = 0;
  NodeId node;  // live nodes only: the deadline the scheduler gets
};

Room OfferRoom(const OnDemandOffer& o) {
  return {o.gpus_per_node, o.cpu_milli > 0 ? o.cpu_milli : -1,
          o.memory_mib > 0 ? o.memory_mib : -1};
}

Room FreeRoom(const Node& n) {
  Room r{0, n.cpu_milli > 0 ? n.cpu_milli - n.cpu_used : -1,
         n.memory_mib > 0 ? n.memory_mib - n.memory_used : -1};
  for (const Gpu& g : n.gpus) {
    r.gpus += (g.mode == GpuMode::kWhole || g.dynamic) && g.healthy && g.idle();
  }
  return r;
}

// One job's gang: `replicas` replicas of `gpus` whole GPUs and host resources each, expected to
// run for `use`.
struct Need {
  int replicas = 0;
  int gpus = 1;
  int64_t cpu = 0, mem = 0;
  bool one_node = false;  // a required topology: on-demand nodes are each their own domain
  Duration use;
};

int ReplicasIn(const Room& r, const Need& n) {
  int64_t k = r.gpus / n.gpus;
  if (r.cpu >= 0 && n.cpu > 0) k = std::min(k, r.cpu / n.cpu);
  if (r.mem >= 0 && n.mem > 0) k = std::min(k, r.mem / n.mem);
  return static_cast<int>(std::max<int64_t>(k, 0));
}

// Takes room for k replicas; returns what running them there adds to the node's cost.
int64_t Take(Room& r, const Need& n, int k) {
  if (k == 0) return 0;
  r.gpus -= k * n.gpus;
  if (r.cpu >= 0) r.cpu -= k * n.cpu;
  if (r.mem >= 0) r.mem -= k * n.mem;
  const Time end = r.from + n.use;
  if (end <= r.paid_until) return 0;
  const int64_t extra = r.paid_until.is_never() ? 0 : CostMicros(r.gpus_billed, r.price, end - r.paid_until);
  r.paid_until = end;
  return extra;
}

// Places as many replicas of the gang as `rooms` hold, first fit, taking the room: first the
// rooms already paid for long enough, then the others in order. Returns how many, and adds what
// the longer use of the rooms costs to `extra`. Under a topology constraint all go on one room,
// or none.
int Fit(std::vector<Room>& rooms, const Need& n, Int128& extra) {
  std::vector<size_t> order(rooms.size());
  for (size_t i = 0; i < rooms.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(),
                        [&](size_t i) { return rooms[i].from + n.use <= rooms[i].paid_until; });
  if (n.one_node) {
    for (size_t i : order) {
      if (ReplicasIn(rooms[i], n) < n.replicas) continue;
      extra += Take(rooms[i], n, n.replicas);
      return n.replicas;
    }
    return 0;
  }
  int placed = 0;
  for (size_t i : order) {
    const int k = std::min(n.replicas - placed, ReplicasIn(rooms[i], n));
    extra += Take(rooms[i], n, k);
    placed += k;
  }
  return placed;
}

// The new nodes a gang asks for.
struct Ask {
  int per_node = 0, nodes = 0;  // replicas per node; nodes
  int64_t gpus = 0;             // all GPUs of those nodes
  Int128 cost = 0;              // their expected cost, idle tails included, and what the gang's
                                // longer use of rooms already there adds
};

// What one tenant holds on demand, less the nodes released by this decision.
struct TenantFleet {
  Time window_start;
  int64_t spent = 0;     // in the window, every node of the tenant
  Int128 committed = 0;  // expected further cost of the nodes that stay
  int64_t gpus = 0;      // on live and in-flight nodes that stay
  std::map<FlavorId, std::vector<Room>> rooms;
};

// The jobs on one live node: the latest expected end (Never for a job without an estimate), and
// whether one of them is inside the run the budget was charged for (a finite end still ahead).
struct OnNode {
  Time latest_end;
  bool charged = false;
};

class Planner {
 public:
  Planner(const State& s, const std::map<TenantId, BurstPolicy>& policies,
          const std::map<FlavorId, OnDemandOffer>& offers, const std::vector<BurstNode>& fleet,
          Time now, bool explain)
      : s_(s), policies_(policies), offers_(offers), fleet_(fleet), now_(now), explain_(explain) {}

  BurstDecision Run() {
    AccountFleet();
    for (const Job* job : Candidates()) Consider(*job);
    for (const auto& [t, tf] : tenants_) {
      for (const auto& [f, rooms] : tf.rooms) {
        for (const Room& r : rooms) {
          if (r.node.valid() && r.price > 0) out_.deadlines[r.node] = Deadline(r.paid_until);
        }
      }
    }
    return std::move(out_);
  }

 private:
  TenantFleet& Tenant(TenantId t) {
    auto [it, added] = tenants_.try_emplace(t);
    if (added) {
      const auto p = policies_.find(t);
      const Duration period = p == policies_.end() ? Duration::Hours(24) : p->second.period;
      it->second.window_start = BudgetWindowStart(now_, period);
      it->second.spent = SpentMicros(fleet_, t, it->second.window_start, now_);
    }
    return it->second;
  }

  // A node paid for until `paid` takes jobs that end by then; one whose jobs' end is unknown
  // (a job without an estimate) takes none: the budget cannot pay for them.
  Time Deadline(Time paid) const { return paid.is_never() ? now_ : std::max(paid, now_); }

  // A job's expected use of on-demand capacity: its estimate, at least an hour; infinite
  // without an estimate.
  static Duration ExpectedUse(const Job* job) {
    const Duration est = job == nullptr ? Duration() : job->spec.estimated_duration;
    return est.is_infinite() ? est : std::max(est, Duration::Hours(1));
  }

  const BurstPolicy* Policy(TenantId t) const {
    const auto it = policies_.find(t);
    return it == policies_.end() ? nullptr : &it->second;
  }
  Duration IdleTimeout(TenantId t) const {
    const BurstPolicy* p = Policy(t);
    return p == nullptr ? Duration() : p->idle_timeout;
  }
  // What a node of `gpus` at `price` costs from `from` until it is paid until `paid`, and its
  // idle tail after that.
  Int128 Commitment(int64_t gpus, int64_t price, Time from, Time paid, TenantId t) const {
    if (paid.is_never()) return gpus > 0 && price > 0 ? kMaxMicros : 0;
    const Time release = paid + IdleTimeout(t);
    return release > from ? CostMicros(gpus, price, release - from) : 0;
  }

  void AccountFleet();
  void AccountLive(const BurstNode& b, const OnNode& jobs);
  void AccountComing(const BurstNode& b);
  std::vector<const Job*> Candidates() const;
  void Consider(const Job& job);
  void Refuse(JobId job, std::string why) {
    if (explain_) out_.reasons.emplace_back(job, std::move(why));
  }
  std::string Unfit(const Job& job, const Need& need, const OnDemandOffer& offer) const;
  std::string OverLimit(const Job& job, const Ask& ask, const OnDemandOffer& offer);
  const std::string& FlavorName(FlavorId f) const { return s_.catalogue().model(f).name; }

  const State& s_;
  const std::map<TenantId, BurstPolicy>& policies_;
  const std::map<FlavorId, OnDemandOffer>& offers_;
  const std::vector<BurstNode>& fleet_;
  const Time now_;
  const bool explain_;
  std::map<TenantId, TenantFleet> tenants_;
  std::map<FlavorId, int> nodes_in_use_;  // live and in flight, all tenants
  BurstDecision out_;
};

void Planner::AccountFleet() {
  std::vector<const BurstNode*> live, coming;
  for (const BurstNode& b : fleet_) {
    if (b.live()) live.push_back(&b);
    if (b.in_flight()) coming.push_back(&b);
  }
  std::sort(live.begin(), live.end(), [](auto* a, auto* b) { return a->node < b->node; });
  std::sort(coming.begin(), coming.end(), [](auto* a, auto* b) {
    return std::tie(a->requested, a->request_id) < std::tie(b->requested, b->request_id);
  });
  std::map<NodeId, OnNode> on_node;
  for (JobId id : s_.active()) {
    const Job& job = *s_.FindJob(id);
    const Time end = job.ExpectedEnd();
    for (const ReplicaPlacement& p : job.placement) {
      const auto [it, added] = on_node.try_emplace(p.node, OnNode{end});
      if (!added) it->second.latest_end = std::max(it->second.latest_end, end);
      it->second.charged = it->second.charged || (now_ < end && !end.is_never());
    }
  }
  for (const BurstNode* b : live) {
    const auto it = on_node.find(b->node);
    AccountLive(*b, it == on_node.end() ? OnNode{Time::Never(), false} : it->second);
  }
  for (const BurstNode* b : coming) AccountComing(*b);
}

// Releases a live node when it was idle for the idle timeout (at once for a tenant without a
// policy), or when its tenant's budget is spent and no job on it is inside the run it was
// charged for (a release waits for such a job, up to its expected end); otherwise counts the
// node as staying: paid until its jobs' latest expected end (idle: since it went idle), then
// its idle tail.
void Planner::AccountLive(const BurstNode& b, const OnNode& jobs) {
  GP_CHECK(b.node.value() < s_.nodes().size()) << "burst node " << b.request_id;
  const Node& node = s_.node(b.node);
  TenantFleet& tf = Tenant(b.tenant);
  const BurstPolicy* p = Policy(b.tenant);
  const bool idle = Idle(node);
  const bool broke = p != nullptr && b.micros_per_gpu_hour > 0 && tf.spent >= p->budget_micros;
  const Time idle_since = std::max(b.last_busy, *b.ready);
  if ((broke && !jobs.charged) || (idle && now_ - idle_since >= IdleTimeout(b.tenant))) {
    out_.release.push_back(b.node);
    if (b.micros_per_gpu_hour > 0) out_.deadlines[b.node] = now_;
    return;
  }
  tf.gpus += b.gpus;
  ++nodes_in_use_[b.flavor];
  const Time paid = idle ? idle_since : std::max(jobs.latest_end, now_);
  tf.committed += Commitment(b.gpus, b.micros_per_gpu_hour, now_, paid, b.tenant);
  if (b.micros_per_gpu_hour > 0) out_.deadlines[b.node] = Deadline(paid);
  if (!node.schedulable()) return;
  Room room = FreeRoom(node);
  room.from = now_;
  room.paid_until = paid;
  room.gpus_billed = b.gpus;
  room.price = b.micros_per_gpu_hour;
  room.node = b.node;
  tf.rooms[b.flavor].push_back(room);
}

// A node on its way: expected ready after the offer's delay, paid for the run of the job it was
// requested for, then its idle tail.
void Planner::AccountComing(const BurstNode& b) {
  TenantFleet& tf = Tenant(b.tenant);
  const auto offer = offers_.find(b.flavor);
  Room room = offer == offers_.end() ? Room{} : OfferRoom(offer->second);
  room.gpus = b.gpus;
  room.from = std::max(now_, b.requested + (offer == offers_.end() ? Duration()
                                                                    : offer->second.provisioning_delay));
  const Duration use = ExpectedUse(s_.FindJob(b.for_job));
  room.paid_until = use.is_infinite() ? Time::Never() : room.from + use;
  room.gpus_billed = b.gpus;
  room.price = b.micros_per_gpu_hour;
  tf.gpus += b.gpus;
  tf.committed += Commitment(b.gpus, b.micros_per_gpu_hour, room.from, room.paid_until, b.tenant);
  tf.rooms[b.flavor].push_back(room);
  ++nodes_in_use_[b.flavor];
}

// Pending jobs of tenants with a policy, on a flavor of the policy, past the policy's wait;
// highest priority first, then longest waiting, then id.
std::vector<const Job*> Planner::Candidates() const {
  std::vector<const Job*> out;
  for (JobId id : s_.pending()) {
    const Job& job = *s_.FindJob(id);
    const BurstPolicy* p = Policy(job.spec.tenant);
    if (p == nullptr || now_ - job.submitted <= p->max_wait) continue;
    if (job.spec.reservation.valid()) continue;  // runs in its reservation only, never on demand
    const FlavorId f = job.spec.shape.flavor;
    if (std::find(p->flavors.begin(), p->flavors.end(), f) == p->flavors.end()) continue;
    out.push_back(&job);
  }
  const auto key = [this](const Job* j) {
    return std::make_tuple(-s_.priority_class(j->spec.priority_class).value, j->submitted, j->id);
  };
  std::sort(out.begin(), out.end(), [&](const Job* a, const Job* b) { return key(a) < key(b); });
  return out;
}

// One candidate: covered by rooms there or coming (charged what its longer use of them costs),
// or given new nodes, or refused with a reason; within the provider's capacity and the tenant's
// GPU limit and budget.
void Planner::Consider(const Job& job) {
  const FlavorId f = job.spec.shape.flavor;
  const auto offer_it = offers_.find(f);
  if (offer_it == offers_.end()) {
    Refuse(job.id, "burst: no on-demand offer for " + FlavorName(f));
    return;
  }
  const OnDemandOffer& offer = offer_it->second;
  const ReplicaShape& shape = job.spec.shape;
  Need need{
      .replicas = job.spec.replicas,
      .gpus = std::max<int>(shape.gpus, 1),
      .cpu = shape.cpu_milli,
      .mem = shape.memory_mib,
      .one_node = job.spec.topology.required && job.spec.topology.level != TopologyLevel::kNone,
      .use = ExpectedUse(&job)};
  TenantFleet& tf = Tenant(job.spec.tenant);
  std::vector<Room>& rooms = tf.rooms[f];
  std::string refusal = Unfit(job, need, offer);
  if (!refusal.empty()) {
    Refuse(job.id, std::move(refusal));
    return;
  }
  std::vector<Room> trial = rooms;
  Need rest = need;  // the replicas that need new nodes
  Ask ask;
  rest.replicas -= Fit(trial, need, ask.cost);
  if (rest.replicas > 0) {
    ask.per_node = ReplicasIn(OfferRoom(offer), need);  // > 0: Unfit checked
    ask.nodes = (rest.replicas + ask.per_node - 1) / ask.per_node;
    ask.gpus = int64_t{ask.nodes} * offer.gpus_per_node;
    const Time ready = now_ + offer.provisioning_delay;
    ask.cost += Commitment(ask.gpus, offer.micros_per_gpu_hour, ready, ready + need.use, job.spec.tenant);
  }
  refusal = OverLimit(job, ask, offer);
  if (!refusal.empty()) {
    Refuse(job.id, std::move(refusal));
    return;
  }
  rooms = std::move(trial);
  tf.committed += ask.cost;
  if (ask.nodes == 0) return;  // capacity is there or coming
  out_.provision.push_back({.tenant = job.spec.tenant,
                            .flavor = f,
                            .nodes = ask.nodes,
                            .gpus_per_node = offer.gpus_per_node,
                            .for_job = job.id});
  tf.gpus += ask.gpus;
  nodes_in_use_[f] += ask.nodes;
  for (int left = rest.replicas; left > 0;) {  // what the new nodes leave free
    Room r = OfferRoom(offer);
    r.from = r.paid_until = now_ + offer.provisioning_delay;
    r.gpus_billed = offer.gpus_per_node;
    r.price = offer.micros_per_gpu_hour;
    const int k = std::min(left, ask.per_node);
    Take(r, need, k);
    left -= k;
    rooms.push_back(r);
  }
}

// Why no on-demand node of the offer could ever hold the job, or "".
std::string Planner::Unfit(const Job& job, const Need& need, const OnDemandOffer& offer) const {
  const std::string flavor = FlavorName(offer.flavor);
  if (job.spec.shape.kind != ShapeKind::kWholeGpus) {
    return "burst: on-demand nodes have whole GPUs only; MIG and fractional shapes do not burst";
  }
  if (need.use.is_infinite() && offer.micros_per_gpu_hour > 0) {
    return "burst: the job has no duration estimate, so what it would cost on demand cannot be "
           "checked against the budget";
  }
  std::vector<std::string> labels = offer.labels;
  labels.emplace_back(kOnDemandLabel);
  for (const std::string& l : s_.tenant(job.spec.tenant).required_labels) {
    if (std::find(labels.begin(), labels.end(), l) == labels.end()) {
      return "burst: on-demand " + flavor + " nodes lack the required label " + l;
    }
  }
  std::sort(labels.begin(), labels.end());
  if (!Matches(job.spec.node_selector, labels)) {
    return "burst: on-demand " + flavor + " nodes do not match the job's node_selector " +
           Describe(job.spec.node_selector);
  }
  const int per_node = ReplicasIn(OfferRoom(offer), need);
  if (per_node == 0) {
    return "burst: one replica does not fit an on-demand " + flavor + " node (" +
           std::to_string(offer.gpus_per_node) + " GPUs)";
  }
  const int nodes = (need.replicas + per_node - 1) / per_node;
  if (need.one_node && nodes > 1) {
    return "burst: the gang needs " + std::to_string(nodes) + " on-demand " + flavor +
           " nodes but must run in one topology domain";
  }
  return "";
}

// Why taking the rooms and new nodes of `ask` now would break the provider's capacity, the
// tenant's GPU limit or its budget, or "".
std::string Planner::OverLimit(const Job& job, const Ask& ask, const OnDemandOffer& offer) {
  const int in_use = nodes_in_use_[offer.flavor];
  if (ask.nodes > 0 && in_use + ask.nodes > offer.max_nodes) {
    return "burst capacity: " + std::to_string(in_use) + " of " + std::to_string(offer.max_nodes) +
           " on-demand " + FlavorName(offer.flavor) + " nodes in use, this job needs " +
           std::to_string(ask.nodes) + " more";
  }
  const BurstPolicy& p = *Policy(job.spec.tenant);
  TenantFleet& tf = Tenant(job.spec.tenant);
  if (ask.nodes > 0 && tf.gpus + ask.gpus > p.max_gpus) {
    return "burst limit: " + std::to_string(tf.gpus) + " of " + std::to_string(p.max_gpus) +
           " on-demand GPUs in use, this job needs " + std::to_string(ask.gpus) + " more";
  }
  const int64_t used = Saturate(Int128{tf.spent} + tf.committed);
  if (ask.cost > 0 && Int128{used} + ask.cost > p.budget_micros) {
    return "burst budget: " + Money(used) + " of " + Money(p.budget_micros) +
           " spent or committed, this job needs " + Money(Saturate(ask.cost));
  }
  return "";
}

}  // namespace

BurstDecision PlanBurst(const State& s, const std::map<TenantId, BurstPolicy>& policies,
                        const std::map<FlavorId, OnDemandOffer>& offers,
                        const std::vector<BurstNode>& fleet, Time now) {
  return Planner(s, policies, offers, fleet, now, true).Run();
}

std::map<NodeId, Time> OnDemandDeadlines(const State& s,
                                         const std::map<TenantId, BurstPolicy>& policies,
                                         const std::map<FlavorId, OnDemandOffer>& offers,
                                         const std::vector<BurstNode>& fleet, Time now) {
  return Planner(s, policies, offers, fleet, now, false).Run().deadlines;
}

}  // namespace gpupool
