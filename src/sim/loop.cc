#include "sim/loop.h"

namespace gpupool {

GpuEq Allocated(const State& state) {
  GpuEq total;
  for (JobId id : state.active()) total += state.FindJob(id)->Eq(state.catalogue());
  return total;
}

GpuEq Capacity(const State& state) {
  GpuEq total;
  for (const Node& n : state.nodes()) {
    if (!n.schedulable()) continue;
    for (const Gpu& g : n.gpus) total += g.healthy ? GpuEq::Gpus(1) : GpuEq();
  }
  return total;
}

SimLoop::SimLoop(State state, SchedulerConfig config)
    : state_(std::move(state)), config_(std::move(config)) {
  GP_CHECK(Validate(config_).ok());
}

void SimLoop::Add(Arrival a) {
  GP_CHECK(arrivals_.empty() || arrivals_.back().at <= a.at) << "arrivals out of order";
  arrivals_.push_back(std::move(a));
}

void SimLoop::Run(Time until, Duration step,
                  const std::function<void(const TickReport&)>& on_tick) {
  for (Time now = Time(); now <= until; now = now + step) on_tick(Tick(now));
}

TickReport SimLoop::Tick(Time now) {
  TickReport r;
  r.now = now;
  // 1. Jobs whose actual run time is over finish.
  std::vector<JobId> done;
  for (JobId id : state_.active()) {
    const Job& j = *state_.FindJob(id);
    if (j.state == JobState::kRunning && j.started + actual_.at(id) <= now) done.push_back(id);
  }
  for (JobId id : done) {
    const Job& j = *state_.FindJob(id);
    TenantTotals& t = totals_[j.spec.tenant];
    ++t.finished;
    t.gpu_seconds += j.Eq(state_.catalogue()).ToGpus() * static_cast<double>((now - j.started).seconds());
    GP_CHECK(Apply(state_, JobFinished{id, JobState::kSucceeded, now}).ok());
    ++r.finished;
  }
  // 2. Arrivals up to now.
  while (next_arrival_ < arrivals_.size() && arrivals_[next_arrival_].at <= now) {
    const Arrival& a = arrivals_[next_arrival_++];
    const JobId id = state_.NextJobId();
    if (Apply(state_, JobSubmitted{id, a.spec, now}).ok()) {
      actual_[id] = a.actual;
      waiting_since_[id] = now;
      ++r.arrived;
    }
  }
  // 3. One scheduling cycle; its plan becomes events.
  last_plan_ = Schedule(state_, config_, now);
  for (const PreemptDecision& p : last_plan_.preemptions) {
    const Job& v = *state_.FindJob(p.victim);
    TenantTotals& t = totals_[v.spec.tenant];
    ++t.preempted;
    if (v.state == JobState::kRunning) {
      t.gpu_seconds += v.Eq(state_.catalogue()).ToGpus() * static_cast<double>((now - v.started).seconds());
    }
    waiting_since_[p.victim] = now;
  }
  // 4. The simulated executor starts every admitted job at once.
  ApplyPlan(last_plan_, now, state_, [this](const Event& e) { return Apply(state_, e); },
            {.start_placed = true});
  for (const PlaceDecision& d : last_plan_.placements) {
    TenantTotals& t = totals_[state_.FindJob(d.job)->spec.tenant];
    ++t.started;
    t.wait_seconds += static_cast<double>((now - waiting_since_[d.job]).seconds());
  }
  r.placed = static_cast<int>(last_plan_.placements.size());
  r.preempted = static_cast<int>(last_plan_.preemptions.size());
  r.reconfigured = static_cast<int>(last_plan_.reconfigurations.size());
  r.pending = static_cast<int>(state_.pending().size());
  r.allocated = Allocated(state_);
  return r;
}

}  // namespace gpupool
