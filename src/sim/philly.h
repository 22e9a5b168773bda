// Microsoft Philly jobs per virtual cluster (shared/traces/philly-pcs-per-vc/SUBSET.md): each VC is
// a tenant. Columns used: vc, app_id, submit_time_s, num_gpus, duration_s; tenants: tenant,
// guaranteed_gpus[, weight].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpupool {

struct TraceJob {
  std::string tenant;
  int64_t id = 0;        // app_id, unique within the tenant
  int64_t submit_s = 0;  // seconds since the tenant's first submission
  int gpus = 1;
  int64_t duration_s = 0;
};

struct TraceTenant {
  std::string name;
  int64_t guaranteed_gpus = 0;
  int64_t weight_milli = 1000;
};

// Jobs come back sorted by (submit time, tenant, id). Every job's tenant must be listed.
Result<std::vector<TraceJob>> LoadTraceJobs(const std::string& jobs_csv);
Result<std::vector<TraceTenant>> LoadTraceTenants(const std::string& tenants_csv);

}  // namespace gpupool
