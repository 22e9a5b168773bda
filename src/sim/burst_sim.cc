#include "sim/burst_sim.h"

#include <algorithm>
#include <set>

#include "burst/carry_out.h"
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

// What the simulator does at each step of carrying out a burst decision (burst/carry_out.h,
// shared with the daemon): applies to its state and fleet at once, and counts.
class BurstSim::Steps final : public BurstSteps {
 public:
  Steps(BurstSim& sim, State& s, const std::function<void(JobId)>* on_lost) : sim_(sim), s_(s), on_lost_(on_lost) {}

  Status Retire(NodeId id, Time now) override {
    std::vector<JobId> on_node;
    for (JobId jid : s_.active()) {
      for (const ReplicaPlacement& rp : s_.FindJob(jid)->placement) {
        if (rp.node == id) {
          on_node.push_back(jid);
          break;
        }
      }
    }
    for (JobId jid : on_node) {
      if (on_lost_ != nullptr) (*on_lost_)(jid);
      GP_CHECK(Apply(s_, JobLost{jid, now, RequeueCause::kBudget, "the on-demand budget is spent"}).ok());
      ++requeued;
    }
    GP_CHECK(Apply(s_, NodeConditionChanged{id, NodeCondition::kRetired, now}).ok());
    for (BurstNode& b : sim_.fleet_) {
      if (b.node == id && !b.released) {
        b.released = now;
        ++sim_.version_[b.tenant];
      }
    }
    return Ok();
  }
  Status Requested(const ProvisionRequest& req, const std::string& rid, Time now) override {
    BurstNode b;
    b.request_id = rid;
    b.tenant = req.tenant;
    b.flavor = req.flavor;
    b.gpus = req.gpus_per_node;
    b.micros_per_gpu_hour = sim_.offers_.at(req.flavor).micros_per_gpu_hour;
    b.for_job = req.for_job;
    b.requested = b.last_busy = now;
    sim_.fleet_.push_back(std::move(b));
    ++sim_.version_[req.tenant];
    ++sim_.provisioned_;
    return Ok();
  }
  void ProvisionFailed(TenantId, JobId, const Error&, Time) override { ++sim_.provision_failures_; }
  void ReleaseFailed(const std::string& name, const Error& e, Time) override {
    GP_CHECK(false) << "the simulated provider failed to release " << name << ": " << e.message;
  }
  Status Joined(const BurstNode& entry, const Node& node, Time ready, Time) override {
    Result<NodeId> id = s_.AddNode(node);
    GP_CHECK(id.ok()) << "on-demand node " << node.name << " cannot join: " << id.error().message;
    for (BurstNode& b : sim_.fleet_) {
      if (b.request_id != entry.request_id) continue;
      b.node = *id;
      b.ready = b.last_busy = ready;
      ++sim_.version_[b.tenant];
    }
    return Ok();
  }
  void Note(const std::string& what, const std::string& node, const std::string& detail) override {
    GP_CHECK(false) << what << ": " << node << " (" << detail << ")";  // the simulator makes no such node
  }

  int requeued = 0;

 private:
  BurstSim& sim_;
  State& s_;
  const std::function<void(JobId)>* on_lost_;
};

int BurstSim::Join(State& s, Time now) {
  Steps steps(*this, s, nullptr);
  return JoinBurstNodes(provider_, fleet_, offers_, s.catalogue(), steps, now);
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
  provisioned_ = 0;
  Steps steps(*this, s, &on_lost);
  CarryOutBurst(d, s, provider_, steps, now);
  refused_.clear();
  for (const auto& [jid, why] : d.reasons) refused_.insert(s.FindJob(jid)->spec.tenant);
  return steps.requeued;
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
