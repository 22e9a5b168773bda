#include "policy/burst/burst.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace gpupool {
namespace {

__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

constexpr int64_t kMillisPerHour = 3'600'000;
constexpr int64_t kMaxMicros = std::numeric_limits<int64_t>::max();
constexpr Int128 kMaxInt128 = static_cast<Int128>((UInt128{1} << 127) - 1);

int64_t Saturate(Int128 v) { return v > kMaxMicros ? kMaxMicros : static_cast<int64_t>(v); }

// "12.50": micros as currency units, rounded half up to the cent.
std::string Money(int64_t micros) {
  const int64_t cents = micros / 10'000 + (micros % 10'000 >= 5'000 ? 1 : 0);
  const int64_t frac = cents % 100;
  return std::to_string(cents / 100) + (frac < 10 ? ".0" : ".") + std::to_string(frac);
}

bool KnownFlavor(FlavorId f, const Catalogue& c) { return f.valid() && f.value() < c.size(); }

bool Idle(const Node& n) {
  return std::all_of(n.gpus.begin(), n.gpus.end(), [](const Gpu& g) { return g.idle(); });
}

// Free room on one on-demand node (live, in flight, or planned in this call).
struct Room {
  int gpus = 0;
  int64_t cpu = -1, mem = -1;  // -1: not tracked, any demand fits
};

Room OfferRoom(const OnDemandOffer& o) {
  return {o.gpus_per_node, o.cpu_milli > 0 ? o.cpu_milli : -1,
          o.memory_mib > 0 ? o.memory_mib : -1};
}

Room FreeRoom(const Node& n) {
  Room r{0, n.cpu_milli > 0 ? n.cpu_milli - n.cpu_used : -1,
         n.memory_mib > 0 ? n.memory_mib - n.memory_used : -1};
  for (const Gpu& g : n.gpus) {
    r.gpus += g.mode == GpuMode::kWhole && g.healthy && !g.occupant.valid();
  }
  return r;
}

// One job's gang: `replicas` replicas of `gpus` whole GPUs and host resources each.
struct Need {
  int replicas = 0;
  int gpus = 1;
  int64_t cpu = 0, mem = 0;
  bool one_node = false;  // a required topology: on-demand nodes are each their own domain
};

int ReplicasIn(const Room& r, const Need& n) {
  int64_t k = r.gpus / n.gpus;
  if (r.cpu >= 0 && n.cpu > 0) k = std::min(k, r.cpu / n.cpu);
  if (r.mem >= 0 && n.mem > 0) k = std::min(k, r.mem / n.mem);
  return static_cast<int>(std::max<int64_t>(k, 0));
}

void Take(Room& r, const Need& n, int k) {
  r.gpus -= k * n.gpus;
  if (r.cpu >= 0) r.cpu -= k * n.cpu;
  if (r.mem >= 0) r.mem -= k * n.mem;
}

// Places as many replicas of the gang as `rooms` hold, first fit in order, taking the room;
// returns how many. Under a topology constraint all go on one room, or none.
int Fit(std::vector<Room>& rooms, const Need& n) {
  if (n.one_node) {
    for (Room& r : rooms) {
      if (ReplicasIn(r, n) < n.replicas) continue;
      Take(r, n, n.replicas);
      return n.replicas;
    }
    return 0;
  }
  int placed = 0;
  for (Room& r : rooms) {
    const int k = std::min(n.replicas - placed, ReplicasIn(r, n));
    Take(r, n, k);
    placed += k;
  }
  return placed;
}

// The new nodes a gang asks for.
struct Ask {
  int per_node = 0, nodes = 0;  // replicas per node; nodes
  int64_t gpus = 0, cost = 0;   // all GPUs of those nodes; their expected cost
};

// What one tenant holds on demand, less the nodes released by this decision.
struct TenantFleet {
  Time window_start, window_end;
  int64_t spent = 0;     // in the window, every node of the tenant
  Int128 committed = 0;  // expected further cost of the nodes that stay
  int64_t gpus = 0;      // on live and in-flight nodes that stay
  std::map<FlavorId, std::vector<Room>> rooms;
};

class Planner {
 public:
  Planner(const State& s, const std::map<TenantId, BurstPolicy>& policies,
          const std::map<FlavorId, OnDemandOffer>& offers, const std::vector<BurstNode>& fleet,
          Time now)
      : s_(s), policies_(policies), offers_(offers), fleet_(fleet), now_(now) {}

