#include "policy/calendar/calendar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace gpupool {
namespace {

constexpr Time kDay = Time::FromMillis(1'796'083'200'000);  // 2026-12-01T00:00:00Z
Time H(int64_t hours) { return kDay + Duration::Hours(hours); }
GpuEq G(int64_t gpus) { return GpuEq::Gpus(gpus); }
const TenantId kA(0), kB(1);

Booking Res(int64_t id, TenantId t, GpuEq amount, Time start, Time end) {
  return {.id = id, .tenant = t, .amount = amount, .start = start, .end = end};
}
Booking Maint(int64_t id, GpuEq amount, Time start, Time end) {
  return {.id = id, .amount = amount, .start = start, .end = end, .maintenance = true};
}
GpuEq Reservable(const Calendar& c, Time a, Time b) { return c.Reservable(a, b).value(); }
std::optional<Time> Earliest(const Calendar& c, GpuEq n, Duration d, Time after, Time horizon) {
  return c.EarliestStart(n, d, after, horizon).value();
}

TEST(Rfc3339, FormatsUtcWithoutAClock) {
  EXPECT_EQ(Rfc3339(Time()), "1970-01-01T00:00:00Z");
  EXPECT_EQ(Rfc3339(H(10)), "2026-12-01T10:00:00Z");
  EXPECT_EQ(Rfc3339(Time::FromMillis(250)), "1970-01-01T00:00:00.250Z");
  EXPECT_EQ(Rfc3339(Time::FromMillis(-1)), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(Rfc3339(Time::FromMillis(1'709'251'199'000)), "2024-02-29T23:59:59Z");  // leap day
  EXPECT_EQ(Rfc3339(Time::FromMillis(951'868'800'000)), "2000-03-01T00:00:00Z");
  EXPECT_EQ(Rfc3339(Time::FromMillis(-62'135'596'800'000)), "0001-01-01T00:00:00Z");
  EXPECT_EQ(Rfc3339(Time::FromMillis(253'402'300'799'000)), "9999-12-31T23:59:59Z");
  EXPECT_EQ(Rfc3339(Time::Never()), "never");
}

TEST(Calendar, ExactFitIsAcceptedAndOneUnitMoreIsNot) {
  // 16 healthy, 10 guaranteed: 6 reservable at any time.
  Calendar c(G(16), G(10));
  EXPECT_EQ(Reservable(c, H(10), H(12)), G(6));
  ASSERT_TRUE(c.Book(Res(1, kA, G(6) - GpuEq::MigSlices(1), H(10), H(12))).ok());
  // One MIG slice (1000 units) is left; 1001 units is short by one unit.
  EXPECT_EQ(Reservable(c, H(10), H(12)), GpuEq::MigSlices(1));
  EXPECT_EQ(c.Book(Res(2, kB, GpuEq::Units(1001), H(10), H(12))).error().code,
            ErrorCode::kConflict);
  ASSERT_TRUE(c.Book(Res(3, kB, GpuEq::MigSlices(1), H(10), H(12))).ok());
  EXPECT_EQ(Reservable(c, H(10), H(12)), GpuEq());
  EXPECT_EQ(Reservable(c, H(9), H(13)), GpuEq());  // min over the window
  EXPECT_EQ(Reservable(c, H(12), H(13)), G(6));    // end is exclusive
}

TEST(Calendar, ShortByNamesTheWorstShortfallAndWhereItIs) {
  // 16 healthy, 8 guaranteed: 8 free. a holds 4 over [10, 12): 4 free there.
  Calendar c(G(16), G(8));
  ASSERT_TRUE(c.Book(Res(1, kA, G(4), H(10), H(12))).ok());
  const Status s = c.Book(Res(2, kB, G(7), H(9), H(13)));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kConflict);
  EXPECT_EQ(s.error().message,
            "reservation refused: short by 3 GPUs from 2026-12-01T10:00:00Z to 2026-12-01T12:00:00Z; at "
            "most 4 GPUs can be reserved from 2026-12-01T09:00:00Z to 2026-12-01T13:00:00Z");
  EXPECT_EQ(c.bookings().size(), 1u);
}

TEST(Calendar, ShortfallStretchRunsAcrossBoundariesWithTheSameFreeAmount) {
  // 8 healthy, nothing guaranteed. Over [10, 11): reservations 2 + 2. Over [11, 12):
  // reservation 2 + maintenance 2. Different levels, same free (4): one stretch in the message.
  Calendar c(G(8), G(0));
  ASSERT_TRUE(c.Book(Res(1, kA, G(2), H(10), H(12))).ok());
  ASSERT_TRUE(c.Book(Res(2, kB, G(2), H(10), H(11))).ok());
  ASSERT_TRUE(c.Book(Maint(3, G(2), H(11), H(12))).ok());
  const Status s = c.Book(Res(4, kB, G(5), H(8), H(14)));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "reservation refused: short by 1 GPU from 2026-12-01T10:00:00Z to 2026-12-01T12:00:00Z; at "
            "most 4 GPUs can be reserved from 2026-12-01T08:00:00Z to 2026-12-01T14:00:00Z");
}

TEST(Calendar, AdjacentWindowsDoNotOverlap) {
  Calendar c(G(8), G(0));
  ASSERT_TRUE(c.Book(Res(1, kA, G(8), H(10), H(12))).ok());
  ASSERT_TRUE(c.Book(Res(2, kB, G(8), H(12), H(14))).ok());
  ASSERT_TRUE(c.Book(Res(3, kB, G(8), H(8), H(10))).ok());
  // Any window that straddles a boundary inside [8, 14) is full.
  EXPECT_EQ(c.Book(Res(4, kA, G(1), H(11), H(13))).error().code, ErrorCode::kConflict);
  EXPECT_EQ(c.Book(Res(5, kA, G(1), H(11) + Duration::Minutes(59), H(12))).error().code,
            ErrorCode::kConflict);
  EXPECT_TRUE(c.Book(Res(6, kA, G(8), H(14), H(15))).ok());
  // Three back-to-back bookings of the same amount are one level: [8, 15) and the end.
  EXPECT_EQ(c.boundary_count(), 3u);
}

TEST(Calendar, InvalidBookingsAreRejectedAndChangeNothing) {
  Calendar c(G(8), G(2));
  ASSERT_TRUE(c.Book(Res(1, kA, G(2), H(10), H(12))).ok());
  const size_t boundaries = c.boundary_count();
  struct Case {
    Booking b;
    ErrorCode code;
    std::string message;
  };
  const Case cases[] = {
      {Res(2, kA, G(0), H(10), H(12)), ErrorCode::kInvalidArgument,
       "reservation refused: the amount must be positive, got 0"},
      {Res(2, kA, GpuEq::Units(-7), H(10), H(12)), ErrorCode::kInvalidArgument,
       "reservation refused: the amount must be positive, got -0.001"},
      {Res(2, kA, G(1), H(10), H(10)), ErrorCode::kInvalidArgument,
       "reservation refused: the window must end after it starts, got 2026-12-01T10:00:00Z to "
       "2026-12-01T10:00:00Z"},
      {Res(2, kA, G(1), H(12), H(10)), ErrorCode::kInvalidArgument,
       "reservation refused: the window must end after it starts, got 2026-12-01T12:00:00Z to "
       "2026-12-01T10:00:00Z"},
      {Res(2, TenantId(), G(1), H(10), H(12)), ErrorCode::kInvalidArgument,
       "reservation refused: a reservation needs a tenant"},
      {{.id = 2, .tenant = kA, .amount = G(1), .start = H(1), .end = H(2), .maintenance = true},
       ErrorCode::kInvalidArgument,
       "maintenance window refused: a maintenance window has no tenant"},
      {Res(1, kB, G(1), H(20), H(21)), ErrorCode::kAlreadyExists, "booking 1 already exists"},
      {Res(2, kA, G(9), H(20), H(21)), ErrorCode::kConflict,
       "reservation refused: 9 GPUs cannot be reserved: the healthy capacity is 8 GPUs"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.message);
    const Status s = c.Book(k.b);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, k.code);
    EXPECT_EQ(s.error().message, k.message);
    EXPECT_EQ(c.bookings().size(), 1u);
    EXPECT_EQ(c.boundary_count(), boundaries);
    EXPECT_EQ(Reservable(c, H(0), H(24)), G(4));
  }
}

TEST(Calendar, CancelRestoresTheCalendarExactly) {
  Calendar c(G(8), G(0));
  ASSERT_TRUE(c.Book(Res(1, kA, G(3), H(10), H(14))).ok());
  ASSERT_TRUE(c.Book(Res(2, kB, G(5), H(12), H(16))).ok());
  ASSERT_TRUE(c.Book(Maint(3, G(3), H(8), H(11))).ok());
  EXPECT_EQ(c.Book(Res(4, kA, G(1), H(12), H(13))).error().code, ErrorCode::kConflict);
  ASSERT_TRUE(c.Cancel(2).ok());
  EXPECT_TRUE(c.Book(Res(4, kA, G(5), H(12), H(13))).ok());  // 8 - 3 = 5 free again
  EXPECT_EQ(c.Cancel(2).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(c.Cancel(2).error().message, "booking 2 does not exist");
  ASSERT_TRUE(c.Cancel(1).ok());
  ASSERT_TRUE(c.Cancel(3).ok());
  ASSERT_TRUE(c.Cancel(4).ok());
  // Nothing left: the step function is the single sentinel level again.
  EXPECT_TRUE(c.bookings().empty());
  EXPECT_EQ(c.boundary_count(), 1u);
  EXPECT_EQ(Reservable(c, H(0), H(24)), G(8));
}

TEST(Calendar, MaintenanceMayTakeGuaranteedButNotReservedCapacity) {
  // 16 healthy, 12 guaranteed, a holds the other 4 over [10, 12).
  Calendar c(G(16), G(12));
  ASSERT_TRUE(c.Book(Res(1, kA, G(4), H(10), H(12))).ok());
  // Maintenance sees 16 - 4 reserved = 12: 13 is short by one.
  const Status s = c.Book(Maint(2, G(13), H(11), H(13)));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "maintenance window refused: short by 1 GPU from 2026-12-01T11:00:00Z to 2026-12-01T12:00:00Z; at "
            "most 12 GPUs can be taken for maintenance from 2026-12-01T11:00:00Z to "
            "2026-12-01T13:00:00Z");
  ASSERT_TRUE(c.Book(Maint(2, G(12), H(11), H(13))).ok());
  // Over [11, 12) the guarantees are now uncovered: free = 16 - 12 - 4 - 12 = -12.
  const auto rows = c.Buckets(H(10), H(13), Duration::Hours(1)).value();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].free, G(-12));
  EXPECT_EQ(rows[2].free, G(-8));
  EXPECT_EQ(Reservable(c, H(10), H(13)), GpuEq());
  // No reservation and no further maintenance fits there.
  EXPECT_EQ(c.Book(Res(3, kB, G(1), H(12), H(13))).error().code, ErrorCode::kConflict);
  EXPECT_EQ(c.Book(Maint(4, G(1), H(11), H(12))).error().code, ErrorCode::kConflict);
  // Reservations never go over maintenance either: 4 free before and after, 0 during.
  EXPECT_EQ(Earliest(c, G(4), Duration::Hours(1), H(10), H(20)), H(13));
}

