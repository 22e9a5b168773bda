// Scenario tables for reservations and maintenance windows in the scheduler (DESIGN.md §5;
// docs/design/reservations.md, "In the scheduler"). Each reservation is booked on the state's
// availability calendar before it is applied, as the daemon does. Windows are in seconds; the
// cycle runs at now_s = 3600 unless a row says otherwise.
#include <gtest/gtest.h>

#include "support/scenario.h"

namespace gpupool::testing {
namespace {

NodeTemplate H100x8() { return {.flavor = "h100-80gb", .gpus = 8}; }

std::vector<std::pair<std::string, NodeTemplate>> TwoH100Nodes() {
  return {{"n0", H100x8()}, {"n1", H100x8()}};
}

// a: 4 guaranteed, b: 8, so 4 of the 16 are free for reservations. a's 8-GPU inference job may
// not borrow: it runs only if all 8 are guaranteed.
Scenario ReservedInference(int start_s, int end_s) {
  return {
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {4}}}}, {"b", {{"h100-80gb", {8}}}}},
      .reservations = {{.tenant = "a", .gpus = 4, .start_s = start_s, .end_s = end_s}},
      .pending = {{"j", "a", "8xh100-80gb", "inference"}},
  };
}

TEST(Reservation, InForceItIsGuaranteeBeyondTheStandingOne) {
  // [0, 7200) holds 3600: a is guaranteed 4 + 4 = 8, and j is placed as guaranteed.
  Scenario sc = ReservedInference(0, 7200);
  sc.placed = {"j"};
  const Plan p = RunScenario(sc);
  ASSERT_EQ(p.placements.size(), 1u);
  EXPECT_EQ(p.placements[0].kind, AdmissionKind::kGuaranteed);
}

TEST(Reservation, BeforeOrAfterItsWindowItCountsForNothing) {
  for (const auto& [start_s, end_s] : {std::pair{7200, 10800}, std::pair{0, 3600}}) {
    SCOPED_TRACE("window [" + std::to_string(start_s) + ", " + std::to_string(end_s) + ")");
    Scenario sc = ReservedInference(start_s, end_s);
    sc.waiting = {{"j", ReasonCode::kMayNotBorrow}};  // 0 + 8 > 4
    RunScenario(sc);
  }
}

TEST(Reservation, IdleReservedCapacityIsLentToOthers) {
  // owner: 12 guaranteed and lends none of it; 4 reserved on top, so all 16 are owner's. The
  // owner is idle: the borrower may still take the 4 reserved GPUs (lendable = 16 - 0 used -
  // 12 protected), and a fifth waits.
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"owner", {{"h100-80gb", {12, std::nullopt, 0}}}},
                  {"borrower", {{"h100-80gb", {0}}}}},
      .reservations = {{.tenant = "owner", .gpus = 4, .start_s = 0, .end_s = 7200}},
      .pending = {{"x0", "borrower", "1xh100-80gb"}, {"x1", "borrower", "1xh100-80gb"},
                  {"x2", "borrower", "1xh100-80gb"}, {"x3", "borrower", "1xh100-80gb"},
                  {"x4", "borrower", "1xh100-80gb"}},
      .placed = {"x0", "x1", "x2", "x3"},
      .waiting = {{"x4", ReasonCode::kNoLendableCapacity}},
  });
}

TEST(Reservation, HolderReclaimsWhatWasLentFromItsReservation) {
  // b has no standing guarantee and 8 reserved over [0, 7200). At t=0 a (guaranteed 8) started
  // sixteen 1-GPU batch jobs, one a minute: 8 within its guarantee and 8 borrowed from b's
  // idle reservation. b now asks for 8: within its reserved guarantee, so the 8 newest of a's
  // jobs are reclaimed. b's second 8 would be borrowing: nothing is reclaimed for it, and a
  // keeps its guarantee.
  const std::vector<JobLine> running = RunningBatchJobs("a", 16, 60);
  const Plan p = RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {8}}}}, {"b", {{"h100-80gb", {0}}}}},
      .reservations = {{.tenant = "b", .gpus = 8, .start_s = 0, .end_s = 7200}},
      .running = running,
      .pending = {{"b0", "b", "8xh100-80gb"}, {"b1", "b", "8xh100-80gb"}},
      .placed = {"b0"},
      .preempted = {"a8", "a9", "a10", "a11", "a12", "a13", "a14", "a15"},
      .waiting = {{"b1", ReasonCode::kNoLendableCapacity}},
  });
  for (const PreemptDecision& d : p.preemptions) EXPECT_EQ(d.kind, PreemptKind::kReclaim);
  ASSERT_EQ(p.placements.size(), 1u);
  EXPECT_EQ(p.placements[0].kind, AdmissionKind::kGuaranteed);
}

