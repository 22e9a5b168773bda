// Request decoders: untrusted JSON to validated values. Malformed JSON, wrong types, unknown
// fields, out-of-range values and unknown names are errors with a message that says which
// field; nothing here throws or changes state. The fuzz target (tests/fuzz) drives these.
#pragma once

#include <string>
#include <string_view>

#include "api/auth.h"
#include "model/state.h"

namespace gpupool {

// POST /v1/jobs:
// {"tenant": T, "name": S, "priority_class": P, "replicas": N,
//  "resources": {"flavor": F, "gpus": G} | {"flavor": F, "mig_profile": "1g.10gb"} |
//               {"flavor": F, "gpu_fraction": 0.25, "memory_gb": 20},
//  "duration_estimate_s": D, "command": [...], optional "topology": {"level", "required"},
//  "cpu_milli", "memory_mib", "checkpointable"}
// A tenant the caller may not see is reported as unknown (no existence leak).
Result<JobSpec> DecodeJobRequest(const State& state, const Principal& caller, std::string_view body);

// POST /v1/tenants (base == nullptr) and PATCH /v1/tenants/{name} (base: the current tenant;
// fields present replace theirs, "quotas" replaces the whole map):
// {"name", "weight": >0, "quotas": {FLAVOR: {"guaranteed", "borrow_limit", "lend_limit"}},
//  "limits": {"max_replicas", "max_job_gpus", "default_duration_s", "max_duration_s"},
//  "allow_gpu_cotenancy"}. GPU amounts are numbers of GPUs, exact to 1/7000 GPU.
Result<Tenant> DecodeTenantRequest(const State& state, std::string_view body, const Tenant* base);

// POST /v1/priority-classes: {"name", "value", "preemptible", "may_borrow", "grace_period_s"}.
Result<PriorityClass> DecodePriorityClassRequest(std::string_view body);

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
// Text from outside JSON bodies (headers, paths, YAML) must pass before it is stored or echoed.
bool ValidUtf8(std::string_view s);

// The HTTP status for an error code.
int HttpStatus(ErrorCode code);
// {"error": {"code", "message", "details"}}
std::string ErrorBody(const Error& e, const std::string& details = "");

}  // namespace gpupool
