#include "sim/philly.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "sim/csv.h"

namespace gpupool {

Result<std::vector<TraceJob>> LoadTraceJobs(const std::string& path) {
  Result<CsvTable> t = CsvTable::Read(path, {"vc", "app_id", "submit_time_s", "num_gpus", "duration_s"});
  if (!t.ok()) return t.error();
  std::vector<TraceJob> jobs;
  jobs.reserve(t->rows());
  for (size_t r = 0; r < t->rows(); ++r) {
    Result<int64_t> id = t->Int(r, "app_id"), submit = t->Int(r, "submit_time_s"),
                    gpus = t->Int(r, "num_gpus"), dur = t->Int(r, "duration_s");
    for (const Result<int64_t>* v : {&id, &submit, &gpus, &dur}) {
      if (!v->ok()) return v->error();
    }
    if (*submit < 0 || *gpus < 1 || *gpus > 1024 || *dur < 0) {
      return InvalidArgument(t->Where(r) + ": values out of range");
    }
    jobs.push_back({t->Field(r, "vc"), *id, *submit, static_cast<int>(*gpus), *dur});
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return std::tie(a.submit_s, a.tenant, a.id) < std::tie(b.submit_s, b.tenant, b.id);
  });
  return jobs;
}

Result<std::vector<TraceTenant>> LoadTraceTenants(const std::string& path) {
  Result<CsvTable> t = CsvTable::Read(path, {"tenant", "guaranteed_gpus"});
  if (!t.ok()) return t.error();
  std::vector<TraceTenant> out;
  for (size_t r = 0; r < t->rows(); ++r) {
    Result<int64_t> g = t->Int(r, "guaranteed_gpus");
    if (!g.ok()) return g.error();
    if (*g < 0) return InvalidArgument(t->Where(r) + ": negative guarantee");
    TraceTenant ten{t->Field(r, "tenant"), *g, 1000};
    if (t->Has("weight")) {  // optional column
      Result<double> w = t->Real(r, "weight");
      if (!w.ok()) return w.error();
      if (!(*w > 0) || *w > 1e6) return InvalidArgument(t->Where(r) + ": weight must be positive");
      ten.weight_milli = static_cast<int64_t>(std::llround(*w * 1000));
    }
    for (const TraceTenant& other : out) {
      if (other.name == ten.name) return InvalidArgument(t->Where(r) + ": tenant listed twice");
    }
    out.push_back(std::move(ten));
  }
  return out;
}

}  // namespace gpupool