  BurstDecision Run() {
    AccountFleet();
    for (const Job* job : Candidates()) Consider(*job);
    return std::move(out_);
  }

 private:
  TenantFleet& Tenant(TenantId t) {
    auto [it, added] = tenants_.try_emplace(t);
    if (added) {
      const auto p = policies_.find(t);
      const Duration period = p == policies_.end() ? Duration::Hours(24) : p->second.period;
      it->second.window_start = BudgetWindowStart(now_, period);
      it->second.window_end = it->second.window_start + period;
      it->second.spent = SpentMicros(fleet_, t, it->second.window_start, now_);
    }
    return it->second;
  }

  // A job's expected use of a new node: its estimate, at least an hour; without an estimate,
  // the rest of the budget window, at least an hour.
  Duration ExpectedUse(const Job* job, const TenantFleet& tf) const {
    const Duration est = job == nullptr ? Duration() : job->spec.estimated_duration;
    if (!est.is_infinite()) return std::max(est, Duration::Hours(1));
    if (tf.window_end.is_never()) return Duration::Infinite();
    return std::max(tf.window_end - now_, Duration::Hours(1));
  }

  const BurstPolicy* Policy(TenantId t) const {
    const auto it = policies_.find(t);
    return it == policies_.end() ? nullptr : &it->second;
  }

  void AccountFleet();
  void AccountLive(const BurstNode& b, Time latest_end);
  std::vector<const Job*> Candidates() const;
  void Consider(const Job& job);
  std::string Unfit(const Job& job, const Need& need, const OnDemandOffer& offer) const;
  std::string OverLimit(const Job& job, const Ask& ask, const OnDemandOffer& offer);
  const std::string& FlavorName(FlavorId f) const { return s_.catalogue().model(f).name; }

