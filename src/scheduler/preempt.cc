#include "scheduler/preempt.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "policy/priority/ordering.h"

namespace gpupool {
namespace {

// A job naming a reservation reaches preemption only inside it: in force, within its amount
// (the scheduler's ReservationAdmits). It is guaranteed, and takes no quota check.
bool Reserved(const Job& job) { return job.spec.reservation.valid(); }

bool WithinGuarantee(Session& s, const Job& job) {
  const FlavorId f = job.spec.shape.flavor;
  return s.quota().has_quota(job.spec.tenant, f) &&
         s.quota().usage(job.spec.tenant, f) + job.Eq(s.state().catalogue()) <=
             s.quota().guaranteed(job.spec.tenant, f);
}

bool OnPools(Session& s, const Job& v, const std::vector<uint32_t>& pools) {
  for (const ReplicaPlacement& rp : v.placement) {
    const uint32_t p = s.slot(rp.node.value()).pool;
    if (std::find(pools.begin(), pools.end(), p) != pools.end()) return true;
  }
  return false;
}

struct Candidate {
  const Job* job;
  bool reclaim;     // another tenant's job
  bool queue = false;  // the tenant's own, of the same priority, after this job in its queue order
};

std::vector<Candidate> Candidates(Session& s, const Job& job, const std::vector<uint32_t>& pools,
                                  const PreemptionConfig& cfg, bool within_guarantee,
                                  const std::vector<JobId>& released, const QueueVictims& queue) {
  const State& state = s.state();
  const FlavorId f = job.spec.shape.flavor;
  const int32_t prio = state.priority_class(job.spec.priority_class).value;
  const bool by_queue = queue.cfg != nullptr && queue.budget > 0 && Preemptive(queue.order);
  // Reclaim candidates first, then the tenant's own of lower priority, each group in the victim
  // order of PreemptibleJobs; then its own that the queue policy ranks after the job, the
  // furthest first.
  std::vector<Candidate> reclaim, own, queued;
  for (const Job* vp : s.PreemptibleJobs(f, cfg.min_runtime)) {
    const Job& v = *vp;
    const bool same = v.spec.tenant == job.spec.tenant;
    const bool lower = state.priority_class(v.spec.priority_class).value < prio;
    bool in_queue = false;
    if (same && !lower && !(Reserved(job) && !v.spec.reservation.valid())) {
      in_queue = by_queue && state.priority_class(v.spec.priority_class).value == prio &&
                 v.spec.reservation == job.spec.reservation &&
                 QueueMayPreempt(*queue.cfg, queue.order, job, v, state.catalogue(), s.now());
      if (!in_queue) continue;
    }
    if (!same && (!within_guarantee || !s.running_quota().borrowing(v.spec.tenant, f))) continue;
    if (std::find(released.begin(), released.end(), v.id) != released.end()) continue;
    // Never preempt back a job that preempted this one, so that priorities cannot cycle. Under
    // las that is the point, though: the job that took the GPUs keeps attaining service and
    // falls behind its victim, and the strict order of queues (QueueMayPreempt) bounds the
    // swaps, as the minimum runtime bounds their rate. Under srsf the preemptor's remaining
    // service only shrinks, so it is never behind its victim again.
    const bool las_turn = in_queue && queue.order == QueueOrder::kLas;
    if (!las_turn && std::find(job.preempted_by.begin(), job.preempted_by.end(), v.id) != job.preempted_by.end()) {
      continue;
    }
    if (!OnPools(s, v, pools)) continue;
    if (in_queue) {
      queued.push_back({&v, false, true});
    } else {
      (same ? own : reclaim).push_back({&v, !same});
    }
  }
  if (!queued.empty()) {
    std::vector<std::pair<double, const Job*>> ranked;
    for (const Candidate& c : queued) ranked.push_back({VictimRank(queue.order, *c.job, state.catalogue(), s.now()), c.job});
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    queued.clear();
    for (const auto& [rank, v] : ranked) queued.push_back({v, false, true});
  }
  reclaim.insert(reclaim.end(), own.begin(), own.end());
  reclaim.insert(reclaim.end(), queued.begin(), queued.end());
  return reclaim;
}

// Free capacity in the pools plus what victims could free: if even that is short of the job,
// no victim set can make room. Another tenant gives up at most its borrowed capacity plus one
// job (the release that takes it below its guarantee).
bool CouldMakeRoom(Session& s, const Job& job, const std::vector<uint32_t>& pools,
                   const std::vector<Candidate>& cands) {
  const State& state = s.state();
  const Catalogue& cat = state.catalogue();
  const FlavorId f = job.spec.shape.flavor;
  // What a victim could free for this job: its own share, or for a whole-GPU job each dynamic
  // GPU it shares, which becomes a whole GPU once its last fraction leaves.
  auto frees = [&](const Job& v) {
    GpuEq eq = v.Eq(cat);
    if (job.spec.shape.kind != ShapeKind::kWholeGpus || v.spec.shape.kind != ShapeKind::kGpuFraction) return eq;
    int64_t dynamic = 0;
    for (const ReplicaPlacement& rp : v.placement) {
      for (const GpuGrant& g : rp.grants) dynamic += state.node(rp.node).gpus[g.gpu].dynamic;
    }
    return Max(eq, GpuEq::Gpus(dynamic));
  };
  GpuEq room;
  std::map<TenantId, std::pair<GpuEq, GpuEq>> by_tenant;  // reclaim: (sum, largest)
  for (const Candidate& c : cands) {
    const GpuEq eq = frees(*c.job);
    if (!c.reclaim) {
      room += eq;
      continue;
    }
    auto& [sum, largest] = by_tenant[c.job->spec.tenant];
    sum += eq;
    largest = Max(largest, eq);
  }
  for (const auto& [t, v] : by_tenant) {
    room += Min(v.first, s.running_quota().borrowed(t, f) + v.second);
  }
  for (uint32_t p : pools) {
    for (uint32_t cls : s.active(p, job.spec.shape.kind)) {
      room += s.cls(cls).free * static_cast<int64_t>(s.members(cls).size());
    }
  }
  return room >= job.Eq(cat);
}

// Releases `victims` and tries to admit and place the job. Leaves the session changed only on
// success.
bool TryWith(Session& s, Placer& placer, const Job& job, const std::vector<uint32_t>& pools,
             const std::vector<Candidate>& victims, PreemptOutcome& out) {
  const size_t mark = s.Mark();
  const FlavorId f = job.spec.shape.flavor;
  for (const Candidate& c : victims) {
    if (c.reclaim && !s.running_quota().borrowing(c.job->spec.tenant, f)) {
      s.RollbackTo(mark);
      return false;  // that tenant is back within its guarantee: never preempt it
    }
    s.Release(*c.job, c.job->placement);
  }
  const GpuEq eq = job.Eq(s.state().catalogue());
  const bool may_borrow = s.state().priority_class(job.spec.priority_class).may_borrow;
  const QuotaVerdict v = Reserved(job) ? QuotaVerdict{} : s.quota().Check(job.spec.tenant, f, eq, may_borrow);
  if (v.ok()) {
    Placer::Outcome o = placer.PlaceGang(job, pools, s.now() + job.spec.estimated_duration);
    if (o.ok) {
      s.QuotaAdd(job.spec.tenant, f, eq);
      out.placement = std::move(o);
      out.kind = v.kind;
      return true;
    }
  }
  s.RollbackTo(mark);
  return false;
}

// Greedy over `cands` until the job fits, then gives back every victim it can do without,
// newest choice first. Returns the set (empty if the job never fits). Leaves the session as
// it found it.
std::vector<Candidate> GreedyThenMinimise(Session& s, Placer& placer, const Job& job,
                                          const std::vector<uint32_t>& pools,
                                          const std::vector<Candidate>& cands, int max_victims) {
  const size_t mark = s.Mark();
  const FlavorId f = job.spec.shape.flavor;
  std::vector<Candidate> chosen;
  bool fits = false;
  for (const Candidate& c : cands) {
    if (static_cast<int>(chosen.size()) >= max_victims) break;
    if (c.reclaim && !s.running_quota().borrowing(c.job->spec.tenant, f)) continue;
    s.Release(*c.job, c.job->placement);
    chosen.push_back(c);
    const size_t inner = s.Mark();
    PreemptOutcome probe;
    if (TryWith(s, placer, job, pools, {}, probe)) {
      fits = true;
      s.RollbackTo(inner);
      break;
    }
  }
  s.RollbackTo(mark);
  if (!fits) return {};
  for (size_t i = chosen.size(); i-- > 0 && chosen.size() > 1;) {
    std::vector<Candidate> without = chosen;
    without.erase(without.begin() + static_cast<long>(i));
    PreemptOutcome probe;
    if (TryWith(s, placer, job, pools, without, probe)) {
      chosen = std::move(without);
      s.RollbackTo(mark);
    }
  }
  return chosen;
}

// Fewer victims first, then lower priorities, then the more recently started (the order
// VictimBefore defines, compared victim by victim).
bool BetterSet(const State& state, const std::vector<Candidate>& a,
               const std::vector<Candidate>& b) {
  if (b.empty()) return !a.empty();
  if (a.size() != b.size()) return a.size() < b.size();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].job == b[i].job) continue;
    return VictimBefore(state, *a[i].job, *b[i].job);
  }
  return false;
}

