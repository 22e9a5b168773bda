// Chargeback reconciled with an executor's accounting (reconcile.h): the pairing and every
// flag, on ledgers and accounting records written out by hand. The same against a real Slurm
// with slurmdbd is tests/slurm_executor_test.sh.
#include "daemon/reconcile.h"

#include <gtest/gtest.h>

namespace gpupool {
namespace {

constexpr int64_t kT0 = 1'700'000'000;  // Unix seconds

Time At(int64_t s) { return Time::FromSeconds(kT0 + s); }

UsageInterval Charge(uint64_t job, int64_t from_s, int64_t to_s, int gpus, uint32_t tenant = 0, bool open = false) {
  UsageInterval u;
  u.tenant = TenantId(tenant);
  u.job = JobId(job);
  u.flavor = FlavorId(0);
  u.eq = GpuEq::Gpus(gpus);
  u.start = At(from_s);
  u.end = At(to_s);
  u.open = open;
  return u;
}

executor::AccountedRun Ran(uint64_t job, std::string id, int64_t submit, int64_t start, int64_t end, int gpus,
                           std::string account = "research", std::string state = "COMPLETED") {
  executor::AccountedRun r;
  r.job = job;
  r.backend_id = std::move(id);
  r.account = std::move(account);
  r.state = std::move(state);
  r.submit_s = kT0 + submit;
  r.start_s = start == 0 ? 0 : kT0 + start;
  r.end_s = end == 0 ? 0 : kT0 + end;
  r.gpus = gpus;
  return r;
}

ReconcileQuery Query(int64_t now_s = 10'000) {
  ReconcileQuery q;
  q.from = At(0);
  q.to = At(now_s);
  q.now = At(now_s);
  q.accounting_read = At(now_s);
  q.tolerance = Duration::Seconds(5);
  return q;
}

const std::vector<std::string> kTenants = {"research", "product"};

std::vector<ReconcileLine> Pair(const std::vector<UsageInterval>& ivs, const std::vector<executor::AccountedRun>& runs,
                               std::set<uint64_t> jobs, const ReconcileQuery& q = Query()) {
  return Reconcile(ivs, runs, jobs, kTenants, q);
}

TEST(Reconcile, AChargeAndItsBackendJobWithinTheToleranceMatch) {
  // Admitted at 100 (submitted then), Slurm started it at 102, it ended at 160; gpupool saw
  // the end at 161.
  auto lines = Pair({Charge(7, 100, 161, 4)}, {Ran(7, "41", 100, 102, 160, 4)}, {7});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].status, ReconcileStatus::kMatch);
  EXPECT_TRUE(lines[0].problems.empty());
  ASSERT_EQ(lines[0].runs.size(), 1u);
  EXPECT_EQ(lines[0].runs[0].backend_id, "41");
  ASSERT_TRUE(lines[0].ledger);
  EXPECT_EQ(lines[0].ledger->gpus, 4);
}

TEST(Reconcile, AnotherGpuCountIsFlagged) {
  auto lines = Pair({Charge(7, 100, 161, 4)}, {Ran(7, "41", 100, 102, 160, 2)}, {7});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].status, ReconcileStatus::kMismatch);
  ASSERT_EQ(lines[0].problems.size(), 1u);
  EXPECT_NE(lines[0].problems[0].find("GPUs: 4 charged, 2 allocated"), std::string::npos) << lines[0].problems[0];
}

TEST(Reconcile, ADurationBeyondTheToleranceIsFlaggedAndWithinItIsNot) {
  auto late = Pair({Charge(7, 100, 161, 4)}, {Ran(7, "41", 100, 102, 300, 4)}, {7});
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].status, ReconcileStatus::kMismatch);
  EXPECT_NE(late[0].problems.at(0).find("duration: 61 s charged, 200 s"), std::string::npos) << late[0].problems[0];
  auto edge = Pair({Charge(7, 100, 161, 4)}, {Ran(7, "41", 100, 102, 166, 4)}, {7});  // 5 s off: the tolerance
  EXPECT_EQ(edge.at(0).status, ReconcileStatus::kMatch);
}

