// Reservations and maintenance windows (DESIGN.md §5): an amount of one flavor over [start, end).
// A reservation raises its tenant's guarantee during the window; a maintenance window takes
// capacity out of the shared pool during its window. How the scheduler reads them is in
// docs/design/reservations.md ("In the scheduler").
//
// The model only records them. Whether one fits (no double booking) is checked by the
// availability calendar (policy/calendar) before the ReservationCreated event is applied.
#pragma once

#include "core/ids.h"
#include "core/quantity.h"
#include "core/time.h"

namespace gpupool {

struct Reservation {
  // The largest amount one record may carry, so that sums over any number of them the model can
  // hold stay far from int64 overflow (a calendar adds them up).
  static constexpr GpuEq kMaxAmount = GpuEq::Gpus(1'000'000);

  ReservationId id;
  TenantId tenant;  // the holder; invalid for a maintenance window
  FlavorId flavor;
  GpuEq amount;     // whole GPUs, > 0 and <= kMaxAmount
  Time start, end;  // [start, end), start < end; end may be Time::Never()
  bool maintenance = false;
  Time created;

  bool Holds(Time t) const { return start <= t && t < end; }
  friend bool operator==(const Reservation&, const Reservation&) = default;
};

}  // namespace gpupool
