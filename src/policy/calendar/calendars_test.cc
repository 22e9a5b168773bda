#include "policy/calendar/calendars.h"

#include <gtest/gtest.h>

#include "model/builder.h"
#include "policy/quota/quota.h"

namespace gpupool {
namespace {

constexpr Time kDay = Time::FromMillis(1'796'083'200'000);  // 2026-12-01T00:00:00Z
Time H(int64_t hours) { return kDay + Duration::Hours(hours); }
GpuEq G(int64_t gpus) { return GpuEq::Gpus(gpus); }

// h100 pool: n0 and n1 (8 each) shared, n2 (8) dedicated to a, n3 (8) cordoned, and one GPU of
// n1 unhealthy: C = 15. a100: one node of 4. Standing h100 guarantees: a 6, b 4, so G = 10.
class CalendarsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    a_ = *AddTenant(s_, "a", {{"h100-80gb", {6}}, {"a100-40gb", {2}}});
    b_ = *AddTenant(s_, "b", {{"h100-80gb", {4}}});
    ASSERT_TRUE(AddNode(s_, "n0", {.flavor = "h100-80gb"}).ok());
    ASSERT_TRUE(AddNode(s_, "n1", {.flavor = "h100-80gb"}).ok());
    ASSERT_TRUE(AddNode(s_, "n2", {.flavor = "h100-80gb", .dedicated_to = "a"}).ok());
    ASSERT_TRUE(AddNode(s_, "n3", {.flavor = "h100-80gb"}).ok());
    ASSERT_TRUE(AddNode(s_, "x0", {.flavor = "a100-40gb", .gpus = 4}).ok());
    ASSERT_TRUE(Apply(s_, NodeConditionChanged{NodeId(3), NodeCondition::kCordoned, Time()}).ok());
    ASSERT_TRUE(Apply(s_, GpuHealthChanged{NodeId(1), 5, false, Time()}).ok());
    h100_ = *s_.catalogue().Find("h100-80gb");
    a100_ = *s_.catalogue().Find("a100-40gb");
  }
  Reservation Make(TenantId t, FlavorId f, int gpus, Time start, Time end) const {
    return {.id = s_.NextReservationId(), .tenant = t, .flavor = f, .amount = G(gpus),
            .start = start, .end = end, .maintenance = !t.valid(), .created = kDay};
  }
  // What the daemon does: check on a calendar built from the state, then apply the event.
  Status Create(const Reservation& r) {
    Calendar cal = BuildCalendar(s_, r.flavor);
    GP_RETURN_IF_ERROR(cal.Book(ToBooking(r)));
    return Apply(s_, ReservationCreated{r});
  }
  State s_;
  TenantId a_, b_;
  FlavorId h100_, a100_;
};

TEST_F(CalendarsTest, CapacityIsTheQuotaBooksPoolAndGuaranteesAreStanding) {
  const Calendar cal = BuildCalendar(s_, h100_);
  EXPECT_EQ(cal.capacity(), G(15));
  EXPECT_EQ(cal.capacity(), QuotaBook(s_).capacity(h100_));
  EXPECT_EQ(cal.guaranteed(), G(10));
  EXPECT_TRUE(cal.bookings().empty());
  // One calendar per flavor of the catalogue, flavors without nodes included.
  const std::map<FlavorId, Calendar> all = BuildCalendars(s_);
  EXPECT_EQ(all.size(), s_.catalogue().size());
  EXPECT_EQ(all.at(a100_).capacity(), G(4));
  EXPECT_EQ(all.at(a100_).guaranteed(), G(2));
  EXPECT_EQ(all.at(h100_).capacity(), G(15));
  // Reservations in force do not count as standing guarantees: the calendar books them itself.
  ASSERT_TRUE(Create(Make(b_, h100_, 5, H(0), H(10))).ok());
  EXPECT_EQ(BuildCalendar(s_, h100_).guaranteed(), G(10));
}

