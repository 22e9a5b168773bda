// How many nodes a parsed YAML document may expand to. An alias names an anchored node again,
// so a few hundred bytes can stand for a billion nodes ("billion laughs": ten aliases of ten
// aliases of ...); converting that to JSON takes minutes and gigabytes. A document without
// aliases has fewer nodes than bytes, so a budget of a few nodes per byte refuses only that
// expansion. The daemon's configuration and the CLI's job files both convert under one.
#pragma once

#include <cstddef>

namespace gpupool {

class NodeBudget {
 public:
  explicit NodeBudget(size_t text_bytes) : limit_(kPerByte * text_bytes + kSlack), left_(limit_) {}

  // Counts one node; false once the document has more than limit().
  bool Take() {
    if (left_ == 0) return false;
    --left_;
    return true;
  }
  size_t limit() const { return limit_; }

 private:
  static constexpr size_t kPerByte = 16;
  static constexpr size_t kSlack = 1024;
  size_t limit_;
  size_t left_;
};

}  // namespace gpupool
