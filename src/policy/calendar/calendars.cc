#include "policy/calendar/calendars.h"

#include "policy/quota/quota.h"

namespace gpupool {
namespace {

Calendar Build(const State& state, FlavorId flavor, GpuEq capacity) {
  GpuEq guaranteed, booked;
  for (const Tenant& t : state.tenants()) {
    if (const FlavorQuota* q = t.quota(flavor)) guaranteed += q->guaranteed;
  }
  for (const auto& [id, r] : state.reservations()) {
    if (r.flavor == flavor) booked += r.amount;
  }
  // Book everything on a calendar that has room for all of it at once, then set the real C and
  // G: Book refuses what does not fit, but the record must be rebuilt as it is, over-committed
  // or not. With C = the sum of all amounts and G = 0, free(t) >= A for every booking of A.
  // Reservation::kMaxAmount keeps that sum far from overflow.
  Calendar cal(booked, GpuEq());
  for (const auto& [id, r] : state.reservations()) {
    if (r.flavor != flavor) continue;
    const Status s = cal.Book(ToBooking(r));
    GP_CHECK(s.ok()) << "reservation " << id.value() << ": " << s.error().message;
  }
  cal.SetCapacity(capacity);
  cal.SetGuaranteed(guaranteed);
  return cal;
}

}  // namespace

Booking ToBooking(const Reservation& r) {
  return {static_cast<int64_t>(r.id.value()), r.tenant, r.amount, r.start, r.end, r.maintenance};
}

Calendar BuildCalendar(const State& state, FlavorId flavor) {
  GP_CHECK(flavor.valid() && flavor.value() < state.catalogue().size());
  return Build(state, flavor, PoolCapacities(state)[flavor.value()]);
}

std::map<FlavorId, Calendar> BuildCalendars(const State& state) {
  const std::vector<GpuEq> capacity = PoolCapacities(state);
  std::map<FlavorId, Calendar> out;
  for (size_t i = 0; i < capacity.size(); ++i) {
    const FlavorId f(static_cast<uint16_t>(i));
    out.emplace(f, Build(state, f, capacity[i]));
  }
  return out;
}

}  // namespace gpupool