TEST(Calendar, LoweredCapacityOverCommitsWithoutDroppingBookings) {
  Calendar c(G(16), G(8));
  ASSERT_TRUE(c.Book(Res(1, kA, G(8), H(10), H(12))).ok());
  c.SetCapacity(G(14));  // two GPUs failed
  EXPECT_EQ(c.bookings().size(), 1u);
  EXPECT_EQ(c.Buckets(H(10), H(11), Duration::Hours(1)).value()[0].free, G(-2));
  EXPECT_EQ(Reservable(c, H(9), H(11)), GpuEq());
  const Status s = c.Book(Res(2, kB, G(1), H(11), H(13)));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "reservation refused: short by 3 GPUs from 2026-12-01T11:00:00Z to 2026-12-01T12:00:00Z; at "
            "most 0 GPUs can be reserved from 2026-12-01T11:00:00Z to 2026-12-01T13:00:00Z");
  EXPECT_TRUE(c.Book(Res(2, kB, G(6), H(12), H(13))).ok());
  c.SetGuaranteed(G(4));
  EXPECT_EQ(Reservable(c, H(10), H(12)), G(2));
}

TEST(Calendar, EarliestStartFindsTheFirstWindowThatFits) {
  // 8 healthy. a: 6 over [10, 14); b: 2 over [12, 16).
  // free: 8 before 10, 2 on [10, 12), 0 on [12, 14), 6 on [14, 16), 8 from 16.
  Calendar c(G(8), G(0));
  ASSERT_TRUE(c.Book(Res(1, kA, G(6), H(10), H(14))).ok());
  ASSERT_TRUE(c.Book(Res(2, kB, G(2), H(12), H(16))).ok());
  const Duration h = Duration::Hours(1);
  EXPECT_EQ(Earliest(c, G(4), h, H(9), H(24)), H(9));                    // [9, 10) fits
  EXPECT_EQ(Earliest(c, G(4), Duration::Hours(2), H(9), H(24)), H(14));  // free rises at 14
  EXPECT_EQ(Earliest(c, G(2), h, H(10), H(24)), H(10));
  EXPECT_EQ(Earliest(c, G(2), Duration::Hours(2), H(11), H(24)), H(14));
  EXPECT_EQ(Earliest(c, G(8), Duration::Hours(3), H(9), H(24)), H(16));
  // The start must be before the horizon; the window itself may run past it.
  EXPECT_EQ(Earliest(c, G(8), Duration::Hours(3), H(9), H(16)), std::nullopt);
  EXPECT_EQ(Earliest(c, G(8), Duration::Hours(3), H(9), H(16) + Duration::Millis(1)), H(16));
  EXPECT_EQ(Earliest(c, G(9), h, H(0), H(100)), std::nullopt);  // never enough
  EXPECT_EQ(Earliest(c, G(1), h, H(5), H(5)), std::nullopt);    // empty search range
  EXPECT_EQ(c.EarliestStart(GpuEq(), h, H(0), H(1)).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.EarliestStart(G(1), Duration(), H(0), H(1)).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.Reservable(H(1), H(1)).error().code, ErrorCode::kInvalidArgument);
}

