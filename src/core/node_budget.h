// How many nodes a parsed YAML document may expand to, and how deep. An alias names an anchored
// node again, so a few hundred bytes can stand for a billion nodes ("billion laughs": ten
// aliases of ten aliases of ...); converting that to JSON takes minutes and gigabytes. A
// document without aliases has fewer nodes than bytes, so a budget of a few nodes per byte
// refuses only that expansion. An alias inside its own anchor (`a: &a [*a]`) makes a cycle:
// depth-first conversion would recurse until the stack overflows before the count runs out, so
// depth is bounded too (far above what a configuration or a job file nests). The daemon's
// configuration and the CLI's job files both convert under one.
#pragma once

#include <cstddef>
#include <string>

namespace gpupool {

class NodeBudget {
 public:
  static constexpr size_t kMaxDepth = 64;

  explicit NodeBudget(size_t text_bytes) : limit_(kPerByte * text_bytes + kSlack), left_(limit_) {}

  // Counts one node at `depth` (the document's root is at 0); false once the document has more
  // than limit() nodes or nests deeper than kMaxDepth. Why() then says which.
  bool Take(size_t depth) {
    if (depth > kMaxDepth) {
      too_deep_ = true;
      return false;
    }
    if (left_ == 0) return false;
    --left_;
    return true;
  }
  size_t limit() const { return limit_; }

  // Why Take() refused, to follow "the file" or "the configuration".
  std::string Why() const {
    if (too_deep_) {
      return "nests deeper than " + std::to_string(kMaxDepth) + " levels (an alias inside its own anchor?)";
    }
    return "expands to more than " + std::to_string(limit_) + " YAML nodes (aliases of aliases?)";
  }

 private:
  static constexpr size_t kPerByte = 16;
  static constexpr size_t kSlack = 1024;
  size_t limit_;
  size_t left_;
  bool too_deep_ = false;
};

}  // namespace gpupool
