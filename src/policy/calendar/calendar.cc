#include "policy/calendar/calendar.h"

#include <limits>

namespace gpupool {
namespace {

constexpr int64_t kMsPerDay = 86'400'000;

// t + d without overflow: past the end of representable time is Never. REQUIRES: d >= 0.
Time PlusSaturating(Time t, Duration d) {
  if (t.millis() > 0 && d.millis() > std::numeric_limits<int64_t>::max() - t.millis()) {
    return Time::Never();
  }
  return t + d;
}

std::string Padded(int64_t v, int width) {
  std::string s = std::to_string(v);
  if (static_cast<int>(s.size()) < width) s.insert(0, width - s.size(), '0');
  return s;
}

// "3 GPUs", "1 GPU", "0.5 GPUs".
std::string Gpus(GpuEq q) { return ToString(q) + (q == GpuEq::Gpus(1) ? " GPU" : " GPUs"); }

// What a refusal names, in the caller's words. Never the booking's id: a refused booking gets
// none, and the id it was offered goes to the next booking that fits.
std::string What(const Booking& b) {
  return b.maintenance ? "maintenance window refused" : "reservation refused";
}

Error Invalid(const Booking& b, const std::string& why) { return InvalidArgument(What(b) + ": " + why); }

}  // namespace

std::string Rfc3339(Time t) {
  if (t.is_never()) return "never";
  const int64_t ms = t.millis();
  int64_t days = ms / kMsPerDay;
  int64_t in_day = ms % kMsPerDay;
  if (in_day < 0) {
    in_day += kMsPerDay;
    --days;
  }
  // Howard Hinnant's civil_from_days: proleptic Gregorian calendar, day 0 = 1970-01-01.
  const int64_t z = days + 719'468;
  const int64_t era = (z >= 0 ? z : z - 146'096) / 146'097;
  const int64_t doe = z - era * 146'097;                                        // [0, 146096]
  const int64_t yoe = (doe - doe / 1460 + doe / 36'524 - doe / 146'096) / 365;  // [0, 399]
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                  // [0, 365]
  const int64_t mp = (5 * doy + 2) / 153;                                       // [0, 11]
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);

  std::string s = year >= 0 && year <= 9999 ? Padded(year, 4) : std::to_string(year);
  s += "-" + Padded(month, 2) + "-" + Padded(day, 2);
  s += "T" + Padded(in_day / 3'600'000, 2) + ":" + Padded(in_day / 60'000 % 60, 2) + ":" +
       Padded(in_day / 1000 % 60, 2);
  if (in_day % 1000 != 0) s += "." + Padded(in_day % 1000, 3);
  return s + "Z";
}

Calendar::Levels::const_iterator Calendar::At(Time t) const {
  return std::prev(levels_.upper_bound(t));  // never begin(): kBeginning <= t
}

template <class F>
void Calendar::ForEachPiece(Time a, Time b, F&& f) const {
  for (auto it = At(a); a < b; ++it) {
    const auto next = std::next(it);
    const Time to = next == levels_.end() || b < next->first ? b : next->first;
    f(a, to, it->second);
    a = to;
  }
}

Calendar::Levels::iterator Calendar::Split(Time t) {
  const auto after = levels_.upper_bound(t);
  const auto at = std::prev(after);
  if (at->first == t) return at;
  return levels_.emplace_hint(after, t, at->second);
}

void Calendar::Coalesce(Levels::iterator it) {
  if (it != levels_.begin() && std::prev(it)->second == it->second) levels_.erase(it);
}

void Calendar::Apply(const Booking& b, int sign) {
  const auto first = Split(b.start);
  const auto last = Split(b.end);
  const GpuEq delta = b.amount * sign;
  for (auto it = first; it != last; ++it) {
    (b.maintenance ? it->second.maintenance : it->second.reserved) += delta;
  }
  Coalesce(last);
  Coalesce(first);
}

Status Calendar::Book(const Booking& b) {
  if (b.amount <= GpuEq()) {
    return Invalid(b, "the amount must be positive, got " + ToString(b.amount));
  }
  if (!(b.start < b.end)) {
    return Invalid(b, "the window must end after it starts, got " + Rfc3339(b.start) + " to " +
                          Rfc3339(b.end));
  }
  if (b.maintenance && b.tenant.valid()) return Invalid(b, "a maintenance window has no tenant");
  if (!b.maintenance && !b.tenant.valid()) return Invalid(b, "a reservation needs a tenant");
  if (bookings_.contains(b.id)) {
    return AlreadyExists("booking " + std::to_string(b.id) + " already exists");
  }

  const std::string what = b.maintenance ? "taken for maintenance" : "reserved";
  if (b.amount > capacity_) {
    const std::string why =
        Gpus(b.amount) + " cannot be " + what + ": the healthy capacity is " + Gpus(capacity_);
    return Error{ErrorCode::kConflict, What(b) + ": " + why};
  }
  // Headroom for this kind of booking; maintenance does not count the guarantees.
  const GpuEq offset = b.maintenance ? guaranteed_ : GpuEq();
  // The lowest headroom over the window and the first stretch where it holds.
  GpuEq worst;
  Time worst_from, worst_to;
  ForEachPiece(b.start, b.end, [&](Time from, Time to, const Level& l) {
    const GpuEq room = Free(l) + offset;
    if (room < worst || from == b.start) {
      worst = room;
      worst_from = from;
      worst_to = to;
    } else if (room == worst && worst_to == from) {
      worst_to = to;  // the same shortfall continues across a boundary
    }
  });
  if (worst < b.amount) {
    const std::string why = "short by " + Gpus(b.amount - worst) + " from " + Rfc3339(worst_from) +
                            " to " + Rfc3339(worst_to) + "; at most " + Gpus(Max(GpuEq(), worst)) +
                            " can be " + what + " from " + Rfc3339(b.start) + " to " +
                            Rfc3339(b.end);
    return Error{ErrorCode::kConflict, What(b) + ": " + why};
  }
  Apply(b, +1);
  bookings_.emplace(b.id, b);
  return Ok();
}

Status Calendar::Cancel(int64_t id) {
  const auto it = bookings_.find(id);
  if (it == bookings_.end()) return NotFound("booking " + std::to_string(id) + " does not exist");
  Apply(it->second, -1);
  bookings_.erase(it);
  return Ok();
}

Result<GpuEq> Calendar::Reservable(Time a, Time b) const {
  if (!(a < b)) return InvalidArgument("the window must end after it starts");
  GpuEq lowest = Free(At(a)->second);
  ForEachPiece(a, b, [&](Time, Time, const Level& l) { lowest = Min(lowest, Free(l)); });
  return Max(GpuEq(), lowest);
}

// One sweep over the pieces from `after`: `run` is where the current stretch of pieces with
// free >= amount began. The answer is the first run that lasts d; a run only starts at `after`
// or where free rises, which is why no other start needs trying (reservations.md).
Result<std::optional<Time>> Calendar::EarliestStart(GpuEq amount, Duration d, Time after,
                                                    Time horizon) const {
  if (amount <= GpuEq()) return InvalidArgument("the amount must be positive");
  if (d <= Duration()) return InvalidArgument("the duration must be positive");
  std::optional<Time> run;
  Time from = after;
  for (auto it = At(after);; ++it) {
    const auto next = std::next(it);
    if (Free(it->second) >= amount) {
      if (!run) {
        if (!(from < horizon)) return std::optional<Time>();
        run = from;
      }
      // The last piece lasts forever; otherwise the run must reach run + d by this piece's end.
      if (next == levels_.end() || PlusSaturating(*run, d) <= next->first) return run;
    } else {
      run.reset();
      if (next == levels_.end() || !(next->first < horizon)) return std::optional<Time>();
    }
    from = next->first;
  }
}

Result<std::vector<Calendar::Bucket>> Calendar::Buckets(Time a, Time b, Duration step) const {
  if (!(a < b)) return InvalidArgument("the window must end after it starts");
  if (step <= Duration()) return InvalidArgument("the step must be positive");
  // Counted without overflow: (b - a) may not fit in an int64 when a is far in the past.
  const uint64_t span = static_cast<uint64_t>(b.millis()) - static_cast<uint64_t>(a.millis());
  const uint64_t count = (span - 1) / static_cast<uint64_t>(step.millis()) + 1;
  if (count > static_cast<uint64_t>(kMaxBuckets)) {
    return InvalidArgument("too many buckets: " + std::to_string(count) + ", at most " +
                           std::to_string(kMaxBuckets));
  }
  std::vector<Bucket> out;
  out.reserve(count);
  for (Time from = a; from < b;) {
    const Time stepped = PlusSaturating(from, step);
    const Time to = stepped < b ? stepped : b;
    Bucket k{.start = from,
             .end = to,
             .tightest = from,
             .capacity = capacity_,
             .guaranteed = guaranteed_};
    bool seen = false;
    ForEachPiece(from, to, [&](Time t, Time, const Level& l) {
      if (seen && Free(l) >= k.free) return;
      seen = true;
      k.tightest = t;
      k.reserved = l.reserved;
      k.maintenance = l.maintenance;
      k.free = Free(l);
    });
    out.push_back(k);
    from = to;
  }
  return out;
}

GpuEq Calendar::ReservedAt(TenantId tenant, Time t) const {
  GpuEq sum;
  for (const auto& [id, b] : bookings_) {
    if (!b.maintenance && b.tenant == tenant && b.start <= t && t < b.end) sum += b.amount;
  }
  return sum;
}

}  // namespace gpupool
