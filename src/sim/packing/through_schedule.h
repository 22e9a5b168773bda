// The packing experiment's protocol driven through the daemon's scheduler (issue 21 item 3, a
// first measurement): the same pods in the same order, each submitted to a gpupool State and
// given one Schedule() cycle; placed, it stays; not placed, it is cancelled.
//
// The cluster: the trace's nodes, added in the seed's node-priority order, so that the core's
// lowest-node-id tie-break is the protocol's; every GPU dynamic (whole or shared, as the paper's
// model); CPU and memory counted; one tenant guaranteed all of it; no preemption, no backfill.
// Pods: whole GPUs, fractions (no GPU memory bound: openb has none), or no GPU (CPU-only pods).
// A list whose pods all accept any model runs on one flavor; one with gpu_spec gets a flavor per
// model and each pod the list of its models, tried in model order (a gpupool flavor list, not
// the paper's best node over all of them: approximate). The fgd and gpupool policies weigh the
// list's typical pods (SchedulerConfig::workload); what the core still lacks against the
// experiment is in docs/design/simulator.md.
#pragma once

#include <string>

#include "sim/packing/experiment.h"

namespace gpupool::packing {

// `placement`: a Schedule() placement policy (fgd, gpupool, bestfit, ...).
Result<SeedRun> RunSeedThroughSchedule(const OpenbTrace& trace, const std::string& placement, uint64_t seed,
                                       double tune_ratio = 1.3);

}  // namespace gpupool::packing