  const State& s_;
  const std::map<TenantId, BurstPolicy>& policies_;
  const std::map<FlavorId, OnDemandOffer>& offers_;
  const std::vector<BurstNode>& fleet_;
  const Time now_;
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
  // The latest expected end of the jobs on each node (Never for a job without an estimate).
  std::map<NodeId, Time> latest_end;
  for (JobId id : s_.active()) {
    const Job& job = *s_.FindJob(id);
    for (const ReplicaPlacement& p : job.placement) {
      const auto [it, added] = latest_end.try_emplace(p.node, job.ExpectedEnd());
      if (!added) it->second = std::max(it->second, job.ExpectedEnd());
    }
  }
  for (const BurstNode* b : live) {
    const auto it = latest_end.find(b->node);
    AccountLive(*b, it == latest_end.end() ? now_ : it->second);
  }
  for (const BurstNode* b : coming) {
    TenantFleet& tf = Tenant(b->tenant);
    tf.gpus += b->gpus;
    tf.committed +=
        CostMicros(b->gpus, b->micros_per_gpu_hour, ExpectedUse(s_.FindJob(b->for_job), tf));
    const auto offer = offers_.find(b->flavor);
    Room room = offer == offers_.end() ? Room{} : OfferRoom(offer->second);
    room.gpus = b->gpus;
    tf.rooms[b->flavor].push_back(room);
    ++nodes_in_use_[b->flavor];
  }
}

// Releases a live node when its tenant's budget is spent or it was idle for the idle timeout
// (at once for a tenant without a policy); otherwise counts it as staying.
void Planner::AccountLive(const BurstNode& b, Time latest_end) {
  GP_CHECK(b.node.value() < s_.nodes().size()) << "burst node " << b.request_id;
  const Node& node = s_.node(b.node);
  TenantFleet& tf = Tenant(b.tenant);
  const BurstPolicy* p = Policy(b.tenant);
  const bool broke = p != nullptr && b.micros_per_gpu_hour > 0 && tf.spent >= p->budget_micros;
  const Time idle_since = std::max(b.last_busy, *b.ready);
  const Duration timeout = p == nullptr ? Duration() : p->idle_timeout;
  if (broke || (Idle(node) && now_ - idle_since >= timeout)) {
    out_.release.push_back(b.node);
    return;
  }
  tf.gpus += b.gpus;
  ++nodes_in_use_[b.flavor];
  const Time end = latest_end.is_never() ? tf.window_end : latest_end;
  if (end > now_) {
    tf.committed +=
        end.is_never() ? kMaxMicros : CostMicros(b.gpus, b.micros_per_gpu_hour, end - now_);
  }
  if (node.schedulable()) tf.rooms[b.flavor].push_back(FreeRoom(node));
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

void Planner::Consider(const Job& job) {
  const FlavorId f = job.spec.shape.flavor;
  const auto offer_it = offers_.find(f);
  if (offer_it == offers_.end()) {
    out_.reasons.emplace_back(job.id, "burst: no on-demand offer for " + FlavorName(f));
    return;
  }
  const OnDemandOffer& offer = offer_it->second;
  const ReplicaShape& shape = job.spec.shape;
  const Need need{
      .replicas = job.spec.replicas,
      .gpus = std::max<int>(shape.gpus, 1),
      .cpu = shape.cpu_milli,
      .mem = shape.memory_mib,
      .one_node = job.spec.topology.required && job.spec.topology.level != TopologyLevel::kNone};
  TenantFleet& tf = Tenant(job.spec.tenant);
  std::vector<Room>& rooms = tf.rooms[f];
  std::string refusal = Unfit(job, need, offer);
  std::vector<Room> trial = rooms;
  Need rest = need;  // the replicas that need new nodes
  if (refusal.empty()) rest.replicas -= Fit(trial, need);
  if (refusal.empty() && rest.replicas == 0) {  // capacity is there or coming
    rooms = std::move(trial);
    return;
  }
  Ask ask;
  if (refusal.empty()) {
    ask.per_node = ReplicasIn(OfferRoom(offer), need);  // > 0: Unfit checked
    ask.nodes = (rest.replicas + ask.per_node - 1) / ask.per_node;
    ask.gpus = int64_t{ask.nodes} * offer.gpus_per_node;
    ask.cost = CostMicros(ask.gpus, offer.micros_per_gpu_hour, ExpectedUse(&job, tf));
    refusal = OverLimit(job, ask, offer);
  }
  if (!refusal.empty()) {
    out_.reasons.emplace_back(job.id, std::move(refusal));
    return;
  }
  rooms = std::move(trial);
  out_.provision.push_back({.tenant = job.spec.tenant,
                            .flavor = f,
                            .nodes = ask.nodes,
                            .gpus_per_node = offer.gpus_per_node,
                            .for_job = job.id});
  tf.gpus += ask.gpus;
  tf.committed += ask.cost;
  nodes_in_use_[f] += ask.nodes;
  for (int left = rest.replicas; left > 0;) {  // what the new nodes leave free
    Room r = OfferRoom(offer);
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

// Why provisioning for the job now would break the provider's capacity, the tenant's GPU limit
// or its budget, or "".
std::string Planner::OverLimit(const Job& job, const Ask& ask, const OnDemandOffer& offer) {
  const int in_use = nodes_in_use_[offer.flavor];
  if (in_use + ask.nodes > offer.max_nodes) {
    return "burst capacity: " + std::to_string(in_use) + " of " + std::to_string(offer.max_nodes) +
           " on-demand " + FlavorName(offer.flavor) + " nodes in use, this job needs " +
           std::to_string(ask.nodes) + " more";
  }
  const BurstPolicy& p = *Policy(job.spec.tenant);
  TenantFleet& tf = Tenant(job.spec.tenant);
  if (tf.gpus + ask.gpus > p.max_gpus) {
    return "burst limit: " + std::to_string(tf.gpus) + " of " + std::to_string(p.max_gpus) +
           " on-demand GPUs in use, this job needs " + std::to_string(ask.gpus) + " more";
  }
  const int64_t used = Saturate(Int128{tf.spent} + tf.committed);
  if (Int128{used} + ask.cost > p.budget_micros) {
    return "burst budget: " + Money(used) + " of " + Money(p.budget_micros) +
           " spent or committed, this job needs " + Money(ask.cost);
  }
  return "";
}

}  // namespace

Status ValidateBurstPolicy(const BurstPolicy& p, const Catalogue& catalogue) {
  for (FlavorId f : p.flavors) {
    if (!KnownFlavor(f, catalogue)) return InvalidArgument("burst policy: unknown flavor");
  }
  if (p.max_gpus < 0) return InvalidArgument("burst policy: max_gpus must be >= 0");
  if (p.budget_micros < 0) return InvalidArgument("burst policy: budget must be >= 0");
  if (p.period <= Duration()) return InvalidArgument("burst policy: period must be positive");
  if (p.max_wait < Duration()) return InvalidArgument("burst policy: max_wait must be >= 0");
  if (p.idle_timeout < Duration()) {
    return InvalidArgument("burst policy: idle_timeout must be >= 0");
  }
  return Ok();
}

Status ValidateOffer(const OnDemandOffer& o, const Catalogue& catalogue) {
  if (!KnownFlavor(o.flavor, catalogue)) return InvalidArgument("on-demand offer: unknown flavor");
  const std::string& name = catalogue.model(o.flavor).name;
  if (o.gpus_per_node < 1 || o.gpus_per_node > 16) {
    return InvalidArgument("on-demand offer " + name + ": gpus_per_node must be 1 to 16");
  }
  if (o.micros_per_gpu_hour < 0 || o.micros_per_gpu_hour > kMaxBurstMicrosPerGpuHour) {
    return InvalidArgument("on-demand offer " + name + ": price out of range");
  }
  if (o.provisioning_delay < Duration() || o.provisioning_delay.is_infinite()) {
    return InvalidArgument("on-demand offer " + name + ": provisioning delay out of range");
  }
  if (o.cpu_milli < 0 || o.memory_mib < 0 || o.max_nodes < 0) {
    return InvalidArgument("on-demand offer " + name + ": cpu, memory and max_nodes must be >= 0");
  }
  for (const std::string& l : o.labels) {
    if (l.find('=') == std::string::npos) {
      return InvalidArgument("on-demand offer " + name + ": label '" + l + "' is not key=value");
    }
  }
  return Ok();
}

int64_t CostMicros(int64_t gpus, int64_t micros_per_gpu_hour, Duration d) {
  if (gpus <= 0 || micros_per_gpu_hour <= 0 || d.millis() <= 0) return 0;
  if (d.is_infinite()) return kMaxMicros;
  const Int128 rate = Int128{gpus} * micros_per_gpu_hour;  // < 2^126
  if (rate > kMaxInt128 / d.millis()) return kMaxMicros;
  const Int128 product = rate * d.millis();
  return Saturate((product + kMillisPerHour - 1) / kMillisPerHour);  // rounded up
}

int64_t NodeCostMicros(const BurstNode& node, Time now) {
  if (!node.ready.has_value()) return 0;
  const Time end = node.released.has_value() ? std::min(*node.released, now) : now;
  if (end <= *node.ready) return 0;
  return CostMicros(node.gpus, node.micros_per_gpu_hour, end - *node.ready);
}

int64_t SpentMicros(const std::vector<BurstNode>& fleet, TenantId tenant, Time window_start,
                    Time now) {
  Int128 sum = 0;
  for (const BurstNode& b : fleet) {
    if (b.tenant != tenant || !b.ready.has_value()) continue;
    const Time from = std::max(*b.ready, window_start);
    const Time to = b.released.has_value() ? std::min(*b.released, now) : now;
    if (to > from) sum += CostMicros(b.gpus, b.micros_per_gpu_hour, to - from);
  }
  return Saturate(sum);
}

Time BudgetWindowStart(Time now, Duration period) {
  GP_CHECK(period > Duration()) << "budget period must be positive";
  const int64_t p = period.millis();
  int64_t q = now.millis() / p;
  if (now.millis() % p < 0) --q;  // floor, also before the epoch
  return Time::FromMillis(q * p);
}

void TrackBurstUse(const State& s, std::vector<BurstNode>& fleet, Time now) {
  for (BurstNode& b : fleet) {
    if (!b.live() || b.node.value() >= s.nodes().size()) continue;
    if (!Idle(s.node(b.node))) b.last_busy = std::max(b.last_busy, now);
  }
}

BurstDecision PlanBurst(const State& s, const std::map<TenantId, BurstPolicy>& policies,
                        const std::map<FlavorId, OnDemandOffer>& offers,
                        const std::vector<BurstNode>& fleet, Time now) {
  return Planner(s, policies, offers, fleet, now).Run();
}

Node MakeBurstNode(const Catalogue& catalogue, const OnDemandOffer& offer, TenantId tenant,
                   std::string name) {
  GP_CHECK(ValidateOffer(offer, catalogue).ok()) << "on-demand offer for node " << name;
  Node n;
  n.name = std::move(name);
  n.flavor = offer.flavor;
  n.gpus.assign(static_cast<size_t>(offer.gpus_per_node), Gpu{});
  n.dedicated_to = tenant;
  n.labels = offer.labels;
  n.labels.emplace_back(kOnDemandLabel);
  std::sort(n.labels.begin(), n.labels.end());
  n.labels.erase(std::unique(n.labels.begin(), n.labels.end()), n.labels.end());
  n.cpu_milli = offer.cpu_milli;
  n.memory_mib = offer.memory_mib;
  return n;
}

}  // namespace gpupool
