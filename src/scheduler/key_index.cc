#include "scheduler/key_index.h"

#include <algorithm>

namespace gpupool {

bool KeyIndex::Indexed(GpuKey k) {
  // An idle dynamic GPU's option changes its node's free whole GPUs too, so it is not a
  // function of its key alone: placement finds it by node class (Session::flex_active).
  if (k.flex()) return false;
  if (k.mode() == KeyMode::kMig) return k.free_mask() != 0 || MigIdle(k);
  if (k.mode() == KeyMode::kShared) return k.free_milli() > 0 && k.free_clients() > 0;
  return false;
}

uint32_t KeyIndex::Intern(uint32_t pool, GpuKey k) {
  if (intern_.size() <= pool) intern_.resize(pool + 1);
  auto [it, fresh] = intern_[pool].try_emplace(k.bits(), 0);
  if (!fresh) return it->second;
  Entry e;
  e.key = k;
  e.pool = pool;
  const int mode = k.mode() == KeyMode::kMig ? 0 : 1;
  e.index = per_mode_[mode]++;
  if (mode == 0) {
    e.bucket[e.buckets++] = kMig;
  } else if (k.owner() == 0) {
    e.bucket[e.buckets++] = kOpen;
  } else {
    if (k.owner() != GpuKey::kMultiOwner) e.bucket[e.buckets++] = kOwnerBase + k.owner() - 1;
    if (k.owner_allows()) e.bucket[e.buckets++] = kAllows;
  }
  entries_.push_back(std::move(e));
  it->second = static_cast<uint32_t>(entries_.size() - 1);
  return it->second;
}

void KeyIndex::Activate(uint32_t id) {
  Entry& e = entries_[id];
  for (int b = 0; b < e.buckets; ++b) {
    std::vector<uint32_t>& list = lists_[Slot(e.pool, e.bucket[b])];
    e.pos[b] = static_cast<int32_t>(list.size());
    list.push_back(id);
  }
}

void KeyIndex::Deactivate(uint32_t id) {
  Entry& e = entries_[id];
  for (int b = 0; b < e.buckets; ++b) {
    std::vector<uint32_t>& list = lists_[Slot(e.pool, e.bucket[b])];
    const int32_t pos = e.pos[b];
    const uint32_t moved = list.back();
    list[pos] = moved;
    Entry& m = entries_[moved];
    for (int mb = 0; mb < m.buckets; ++mb) {
      if (m.bucket[mb] == e.bucket[b]) m.pos[mb] = pos;
    }
    list.pop_back();
    e.pos[b] = -1;
  }
}

void KeyIndex::Add(uint32_t pool, uint32_t node, const GpuKey* keys, int n) {
  for (int i = 0; i < n; ++i) {
    if (!Indexed(keys[i])) continue;
    const uint32_t id = Intern(pool, keys[i]);
    std::set<uint32_t>& nodes = entries_[id].nodes;
    if (nodes.insert(node).second && nodes.size() == 1) Activate(id);
  }
}

void KeyIndex::Remove(uint32_t pool, uint32_t node, const GpuKey* keys, int n) {
  for (int i = 0; i < n; ++i) {
    if (!Indexed(keys[i])) continue;
    const uint32_t id = Intern(pool, keys[i]);
    std::set<uint32_t>& nodes = entries_[id].nodes;
    if (nodes.erase(node) && nodes.empty()) Deactivate(id);
  }
}

const std::vector<uint32_t>& KeyIndex::active(uint32_t pool, uint32_t bucket) const {
  static const std::vector<uint32_t> kEmpty;
  auto it = lists_.find(Slot(pool, bucket));
  return it == lists_.end() ? kEmpty : it->second;
}

}  // namespace gpupool
