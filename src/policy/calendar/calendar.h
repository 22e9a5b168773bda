// Calendar: the availability calendar of one flavor, the ground that reservations are built on
// (DESIGN.md §5; the math is in docs/design/reservations.md).
//
// At every instant t, with C the healthy capacity, G the sum of tenant guarantees (both constant
// in time for now), R(t) the sum of reservations whose [start, end) holds t and M(t) the sum of
// maintenance windows that hold t:
//   free(t) = C - G - R(t) - M(t)
//   a reservation of A over [s, e) fits        iff free(t)     >= A for every t in [s, e)
//   a maintenance window of A over [s, e) fits iff free(t) + G >= A for every t in [s, e)
// Maintenance may eat into standing guarantees, as a health failure would, but never into
// reserved capacity: the reasons are in the design note.
//
// Invariants:
//   1. levels_ maps each boundary to the (R, M) that holds from it up to the next boundary; its
//      first key is kBeginning, so every instant has a level, and the last level is (0, 0).
//   2. Neighbouring levels differ: a boundary is a real change, so a calendar whose bookings
//      were all cancelled is back to one entry.
//   3. Each level equals the sum over bookings_ of those that hold the level's instants.
//   4. Book and Cancel change nothing when they fail.
// While the capacity and the guarantees never drop, R(t) + M(t) <= C at every t, and
// G + R(t) <= C at every t before the first maintenance window is booked. SetCapacity and
// SetGuaranteed may break that (hardware fails; admins set guarantees): free(t) then goes
// negative, Buckets shows it, Reservable reads 0 there and nothing more can be booked there.
//
// Thread-safety: none. One owner (the daemon's event loop) serialises Book and Cancel, which is
// what makes "check, then book" atomic against concurrent requests.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ids.h"
#include "core/quantity.h"
#include "core/result.h"
#include "core/time.h"

namespace gpupool {

struct Booking {
  int64_t id = 0;   // chosen by the caller, unique within the calendar
  TenantId tenant;  // the holder of a reservation; invalid for a maintenance window
  GpuEq amount;     // > 0
  Time start, end;  // [start, end), start < end; end may be Time::Never()
  bool maintenance = false;
};

class Calendar {
 public:
  Calendar(GpuEq capacity, GpuEq guaranteed) : capacity_(capacity), guaranteed_(guaranteed) {}

  // Constant over time. Lowering either may over-commit the calendar; no booking is dropped.
  void SetCapacity(GpuEq capacity) { capacity_ = capacity; }
  void SetGuaranteed(GpuEq guaranteed) { guaranteed_ = guaranteed; }
  GpuEq capacity() const { return capacity_; }
  GpuEq guaranteed() const { return guaranteed_; }

  // Checks and books in one step. Errors, with nothing changed:
  //   kInvalidArgument  amount <= 0, start >= end, a reservation without a tenant or a
  //                     maintenance window with one;
  //   kAlreadyExists    the id is taken;
  //   kConflict         it does not fit: "short by 3 GPUs from <t1> to <t2>; at most 5 GPUs can
  //                     be reserved from <s> to <e>", naming the worst shortfall and the first
  //                     stretch where it occurs, with times in RFC 3339 UTC.
  Status Book(const Booking& b);
  // kNotFound when there is no booking with this id.
  Status Cancel(int64_t id);

  // How much one more reservation over [a, b) could take: min over [a, b) of free(t), or 0
  // where that is negative. kInvalidArgument unless a < b.
  Result<GpuEq> Reservable(Time a, Time b) const;

  // The earliest s with after <= s < horizon at which a reservation of `amount` for `d` fits,
  // or nullopt when there is none. kInvalidArgument unless amount > 0 and d > 0.
  Result<std::optional<Time>> EarliestStart(GpuEq amount, Duration d, Time after,
                                            Time horizon) const;

  // One row of a drawn calendar. The numbers are those at `tightest`, the first instant of the
  // bucket where free(t) is lowest, so free == capacity - guaranteed - reserved - maintenance
  // exactly; free may be negative (over-committed).
  struct Bucket {
    Time start, end, tightest;
    GpuEq capacity, guaranteed, reserved, maintenance, free;
  };
  static constexpr int64_t kMaxBuckets = 10'000;
  // [a, a + step), [a + step, a + 2 step), ..., the last one cut at b. kInvalidArgument unless
  // a < b, step > 0 and there are at most kMaxBuckets buckets.
  Result<std::vector<Bucket>> Buckets(Time a, Time b, Duration step) const;

  // What the tenant holds at t over all its reservations: what the scheduler adds to its
  // guarantee at t. O(bookings).
  GpuEq ReservedAt(TenantId tenant, Time t) const;

  const std::map<int64_t, Booking>& bookings() const { return bookings_; }
  // Number of boundaries in the step function, the sentinel included (for tests).
  size_t boundary_count() const { return levels_.size(); }

 private:
  struct Level {
    GpuEq reserved, maintenance;
    friend bool operator==(const Level&, const Level&) = default;
  };
  using Levels = std::map<Time, Level>;
  static constexpr Time kBeginning = Time::FromMillis(INT64_MIN);

  GpuEq Free(const Level& l) const { return capacity_ - guaranteed_ - l.reserved - l.maintenance; }
  // The level map entry in force at t.
  Levels::const_iterator At(Time t) const;
  // Calls f(from, to, level) for the constant pieces of [a, b), in order. REQUIRES: a < b.
  template <class F>
  void ForEachPiece(Time a, Time b, F&& f) const;
  // Adds `sign` times the booking to the levels over its window.
  void Apply(const Booking& b, int sign);
  Levels::iterator Split(Time t);
  void Coalesce(Levels::iterator it);

  GpuEq capacity_, guaranteed_;
  Levels levels_{{kBeginning, Level{}}};
  std::map<int64_t, Booking> bookings_;
};

// RFC 3339 in UTC with a Z, milliseconds only when not zero: "2026-12-01T10:00:00Z",
// "1970-01-01T00:00:00.250Z"; "never" for Time::Never(). Years outside 0..9999 print as plain
// (signed) numbers, which RFC 3339 does not cover.
std::string Rfc3339(Time t);

}  // namespace gpupool
