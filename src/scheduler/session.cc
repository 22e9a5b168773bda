#include "scheduler/session.h"

#include <algorithm>

#include "policy/priority/ordering.h"

namespace gpupool {

size_t Session::ClassKeyHash::operator()(const ClassKey& k) const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ k.pool ^ (uint64_t{k.n} << 32) ^ (uint64_t{k.level} << 40);
  for (const GpuKey& g : k.keys) {
    h ^= g.bits() + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return static_cast<size_t>(h);
}

Session::Session(const State& state, const PlacementPolicy& policy, Time now,
                 const std::map<NodeId, Time>& deadlines)
    : state_(state), policy_(policy), now_(now), quota_(state, now), running_(quota_) {
  const size_t n = state.nodes().size();
  slots_.resize(n);
  shared_.resize(n);
  const bool tags = policy.UsesTags();
  for (JobId id : state.active()) {
    const Job& j = *state.FindJob(id);
    if (tags) {
      const ReplicaShape& rs = j.spec.shape;
      const uint16_t tag = AffinityTag({.kind = rs.kind, .gpus = rs.gpus});
      for (const ReplicaPlacement& rp : j.placement) slots_[rp.node.value()].tags |= tag;
    }
    if (j.spec.shape.kind != ShapeKind::kGpuFraction) continue;
    for (const ReplicaPlacement& rp : j.placement) {
      for (const GpuGrant& g : rp.grants) {
        shared_[rp.node.value()].push_back(
            {g.gpu, j.id, j.spec.tenant, g.milli, g.memory_mib});
      }
    }
  }
  for (const Node& node : state.nodes()) {
    const uint32_t i = node.id.value();
    NodeSlot& s = slots_[i];
    s.n = static_cast<uint8_t>(node.gpus.size());
    if (node.cpu_milli) s.cpu_free = node.cpu_milli - node.cpu_used;
    if (node.memory_mib) s.mem_free = node.memory_mib - node.memory_used;
    for (size_t g = 0; g < node.gpus.size(); ++g) {
      const Gpu& gpu = node.gpus[g];
      GpuKey key = GpuKey::Unusable();
      if (gpu.healthy) {
        switch (gpu.mode) {
          case GpuMode::kWhole:
            key = gpu.occupant.valid() ? GpuKey::Whole(true) : IdleKey(i, static_cast<int>(g));
            break;
          case GpuMode::kMig: {
            uint8_t free = 0;
            for (int k = 0; k < gpu.layout.size(); ++k) {
              if (!gpu.instance_occupant[k].valid()) free |= static_cast<uint8_t>(1u << k);
            }
            key = GpuKey::Mig(gpu.layout, free);
            break;
          }
          case GpuMode::kShared: key = SharedKey(i, static_cast<int>(g)); break;
        }
      }
      s.keys[g] = key;
    }
    if (node.schedulable()) s.pool = PoolOf(node);
    if (s.pool != kNone) s.level = LevelOf(s.pool, s.cpu_free);
    s.cls = s.pool == kNone ? kNone : Intern(s.pool, s.keys, s.n, s.level);
    Link(i, s);
  }
  // A node with a deadline is held whole until then: only jobs that end by it fit there.
  for (const auto& [node, until] : deadlines) {
    const uint32_t i = node.value();
    if (i < slots_.size() && slots_[i].pool != kNone) {
      Hold(i, static_cast<uint16_t>((1u << slots_[i].n) - 1), until);
    }
  }
  undo_.clear();
}

uint32_t Session::PoolOf(const Node& n) {
  for (uint32_t p = 0; p < pools_.size(); ++p) {
    if (pools_[p].flavor == n.flavor && pools_[p].dedicated == n.dedicated_to &&
        pools_[p].labels == n.labels) {
      return p;
    }
  }
  pools_.push_back({n.flavor, n.dedicated_to, n.labels});
  active_.resize(pools_.size() * kLists);
  return static_cast<uint32_t>(pools_.size() - 1);
}

const std::vector<uint32_t>& Session::EligiblePools(TenantId t, FlavorId f) {
  const size_t key = t.value() * state_.catalogue().size() + f.value();
  if (eligible_ready_.empty()) {
    eligible_.resize(state_.tenants().size() * state_.catalogue().size());
    eligible_ready_.resize(eligible_.size(), false);
  }
  if (eligible_ready_[key]) return eligible_[key];
  const Tenant& ten = state_.tenant(t);
  std::vector<uint32_t> dedicated, shared;
  for (uint32_t p = 0; p < pools_.size(); ++p) {
    const Pool& pool = pools_[p];
    if (pool.flavor != f) continue;
    if (pool.dedicated.valid() && pool.dedicated != t) continue;
    if (!std::includes(pool.labels.begin(), pool.labels.end(), ten.required_labels.begin(),
                       ten.required_labels.end())) {
      continue;
    }
    (pool.dedicated.valid() ? dedicated : shared).push_back(p);
  }
  dedicated.insert(dedicated.end(), shared.begin(), shared.end());
  eligible_[key] = std::move(dedicated);
  eligible_ready_[key] = true;
  return eligible_[key];
}

const std::vector<uint32_t>& Session::EligiblePools(const Job& job) {
  const std::vector<uint32_t>& all = EligiblePools(job.spec.tenant, job.spec.shape.flavor);
  if (job.spec.node_selector.empty()) return all;
  auto [it, fresh] = selected_.try_emplace(
      {job.spec.tenant.value(), job.spec.shape.flavor.value(), Describe(job.spec.node_selector)});
  if (fresh) {
    for (uint32_t p : all) {
      if (Matches(job.spec.node_selector, pools_[p].labels)) it->second.push_back(p);
    }
  }
  return it->second;
}

uint32_t Session::Intern(uint32_t pool, Keys keys, int n, PlacementPolicy::Level level) {
  std::sort(keys.begin(), keys.begin() + n);
  ClassKey k{pool, static_cast<uint32_t>(n), level, keys};
  auto it = intern_.find(k);
  if (it != intern_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(classes_.size());
  ClassInfo info;
  info.pool = pool;
  info.n = static_cast<uint8_t>(n);
  info.level = level;
  info.keys = keys;
  const GpuModel& m = model(pools_[pool].flavor);
  for (int i = 0; i < n; ++i) {
    info.free += FreeEq(m, keys[i]);
    if (keys[i].whole_free()) info.kinds |= kWholeBit;
    if (keys[i].mode() == KeyMode::kMig) info.kinds |= kMigBit;
    if (keys[i].mode() == KeyMode::kShared && keys[i].free_milli() > 0) info.kinds |= kSharedBit;
    if (keys[i].flex()) info.kinds |= kFlexBit;
  }
  info.kinds |= kAnyBit;
  for (int kind = 0; kind < kKinds; ++kind) {
    if (info.kinds >> kind & 1) info.kind_index[kind] = kind_count_[kind]++;
  }
  classes_.push_back(info);
  members_.emplace_back();
  active_pos_.push_back({-1, -1, -1, -1, -1});
  intern_.emplace(k, id);
  return id;
}

NodeClassView Session::View(uint32_t c) const {
  const ClassInfo& info = classes_[c];
  const FlavorId f = pools_[info.pool].flavor;
  return NodeClassView{f, &model(f), info.keys.data(), info.n, info.level};
}

int64_t Session::Value(uint32_t c) {
  ClassInfo& info = classes_[c];
  if (!info.value_ready) {
    info.value = policy_.Value(View(c));
    info.value_ready = true;
  }
  return info.value;
}

const std::map<std::string, std::vector<uint32_t>>& Session::Domains(TopologyLevel level) {
  auto it = domains_.find(level);
  if (it != domains_.end()) return it->second;
  std::map<std::string, std::vector<uint32_t>> d;
  for (const Node& n : state_.nodes()) {
    if (slots_[n.id.value()].pool == kNone) continue;
    d[std::string(n.DomainAt(level))].push_back(n.id.value());
  }
  return domains_.emplace(level, std::move(d)).first->second;
}

bool Session::CouldEverFit(uint32_t pool, const Job& job) {
  if (caps_.empty()) {
    caps_.resize(pools_.size());
    for (const Node& n : state_.nodes()) {
      const uint32_t p = slots_[n.id.value()].pool;
      if (p == kNone) continue;
      PoolCaps& c = caps_[p];
      int whole = 0;
      for (const Gpu& g : n.gpus) {
        if (!g.healthy) continue;
        whole += g.mode == GpuMode::kWhole || g.dynamic;
        c.mig = c.mig || g.mode == GpuMode::kMig;
        c.shared = c.shared || g.mode == GpuMode::kShared || g.dynamic;
      }
      c.max_whole = std::max(c.max_whole, whole);
      c.max_cpu = n.cpu_milli == 0 ? kUntracked : std::max(c.max_cpu, n.cpu_milli);
      c.max_mem = n.memory_mib == 0 ? kUntracked : std::max(c.max_mem, n.memory_mib);
    }
  }
  const PoolCaps& c = caps_[pool];
  const ReplicaShape& s = job.spec.shape;
  const int per_node = job.spec.topology.level == TopologyLevel::kNode &&
                               job.spec.topology.required ? job.spec.replicas : 1;
  if (s.cpu_milli * per_node > c.max_cpu || s.memory_mib * per_node > c.max_mem) return false;
  switch (s.kind) {
    case ShapeKind::kWholeGpus: return s.gpus * per_node <= c.max_whole;
    case ShapeKind::kMigProfile: return c.mig;
    case ShapeKind::kGpuFraction: return c.shared;
  }
  return false;
}

const std::vector<const Job*>& Session::ActiveJobs(FlavorId f) {
  if (active_by_flavor_.empty()) {
    active_by_flavor_.resize(state_.catalogue().size());
    for (JobId id : state_.active()) {
      const Job* j = state_.FindJob(id);
      active_by_flavor_[j->spec.shape.flavor.value()].push_back(j);
    }
  }
  return active_by_flavor_[f.value()];
}

// One pass per flavor sorts the snapshot's preemptible work into victims now and victims later.
void Session::SplitPreemptible(FlavorId f, Duration min_runtime) {
  if (victims_ready_.empty()) {
    preemptible_.resize(state_.catalogue().size());
    young_.resize(state_.catalogue().size());
    victims_ready_.resize(state_.catalogue().size(), false);
  }
  if (victims_ready_[f.value()]) return;
  victims_ready_[f.value()] = true;
  std::vector<const Job*>& now = preemptible_[f.value()];
  std::vector<YoungJob>& later = young_[f.value()];
  for (const Job* j : ActiveJobs(f)) {
    if (j->admitted_as == AdmissionKind::kDedicated) continue;
    const PriorityClass& pc = state_.priority_class(j->spec.priority_class);
    if (!pc.preemptible) continue;
    const Time from = PreemptibleFrom(*j, pc.min_runtime.value_or(min_runtime));
    if (from <= now_) {
      now.push_back(j);
    } else {
      later.push_back({j, from});
    }
  }
  std::sort(now.begin(), now.end(), [this](const Job* a, const Job* b) { return VictimBefore(state_, *a, *b); });
  std::sort(later.begin(), later.end(), [](const YoungJob& a, const YoungJob& b) {
    return std::tie(a.from, a.job->spec.tenant) < std::tie(b.from, b.job->spec.tenant);
  });
}

const std::vector<const Job*>& Session::PreemptibleJobs(FlavorId f, Duration min_runtime) {
  SplitPreemptible(f, min_runtime);
  return preemptible_[f.value()];
}

const std::vector<Session::YoungJob>& Session::YoungJobs(FlavorId f, Duration min_runtime) {
  SplitPreemptible(f, min_runtime);
  return young_[f.value()];
}

void Session::Advance(Time now) {
  GP_CHECK(held_.empty()) << "Session::Advance after a hold";
  GP_CHECK(!released_) << "Session::Advance after a release";
  // A cycle commits what it keeps and rolls back what it tries: nothing may be left to undo.
  GP_CHECK(undo_.empty()) << "Session::Advance with " << undo_.size() << " changes not committed";
  now_ = now;
  // The jobs placed in the cycle are now the state's active jobs, running.
  if (!state_.reservations().empty()) quota_ = QuotaBook(state_, now);
  running_ = quota_;
  // Built from the jobs active at the cycle's start, or from the nodes' modes: built again.
  active_by_flavor_.clear();
  preemptible_.clear();
  young_.clear();
  victims_ready_.clear();
  caps_.clear();
  domains_.clear();
  eligible_.clear();
  eligible_ready_.clear();
  selected_.clear();
}

std::string Session::DifferenceFrom(const Session& fresh) const {
  if (slots_.size() != fresh.slots_.size()) return "node count";
  auto keys_text = [](const Keys& k, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += (i ? "," : "") + std::to_string(k[i].bits());
    return out;
  };
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    const NodeSlot& a = slots_[i];
    const NodeSlot& b = fresh.slots_[i];
    const std::string node = "node " + std::to_string(i) + ": ";
    if (a.pool != b.pool || a.n != b.n || a.held != b.held) return node + "pool, size or hold";
    if (a.level != b.level || a.cpu_free != b.cpu_free || a.mem_free != b.mem_free) {
      return node + "host (cpu " + std::to_string(a.cpu_free) + " against " + std::to_string(b.cpu_free) + ")";
    }
    if (a.tags != b.tags) return node + "tags";
    if (!std::equal(a.keys.begin(), a.keys.begin() + a.n, b.keys.begin())) {
      return node + "keys " + keys_text(a.keys, a.n) + " against " + keys_text(b.keys, b.n);
    }
    if ((a.cls == kNone) != (b.cls == kNone)) return node + "class";
    if (a.cls != kNone) {
      const ClassInfo& ca = classes_[a.cls];
      const ClassInfo& cb = fresh.classes_[b.cls];
      if (ca.pool != cb.pool || ca.n != cb.n || ca.level != cb.level || ca.kinds != cb.kinds ||
          ca.free != cb.free || !std::equal(ca.keys.begin(), ca.keys.begin() + ca.n, cb.keys.begin())) {
        return node + "class content";
      }
      if (members_[a.cls].count(i) != fresh.members_[b.cls].count(i)) return node + "class membership";
    }
    const std::vector<SharedOcc>& sa = shared_[i];
    const std::vector<SharedOcc>& sb = fresh.shared_[i];
    const bool same_shared = std::equal(sa.begin(), sa.end(), sb.begin(), sb.end(), [](const SharedOcc& x, const SharedOcc& y) {
      return x.gpu == y.gpu && x.job == y.job && x.tenant == y.tenant && x.milli == y.milli &&
             x.memory_mib == y.memory_mib;
    });
    if (!same_shared) return node + "shared occupants";
  }
  // The class lists: the same classes (by content) per pool and list, in any order.
  if (active_.size() != fresh.active_.size()) return "pool count";
  auto contents = [&keys_text](const Session& s, const std::vector<uint32_t>& list) {
    std::vector<std::string> out;
    for (uint32_t c : list) {
      const ClassInfo& ci = s.classes_[c];
      out.push_back(std::to_string(ci.level) + "/" + keys_text(ci.keys, ci.n));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  for (size_t l = 0; l < active_.size(); ++l) {
    if (contents(*this, active_[l]) != contents(fresh, fresh.active_[l])) return "class list " + std::to_string(l);
  }
  if (!(quota_ == fresh.quota_)) return "quota book";
  if (!(running_ == fresh.running_)) return "running quota book";
  return "";
}

}  // namespace gpupool
