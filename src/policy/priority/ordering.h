// Total orders used by the scheduler (STYLE.md habit 2: the last tie breaks on an id).
#pragma once

#include "model/state.h"

namespace gpupool {

// Queue order inside a tenant: higher priority first, then earlier submission, then lower id.
bool QueueBefore(const State& state, const Job& a, const Job& b);

// Victim order for preemption: lower priority first, then the most recently started, then the
// higher id (the newer job).
bool VictimBefore(const State& state, const Job& a, const Job& b);

}  // namespace gpupool