TEST(Reconcile, AChargeWithoutABackendJobIsMissingUnlessTooRecentForTheRead) {
  ReconcileQuery q = Query();
  q.accounting_read = At(500);
  auto lines = Pair({Charge(7, 100, 161, 4), Charge(8, 498, 9'000, 1)}, {}, {7, 8}, q);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].job, 7u);
  EXPECT_EQ(lines[0].status, ReconcileStatus::kMissingBackend);
  EXPECT_EQ(lines[1].job, 8u);
  EXPECT_EQ(lines[1].status, ReconcileStatus::kPending);  // admitted 2 s before the read
}

TEST(Reconcile, AnAdmissionWithdrawnWithinTheToleranceNeedsNoBackendJob) {
  // Admitted at 100 and drained 0.2 s later, before the executor's round submitted it.
  UsageInterval brief = Charge(7, 100, 100, 8);
  brief.end = brief.start + Duration::Millis(200);
  auto lines = Pair({brief, Charge(8, 100, 106, 8), Charge(9, 100, 103, 8, 0, /*open=*/true)}, {}, {7, 8, 9});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].status, ReconcileStatus::kMatch);
  EXPECT_TRUE(lines[0].problems.empty());
  EXPECT_EQ(lines[1].status, ReconcileStatus::kMissingBackend);  // 6 s charged: beyond the 5 s tolerance
  EXPECT_EQ(lines[2].status, ReconcileStatus::kMissingBackend);  // still charged
}

TEST(Reconcile, JobsNeverHandedToTheExecutorAreNotCompared) {
  auto lines = Pair({Charge(7, 100, 161, 4), Charge(9, 100, 161, 4)}, {Ran(7, "41", 100, 102, 160, 4)}, {7});
  ASSERT_EQ(lines.size(), 1u);  // job 9 ran on gpupool's agents
  EXPECT_EQ(lines[0].job, 7u);
}

TEST(Reconcile, ABackendJobWithoutAChargeIsMissingInTheLedger) {
  // Job 12 is not among the jobs handed over (a restart forgot), but its Slurm job names it.
  auto lines = Pair({}, {Ran(12, "50", 100, 101, 200, 1)}, {});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].status, ReconcileStatus::kMissingLedger);
  EXPECT_FALSE(lines[0].ledger);
  EXPECT_NE(lines[0].problems.at(0).find("backend job 50"), std::string::npos);
}

TEST(Reconcile, TwoBackendJobsForOneAdmissionAreFlagged) {
  auto lines = Pair({Charge(7, 100, 161, 4)}, {Ran(7, "41", 100, 102, 160, 4), Ran(7, "42", 101, 103, 160, 4)}, {7});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].status, ReconcileStatus::kMismatch);
  EXPECT_EQ(lines[0].runs.size(), 2u);
  EXPECT_NE(lines[0].problems.at(0).find("2 backend jobs for one admission"), std::string::npos);
}

TEST(Reconcile, APreemptedJobsAdmissionsPairWithTheirOwnBackendJobs) {
  // Admitted at 100, preempted at 200 (Slurm job 41 cancelled at 201), admitted again at 300 as
  // Slurm job 44; its charge changed kind at 400 (two contiguous intervals, one admission).
  auto lines = Pair({Charge(7, 100, 200, 4), Charge(7, 300, 400, 4), Charge(7, 400, 500, 4)},
                   {Ran(7, "41", 100, 101, 201, 4, "research", "CANCELLED"), Ran(7, "44", 300, 302, 499, 4)}, {7});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].status, ReconcileStatus::kMatch);
  EXPECT_EQ(lines[0].runs.at(0).backend_id, "41");
  EXPECT_EQ(lines[1].status, ReconcileStatus::kMatch);
  EXPECT_EQ(lines[1].runs.at(0).backend_id, "44");
  EXPECT_EQ(lines[1].ledger->start, At(300));
  EXPECT_EQ(lines[1].ledger->end, At(500));
}

