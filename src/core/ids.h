// Strong identifiers. An id is an index or a sequence number, never a string: names live in the
// model next to the object they name. Ids order totally, so they can break the last tie in any
// ordering (STYLE.md habit 2).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace gpupool {

template <class Tag, class Rep = uint32_t>
class StrongId {
 public:
  using rep = Rep;
  static constexpr Rep kInvalid = std::numeric_limits<Rep>::max();

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }
  constexpr bool valid() const { return v_ != kInvalid; }
  friend constexpr auto operator<=>(StrongId, StrongId) = default;

 private:
  Rep v_ = kInvalid;
};

using TenantId = StrongId<struct TenantTag>;
using NodeId = StrongId<struct NodeTag>;
using FlavorId = StrongId<struct FlavorTag, uint16_t>;
using PriorityClassId = StrongId<struct PriorityClassTag, uint16_t>;
using JobId = StrongId<struct JobTag, uint64_t>;
using ReservationId = StrongId<struct ReservationTag, uint64_t>;

}  // namespace gpupool

template <class Tag, class Rep>
struct std::hash<gpupool::StrongId<Tag, Rep>> {
  size_t operator()(gpupool::StrongId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>()(id.value());
  }
};