TEST(Calendar, OpenEndedBookingsReachNever) {
  Calendar c(G(8), G(0));
  ASSERT_TRUE(c.Book(Maint(1, G(8), H(10), Time::Never())).ok());  // decommissioned
  EXPECT_EQ(Reservable(c, H(9), Time::Never()), GpuEq());
  EXPECT_EQ(Earliest(c, G(1), Duration::Hours(1), H(0), Time::Never()), H(0));
  EXPECT_EQ(Earliest(c, G(1), Duration::Hours(2), H(9), Time::Never()), std::nullopt);
  EXPECT_EQ(Earliest(c, G(1), Duration::Infinite(), H(0), Time::Never()), std::nullopt);
  ASSERT_TRUE(c.Cancel(1).ok());
  EXPECT_EQ(Earliest(c, G(1), Duration::Infinite(), H(0), Time::Never()), H(0));
}

TEST(Calendar, BucketsShowTheTightestInstantOfEachBucket) {
  // 8 healthy, 2 guaranteed. a: 3 over [10:30, 11:15); maintenance 2 over [11:00, 12:00).
  Calendar c(G(8), G(2));
  const Duration m = Duration::Minutes(1);
  ASSERT_TRUE(
      c.Book(Res(1, kA, G(3), H(10) + Duration::Minutes(30), H(11) + Duration::Minutes(15))).ok());
  ASSERT_TRUE(c.Book(Maint(2, G(2), H(11), H(12))).ok());
  const auto rows = c.Buckets(H(10), H(12) + Duration::Minutes(30), Duration::Hours(1)).value();
  ASSERT_EQ(rows.size(), 3u);
  // [10, 11): 6 free until 10:30, then 3. Tightest at 10:30.
  EXPECT_EQ(rows[0].tightest, H(10) + Duration::Minutes(30));
  EXPECT_EQ(rows[0].reserved, G(3));
  EXPECT_EQ(rows[0].free, G(3));
  // [11, 12): 1 free until 11:15 (3 reserved + 2 maintenance), then 4.
  EXPECT_EQ(rows[1].tightest, H(11));
  EXPECT_EQ(rows[1].maintenance, G(2));
  EXPECT_EQ(rows[1].free, G(1));
  // [12, 12:30): cut at the end of the range, nothing booked.
  EXPECT_EQ(rows[2].end, H(12) + Duration::Minutes(30));
  EXPECT_EQ(rows[2].free, G(6));
  for (const Calendar::Bucket& b : rows) {
    EXPECT_EQ(b.free, b.capacity - b.guaranteed - b.reserved - b.maintenance);
  }
  EXPECT_EQ(c.Buckets(H(0), H(1), Duration()).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.Buckets(H(1), H(0), m).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.Buckets(H(0), H(24), Duration::Seconds(1)).error().message,
            "too many buckets: 86400, at most 10000");
  EXPECT_EQ(c.Buckets(Time::FromMillis(INT64_MIN), Time::Never(), Duration::Hours(1)).error().code,
            ErrorCode::kInvalidArgument);
}

