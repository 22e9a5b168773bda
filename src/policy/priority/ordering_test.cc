#include "policy/priority/ordering.h"

#include <gtest/gtest.h>

#include "model/builder.h"

namespace gpupool {
namespace {

TEST(Ordering, QueueIsPriorityThenSubmissionThenId) {
  State s;
  AddDefaultPriorityClasses(s);
  *AddTenant(s, "a", {{"h100-80gb", {8}}});
  const ReplicaShape one = *WholeGpus(s, "h100-80gb", 1);
  const JobId late_high = *Submit(s, {.tenant = "a", .priority_class = "inference", .shape = one},
                                  Time::FromSeconds(9));
  const JobId early = *Submit(s, {.tenant = "a", .shape = one}, Time::FromSeconds(1));
  const JobId early2 = *Submit(s, {.tenant = "a", .shape = one}, Time::FromSeconds(1));
  const Job& h = *s.FindJob(late_high);
  const Job& e = *s.FindJob(early);
  const Job& e2 = *s.FindJob(early2);
  EXPECT_TRUE(QueueBefore(s, h, e));   // priority wins over age
  EXPECT_TRUE(QueueBefore(s, e, e2));  // same priority and time: lower id
  EXPECT_FALSE(QueueBefore(s, e2, e));
}

TEST(Ordering, VictimsAreLowPriorityThenNewest) {
  State s;
  AddDefaultPriorityClasses(s);
  *AddTenant(s, "a", {{"h100-80gb", {8}}});
  ASSERT_TRUE(AddNode(s, "n", NodeTemplate{.flavor = "h100-80gb"}).ok());
  const ReplicaShape one = *WholeGpus(s, "h100-80gb", 1);
  auto run = [&](const char* pc, int gpu, int start_s) {
    const JobId id = *Submit(s, {.tenant = "a", .priority_class = pc, .shape = one}, Time());
    EXPECT_TRUE(Apply(s, JobAdmitted{id, {{NodeId(0), {{.gpu = static_cast<uint16_t>(gpu)}}}},
                                     AdmissionKind::kGuaranteed, Time()})
                    .ok());
    EXPECT_TRUE(Apply(s, JobStarted{id, Time::FromSeconds(start_s)}).ok());
    return id;
  };
  const Job& batch_old = *s.FindJob(run("batch", 0, 10));
  const Job& batch_new = *s.FindJob(run("batch", 1, 20));
  const Job& training = *s.FindJob(run("training", 2, 30));
  EXPECT_TRUE(VictimBefore(s, batch_new, batch_old));
  EXPECT_TRUE(VictimBefore(s, batch_old, training));
}

}  // namespace
}  // namespace gpupool
