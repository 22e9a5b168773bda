#include "sim/burst_sim.h"

#include <algorithm>
#include <set>

#include "model/events.h"

namespace gpupool {
namespace {

bool IdleNode(const Node& n) {
  return std::all_of(n.gpus.begin(), n.gpus.end(), [](const Gpu& g) { return g.idle(); });
}

}  // namespace

void BurstSim::Watch(const Job& j, Time now) {
  const auto p = policies_.find(j.spec.tenant);
  if (p == policies_.end()) return;
  const auto& f = p->second.flavors;
  if (std::find(f.begin(), f.end(), j.spec.shape.flavor) == f.end()) return;
  const Time due = j.submitted + p->second.max_wait + Duration::Millis(1);  // waited > max_wait
  if (due > now) expiries_.push({due, j.id});
}

int BurstSim::Join(State& s, Time now) {
  int joined = 0;
  for (const ProvisionedNode& p : provider_.Poll(now)) {
    auto it = std::find_if(fleet_.begin(), fleet_.end(),
                           [&](const BurstNode& b) { return b.request_id == p.request_id; });
    GP_CHECK(it != fleet_.end() && !it->ready && !it->released)
        << "unexpected on-demand node " << p.name;
    OnDemandOffer as_built = offers_.at(p.flavor);
    as_built.gpus_per_node = p.gpus;
    as_built.cpu_milli = p.cpu_milli;
    as_built.memory_mib = p.memory_mib;
    Result<NodeId> id = s.AddNode(MakeBurstNode(s.catalogue(), as_built, it->tenant, p.name));
    GP_CHECK(id.ok()) << "on-demand node " << p.name << " cannot join: " << id.error().message;
    it->node = *id;
    it->ready = it->last_busy = std::max(p.ready, it->requested);
    ++version_[it->tenant];
    ++joined;
  }
  return joined;
}

int BurstSim::Step(State& s, Time now, const std::function<void(JobId)>& on_lost) {
  TrackBurstUse(s, fleet_, now);
  Archive(now);
  const BurstDecision d = PlanBurst(s, policies_, offers_, fleet_, now);
  extended_ = false;
  for (const auto& [node, until] : d.deadlines) {
    const auto was = scheduled_.find(node);
    extended_ = extended_ || (was != scheduled_.end() && until > was->second);
  }
  int requeued = 0;
  for (NodeId id : d.release) {
    std::vector<JobId> on_node;
    for (JobId jid : s.active()) {
      for (const ReplicaPlacement& rp : s.FindJob(jid)->placement) {
        if (rp.node == id) {
          on_node.push_back(jid);
          break;
        }
      }
    }
    for (JobId jid : on_node) {
      on_lost(jid);
      GP_CHECK(Apply(s, JobLost{jid, now, RequeueCause::kBudget, "the on-demand budget is spent"}).ok());
      ++requeued;
    }
    GP_CHECK(Apply(s, NodeConditionChanged{id, NodeCondition::kRetired, now}).ok());
    GP_CHECK(provider_.Release(s.node(id).name, now).ok());
    for (BurstNode& b : fleet_) {
      if (b.node == id && !b.released) {
        b.released = now;
        ++version_[b.tenant];
      }
    }
  }
  provisioned_ = 0;
  for (const ProvisionRequest& req : d.provision) {
    for (int i = 0; i < req.nodes; ++i) {
      Result<std::string> rid = provider_.Provision(req, i, now);
      if (!rid.ok()) {
        ++provision_failures_;
        break;
      }
      BurstNode b;
      b.request_id = *rid;
      b.tenant = req.tenant;
      b.flavor = req.flavor;
      b.gpus = req.gpus_per_node;
      b.micros_per_gpu_hour = offers_.at(req.flavor).micros_per_gpu_hour;
      b.for_job = req.for_job;
      b.requested = b.last_busy = now;
      fleet_.push_back(std::move(b));
      ++version_[req.tenant];
      ++provisioned_;
    }
  }
  refused_.clear();
  for (const auto& [jid, why] : d.reasons) refused_.insert(s.FindJob(jid)->spec.tenant);
  return requeued;
}

Time BurstSim::NextWake(const State& s, Time now) {
  Time t = Time::Never();
  for (const BurstNode& b : fleet_) {
    if (b.released) continue;
    if (!b.ready) {
      t = std::min(t, b.requested + offers_.at(b.flavor).provisioning_delay);
    } else if (IdleNode(s.node(b.node))) {
      const auto p = policies_.find(b.tenant);
      const Time due = std::max(b.last_busy, *b.ready) +
                       (p == policies_.end() ? Duration() : p->second.idle_timeout);
      if (due > now) t = std::min(t, due);
    }
  }
  while (!expiries_.empty() && (expiries_.top().first <= now ||
                                s.FindJob(expiries_.top().second)->state != JobState::kPending)) {
    expiries_.pop();
  }
  if (!expiries_.empty()) t = std::min(t, expiries_.top().first);
  for (const auto& [tenant, p] : policies_) t = std::min(t, BudgetSpentAt(tenant, p, now));
  return t;
}

Time BurstSim::NextRollover(Time now) const {
  Time t = Time::Never();
  for (TenantId tenant : refused_) {
    const BurstPolicy& p = policies_.at(tenant);
    t = std::min(t, BudgetWindowStart(now, p.period) + p.period);
  }
  return t;
}

std::vector<BurstNode> BurstSim::Fleet() const {
  std::vector<BurstNode> all = archive_;
  all.insert(all.end(), fleet_.begin(), fleet_.end());
  std::sort(all.begin(), all.end(),
            [](const BurstNode& a, const BurstNode& b) { return a.request_id < b.request_id; });
  return all;
}

int64_t BurstSim::MostOverBudget(Time end) const {
  const std::vector<BurstNode> all = Fleet();
  int64_t most = 0;
  for (const auto& [tenant, p] : policies_) {
    std::set<Time> windows;  // every window one of the tenant's nodes was billed in
    for (const BurstNode& b : all) {
      if (b.tenant != tenant || !b.ready) continue;
      const Time until = b.released ? std::min(*b.released, end) : end;
      for (Time w = BudgetWindowStart(*b.ready, p.period); w < until; w = w + p.period) windows.insert(w);
    }
    for (Time w : windows) {
      most = std::max(most, SpentMicros(all, tenant, w, std::min(w + p.period, end)) - p.budget_micros);
    }
  }
  return most;
}

void BurstSim::Archive(Time now) {
  auto keep = std::stable_partition(fleet_.begin(), fleet_.end(), [&](const BurstNode& b) {
    return !b.released || *b.released > BudgetWindowStart(now, policies_.at(b.tenant).period);
  });
  archive_.insert(archive_.end(), keep, fleet_.end());
  fleet_.erase(keep, fleet_.end());
}

Time BurstSim::BudgetSpentAt(TenantId tenant, const BurstPolicy& p, Time now) {
  const Time w = BudgetWindowStart(now, p.period), end = w + p.period;
  Crossing& c = crossing_[tenant];
  if (c.version == version_[tenant] && c.window == w && c.computed)
    return c.at > now ? c.at : Time::Never();
  c = Crossing{version_[tenant], w, true, Time::Never()};
  bool priced = false;
  for (const BurstNode& b : fleet_)
    priced = priced || (b.tenant == tenant && b.live() && b.micros_per_gpu_hour > 0);
  if (!priced) return Time::Never();
  const auto spent = [&](Time t) { return SpentMicros(fleet_, tenant, w, t); };
  Time lo = now,
       hi = Time::FromMillis(end.millis() - 1);  // spent(lo) < budget <= spent(hi), or none
  if (spent(lo) >= p.budget_micros || hi <= lo || spent(hi) < p.budget_micros)
    return Time::Never();
  while (hi - lo > Duration::Millis(1)) {
    const Time mid = Time::FromMillis(lo.millis() + (hi - lo).millis() / 2);
    (spent(mid) >= p.budget_micros ? hi : lo) = mid;
  }
  c.at = hi;
  return hi;
}
}  // namespace gpupool