TEST(Calendar, ReservedAtSumsTheTenantsReservationsOnly) {
  Calendar c(G(16), G(0));
  ASSERT_TRUE(c.Book(Res(1, kA, G(2), H(10), H(12))).ok());
  ASSERT_TRUE(c.Book(Res(2, kA, G(3), H(11), H(13))).ok());
  ASSERT_TRUE(c.Book(Res(3, kB, G(4), H(10), H(13))).ok());
  ASSERT_TRUE(c.Book(Maint(4, G(1), H(10), H(13))).ok());
  EXPECT_EQ(c.ReservedAt(kA, H(10)), G(2));
  EXPECT_EQ(c.ReservedAt(kA, H(11)), G(5));
  EXPECT_EQ(c.ReservedAt(kA, H(12)), G(3));  // [10, 12) has ended
  EXPECT_EQ(c.ReservedAt(kA, H(13)), G(0));
  EXPECT_EQ(c.ReservedAt(kB, H(11)), G(4));
  EXPECT_EQ(c.ReservedAt(TenantId(), H(11)), G(0));  // maintenance is nobody's
}

// ---- Seeded property test: the calendar against a brute-force model on a millisecond grid ----

// Every booking lies inside [0, 56) ms and every query inside [kLo, kHi), so the model can
// evaluate each instant directly from the list of accepted bookings.
constexpr int64_t kLo = -5, kHi = 120;
Time T(int64_t ms) { return Time::FromMillis(ms); }

