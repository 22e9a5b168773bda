// The availability calendars of a State: one Calendar per flavor, built from the model's
// reservations and maintenance windows (DESIGN.md §5; docs/design/reservations.md).
//
// The State is the record; a calendar is derived from it and can be rebuilt at any time. Creating
// a reservation is then, in one turn of the owner's loop (the daemon's event loop):
//   Calendar cal = BuildCalendar(state, r.flavor);
//   if (Status s = cal.Book(ToBooking(r)); !s.ok()) return s;   // kConflict: short by ...
//   Apply(state, ReservationCreated{r});                          // record checks; journal it
// Nothing else touches the state between the two calls, so two requests for the last GPUs
// cannot both pass.
#pragma once

#include <map>

#include "model/state.h"
#include "policy/calendar/calendar.h"

namespace gpupool {

// The calendar entry of a reservation or maintenance window: the same id, holder, amount and
// window.
Booking ToBooking(const Reservation& r);

// The calendar of one flavor: C is the healthy capacity of its GPUs on ready, shared-pool
// nodes (PoolCapacities, the C of the quota book before maintenance), G the sum of the tenants'
// standing guarantees for it, and every reservation and maintenance window of the state for
// that flavor is booked, including those already over (they only affect instants in the past)
// and those that no longer fit because C fell or G rose (free(t) is then negative there; none is
// dropped). REQUIRES: flavor is in the state's catalogue.
Calendar BuildCalendar(const State& state, FlavorId flavor);

// BuildCalendar for every flavor of the catalogue, flavors without nodes included (C = 0).
std::map<FlavorId, Calendar> BuildCalendars(const State& state);

}  // namespace gpupool
