// `gpupool serve --demo`: tenant tokens for the demo cluster (model/demo_cluster.h) and a trickle
// of demo work, submitted through the same API path as a user's, so the console and the
// metrics show a living cluster.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "daemon/control_plane.h"

namespace gpupool {

// One tenant-admin token per tenant; returns {"tenant": "token", ...} as JSON text.
Result<std::string> IssueDemoTokens(ControlPlane& core, Time now);

// The body of a POST /v1/jobs for a random demo job, and the tenant it is for. Each tenant has
// its habits: research runs 8-GPU gangs, product serves on MIG slices and single GPUs, interns
// use small slices and shared fractions. Estimates are minutes, so the demo moves.
struct DemoJob {
  std::string tenant;
  std::string body;
};
DemoJob RandomDemoJob(std::mt19937_64& rng, int64_t serial);

// The demo's price list: list and on-demand prices per GPU-hour for every flavor of `cluster`'s
// catalogue that its nodes use.
PriceList DemoPrices(const State& cluster);

// The demo's burst: research may add up to two 8-GPU H100 nodes on demand (simulated provider,
// 30 s to provision) after a job waited 2 minutes, within 150.00 a day; idle nodes go back after
// 2 minutes.
BurstSettings DemoBurst(const State& cluster);

}  // namespace gpupool