struct Model {
  GpuEq capacity, guaranteed;
  std::map<int64_t, Booking> bookings;
  // Per instant t in [kLo, kHi), at index t - kLo.
  std::vector<GpuEq> reserved, maintenance;

  void Evaluate() {
    reserved.assign(kHi - kLo, GpuEq());
    maintenance.assign(kHi - kLo, GpuEq());
    for (const auto& [id, b] : bookings) {
      for (int64_t t = b.start.millis(); t < b.end.millis(); ++t) {
        (b.maintenance ? maintenance : reserved)[t - kLo] += b.amount;
      }
    }
  }
  GpuEq Free(int64_t t) const {
    return capacity - guaranteed - reserved[t - kLo] - maintenance[t - kLo];
  }
  bool Fits(const Booking& b) const {
    if (b.amount > capacity) return false;
    for (int64_t t = b.start.millis(); t < b.end.millis(); ++t) {
      if (Free(t) + (b.maintenance ? guaranteed : GpuEq()) < b.amount) return false;
    }
    return true;
  }
  GpuEq MinFree(int64_t a, int64_t b) const {
    GpuEq m = Free(a);
    for (int64_t t = a; t < b; ++t) m = Min(m, Free(t));
    return m;
  }
  std::optional<Time> Earliest(GpuEq amount, int64_t d, int64_t after, int64_t horizon) const {
    for (int64_t s = after; s < horizon; ++s) {
      if (MinFree(s, s + d) >= amount) return T(s);
    }
    return std::nullopt;
  }
  GpuEq ReservedAt(TenantId tenant, int64_t t) const {
    GpuEq sum;
    for (const auto& [id, b] : bookings) {
      if (!b.maintenance && b.tenant == tenant && b.start <= T(t) && T(t) < b.end) sum += b.amount;
    }
    return sum;
  }
  // Boundaries a canonical step function needs: the sentinel plus one per change of level.
  size_t Boundaries() const {
    size_t n = 1;
    for (int64_t t = kLo + 1; t < kHi; ++t) {
      n += reserved[t - kLo] != reserved[t - 1 - kLo] ||
           maintenance[t - kLo] != maintenance[t - 1 - kLo];
    }
    return n;
  }
};

