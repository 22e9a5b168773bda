// ControlPlane's reservation, availability, calendar and summary routes.
#include "daemon/control_plane.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "api/decode.h"
#include "api/page.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "policy/calendar/calendars.h"
#include "policy/quota/quota.h"
#include "scheduler/schedule.h"
#include "store/codec.h"

namespace gpupool {
namespace {

using namespace reply;

}  // namespace

// Pending and active jobs per tenant, in one pass.
std::map<TenantId, std::pair<int, int>> ControlPlane::JobCounts(const State& s) {
  std::map<TenantId, std::pair<int, int>> out;
  for (JobId id : s.pending()) ++out[s.FindJob(id)->spec.tenant].first;
  for (JobId id : s.active()) ++out[s.FindJob(id)->spec.tenant].second;
  return out;
}

// --- reservations -----------------------------------------------------------------------


nlohmann::json ControlPlane::ReservationView(const Reservation& r) const {
  Json j = {{"id", std::to_string(r.id.value())},
            {"flavor", state().catalogue().model(r.flavor).name},
            {"gpus", r.amount.ToGpus()},
            {"start", Rfc3339(r.start)},
            {"end", Rfc3339(r.end)},
            {"maintenance", r.maintenance},
            {"created", Rfc3339(r.created)}};
  if (r.tenant.valid()) j["tenant"] = state().tenant(r.tenant).name;
  return j;
}

const Reservation* ControlPlane::VisibleReservation(const CallContext& c, const std::string& id) const {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (id.empty() || ec != std::errc() || end != id.data() + id.size()) return nullptr;
  const Reservation* r = state().FindReservation(ReservationId(n));
  if (r == nullptr) return nullptr;
  if (!r->maintenance && !c.principal->Sees(r->tenant)) return nullptr;
  return r;
}

Reply ControlPlane::CreateReservation(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<ReservationRequest> req = DecodeReservationRequest(state(), *c.principal, body);
  if (!req.ok()) return Err(req.error());
  if (req->maintenance && !c.principal->admin()) return Forbidden("book maintenance windows");
  if (!c.principal->WritesIn(req->tenant)) return Forbidden("reserve capacity");
  if (req->tenant.valid() && js_->deleted().count(req->tenant)) return Err(NotFound("unknown tenant"));
  Reservation r;
  r.id = state().NextReservationId();
  r.tenant = req->tenant;
  r.flavor = req->flavor;
  r.amount = req->amount;
  r.start = req->start;
  r.end = req->end;
  r.maintenance = req->maintenance;
  r.created = c.now;
  // Check and book in one loop turn: nothing else runs between the calendar and the event.
  Calendar cal = BuildCalendar(state(), r.flavor);
  if (Status booked = cal.Book(ToBooking(r)); !booked.ok()) return Err(booked.error());
  if (Status s = ApplyAndStage(ReservationCreated{r}); !s.ok()) return Err(s.error());
  Audit(c, r.maintenance ? "maintenance.create" : "reservation.create", std::to_string(r.id.value()));
  return JsonReply(201, ReservationView(r));
}

Reply ControlPlane::ListReservations(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  for (const auto& [id, r] : state().reservations()) {
    if (r.maintenance || c.principal->Sees(r.tenant)) items.push_back(ReservationView(r));
  }
  return JsonReply(200, {{"items", items}});
}

Reply ControlPlane::GetReservation(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  const Reservation* r = VisibleReservation(c, id);
  if (r == nullptr) return Err(NotFound("no reservation '" + id + "'"));
  return JsonReply(200, ReservationView(*r));
}

Reply ControlPlane::CancelReservation(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  const Reservation* r = VisibleReservation(c, id);
  if (r == nullptr) return Err(NotFound("no reservation '" + id + "'"));
  if (r->maintenance ? !c.principal->admin() : !c.principal->WritesIn(r->tenant)) return Forbidden("cancel this reservation");
  const ReservationId rid = r->id;
  const bool maintenance = r->maintenance;
  if (Status s = ApplyAndStage(ReservationCancelled{rid, c.now}); !s.ok()) return Err(s.error());
  Audit(c, maintenance ? "maintenance.cancel" : "reservation.cancel", id);
  return JsonReply(200, {{"id", id}, {"state", "cancelled"}});
}

Reply ControlPlane::Availability(const CallContext& c, const std::map<std::string, std::string>& query) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<AvailabilityQuery> q = DecodeAvailabilityQuery(state(), query);
  if (!q.ok()) return Err(q.error());
  const Calendar cal = BuildCalendar(state(), q->flavor);
  Json out = {{"flavor", state().catalogue().model(q->flavor).name}};
  if (q->earliest) {
    const Time after = std::max(q->after.value_or(c.now), c.now);
    const Time horizon = Time::FromMillis(after.millis() + Duration::Hours(24 * 366).millis());
    Result<std::optional<Time>> start = cal.EarliestStart(q->amount, q->duration, after, horizon);
    if (!start.ok()) return Err(start.error());
    out["gpus"] = q->amount.units() / GpuEq::kUnitsPerGpu;
    out["duration_s"] = q->duration.seconds();
    out["earliest_start"] = start->has_value() ? Json(Rfc3339(**start)) : Json(nullptr);
    return JsonReply(200, out);
  }
  Result<GpuEq> free = cal.Reservable(q->start, q->end);
  if (!free.ok()) return Err(free.error());
  out["start"] = Rfc3339(q->start);
  out["end"] = Rfc3339(q->end);
  out["reservable_gpus"] = free->units() / GpuEq::kUnitsPerGpu;  // whole GPUs only
  return JsonReply(200, out);
}