TEST(Reservation, AfterItsWindowTheHolderNoLongerReclaims) {
  // The same cluster once b's window is over (it ended at 1800): b's request would be borrowing,
  // and only a tenant within its guarantee may reclaim, so nothing moves.
  const std::vector<JobLine> running = RunningBatchJobs("a", 16, 60);
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {8}}}}, {"b", {{"h100-80gb", {0}}}}},
      .reservations = {{.tenant = "b", .gpus = 8, .start_s = 0, .end_s = 1800}},
      .running = running,
      .pending = {{"b0", "b", "8xh100-80gb"}},
      .placed = {},
      .preempted = {},
      .waiting = {{"b0", ReasonCode::kNoLendableCapacity}},
  });
}

// --- maintenance ----------------------------------------------------------------------------

// a and b are guaranteed 8 each of 16; a maintenance window takes 8 out of the pool. Each asks
// for its full guarantee with an inference job.
Scenario Maintenance(int start_s, int end_s) {
  return {
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {8}}}}, {"b", {{"h100-80gb", {8}}}},
                  {"c", {{"h100-80gb", {0}}}}},
      .reservations = {{.gpus = 8, .start_s = start_s, .end_s = end_s}},
      .pending = {{"ja", "a", "8xh100-80gb", "inference"},
                  {"jb", "b", "8xh100-80gb", "inference"},
                  {"jc", "c", "1xh100-80gb"}},
  };
}

TEST(Maintenance, AWindowInForceReducesWhatCanBeAdmitted) {
  // C = 16 - 8 = 8. a goes first (equal shares, lower id) and takes the 8; b is within its
  // guarantee but the pool is full: it waits with `maintenance`, although 8 GPUs sit idle.
  // c would borrow: lendable = 8 - 8 used - 0 = 0.
  Scenario sc = Maintenance(0, 7200);
  sc.placed = {"ja"};
  sc.waiting = {{"jb", ReasonCode::kMaintenance}, {"jc", ReasonCode::kNoLendableCapacity}};
  RunScenario(sc);
}

TEST(Maintenance, OutsideItsWindowThePoolIsWhole) {
  for (const auto& [start_s, end_s] : {std::pair{7200, 10800}, std::pair{0, 3600}}) {
    SCOPED_TRACE("window [" + std::to_string(start_s) + ", " + std::to_string(end_s) + ")");
    Scenario sc = Maintenance(start_s, end_s);
    sc.placed = {"ja", "jb"};
    sc.waiting = {{"jc", ReasonCode::kNoLendableCapacity}};
    RunScenario(sc);
  }
}

TEST(Maintenance, BorrowersMakeRoomWhenThePoolShrinks) {
  // c borrowed 8 before the window; from 1800 the window takes 8, so the 8 c uses are the
  // whole pool. a asks for its guarantee: 8 GPUs are idle, but the pool has no room for them,
  // so c's borrowed work is reclaimed to make it.
  std::vector<JobLine> running;
  for (int i = 0; i < 8; ++i) {
    running.push_back({"c" + std::to_string(i), "c", "1xh100-80gb", "batch", 1, 0,
                       TopologyLevel::kNone, true, i * 60});
  }
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {8}}}}, {"b", {{"h100-80gb", {8}}}},
                  {"c", {{"h100-80gb", {0}}}}},
      .reservations = {{.gpus = 8, .start_s = 1800, .end_s = 7200}},
      .running = running,
      .pending = {{"ja", "a", "8xh100-80gb"}},
      .placed = {"ja"},
      .preempted = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"},
  });
}

}  // namespace
}  // namespace gpupool::testing