// A single-node replica: search node by node (the victims that free one node), nodes whose
// lower bound on the victim count is smallest first, and keep the best set.
std::vector<Candidate> NodeLocal(Session& s, Placer& placer, const Job& job,
                                 const std::vector<uint32_t>& pools,
                                 const std::vector<Candidate>& all, int max_victims) {
  const Catalogue& cat = s.state().catalogue();
  std::map<uint32_t, std::vector<Candidate>> by_node;
  std::map<uint32_t, std::vector<GpuEq>> freed_on;  // what each candidate frees on that node
  for (const Candidate& c : all) {
    for (const ReplicaPlacement& rp : c.job->placement) {
      const uint32_t pool = s.slot(rp.node.value()).pool;
      if (std::find(pools.begin(), pools.end(), pool) == pools.end()) continue;
      std::vector<Candidate>& v = by_node[rp.node.value()];
      std::vector<GpuEq>& f = freed_on[rp.node.value()];
      if (v.empty() || v.back().job != c.job) {
        v.push_back(c);
        f.push_back(GpuEq());
      }
      f.back() += c.job->spec.shape.Eq(cat);  // one more replica of it on this node
    }
  }
  const GpuEq need = job.spec.shape.Eq(cat) *
                     (job.spec.topology.level == TopologyLevel::kNode ? job.spec.replicas : 1);
  std::vector<std::pair<size_t, uint32_t>> order;  // (lower bound on victims, node)
  for (const auto& [node, cands] : by_node) {
    // A true lower bound: even the largest victims first must free `need`.
    std::vector<GpuEq> sizes = freed_on[node];
    std::sort(sizes.rbegin(), sizes.rend());
    GpuEq free = s.cls(s.slot(node).cls).free;
    size_t k = 0;
    while (free < need && k < sizes.size()) free += sizes[k++];
    if (free >= need) order.push_back({std::max<size_t>(k, 1), node});
  }
  std::sort(order.begin(), order.end());
  std::vector<Candidate> best;
  int evaluated = 0;
  for (const auto& [bound, node] : order) {
    if (!best.empty() && best.size() < bound) break;  // no later node can do better
    if (++evaluated > 16) break;
    std::vector<Candidate> set =
        GreedyThenMinimise(s, placer, job, pools, by_node[node], max_victims);
    std::sort(set.begin(), set.end(), [&](const Candidate& a, const Candidate& b) {
      return VictimBefore(s.state(), *a.job, *b.job);
    });
    if (BetterSet(s.state(), set, best)) best = std::move(set);
  }
  return best;
}

}  // namespace