Reply ControlPlane::CalendarView(const CallContext& c, const std::map<std::string, std::string>& query) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<CalendarQuery> q = DecodeCalendarQuery(state(), query);
  if (!q.ok()) return Err(q.error());
  Result<std::vector<Calendar::Bucket>> buckets = BuildCalendar(state(), q->flavor).Buckets(q->start, q->end, q->step);
  if (!buckets.ok()) return Err(buckets.error());
  Json items = Json::array();
  for (const Calendar::Bucket& k : *buckets) {
    items.push_back({{"start", Rfc3339(k.start)},
                     {"end", Rfc3339(k.end)},
                     {"capacity", k.capacity.ToGpus()},
                     {"guaranteed", k.guaranteed.ToGpus()},
                     {"reserved", k.reserved.ToGpus()},
                     {"maintenance", k.maintenance.ToGpus()},
                     {"free", k.free.ToGpus()}});
  }
  return JsonReply(200, {{"flavor", state().catalogue().model(q->flavor).name}, {"step_s", q->step.seconds()}, {"items", items}});
}

Reply ControlPlane::Summary(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  int pending = 0, running = 0;
  for (JobId id : state().pending()) pending += c.principal->Sees(state().FindJob(id)->spec.tenant);
  for (JobId id : state().active()) running += c.principal->Sees(state().FindJob(id)->spec.tenant);
  int nodes = 0, gpus = 0;  // retired on-demand nodes are gone
  for (const Node& n : state().nodes()) {
    if (n.condition == NodeCondition::kRetired) continue;
    ++nodes;
    gpus += static_cast<int>(n.gpus.size());
  }
  // Who the caller is, so a client (the console) can pick its views without a second call.
  Json me = {{"name", c.principal->name}, {"role", std::string(RoleName(c.principal->role))}};
  me["tenant"] = c.principal->tenant.valid() ? Json(state().tenant(c.principal->tenant).name) : Json(nullptr);
  // Every tenant and role (an OIDC caller's mappings may give several), and an OIDC caller's
  // issuer and subject.
  Json grants = Json::array();
  if (c.principal->tenant.valid()) grants.push_back({{"tenant", me["tenant"]}, {"role", me["role"]}});
  for (const Grant& g : c.principal->more) {
    grants.push_back({{"tenant", state().tenant(g.tenant).name}, {"role", std::string(RoleName(g.role))}});
  }
  me["grants"] = grants;
  me["expires"] = c.principal->expires == Time() ? Json(nullptr) : Json(Rfc3339(c.principal->expires));
  if (!c.principal->issuer.empty()) {
    me["issuer"] = c.principal->issuer;
    me["subject"] = c.principal->subject;
  }
  return JsonReply(200, {{"nodes", nodes}, {"gpus", gpus},
                         {"pending_jobs", pending}, {"active_jobs", running},
                         {"scheduling_cycles", cycles_}, {"me", me}});
}

}  // namespace gpupool
