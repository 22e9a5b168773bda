// ParseFakeGpuSpec: the spec grammar of fake_probe.h.
#include <algorithm>
#include <cctype>

#include "agent/fake_probe.h"

namespace gpupool {
namespace {

constexpr int kMaxGpus = 64;

struct Item {
  int profile;  // index into GpuModel::profiles
  int start;    // -1: to be placed
  size_t pos;   // position in the spec, for messages
};

class SpecParser {
 public:
  SpecParser(const Catalogue& c, std::string_view s) : cat_(c), s_(s) {}

  Result<std::vector<FakeGpuSpec>> Parse() {
    std::vector<FakeGpuSpec> out;
    std::string model_name;
    do {
      const size_t count_pos = pos_;
      auto count = Count();
      if (!count.ok()) return count.error();
      if (!Eat('x')) return Expected("'x' after the GPU count");
      const size_t model_pos = pos_;
      auto model = Model();
      if (!model.ok()) return model.error();
      if (!model_name.empty() && model_name != *model) {
        return At(model_pos,
                  "all GPUs of a node are one model: '" + *model + "' after '" + model_name + "'");
      }
      model_name = *model;
      FakeGpuSpec gpu;
      gpu.model = *model;
      if (Eat(':')) {
        if (s_.substr(pos_, 3) != "mig") return Expected("'mig' after ':'");
        pos_ += 3;
        gpu.mig = true;
        if (Eat('=')) {
          auto layout = Layout(cat_.model(*cat_.Find(*model)));
          if (!layout.ok()) return layout.error();
          gpu.layout = *layout;
        }
      }
      if (out.size() + static_cast<size_t>(*count) > kMaxGpus) {
        return At(count_pos, "more than " + std::to_string(kMaxGpus) + " GPUs");
      }
      out.insert(out.end(), static_cast<size_t>(*count), gpu);
    } while (Eat(','));
    if (pos_ != s_.size()) return Expected("',' or the end of the spec");
    return out;
  }

 private:
  Error At(size_t pos, const std::string& what) const {
    return InvalidArgument("fake GPU spec '" + std::string(s_) + "': at position " +
                           std::to_string(pos + 1) + ": " + what);
  }
  Error Expected(const std::string& what) const {
    const std::string found =
        pos_ < s_.size() ? "'" + std::string(1, s_[pos_]) + "'" : "the end of the spec";
    return At(pos_, "expected " + what + ", found " + found);
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool AtDigit() const {
    return pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]));
  }

  Result<int> Count() {
    const size_t start = pos_;
    if (!AtDigit()) return Expected("a GPU count");
    int n = 0;
    while (AtDigit()) {
      n = n * 10 + (s_[pos_++] - '0');
      if (n > kMaxGpus) return At(start, "more than " + std::to_string(kMaxGpus) + " GPUs");
    }
    if (n == 0) return At(start, "the GPU count must be at least 1");
    return n;
  }

  Result<std::string> Model() {
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ':' && s_[pos_] != ',') ++pos_;
    const std::string name(s_.substr(start, pos_ - start));
    if (name.empty()) {
      pos_ = start;
      return Expected("a GPU model");
    }
    if (!cat_.Find(name).ok()) {
      std::string known;
      for (const GpuModel& m : cat_.models()) known += (known.empty() ? "" : ", ") + m.name;
      return At(start, "unknown GPU model '" + name + "' (known: " + known + ")");
    }
    return name;
  }

  // instance ("+" instance)*, placed and validated.
  Result<MigLayout> Layout(const GpuModel& model) {
    const size_t list_pos = pos_;
    std::vector<Item> items;
    do {
      auto item = Instance(model);
      if (!item.ok()) return item.error();
      items.push_back(*item);
    } while (Eat('+'));
    std::vector<int> counts(model.profiles.size(), 0);
    for (const Item& it : items) {
      const MigProfile& p = model.profiles[it.profile];
      if (++counts[it.profile] > p.max_count) {
        return At(it.pos, "more than " + std::to_string(p.max_count) + " x " + p.name + " on " +
                              model.name);
      }
    }
    if (items.size() > MigLayout::kMaxInstances) return At(list_pos, "more than 7 GPU instances");
    // Fixed starts first, then the rest largest first (stable: spec order on ties).
    std::stable_sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
      if ((a.start >= 0) != (b.start >= 0)) return a.start >= 0;
      return model.profiles[a.profile].memory_slices > model.profiles[b.profile].memory_slices;
    });
    MigLayout layout;
    if (!Place(model, items, 0, 0, layout)) {
      return At(list_pos, "these MIG instances do not fit together on one " + model.name);
    }
    GP_RETURN_IF_ERROR(ValidateLayout(model, layout));
    return layout;
  }

  // profile ["@" start]. A profile name runs until '@', ',', the end, or a '+' that is followed
  // by a digit (the next instance), so "1g.10gb+me" is one name.
  Result<Item> Instance(const GpuModel& model) {
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != '@' && s_[pos_] != ',' &&
           !(s_[pos_] == '+' && pos_ + 1 < s_.size() &&
             std::isdigit(static_cast<unsigned char>(s_[pos_ + 1])))) {
      ++pos_;
    }
    const std::string name(s_.substr(start, pos_ - start));
    if (name.empty()) {
      pos_ = start;
      return Expected("a MIG profile name");
    }
    const int index = model.ProfileIndexByName(name);
    if (index < 0) {
      std::string known;
      for (const MigProfile& p : model.profiles) known += (known.empty() ? "" : ", ") + p.name;
      return At(start, "'" + name + "' is not a MIG profile of " + model.name +
                           " (profiles: " + known + ")");
    }
    Item item{index, -1, start};
    if (Eat('@')) {
      const size_t at = pos_;
      if (!AtDigit()) return Expected("a start memory slice 0-7 after '@'");
      item.start = s_[pos_++] - '0';
      if (!model.profiles[index].ValidStart(item.start)) {
        return At(at, name + " cannot start at memory slice " + std::to_string(item.start) +
                          " on " + model.name);
      }
    }
    return item;
  }

  // Depth-first search over starts, highest first; deterministic.
  static bool Place(const GpuModel& model, const std::vector<Item>& items, size_t i, MigMask used,
                    MigLayout& layout) {
    if (i == items.size()) return true;
    const MigProfile& p = model.profiles[items[i].profile];
    for (int s = 7; s >= 0; --s) {
      if (items[i].start >= 0 && s != items[i].start) continue;
      if (!p.ValidStart(s) || (used & p.MaskAt(s)) != 0) continue;
      layout.Add({static_cast<uint8_t>(items[i].profile), static_cast<uint8_t>(s)});
      if (Place(model, items, i + 1, used | p.MaskAt(s), layout)) return true;
      layout.RemoveAt(layout.IndexOfStart(s));
    }
    return false;
  }

  const Catalogue& cat_;
  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::vector<FakeGpuSpec>> ParseFakeGpuSpec(const Catalogue& catalogue,
                                                  std::string_view spec) {
  return SpecParser(catalogue, spec).Parse();
}

}  // namespace gpupool