TEST(Reconcile, ABackendJobGoesToTheAdmissionNearestItsSubmission) {
  // Seen against a real Slurm: admitted at 54.8 (Slurm job 6, ended 58), admitted again at 59.8
  // and cancelled at 60.4 before Slurm started it (job 7: submit and end both at second 60,
  // nothing allocated). Job 7 lies within the tolerance of both admissions; it is the second's.
  std::vector<ReconcileLine> lines;
  std::vector<UsageInterval> ivs = {Charge(4, 54, 57, 8), Charge(4, 59, 60, 8)};
  ivs[0].start = Time::FromMillis(At(54).millis() + 770);
  ivs[0].end = Time::FromMillis(At(57).millis() + 884);
  ivs[1].start = Time::FromMillis(At(59).millis() + 792);
  ivs[1].end = Time::FromMillis(At(60).millis() + 350);
  lines = Pair(ivs, {Ran(4, "6", 55, 57, 58, 8, "product", "FAILED"), Ran(4, "7", 60, 0, 60, 0, "product", "CANCELLED")},
               {4});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].status, ReconcileStatus::kMatch) << lines[0].problems.at(0);
  EXPECT_EQ(lines[0].runs.at(0).backend_id, "6");
  EXPECT_EQ(lines[1].status, ReconcileStatus::kMatch) << lines[1].problems.at(0);  // no GPUs: it never started
  EXPECT_EQ(lines[1].runs.at(0).backend_id, "7");
}

TEST(Reconcile, TheAccountMustBeTheTenantWhenAccountsAreTenants) {
  ReconcileQuery q = Query();
  auto off = Pair({Charge(7, 100, 161, 4, 1)}, {Ran(7, "41", 100, 102, 160, 4, "root")}, {7}, q);
  EXPECT_EQ(off.at(0).status, ReconcileStatus::kMatch);
  q.account_is_tenant = true;
  auto on = Pair({Charge(7, 100, 161, 4, 1)}, {Ran(7, "41", 100, 102, 160, 4, "root")}, {7}, q);
  EXPECT_EQ(on.at(0).status, ReconcileStatus::kMismatch);
  EXPECT_NE(on.at(0).problems.at(0).find("account: 'root' in the backend, tenant 'product'"), std::string::npos);
  auto right = Pair({Charge(7, 100, 161, 4, 1)}, {Ran(7, "41", 100, 102, 160, 4, "product")}, {7}, q);
  EXPECT_EQ(right.at(0).status, ReconcileStatus::kMatch);
}

TEST(Reconcile, OpenChargesAndRunningBackendJobs) {
  ReconcileQuery q = Query(1'000);
  // Both still running: a match.
  auto both = Pair({Charge(7, 100, 1'000, 4, 0, true)}, {Ran(7, "41", 100, 102, 0, 4, "research", "RUNNING")}, {7}, q);
  EXPECT_EQ(both.at(0).status, ReconcileStatus::kMatch);
  // Slurm says it ended at 600; gpupool still charges at 1000.
  auto charged = Pair({Charge(7, 100, 1'000, 4, 0, true)}, {Ran(7, "41", 100, 102, 600, 4)}, {7}, q);
  EXPECT_EQ(charged.at(0).status, ReconcileStatus::kMismatch);
  EXPECT_NE(charged.at(0).problems.at(0).find("gpupool still charges it"), std::string::npos);
  // gpupool stopped charging at 600; Slurm still runs it.
  auto running = Pair({Charge(7, 100, 600, 4)}, {Ran(7, "41", 100, 102, 0, 4, "research", "RUNNING")}, {7}, q);
  EXPECT_EQ(running.at(0).status, ReconcileStatus::kMismatch);
  EXPECT_NE(running.at(0).problems.at(0).find("still RUNNING"), std::string::npos);
}

TEST(Reconcile, TheWindowKeepsWhatOverlapsIt) {
  ReconcileQuery q = Query();
  q.from = At(1'000);
  auto lines = Pair({Charge(7, 100, 161, 4), Charge(8, 900, 1'100, 1)},
                   {Ran(7, "41", 100, 102, 160, 4), Ran(8, "42", 900, 901, 1'100, 1)}, {7, 8}, q);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].job, 8u);
  EXPECT_EQ(lines[0].status, ReconcileStatus::kMatch);
}

}  // namespace
}  // namespace gpupool
