// The demo cluster shared by `gpupool demo` and `gpupool serve --demo`: ten nodes of 8 GPUs
// (six whole H100, two H100 in MIG, two A100 time-shared), three tenants with quotas and the
// default priority classes.
#pragma once

#include "model/state.h"

namespace gpupool {

State DemoCluster();

}  // namespace gpupool
