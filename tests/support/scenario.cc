#include "support/scenario.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "policy/calendar/calendars.h"

namespace gpupool::testing {

Result<ReplicaShape> ParseShape(const State& state, const std::string& text) {
  const size_t plus = text.find('+');
  if (plus != std::string::npos) {  // "+8cpu": CPUs per replica
    Result<ReplicaShape> shape = ParseShape(state, text.substr(0, plus));
    const std::string cpus = text.substr(plus + 1);
    if (!shape.ok() || cpus.size() < 4 || cpus.substr(cpus.size() - 3) != "cpu") {
      return InvalidArgument("shape '" + text + "'");
    }
    shape->cpu_milli = std::stoll(cpus.substr(0, cpus.size() - 3)) * 1000;
    return shape;
  }
  const size_t x = text.find('x');
  const size_t slash = text.find('/');
  if (slash == std::string::npos) {
    if (x == std::string::npos) return InvalidArgument("shape '" + text + "'");
    return WholeGpus(state, text.substr(x + 1), std::stoi(text.substr(0, x)));
  }
  const std::string flavor = text.substr(0, slash);
  const std::string rest = text.substr(slash + 1);
  const size_t m = rest.find("m/");
  if (m != std::string::npos) {
    return FractionShape(state, flavor, std::stoi(rest.substr(0, m)),
                         static_cast<uint32_t>(std::stoul(rest.substr(m + 2))));
  }
  return MigShape(state, flavor, rest);
}

namespace {

Result<JobId> SubmitLine(State& s, const JobLine& l, Time at) {
  Result<ReplicaShape> shape = ParseShape(s, l.shape);
  if (!shape.ok()) return shape.error();
  JobRequest r{.tenant = l.tenant, .priority_class = l.priority, .shape = *shape,
               .replicas = static_cast<uint16_t>(l.replicas),
               .estimated = l.duration_s ? Duration::Seconds(l.duration_s) : Duration::Infinite(),
               .topology = {l.level, l.required}, .name = l.name};
  return Submit(s, r, at);
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

Plan RunScenario(const Scenario& sc, State* state_out, std::map<std::string, JobId>* ids_out) {
  State s;
  AddDefaultPriorityClasses(s);
  for (const TenantLine& t : sc.tenants) {
    Result<TenantId> id = AddTenant(s, t.name, t.quotas, t.weight_milli);
    EXPECT_TRUE(id.ok()) << t.name;
    Tenant ten = s.tenant(*id);
    ten.allow_gpu_cotenancy = t.cotenancy;
    ten.required_labels = t.required_labels;
    EXPECT_TRUE(s.UpdateTenant(ten).ok());
  }
  for (const auto& [name, tmpl] : sc.nodes) {
    Result<NodeId> n = AddNode(s, name, tmpl);
    EXPECT_TRUE(n.ok()) << name << ": " << (n.ok() ? "" : n.error().message);
  }
  for (const ReservationLine& l : sc.reservations) {
    Reservation r{.id = s.NextReservationId(), .flavor = *s.catalogue().Find(l.flavor),
                  .amount = GpuEq::Gpus(l.gpus), .start = Time::FromSeconds(l.start_s),
                  .end = Time::FromSeconds(l.end_s), .maintenance = l.tenant.empty()};
    if (!l.tenant.empty()) r.tenant = *s.FindTenant(l.tenant);
    const Status booked = BuildCalendar(s, r.flavor).Book(ToBooking(r));
    EXPECT_TRUE(booked.ok()) << "reservation " << r.id.value() << ": " << booked.error().message;
    const Status applied = Apply(s, ReservationCreated{r});
    EXPECT_TRUE(applied.ok()) << "reservation " << r.id.value() << ": " << applied.error().message;
  }
  std::map<std::string, JobId> ids;
  std::map<JobId, std::string> names;
  // Setup: place the running jobs with an unconstrained cycle, then start them.
  for (const JobLine& l : sc.running) {
    Result<JobId> id = SubmitLine(s, l, Time());
    EXPECT_TRUE(id.ok()) << l.name;
    ids[l.name] = *id;
    names[*id] = l.name;
  }
  if (!sc.running.empty()) {
    SchedulerConfig setup;
    setup.preemption.enabled = false;
    setup.backfill.enabled = false;
    const Plan p = Schedule(s, setup, Time());
    EXPECT_EQ(p.placements.size(), sc.running.size()) << "setup could not place every running job:\n"
                                                      << Describe(s, p);
    for (const Event& e : PlanToEvents(p, Time())) EXPECT_TRUE(Apply(s, e).ok());
    for (const JobLine& l : sc.running) {
      EXPECT_TRUE(Apply(s, JobStarted{ids[l.name], Time::FromSeconds(l.started_s)}).ok());
    }
  }
  for (const JobLine& l : sc.pending) {
    Result<JobId> id = SubmitLine(s, l, Time::FromSeconds(1));
    EXPECT_TRUE(id.ok()) << l.name << ": " << (id.ok() ? "" : id.error().message);
    if (!id.ok()) continue;
    ids[l.name] = *id;
    names[*id] = l.name;
  }
  const Time now = Time::FromSeconds(sc.now_s);
  const Plan plan = Schedule(s, sc.config, now);
  const std::string described = Describe(s, plan);
  EXPECT_EQ(plan, Schedule(s, sc.config, now)) << "not deterministic";

  std::vector<std::string> placed, preempted;
  for (const PlaceDecision& d : plan.placements) placed.push_back(names[d.job]);
  for (const PreemptDecision& d : plan.preemptions) preempted.push_back(names[d.victim]);
  EXPECT_EQ(Sorted(placed), Sorted(sc.placed)) << described;
  EXPECT_EQ(Sorted(preempted), Sorted(sc.preempted)) << described;
  for (const auto& [job, nodes] : sc.placed_on) {
    auto it = std::find_if(plan.placements.begin(), plan.placements.end(),
                           [&](const PlaceDecision& d) { return names[d.job] == job; });
    if (it == plan.placements.end()) {
      ADD_FAILURE() << job << " was not placed\n" << described;
      continue;
    }
    std::vector<std::string> got;
    for (const ReplicaPlacement& rp : it->placement) got.push_back(s.node(rp.node).name);
    EXPECT_EQ(got, nodes) << job << "\n" << described;
  }
  for (const auto& [job, code] : sc.waiting) {
    auto it = std::find_if(plan.pending.begin(), plan.pending.end(),
                           [&](const PendingNote& n) { return names[n.job] == job; });
    if (it == plan.pending.end()) {
      ADD_FAILURE() << job << " is not waiting\n" << described;
      continue;
    }
    const PendingReason& r = plan.ReasonOf(*it);
    EXPECT_EQ(ReasonCodeName(r.code), ReasonCodeName(code)) << job << ": " << r.message;
    EXPECT_FALSE(r.message.empty());
  }
  if (sc.reconfigurations >= 0) {
    EXPECT_EQ(static_cast<int>(plan.reconfigurations.size()), sc.reconfigurations) << described;
  }
  // Every pending job that was not placed has a reason.
  EXPECT_EQ(plan.pending.size() + plan.placements.size(), s.pending().size()) << described;
  for (const Event& e : PlanToEvents(plan, now)) {
    Status st = Apply(s, e);
    EXPECT_TRUE(st.ok()) << st.error().message << "\n" << described;
  }
  RecordReasons(s, plan);
  for (const PendingNote& n : plan.pending) {
    EXPECT_EQ(s.FindJob(n.job)->reason, plan.ReasonOf(n)) << "reason not recorded";
  }
  Status inv = CheckInvariants(s);
  EXPECT_TRUE(inv.ok()) << inv.error().message;
  if (state_out) *state_out = std::move(s);
  if (ids_out) *ids_out = std::move(ids);
  return plan;
}

std::vector<JobLine> RunningBatchJobs(const std::string& tenant, int n, int every_s) {
  std::vector<JobLine> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({tenant + std::to_string(i), tenant, "1xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true,
                   i * every_s});
  }
  return out;
}

}  // namespace gpupool::testing