class CalendarProperty : public ::testing::Test {
 protected:
  int64_t U(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  // Mostly whole MIG slices, so that exact fits happen; sometimes an odd number of units.
  GpuEq Amount(int64_t max_slices) {
    if (U(0, 9) == 0) return GpuEq::Units(U(1, max_slices * 1000));
    return GpuEq::MigSlices(U(1, max_slices));
  }

  void Run(uint64_t seed, bool vary_capacity) {
    rng_.seed(seed);
    Model m{.capacity = GpuEq::MigSlices(12), .guaranteed = GpuEq::MigSlices(U(0, 6))};
    Calendar c(m.capacity, m.guaranteed);
    m.Evaluate();
    int64_t next_id = 0;
    int accepted = 0, rejected = 0, cancelled = 0;
    for (int step = 0; step < 300; ++step) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", step " + std::to_string(step));
      const int64_t op = U(0, 99);
      if (op < 65 || m.bookings.empty()) {
        Booking b{.id = next_id++, .amount = Amount(9), .start = T(U(0, 40))};
        b.end = b.start + Duration::Millis(U(1, 15));
        b.maintenance = U(0, 4) == 0;
        if (!b.maintenance) b.tenant = TenantId(static_cast<uint32_t>(U(0, 2)));
        const bool fits = m.Fits(b);
        const Status s = c.Book(b);
        ASSERT_EQ(s.ok(), fits) << (s.ok() ? "accepted" : s.error().message);
        if (fits) {
          m.bookings.emplace(b.id, b);
          ++accepted;
        } else {
          EXPECT_EQ(s.error().code, ErrorCode::kConflict);
          ++rejected;
        }
      } else if (op < 92 || !vary_capacity) {
        auto it = m.bookings.begin();
        std::advance(it, U(0, static_cast<int64_t>(m.bookings.size()) - 1));
        ASSERT_TRUE(c.Cancel(it->first).ok());
        m.bookings.erase(it);
        ++cancelled;
      } else if (op < 96) {
        m.capacity = GpuEq::MigSlices(U(6, 14));
        c.SetCapacity(m.capacity);
      } else {
        m.guaranteed = GpuEq::MigSlices(U(0, 8));
        c.SetGuaranteed(m.guaranteed);
      }
      m.Evaluate();
      Check(c, m, vary_capacity);
      if (HasFailure()) return;
    }
    // The run must have exercised both outcomes and cancellation, or it proves little.
    EXPECT_GT(accepted, 30);
    EXPECT_GT(rejected, 30);
    EXPECT_GT(cancelled, 30);
  }

  void Check(const Calendar& c, const Model& m, bool vary_capacity) {
    ASSERT_EQ(c.bookings().size(), m.bookings.size());
    for (const auto& [id, b] : m.bookings) ASSERT_TRUE(c.bookings().contains(id));
    ASSERT_EQ(c.boundary_count(), m.Boundaries());
    if (!vary_capacity) {
      for (int64_t t = kLo; t < kHi; ++t) {
        ASSERT_LE(m.reserved[t - kLo] + m.maintenance[t - kLo], m.capacity) << "t=" << t;
      }
    }
    for (int i = 0; i < 4; ++i) {
      const int64_t a = U(kLo, 60), b = a + U(1, 30);
      EXPECT_EQ(c.Reservable(T(a), T(b)).value(), Max(GpuEq(), m.MinFree(a, b)))
          << "[" << a << ", " << b << ")";
    }
    for (int i = 0; i < 4; ++i) {
      const GpuEq amount = Amount(12);
      const int64_t d = U(1, 20), after = U(kLo, 60), horizon = after + U(0, 30);
      EXPECT_EQ(c.EarliestStart(amount, Duration::Millis(d), T(after), T(horizon)).value(),
                m.Earliest(amount, d, after, horizon))
          << ToString(amount) << " for " << d << " from " << after << " before " << horizon;
    }
    for (int i = 0; i < 2; ++i) CheckBuckets(c, m, U(kLo, 50), U(1, 40), U(1, 12));
    for (int i = 0; i < 4; ++i) {
      const TenantId t(static_cast<uint32_t>(U(0, 2)));
      const int64_t at = U(kLo, 60);
      EXPECT_EQ(c.ReservedAt(t, T(at)), m.ReservedAt(t, at));
    }
  }

  void CheckBuckets(const Calendar& c, const Model& m, int64_t a, int64_t len, int64_t step) {
    const auto rows = c.Buckets(T(a), T(a + len), Duration::Millis(step)).value();
    ASSERT_EQ(static_cast<int64_t>(rows.size()), (len + step - 1) / step);
    for (size_t i = 0; i < rows.size(); ++i) {
      const int64_t from = a + static_cast<int64_t>(i) * step;
      const int64_t to = std::min(from + step, a + len);
      int64_t tightest = from;
      for (int64_t t = from; t < to; ++t) {
        if (m.Free(t) < m.Free(tightest)) tightest = t;  // the first lowest instant
      }
      const Calendar::Bucket& k = rows[i];
      EXPECT_EQ(k.start, T(from));
      EXPECT_EQ(k.end, T(to));
      EXPECT_EQ(k.tightest, T(tightest));
      EXPECT_EQ(k.capacity, m.capacity);
      EXPECT_EQ(k.guaranteed, m.guaranteed);
      EXPECT_EQ(k.reserved, m.reserved[tightest - kLo]);
      EXPECT_EQ(k.maintenance, m.maintenance[tightest - kLo]);
      EXPECT_EQ(k.free, m.MinFree(from, to));
    }
  }

  std::mt19937_64 rng_;
};

TEST_F(CalendarProperty, MatchesBruteForceAtFixedCapacity) {
  for (uint64_t seed = 1; seed <= 40 && !HasFailure(); ++seed) Run(seed, false);
}

TEST_F(CalendarProperty, MatchesBruteForceWhileCapacityAndGuaranteesChange) {
  for (uint64_t seed = 101; seed <= 140 && !HasFailure(); ++seed) Run(seed, true);
}

}  // namespace
}  // namespace gpupool
