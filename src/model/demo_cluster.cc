#include "model/demo_cluster.h"

#include <string>

#include "model/builder.h"

namespace gpupool {

State DemoCluster() {
  State s;
  AddDefaultPriorityClasses(s);
  // research leaves 8 of the 64 H100 unguaranteed, so the demo can take reservations.
  GP_CHECK(AddTenant(s, "research", {{"h100-80gb", {24, 16}}, {"a100-80gb", {4}}}, 2000).ok());
  GP_CHECK(AddTenant(s, "product", {{"h100-80gb", {24, 8}}, {"a100-80gb", {8}}}, 1000).ok());
  GP_CHECK(AddTenant(s, "interns", {{"h100-80gb", {8, 8}}, {"a100-80gb", {4}}}, 1000).ok());
  Tenant interns = s.tenant(*s.FindTenant("interns"));
  interns.allow_gpu_cotenancy = true;
  GP_CHECK(s.UpdateTenant(interns).ok());
  for (int i = 0; i < 6; ++i) {
    NodeTemplate t{.flavor = "h100-80gb", .block = i < 3 ? "rack-a" : "rack-b"};
    GP_CHECK(AddNode(s, "h100-" + std::to_string(i), t).ok());
  }
  for (int i = 0; i < 2; ++i) {
    GP_CHECK(AddNode(s, "h100-mig-" + std::to_string(i),
                     {.flavor = "h100-80gb", .mig_gpus = 8, .block = "rack-c"})
                 .ok());
  }
  for (int i = 0; i < 2; ++i) {
    GP_CHECK(AddNode(s, "a100-shared-" + std::to_string(i),
                     {.flavor = "a100-80gb", .shared_gpus = 8, .max_clients = 4, .block = "rack-c"})
                 .ok());
  }
  return s;
}

}  // namespace gpupool