std::optional<ReclaimWait> PendingReclaim(Session& s, const Job& job, const std::vector<uint32_t>& pools,
                                          const PreemptionConfig& cfg) {
  if (!cfg.enabled || !WithinGuarantee(s, job)) return std::nullopt;
  const State& state = s.state();
  const Catalogue& cat = state.catalogue();
  const FlavorId f = job.spec.shape.flavor;
  // Borrowed preemptible work of other tenants that is not old enough yet, by when it will
  // be, on the pools the job may use (the session's list is the snapshot's, in that order).
  const std::vector<Session::YoungJob>& young = s.YoungJobs(f, cfg.min_runtime);
  auto usable = [&](const Session::YoungJob& y) {
    return y.job->spec.tenant != job.spec.tenant && s.running_quota().borrowing(y.job->spec.tenant, f) &&
           OnPools(s, *y.job, pools);
  };
  // What the job misses: the free capacity it could use, counted once one such job is found.
  auto missing_of = [&] {
    GpuEq free;
    for (uint32_t p : pools) {
      for (uint32_t cls : s.active(p, job.spec.shape.kind)) {
        free += s.cls(cls).free * static_cast<int64_t>(s.members(cls).size());
      }
    }
    const GpuEq need = job.Eq(cat);
    return need > free ? need - free : need;  // fragmented: count the whole job
  };
  std::optional<GpuEq> missing;
  // Another tenant gives up at most what it borrows.
  std::map<TenantId, GpuEq> left;
  ReclaimWait out;
  for (const Session::YoungJob& y : young) {
    if (!usable(y)) continue;
    if (!missing) missing = missing_of();
    const TenantId tenant = y.job->spec.tenant;
    auto [it, fresh] = left.try_emplace(tenant, s.running_quota().borrowed(tenant, f));
    const GpuEq take = Min(y.job->Eq(cat), it->second);
    if (take <= GpuEq()) continue;
    it->second = it->second - take;
    out.amount += take;
    if (std::find(out.from.begin(), out.from.end(), tenant) == out.from.end()) out.from.push_back(tenant);
    if (out.amount >= *missing) {
      out.amount = *missing;
      out.earliest = y.from;
      std::sort(out.from.begin(), out.from.end());
      return out;
    }
  }
  return std::nullopt;
}

