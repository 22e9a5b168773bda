#include "sim/replay.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <random>
#include <set>

#include "model/builder.h"
#include "scheduler/schedule.h"
#include "sim/burst_sim.h"

namespace gpupool {
namespace {

constexpr int kGpusPerNode = 8;

// A job's gang: replicas x gpus per replica covering n GPUs on 8-GPU nodes.
std::pair<int, int> GangOf(int n) {
  if (n <= kGpusPerNode) return {1, n};
  for (int r = (n + kGpusPerNode - 1) / kGpusPerNode; r <= n; ++r) {
    if (n % r == 0 && n / r <= kGpusPerNode) return {r, n / r};
  }
  return {n, 1};
}

struct Track {
  std::string tenant;
  Time submitted, pending_since;
  double waited_s = 0, ran_s = 0;  // pending time so far; GPU-free run time done so far
  int64_t duration_s = 0;
  Time started_first = Time::Never(), finished = Time::Never();
  int gpus = 0, preemptions = 0;
  uint64_t epoch = 0;  // bumps on every start, to void stale completions
  // Burst replay only: of `gpus`, those on pool nodes and those on on-demand nodes in the current
  // run (pool_gpus = gpus otherwise); whether it ever ran on demand; requeues by a release.
  int pool_gpus = 0, od_gpus = 0;
  bool ran_on_demand = false;
  int requeued = 0, requeued_charged = 0;
  int64_t od_used_ms = 0;  // GPU-milliseconds run on on-demand nodes
};

Status BuildCluster(State& s, const std::vector<TraceTenant>& tenants, const ReplayOptions& opt,
                    int& capacity) {
  const Result<FlavorId> f = s.catalogue().Find("philly-gpu");
  AddDefaultPriorityClasses(s);
  int node_count = 0;
  auto add_nodes = [&](int gpus, const std::string& dedicated) -> Status {
    for (; gpus > 0; gpus -= kGpusPerNode) {
      NodeTemplate t{.flavor = "philly-gpu", .gpus = std::min(gpus, kGpusPerNode),
                     .block = "rack-" + std::to_string(node_count / 32),
                     .dedicated_to = dedicated};
      Result<NodeId> n = AddNode(s, "node-" + std::to_string(node_count++), t);
      if (!n.ok()) return n.error();
    }
    return Ok();
  };
  capacity = 0;
  for (const TraceTenant& t : tenants) {
    const int g = static_cast<int>(std::llround(static_cast<double>(t.guaranteed_gpus) * opt.capacity_scale));
    Tenant ten;
    ten.name = t.name;
    ten.weight_milli = t.weight_milli;
    ten.quotas[*f] = FlavorQuota{GpuEq::Gpus(g), std::nullopt, std::nullopt};
    Result<TenantId> id = s.AddTenant(std::move(ten));
    if (!id.ok()) return id.error();
    capacity += g;
  }
  // Partitioned runs come here one tenant at a time (RunReplay): the pool is then that tenant's
  // own cluster, sized to its guarantee, with the scheduler's whole behaviour, queue preemption
  // included (on nodes dedicated to a tenant gpupool never preempts).
  GP_RETURN_IF_ERROR(add_nodes(capacity, ""));
  return Ok();
}

}  // namespace

Catalogue ReplayCatalogue() {
  // The trace has no GPU model: one generic model, not MIG-capable.
  Catalogue c = Catalogue::BuiltIn();
  GpuModel m;
  m.name = "philly-gpu";
  m.memory_mib = 24576;
  GP_CHECK(c.Add(m).ok());
  return c;
}

double Percentile(std::vector<double> v, double pct) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(pct / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

double JainIndex(const std::vector<double>& x) {
  double sum = 0, sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  return sq == 0 ? 1.0 : sum * sum / (static_cast<double>(x.size()) * sq);
}

namespace {

// What one simulation run produced, before the report's statistics.
struct Raw {
  std::map<std::string, TenantReport> tenants;  // counters only; statistics come later
  std::map<std::string, std::vector<double>> waits, jcts, slowdowns;
  double busy_gpu_s = 0, end_s = 0;
  std::vector<ReplaySample> timeline;  // utilization_pct holds allocated GPUs until Summarize
  int preemptions = 0, cycles = 0, reshaped = 0, capacity = 0;
  BurstReport burst;
};

Result<Raw> RunOne(const std::vector<TraceJob>& jobs, const std::vector<TraceTenant>& tenants,
                   const ReplayOptions& opt, const std::function<void(size_t)>& on_finished) {
  State s(ReplayCatalogue());
  Raw raw;
  GP_RETURN_IF_ERROR(BuildCluster(s, tenants, opt, raw.capacity));
  if (raw.capacity == 0) return raw;
  const FlavorId flavor = *s.catalogue().Find("philly-gpu");
  const PriorityClassId training = *s.FindPriorityClass("training");

  std::optional<BurstSim> burst;
  if (opt.burst) {
    std::map<TenantId, BurstPolicy> policies;
    for (const auto& [name, p] : opt.burst->tenants) {
      Result<TenantId> t = s.FindTenant(name);
      if (!t.ok()) return InvalidArgument("burst.tenants: unknown tenant '" + name + "'");
      policies[*t] = p;
    }
    burst.emplace(s.catalogue(), *opt.burst, std::move(policies));
    raw.burst.enabled = true;
  }

  // One draw per arriving job, in arrival order: the same seed gives the same estimates.
  std::mt19937_64 rng(opt.seed);
  std::uniform_real_distribution<double> noise(-std::log(std::max(1.0, opt.estimate_noise)),
                                               std::log(std::max(1.0, opt.estimate_noise)));
  std::map<JobId, Track> track;
  using Completion = std::tuple<Time, JobId, uint64_t>;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<Completion>> ends;
  size_t next = 0, finished = 0;
  int64_t allocated_gpus = 0;  // on pool nodes
  double last_t = 0, next_sample = 0;

  // Busy GPU-time and the timeline up to `now_s`, before anything changes at this instant.
  auto advance = [&](double now_s) {
    raw.busy_gpu_s += static_cast<double>(allocated_gpus) * (now_s - last_t);
    while (next_sample <= now_s) {
      raw.timeline.push_back(
          {next_sample, static_cast<double>(allocated_gpus), static_cast<int>(s.pending().size())});
      next_sample += opt.sample_every_s;
    }
    last_t = now_s;
  };
  // A running job stops (preempted, or its on-demand node released): it keeps its progress.
  auto stop = [&](JobId id, Time now) {
    Track& tr = track.at(id);
    const Job& v = *s.FindJob(id);
    tr.ran_s += static_cast<double>((now - v.started).millis()) / 1000.0;
    tr.od_used_ms += static_cast<int64_t>(tr.od_gpus) * (now - v.started).millis();
    tr.pending_since = now;
    ++tr.epoch;  // its pending completion is void
    allocated_gpus -= tr.pool_gpus;
  };
  auto start = [&](JobId id, Time now) {
    Track& tr = track.at(id);
    tr.waited_s += static_cast<double>((now - tr.pending_since).millis()) / 1000.0;
    if (tr.started_first.is_never()) tr.started_first = now;
    ++tr.epoch;
    const double left = std::max(0.0, static_cast<double>(tr.duration_s) - tr.ran_s);
    ends.push({now + Duration::Millis(static_cast<int64_t>(left * 1000)), id, tr.epoch});
    tr.od_gpus = 0;
    if (burst) {
      const Job& j = *s.FindJob(id);
      for (const ReplicaPlacement& rp : j.placement) {
        if (s.node(rp.node).on_demand()) tr.od_gpus += j.spec.shape.gpus;
      }
      tr.ran_on_demand = tr.ran_on_demand || tr.od_gpus > 0;
    }
    tr.pool_gpus = tr.gpus - tr.od_gpus;
    allocated_gpus += tr.pool_gpus;
  };
  // One scheduling cycle at `now`; its plan becomes events and the admitted jobs start. A cycle
  // that spent its queue-preemption budget leaves work for the daemon's next tick (200 ms by default):
  // the replay runs that cycle too.
  constexpr Duration kTick = Duration::Millis(200);
  bool budget_spent = false;
  auto cycle = [&](Time now) {
    const Plan plan = Schedule(s, opt.scheduler, now, burst ? burst->Deadlines(s, now) : NodeDeadlines{});
    ++raw.cycles;
    const auto queue_victims = std::count_if(plan.preemptions.begin(), plan.preemptions.end(),
                                             [](const PreemptDecision& p) { return p.kind == PreemptKind::kQueue; });
    // (Only the queue budget: each such follow-up preempts, so there are at most as many as
    // preemptions. A spent attempt budget may recur every tick with nothing to gain.)
    budget_spent = opt.scheduler.queue.max_preemptions_per_cycle > 0 &&
                   queue_victims >= opt.scheduler.queue.max_preemptions_per_cycle;
    for (const PreemptDecision& p : plan.preemptions) {
      Track& tr = track.at(p.victim);
      stop(p.victim, now);
      ++tr.preemptions;
      ++raw.preemptions;
    }
    ApplyPlan(plan, now, s, [&](const Event& e) { return Apply(s, e); },
              {.start_placed = true, .record_reasons = false});
    for (const PreemptDecision& p : plan.preemptions) {
      if (burst) burst->Watch(*s.FindJob(p.victim), now);
    }
    for (const PlaceDecision& d : plan.placements) start(d.job, now);
  };

  // Wake-ups: arrivals and completions (the job instants; each runs a cycle, as without burst);
  // with burst also the burst step's own instants (BurstSim::NextWake), which run a cycle only
  // when a node joined or jobs were requeued. Budget windows rolling over are waited for only
  // while something else may still happen, or once after the last thing that did.
  // Under a queue policy other than fifo, also the instants where the order changes by itself
  // (NextOrderChange) and where a running job passes its minimum runtime: the daemon's tick
  // would notice both within a tick; the replay wakes for them.
  const QueuePolicyConfig& queue = opt.scheduler.queue;
  auto next_queue_wake = [&](Time now) {
    Time w = Time::Never();
    if (queue.order == QueueOrder::kFifo) return w;
    for (JobId id : s.pending()) w = std::min(w, NextOrderChange(queue, queue.order, *s.FindJob(id), s.catalogue(), now));
    for (JobId id : s.active()) {
      const Job& j = *s.FindJob(id);
      w = std::min(w, NextOrderChange(queue, queue.order, j, s.catalogue(), now));
      const Time preemptible = j.started + opt.scheduler.preemption.min_runtime;
      if (Preemptive(queue.order) && j.state == JobState::kRunning && preemptible > now) w = std::min(w, preemptible);
    }
    return w;
  };
  Time queue_wake = Time::Never();
  Time burst_wake = Time::Never(), rollover = Time::Never();
  bool rollover_ok = true;
  double end_s = 0;
  int64_t quiet = 0;  // burst-only instants in a row, as a guard against a cycle that never ends
  std::vector<JobId> lost_now;
  while (true) {
    Time job_t = Time::Never();
    if (next < jobs.size()) job_t = Time::FromSeconds(jobs[next].submit_s);
    if (!ends.empty()) job_t = std::min(job_t, std::get<0>(ends.top()));
    Time now = std::min({job_t, burst_wake, queue_wake});
    if (!now.is_never() || rollover_ok) now = std::min(now, rollover);
    if (now.is_never()) break;
    const bool job_instant = now == job_t;
    const bool queue_instant = now == queue_wake;
    const bool rollover_only = !job_instant && !queue_instant && now != burst_wake;
    const double now_s = static_cast<double>(now.millis()) / 1000.0;
    bool advanced = false;
    auto ensure_advanced = [&] {
      if (!advanced) advance(now_s);
      advanced = true;
    };
    if (job_instant) {
      ensure_advanced();
      end_s = now_s;
      quiet = 0;
    } else if (++quiet > 1'000'000) {
      return Error{ErrorCode::kInternal,
                   "burst replay: a million on-demand steps in a row without a job event"};
    }
    if (burst) burst->Track(s, now);
    // Completions, then arrivals, then one cycle.
    while (!ends.empty() && std::get<0>(ends.top()) <= now) {
      const auto [at, id, epoch] = ends.top();
      ends.pop();
      Track& tr = track.at(id);
      if (epoch != tr.epoch || !tr.finished.is_never()) continue;
      tr.od_used_ms += static_cast<int64_t>(tr.od_gpus) * (now - s.FindJob(id)->started).millis();
      GP_CHECK(Apply(s, JobFinished{id, JobState::kSucceeded, now}).ok());
      tr.finished = now;
      allocated_gpus -= tr.pool_gpus;
      ++finished;
      if (on_finished) on_finished(finished);
    }
    while (next < jobs.size() && Time::FromSeconds(jobs[next].submit_s) <= now) {
      const TraceJob& tj = jobs[next++];
      Result<TenantId> t = s.FindTenant(tj.tenant);
      if (!t.ok()) return InvalidArgument("job of unknown tenant '" + tj.tenant + "'");
      const auto [replicas, per] = GangOf(tj.gpus);
      if (replicas * per != tj.gpus) ++raw.reshaped;
      JobSubmitted e;
      e.id = s.NextJobId();
      e.at = now;
      e.spec.tenant = *t;
      e.spec.priority_class = training;
      e.spec.shape.flavor = flavor;
      e.spec.shape.gpus = static_cast<uint8_t>(per);
      e.spec.replicas = static_cast<uint16_t>(replicas);
      e.spec.estimated_duration = Duration::Infinite();
      if (opt.estimates) {
        double est = static_cast<double>(std::max<int64_t>(tj.duration_s, 1));
        if (opt.estimate_noise > 1) est *= std::exp(noise(rng));
        e.spec.estimated_duration = Duration::Seconds(std::max<int64_t>(1, std::llround(est)));
      }
      e.spec.name = tj.tenant + "/" + std::to_string(tj.id);
      GP_RETURN_IF_ERROR(Apply(s, e));
      track[e.id] = Track{tj.tenant, now, now, 0, 0, tj.duration_s, Time::Never(), Time::Never(),
                          replicas * per, 0, 0};
      if (burst) burst->Watch(*s.FindJob(e.id), now);
    }
    // Nodes ready now join before the cycle, so that it can use them.
    const int joined = burst ? burst->Join(s, now) : 0;
    if (job_instant || joined > 0 || queue_instant) {
      ensure_advanced();
      cycle(now);
    }
    if (burst) {
      auto lost = [&](JobId id) {
        ensure_advanced();
        Track& tr = track.at(id);
        // Cut short before the end its node's budget was charged for: what deadlines prevent.
        const Time end = s.FindJob(id)->ExpectedEnd();
        tr.requeued_charged += now < end && !end.is_never();
        stop(id, now);
        ++tr.requeued;
        lost_now.push_back(id);
      };
      lost_now.clear();
      if (burst->Step(s, now, lost) > 0 || burst->extended()) {
        ensure_advanced();
        for (JobId id : lost_now) burst->Watch(*s.FindJob(id), now);
        cycle(now);  // the requeued jobs may fit the pool at once, waiting ones a paid node
      }
      if (burst->provisioned() > 0 || job_instant) rollover_ok = true;
      if (rollover_only && burst->provisioned() == 0) rollover_ok = false;
      burst_wake = burst->NextWake(s, now);
      rollover = burst->NextRollover(now);
    }
    queue_wake = next_queue_wake(now);
    if (budget_spent) queue_wake = std::min(queue_wake, now + kTick);
    budget_spent = false;
  }
  raw.end_s = end_s;
  if (burst) {
    for (const BurstNode& b : burst->Fleet()) {
      const std::string& name = s.tenant(b.tenant).name;
      BurstTenantReport& t = raw.burst.tenants[name];
      if (!b.ready) continue;
      const Time until = b.released
                             ? *b.released
                             : Time::FromMillis(static_cast<int64_t>(std::llround(last_t * 1000)));
      const int64_t ms = std::max<int64_t>(0, (until - *b.ready).millis());
      ++t.nodes;
      ++raw.burst.nodes;
      t.cost_micros += NodeCostMicros(b, until);
      t.billed_gpu_ms += b.gpus * ms;
      raw.burst.node_ms += ms;
    }
    for (const auto& [name, p] : opt.burst->tenants)
      raw.burst.tenants[name];  // every policy tenant
    for (auto& [name, t] : raw.burst.tenants) {
      raw.burst.cost_micros += t.cost_micros;
      raw.burst.billed_gpu_ms += t.billed_gpu_ms;
    }
    raw.burst.provision_failures = burst->provision_failures();
    raw.burst.over_budget_micros =
        burst->MostOverBudget(Time::FromMillis(static_cast<int64_t>(std::llround(last_t * 1000))));
  }
  // A job that never started counts its wait up to the end of the run.
  for (const auto& [id, tr] : track) {
    TenantReport& r = raw.tenants[tr.tenant];
    ++r.jobs;
    r.preempted += tr.preemptions;
    double wait = tr.waited_s;
    if (tr.finished.is_never() && s.FindJob(id)->state == JobState::kPending) {
      wait += std::max(0.0, raw.end_s - static_cast<double>(tr.pending_since.millis()) / 1000.0);
    }
    if (tr.started_first.is_never()) ++r.never_started;
    raw.waits[tr.tenant].push_back(wait);
    if (!tr.finished.is_never()) {
      ++r.finished;
      const double jct = static_cast<double>((tr.finished - tr.submitted).millis()) / 1000.0;
      raw.jcts[tr.tenant].push_back(jct);
      raw.slowdowns[tr.tenant].push_back(jct / std::max<double>(1.0, static_cast<double>(tr.duration_s)));
      r.gpu_hours += static_cast<double>(tr.gpus) * static_cast<double>(tr.duration_s) / 3600.0;
    }
    if (burst && (tr.ran_on_demand || tr.requeued > 0)) {
      BurstTenantReport& b = raw.burst.tenants[tr.tenant];
      b.jobs_on_demand += tr.ran_on_demand;
      b.requeued += tr.requeued;
      b.requeued_charged += tr.requeued_charged;
      b.used_gpu_ms += tr.od_used_ms;
      raw.burst.jobs_on_demand += tr.ran_on_demand;
      raw.burst.requeued += tr.requeued;
      raw.burst.requeued_charged += tr.requeued_charged;
      raw.burst.used_gpu_ms += tr.od_used_ms;
    }
  }
  return raw;
}

// Adds a partition's run into the whole: per-tenant data side by side, timelines summed
// sample by sample, the end at the latest partition's end.
void Merge(Raw& into, Raw&& part) {
  for (auto& [name, r] : part.tenants) into.tenants[name] = r;
  for (auto& [name, v] : part.waits) into.waits[name] = std::move(v);
  for (auto& [name, v] : part.jcts) into.jcts[name] = std::move(v);
  for (auto& [name, v] : part.slowdowns) into.slowdowns[name] = std::move(v);
  into.busy_gpu_s += part.busy_gpu_s;
  into.end_s = std::max(into.end_s, part.end_s);
  if (into.timeline.size() < part.timeline.size()) {
    const double step = part.timeline.size() > 1 ? part.timeline[1].t_s - part.timeline[0].t_s : 0;
    while (into.timeline.size() < part.timeline.size()) {
      into.timeline.push_back({step * static_cast<double>(into.timeline.size()), 0, 0});
    }
  }
  for (size_t i = 0; i < part.timeline.size(); ++i) {
    into.timeline[i].utilization_pct += part.timeline[i].utilization_pct;
    into.timeline[i].queued += part.timeline[i].queued;
  }
  into.preemptions += part.preemptions;
  into.cycles += part.cycles;
  into.reshaped += part.reshaped;
  into.capacity += part.capacity;
}

ReplayReport Summarize(Raw&& raw, const std::vector<TraceTenant>& tenants, const ReplayOptions& opt) {
  ReplayReport rep;
  rep.capacity_gpus = raw.capacity;
  rep.makespan_s = raw.end_s;
  rep.utilization_pct = raw.end_s > 0 ? 100.0 * raw.busy_gpu_s / (raw.capacity * raw.end_s) : 0;
  rep.preemptions = raw.preemptions;
  rep.cycles = raw.cycles;
  rep.reshaped_jobs = raw.reshaped;
  for (ReplaySample& s : raw.timeline) s.utilization_pct = 100.0 * s.utilization_pct / raw.capacity;
  rep.timeline = std::move(raw.timeline);
  rep.burst = std::move(raw.burst);
  std::vector<double> all_waits, all_jcts, fairness;
  for (const TraceTenant& t : tenants) {
    TenantReport& r = rep.tenants[t.name];
    r = raw.tenants[t.name];
    r.guaranteed_gpus =
        static_cast<int64_t>(std::llround(static_cast<double>(t.guaranteed_gpus) * opt.capacity_scale));
    const std::vector<double>& j = raw.jcts[t.name];
    double sum = 0;
    for (double v : j) sum += v;
    r.avg_jct_s = j.empty() ? 0 : sum / static_cast<double>(j.size());
    r.p50_wait_s = Percentile(raw.waits[t.name], 50);
    r.p95_wait_s = Percentile(raw.waits[t.name], 95);
    r.p99_wait_s = Percentile(raw.waits[t.name], 99);
    double sd = 0;
    for (double v : raw.slowdowns[t.name]) sd += v;
    r.mean_slowdown = raw.slowdowns[t.name].empty()
                          ? 0
                          : sd / static_cast<double>(raw.slowdowns[t.name].size());
    if (r.jobs > 0) fairness.push_back(r.mean_slowdown);
    all_waits.insert(all_waits.end(), raw.waits[t.name].begin(), raw.waits[t.name].end());
    all_jcts.insert(all_jcts.end(), j.begin(), j.end());
  }
  double sum = 0;
  for (double v : all_jcts) sum += v;
  rep.avg_jct_s = all_jcts.empty() ? 0 : sum / static_cast<double>(all_jcts.size());
  rep.p50_jct_s = Percentile(all_jcts, 50);
  rep.p99_jct_s = Percentile(all_jcts, 99);
  rep.p95_wait_s = Percentile(all_waits, 95);
  rep.jain_fairness = JainIndex(fairness);
  return rep;
}

}  // namespace

Result<ReplayReport> RunReplay(const std::vector<TraceJob>& jobs,
                               const std::vector<TraceTenant>& tenants, const ReplayOptions& opt,
                               const std::function<void(double)>& progress) {
  GP_RETURN_IF_ERROR(Validate(opt.scheduler));
  if (!(opt.capacity_scale > 0) || opt.capacity_scale > 100) {
    return InvalidArgument("capacity scale must be in (0, 100]");
  }
  if (!(opt.estimate_noise >= 1) || opt.estimate_noise > 1000) {
    return InvalidArgument("estimate noise must be in [1, 1000] (a factor: 2 means within 2x either way)");
  }
  if (opt.burst) {
    if (opt.partitioned) return InvalidArgument("burst replay is pooled only (drop --partitioned)");
    const Catalogue cat = ReplayCatalogue();
    for (const auto& [f, o] : opt.burst->offers) {
      if (o.flavor != f) return InvalidArgument("burst.offers: an offer keyed by another flavor");
      if (Status v = ValidateOffer(o, cat); !v.ok())
        return InvalidArgument("burst.offers: " + v.error().message);
    }
    for (const auto& [name, p] : opt.burst->tenants) {
      if (Status v = ValidateBurstPolicy(p, cat); !v.ok())
        return InvalidArgument("burst.tenants." + name + ": " + v.error().message);
      for (FlavorId f : p.flavors) {
        if (!opt.burst->offers.count(f))
          return InvalidArgument("burst.tenants." + name + ": no offer for a flavor");
      }
    }
  }
  for (const TraceJob& j : jobs) {
    bool known = false;
    for (const TraceTenant& t : tenants) known = known || t.name == j.tenant;
    if (!known) return InvalidArgument("job of unknown tenant '" + j.tenant + "'");
  }
  size_t done_before = 0;
  auto report = [&](size_t finished) {
    if (progress && (finished & 511) == 0) {
      progress(static_cast<double>(done_before + finished) / static_cast<double>(jobs.size()));
    }
  };
  Raw all;
  if (!opt.partitioned) {
    Result<Raw> r = RunOne(jobs, tenants, opt, report);
    if (!r.ok()) return r.error();
    all = std::move(*r);
  } else {
    // Partitions never interact: each tenant runs alone on its own nodes, which is the same
    // schedule as one shared run and far cheaper (a cycle only sees one tenant's queue).
    for (const TraceTenant& t : tenants) {
      std::vector<TraceJob> mine;
      for (const TraceJob& j : jobs) {
        if (j.tenant == t.name) mine.push_back(j);
      }
      Result<Raw> r = RunOne(mine, {t}, opt, report);
      if (!r.ok()) return r.error();
      done_before += mine.size();
      Merge(all, std::move(*r));
    }
  }
  if (all.capacity == 0) return InvalidArgument("the tenants guarantee no GPUs");
  if (progress) progress(1.0);
  return Summarize(std::move(all), tenants, opt);
}

}  // namespace gpupool
