// `gpupool sim replay`'s outputs (sim_output.h).
#include "cli/sim_output.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/decode.h"
#include "cli/table.h"
#include "sim/json.h"

namespace gpupool::cli {
namespace {

void WriteBurstJson(JsonWriter& w, const BurstReport& b, const std::string& burst_file) {
  w.Key("burst").BeginObject();
  w.Key("config").String(burst_file);
  w.Key("provider").String("simulated");
  w.Key("nodes").Int(b.nodes);
  w.Key("node_hours").Number(Hours(b.node_ms), 3);
  w.Key("gpu_hours_on_demand").Number(Hours(b.billed_gpu_ms), 3);
  w.Key("gpu_hours_used").Number(Hours(b.used_gpu_ms), 3);
  w.Key("cost").String(MicrosToDecimal(b.cost_micros));
  w.Key("cost_micros").Int(b.cost_micros);
  w.Key("jobs_on_demand").Int(b.jobs_on_demand);
  w.Key("requeued_jobs").Int(b.requeued);
  w.Key("requeued_inside_charge").Int(b.requeued_charged);
  w.Key("most_over_budget").String(MicrosToDecimal(b.over_budget_micros));
  w.Key("provision_failures").Int(b.provision_failures);
  w.Key("per_tenant").BeginObject();
  for (const auto& [name, t] : b.tenants) {
    w.Key(name).BeginObject();
    w.Key("cost").String(MicrosToDecimal(t.cost_micros));
    w.Key("cost_micros").Int(t.cost_micros);
    w.Key("nodes").Int(t.nodes);
    w.Key("gpu_hours").Number(Hours(t.billed_gpu_ms), 3);
    w.Key("gpu_hours_used").Number(Hours(t.used_gpu_ms), 3);
    w.Key("jobs_on_demand").Int(t.jobs_on_demand);
    w.Key("requeued_jobs").Int(t.requeued);
    w.Key("requeued_inside_charge").Int(t.requeued_charged);
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
}


}  // namespace

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}


// "burst": what bursting cost. Money as exact decimal strings (micros) and integer micros.
std::string ReplayJson(const ReplayReport& r, const ReplayOptions& o, const std::string& jobs,
                       const std::string& burst_file, double wall_s, bool timing) {
  JsonWriter w;
  w.BeginObject();
  w.Key("policy").String(o.scheduler.placement);
  w.Key("mode").String(o.partitioned ? "partitioned" : "pooled");
  w.Key("capacity_scale").Number(o.capacity_scale, 3);
  w.Key("queue_policy").String(std::string(QueueOrderName(o.scheduler.queue.order)));
  w.Key("estimate_noise").Number(o.estimate_noise, 3);
  if (o.estimate_noise > 1) w.Key("seed").Int(static_cast<int64_t>(o.seed));
  w.Key("jobs_csv").String(jobs);
  w.Key("capacity_gpus").Int(r.capacity_gpus);
  w.Key("tenants").BeginObject();
  for (const auto& [name, t] : r.tenants) {
    w.Key(name).BeginObject();
    w.Key("guaranteed_gpus").Int(t.guaranteed_gpus);
    w.Key("jobs").Int(t.jobs);
    w.Key("finished").Int(t.finished);
    w.Key("never_started").Int(t.never_started);
    w.Key("avg_jct_s").Number(t.avg_jct_s, 1);
    w.Key("p50_wait_s").Number(t.p50_wait_s, 1);
    w.Key("p95_wait_s").Number(t.p95_wait_s, 1);
    w.Key("p99_wait_s").Number(t.p99_wait_s, 1);
    w.Key("gpu_hours").Number(t.gpu_hours, 1);
    w.Key("mean_slowdown").Number(t.mean_slowdown, 3);
    w.Key("preemptions").Int(t.preempted);
    w.EndObject();
  }
  w.EndObject();
  w.Key("overall").BeginObject();
  w.Key("avg_jct_s").Number(r.avg_jct_s, 1);
  w.Key("p50_jct_s").Number(r.p50_jct_s, 1);
  w.Key("p99_jct_s").Number(r.p99_jct_s, 1);
  w.Key("p95_wait_s").Number(r.p95_wait_s, 1);
  w.Key("utilization_pct").Number(r.utilization_pct, 2);
  w.Key("makespan_s").Number(r.makespan_s, 0);
  w.Key("jain_fairness").Number(r.jain_fairness, 4);
  w.Key("preemptions").Int(r.preemptions);
  w.Key("cycles").Int(r.cycles);
  w.Key("reshaped_jobs").Int(r.reshaped_jobs);
  w.EndObject();
  if (r.burst.enabled) WriteBurstJson(w, r.burst, burst_file);
  if (timing) w.Key("wall_seconds").Number(wall_s, 2);
  w.EndObject();
  return w.str();
}

std::string ReplayCsv(const ReplayReport& r) {
  std::string out =
      "tenant,guaranteed_gpus,jobs,finished,never_started,avg_jct_s,p50_wait_s,"
      "p95_wait_s,p99_wait_s,gpu_hours,mean_slowdown,preemptions";
  out += r.burst.enabled ? ",burst_nodes,burst_cost\n" : "\n";
  char buf[512];
  for (const auto& [name, t] : r.tenants) {
    std::snprintf(buf, sizeof buf, "%s,%lld,%d,%d,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.3f,%d",
                  name.c_str(), static_cast<long long>(t.guaranteed_gpus), t.jobs, t.finished,
                  t.never_started, t.avg_jct_s, t.p50_wait_s, t.p95_wait_s, t.p99_wait_s,
                  t.gpu_hours, t.mean_slowdown, t.preempted);
    out += buf;
    if (r.burst.enabled) {
      const auto b = r.burst.tenants.find(name);
      const BurstTenantReport none;
      const BurstTenantReport& bt = b == r.burst.tenants.end() ? none : b->second;
      out += "," + std::to_string(bt.nodes) + "," + MicrosToDecimal(bt.cost_micros);
    }
    out += "\n";
  }
  return out;
}

std::string SweepJson(const std::vector<SweepRow>& rows, const ReplayOptions& o,
                      const std::string& jobs, const std::string& burst_file, bool timing) {
  JsonWriter w;
  w.BeginObject();
  w.Key("policy").String(o.scheduler.placement);
  w.Key("mode").String("pooled");
  w.Key("capacity_scale").Number(o.capacity_scale, 3);
  w.Key("jobs_csv").String(jobs);
  w.Key("burst_config").String(burst_file);
  w.Key("sweep").BeginArray();
  for (const SweepRow& row : rows) {
    const ReplayReport& r = row.report;
    w.BeginObject();
    w.Key("budget_per_tenant").String(MicrosToDecimal(row.budget_micros));
    w.Key("burst").Bool(r.burst.enabled);
    w.Key("nodes").Int(r.burst.nodes);
    w.Key("node_hours").Number(Hours(r.burst.node_ms), 3);
    w.Key("gpu_hours_on_demand").Number(Hours(r.burst.billed_gpu_ms), 3);
    w.Key("cost").String(MicrosToDecimal(r.burst.cost_micros));
    w.Key("cost_micros").Int(r.burst.cost_micros);
    w.Key("jobs_on_demand").Int(r.burst.jobs_on_demand);
    w.Key("requeued_jobs").Int(r.burst.requeued);
    w.Key("requeued_inside_charge").Int(r.burst.requeued_charged);
    w.Key("most_over_budget").String(MicrosToDecimal(r.burst.over_budget_micros));
    w.Key("p95_wait_s").Number(r.p95_wait_s, 1);
    w.Key("avg_jct_s").Number(r.avg_jct_s, 1);
    w.Key("utilization_pct").Number(r.utilization_pct, 2);
    w.Key("p95_wait_s_per_tenant").BeginObject();
    for (const auto& [name, t] : r.tenants) w.Key(name).Number(t.p95_wait_s, 1);
    w.EndObject();
    if (timing) w.Key("wall_seconds").Number(row.wall_s, 2);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

std::string SweepCsv(const std::vector<SweepRow>& rows) {
  std::string out =
      "budget_per_tenant,burst,nodes,node_hours,cost,jobs_on_demand,requeued_jobs,"
      "requeued_inside_charge,most_over_budget,p95_wait_s,avg_jct_s,utilization_pct\n";
  char buf[512];
  for (const SweepRow& row : rows) {
    const ReplayReport& r = row.report;
    std::snprintf(buf, sizeof buf, "%s,%s,%d,%.3f,%s,%d,%d,%d,%s,%.1f,%.1f,%.2f\n",
                  MicrosToDecimal(row.budget_micros).c_str(), r.burst.enabled ? "true" : "false",
                  r.burst.nodes, Hours(r.burst.node_ms),
                  MicrosToDecimal(r.burst.cost_micros).c_str(), r.burst.jobs_on_demand,
                  r.burst.requeued, r.burst.requeued_charged,
                  MicrosToDecimal(r.burst.over_budget_micros).c_str(), r.p95_wait_s, r.avg_jct_s,
                  r.utilization_pct);
    out += buf;
  }
  return out;
}

std::string Money(int64_t micros) {
  const int64_t cents = micros / 10'000 + (micros % 10'000 >= 5'000 ? 1 : 0);
  const int64_t frac = cents % 100;
  return std::to_string(cents / 100) + (frac < 10 ? ".0" : ".") + std::to_string(frac);
}


}  // namespace gpupool::cli