PreemptOutcome TryPreempt(Session& s, Placer& placer, const Job& job,
                          const std::vector<uint32_t>& pools, const PreemptionConfig& cfg,
                          const std::vector<JobId>& released_before, const QueueVictims& queue) {
  PreemptOutcome out;
  const FlavorId f = job.spec.shape.flavor;
  const GpuEq eq = job.Eq(s.state().catalogue());
  const std::vector<Candidate> all =
      Candidates(s, job, pools, cfg, Reserved(job) || WithinGuarantee(s, job), released_before, queue);
  if (all.empty() || !CouldMakeRoom(s, job, pools, all)) return out;
  const bool one_node = job.spec.replicas == 1 || job.spec.topology.level == TopologyLevel::kNode;
  std::vector<Candidate> chosen =
      one_node ? NodeLocal(s, placer, job, pools, all, cfg.max_victims)
               : GreedyThenMinimise(s, placer, job, pools, all, cfg.max_victims);
  // Under maintenance the pool as a whole may be short (QuotaBook::Check says kMaintenance):
  // then victims on other nodes than the one the job lands on help too, which the node-local
  // search does not try.
  if (chosen.empty() && one_node &&
      s.quota().Check(job.spec.tenant, f, eq,
                      s.state().priority_class(job.spec.priority_class).may_borrow)
              .code == ReasonCode::kMaintenance) {
    chosen = GreedyThenMinimise(s, placer, job, pools, all, cfg.max_victims);
  }
  if (chosen.empty()) return out;
  // The queue budget caps the victims chosen, not the candidates: cutting the candidates to the
  // budget first would leave only the top-ranked ones, scattered over nodes, where a few on one
  // node would have made room.
  if (std::count_if(chosen.begin(), chosen.end(), [](const Candidate& c) { return c.queue; }) > queue.budget) {
    return out;
  }
  // Reclaim victims first, in the candidates' order, so each is released while its tenant is
  // still above its guarantee.
  std::stable_sort(chosen.begin(), chosen.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.reclaim != b.reclaim) return a.reclaim;
    return VictimBefore(s.state(), *a.job, *b.job);
  });
  GP_CHECK(TryWith(s, placer, job, pools, chosen, out));
  for (const Candidate& c : chosen) {
    out.victims.push_back({c.job->id, job.id,
                           c.reclaim ? PreemptKind::kReclaim : c.queue ? PreemptKind::kQueue : PreemptKind::kPriority});
  }
  out.ok = true;
  return out;
}

}  // namespace gpupool