TEST_F(CalendarsTest, CreateChecksTheCalendarThenAppliesTheEvent) {
  // 15 - 10 = 5 reservable at any time.
  EXPECT_EQ(*BuildCalendar(s_, h100_).Reservable(H(9), H(12)), G(5));
  const Reservation r1 = Make(a_, h100_, 3, H(10), H(12));
  ASSERT_TRUE(Create(r1).ok());
  // b wants 3 over [11, 13): only 2 left over [11, 12). Refused, and the state is unchanged.
  const Reservation r2 = Make(b_, h100_, 3, H(11), H(13));
  const Status st = Create(r2);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kConflict);
  EXPECT_NE(st.error().message.find("short by 1 GPU"), std::string::npos) << st.error().message;
  EXPECT_EQ(s_.reservations().size(), 1u);
  EXPECT_EQ(s_.NextReservationId(), r2.id);
  // Moved by an hour it fits. The a100 calendar is not affected by either.
  ASSERT_TRUE(Create(Make(b_, h100_, 3, H(12), H(14))).ok());
  const Calendar cal = BuildCalendar(s_, h100_);
  EXPECT_EQ(cal.bookings().size(), 2u);
  EXPECT_EQ(cal.ReservedAt(a_, H(11)), G(3));
  EXPECT_EQ(cal.ReservedAt(b_, H(12)), G(3));
  EXPECT_EQ(*cal.Reservable(H(10), H(14)), G(2));
  EXPECT_TRUE(BuildCalendar(s_, a100_).bookings().empty());
  // The calendar and the scheduler's quota book agree on what each tenant holds at each hour.
  for (int h = 9; h <= 14; ++h) {
    const QuotaBook book(s_, H(h));
    for (TenantId t : {a_, b_}) EXPECT_EQ(cal.ReservedAt(t, H(h)), book.reserved(t, h100_)) << h;
  }
  // Cancelled: gone from the next calendar.
  ASSERT_TRUE(Apply(s_, ReservationCancelled{r1.id, kDay}).ok());
  EXPECT_EQ(*BuildCalendar(s_, h100_).Reservable(H(10), H(12)), G(5));
}

TEST_F(CalendarsTest, MaintenanceIsBookedAsMaintenance) {
  // Maintenance may take guaranteed capacity (15 - 0 reserved >= 12) but not reserved capacity.
  ASSERT_TRUE(Create(Make(a_, h100_, 4, H(0), H(4))).ok());
  EXPECT_EQ(Create(Make(TenantId(), h100_, 12, H(2), H(3))).error().code, ErrorCode::kConflict);
  ASSERT_TRUE(Create(Make(TenantId(), h100_, 11, H(2), H(3))).ok());
  const Calendar cal = BuildCalendar(s_, h100_);
  const Booking& m = cal.bookings().at(2);
  EXPECT_TRUE(m.maintenance);
  EXPECT_FALSE(m.tenant.valid());
  EXPECT_EQ(m.amount, G(11));
  EXPECT_EQ(cal.ReservedAt(a_, H(2)), G(4));  // maintenance never counts for a tenant
}

TEST_F(CalendarsTest, RebuildKeepsBookingsThatNoLongerFit) {
  // Book 5 of 5, then lose two GPUs and raise a guarantee: the rebuilt calendar still holds the
  // booking, over-committed by 2 + 1 = 3 in its window, and nothing more can be booked there.
  ASSERT_TRUE(Create(Make(a_, h100_, 5, H(10), H(20))).ok());
  ASSERT_TRUE(Apply(s_, GpuHealthChanged{NodeId(0), 0, false, Time()}).ok());
  ASSERT_TRUE(Apply(s_, GpuHealthChanged{NodeId(0), 1, false, Time()}).ok());
  Tenant b = s_.tenant(b_);
  b.quotas[h100_].guaranteed = G(5);
  ASSERT_TRUE(s_.UpdateTenant(b).ok());
  const Calendar cal = BuildCalendar(s_, h100_);
  EXPECT_EQ(cal.bookings().size(), 1u);
  EXPECT_EQ(cal.capacity(), G(13));
  EXPECT_EQ(cal.guaranteed(), G(11));
  const std::vector<Calendar::Bucket> rows = *cal.Buckets(H(10), H(11), Duration::Hours(1));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].free, GpuEq() - G(3));
  EXPECT_EQ(*cal.Reservable(H(10), H(20)), GpuEq());
  EXPECT_EQ(*cal.Reservable(H(20), H(21)), G(2));
  EXPECT_EQ(Create(Make(b_, h100_, 1, H(15), H(16))).error().code, ErrorCode::kConflict);
}

}  // namespace
}  // namespace gpupool
