// Snapshot codecs: a state, ledger and history decoded from a snapshot behave exactly like the
// originals under every later event. Random clusters and workloads go through the real
// scheduler (as in tests/property_test.cc); after a snapshot the same events are fed to the
// original and to its copy, whose encodings, occupancy, plans, pending counts and decayed usages
// must stay equal at every step. Damaged documents must be refused, never crash.
#include "daemon/snapshot_codec.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>

#include "daemon/snapshot_codec_test_world.h"

namespace gpupool {
namespace {

using namespace snapshot_test;  // NOLINT: this test's support

TEST(SnapshotCodecTest, DecodedCopyFollowsTheOriginalOverRandomEvents) {
  Coverage cov;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    World w(seed);
    Daemon a;
    std::unique_ptr<Daemon> b;
    w.Build(a);
    ASSERT_FALSE(HasFatalFailure());
    Time now = Time::FromSeconds(1'000'000);
    for (int step = 0; step < 300; ++step) {
      SCOPED_TRACE("step=" + std::to_string(step));
      now = now + Duration::Seconds(w.Uniform(30, 600));
      if (step % 80 == 60) {  // snapshot and restart: from here the copy must follow exactly
        b = std::make_unique<Daemon>();
        Restore(Encode(a), *b);
        ASSERT_FALSE(HasFatalFailure());
      }
      w.Step(a, b.get(), now);
      ASSERT_FALSE(HasFatalFailure());
      if (b != nullptr) {
        ExpectSame(a, *b, now);
        cov.Count(a.state);
      }
      // And a fresh copy of every step's state, for the indexes only a restore rebuilds.
      Daemon fresh;
      Restore(Encode(a), fresh);
      ExpectSame(a, fresh, now);
      ASSERT_FALSE(HasFatalFailure());
    }
  }
  for (const char* kind : {"pending",
                           "admitted",
                           "running",
                           "succeeded",
                           "failed",
                           "cancelled",
                           "requeued",
                           "requeued after preemption",
                           "node_selector",
                           "command",
                           "in a reservation",
                           "placed 0",
                           "placed 1",
                           "placed 2",
                           "cordoned",
                           "draining",
                           "unhealthy",
                           "removed",
                           "unhealthy GPU",
                           "reservation",
                           "maintenance window",
                           "shared clients out of id order"}) {
    EXPECT_GT(cov.seen[kind], 0) << "no compared state held: " << kind;
  }
}

// A small cluster with one of each kind, built by hand.
class Scripted : public ::testing::Test {
 protected:
  void SetUp() override {
    State& s = d_.state;
    AddDefaultPriorityClasses(s);
    ASSERT_TRUE(AddTenant(s, "a", {{"h100-80gb", {8}}}).ok());
    ASSERT_TRUE(AddTenant(s, "b", {{"h100-80gb", {4, 4}}, {"a100-40gb", {2}}}).ok());
    for (uint32_t t = 0; t < 2; ++t) {
      Tenant ten = s.tenant(TenantId(t));
      ten.allow_gpu_cotenancy = true;
      ASSERT_TRUE(s.UpdateTenant(ten).ok());
    }
    ASSERT_TRUE(AddNode(s, "n0",
                        {.flavor = "h100-80gb",
                         .gpus = 4,
                         .mig_gpus = 1,
                         .shared_gpus = 1,
                         .max_clients = 3,
                         .cpu_milli = 64000,
                         .labels = {"zone=a"}})
                    .ok());
    ASSERT_TRUE(AddNode(s, "n1", {.flavor = "h100-80gb", .gpus = 8, .labels = {"zone=b"}}).ok());
    ASSERT_TRUE(AddNode(s, "n2", {.flavor = "a100-40gb", .gpus = 2}).ok());
    ASSERT_TRUE(AddNode(s, "n3", {.flavor = "h100-80gb", .gpus = 2, .dedicated_to = "b"}).ok());
    const ReplicaShape whole1 = *WholeGpus(s, "h100-80gb", 1);
    j_[1] = Submit("a", *WholeGpus(s, "h100-80gb", 2));
    j_[2] = Submit("b", *MigShape(s, "h100-80gb", "1g.10gb"));
    j_[3] = Submit("a", *FractionShape(s, "h100-80gb", 300, 8192));
    j_[4] = Submit("b", *FractionShape(s, "h100-80gb", 200, 4096));
    for (int k = 5; k <= 7; ++k) j_[k] = Submit(k == 7 ? "b" : "a", whole1);
    j_[8] = Submit("a", whole1, [](JobSpec& spec) {
      spec.node_selector = {{"zone", SelectorOp::kIn, {"a"}}};
      spec.command = {"python", "train.py", "--lr=0.1"};
      spec.checkpointable = true;
    });
    j_[9] = Submit("b", whole1);
    Admit(j_[1], NodeId(0), {{.gpu = 2}, {.gpu = 3}});
    Admit(j_[2], NodeId(0), {{.gpu = 0, .mig_start = 0}});
    Admit(j_[4], NodeId(0), {{.gpu = 1, .milli = 200, .memory_mib = 4096}});  // admitted first:
    Admit(j_[3], NodeId(0), {{.gpu = 1, .milli = 300, .memory_mib = 8192}});  // clients [4, 3]
    Admit(j_[5], NodeId(1), {{.gpu = 0}});
    Admit(j_[6], NodeId(1), {{.gpu = 1}});
    Admit(j_[7], NodeId(3), {{.gpu = 0}}, AdmissionKind::kDedicated);
    for (int k : {1, 3, 4, 5, 6, 7}) Feed(JobStarted{j_[k], At(3)});
    Feed(JobFinished{j_[5], JobState::kSucceeded, At(4)});
    Feed(JobPreempted{j_[6], j_[1], At(4), PreemptKind::kPriority});
    Feed(JobLost{j_[7], At(4), RequeueCause::kNodeLost, "n3 has no agent"});
    Feed(JobFinished{j_[9], JobState::kCancelled, At(4), "by alice"});
    Feed(NodeConditionChanged{NodeId(1), NodeCondition::kCordoned, At(5), "disk"});
    Feed(GpuHealthChanged{NodeId(3), 1, false, At(5), "XID 79"});
    Feed(NodeConditionChanged{NodeId(2), NodeCondition::kDraining, At(5)});
    Feed(NodeRemoved{NodeId(2), At(6)});
    ASSERT_TRUE(AddNode(s, "n2", {.flavor = "a100-40gb", .gpus = 4}).ok());  // the name again
    Feed(ReservationCreated{{.id = ReservationId(1),
                             .tenant = TenantId(0),
                             .flavor = whole1.flavor,
                             .amount = GpuEq::Gpus(2),
                             .start = At(3600),
                             .end = At(7200),
                             .created = At(6)}});
    Feed(ReservationCreated{{.id = ReservationId(2),
                             .flavor = *s.catalogue().Find("a100-40gb"),
                             .amount = GpuEq::Gpus(1),
                             .start = At(100),
                             .end = Time::Never(),
                             .maintenance = true,
                             .created = At(6)}});
  }
  static Time At(int64_t s) { return Time::FromSeconds(s); }
  void Feed(const Event& e) { ASSERT_NO_FATAL_FAILURE(d_.Feed(e)); }
  JobId Submit(const std::string& tenant, ReplicaShape shape,
               std::function<void(JobSpec&)> tweak = {}) {
    JobSpec spec{.tenant = *d_.state.FindTenant(tenant),
                 .priority_class = *d_.state.FindPriorityClass("training"),
                 .shape = shape};
    if (tweak) tweak(spec);
    Result<JobSpec> v = d_.state.ValidateSpec(spec);
    EXPECT_TRUE(v.ok()) << v.error().message;
    const JobId id = d_.state.NextJobId();
    Feed(JobSubmitted{id, *v, At(1)});
    return id;
  }
  void Admit(JobId id, NodeId n, std::vector<GpuGrant> grants,
             AdmissionKind kind = AdmissionKind::kGuaranteed) {
    Feed(JobAdmitted{id, {{n, std::move(grants)}}, kind, At(2)});
  }
  Json StateDoc() const { return Json::parse(SnapshotCodec::EncodeState(d_.state).dump()); }

  Daemon d_;
  std::array<JobId, 10> j_;
};

TEST_F(Scripted, RoundTripsAndFollowsLaterEvents) {
  Daemon b;
  ASSERT_NO_FATAL_FAILURE(Restore(Encode(d_), b));
  ASSERT_NO_FATAL_FAILURE(ExpectSame(d_, b, At(7)));
  // The shared GPU's clients in admission order, not id order; the new n2 holds the name.
  const std::vector<SharedOccupant>& shared = b.state.node(NodeId(0)).gpus[1].shared;
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[0].job, j_[4]);
  EXPECT_EQ(*b.state.FindNode("n2"), NodeId(4));
  EXPECT_TRUE(b.state.node(NodeId(2)).removed);
  EXPECT_EQ(b.state.FindJob(j_[8])->spec.command, d_.state.FindJob(j_[8])->spec.command);
  EXPECT_EQ(b.state.usage_half_life(), Duration::Hours(6));
  // Some of these are refused (a busy GPU re-partitioned): then by both.
  const MigLayout whole_mig =
      *ParseLayout(d_.state.catalogue().model(d_.state.node(NodeId(0)).flavor), "7g.80gb@0");
  const std::vector<Event> later = {
      JobFinished{j_[4], JobState::kSucceeded, At(10)},  // the first shared client leaves
      JobFinished{j_[1], JobState::kFailed, At(11), "replica 1 exited with code 3"},
      JobAdmitted{j_[8], {{NodeId(0), {{.gpu = 2}}}}, AdmissionKind::kGuaranteed, At(12)},
      JobPreempted{j_[3], j_[8], At(13)},
      JobAdmitted{j_[6], {{NodeId(0), {{.gpu = 3}}}}, AdmissionKind::kBorrowed, At(13)},
      JobLost{j_[6], At(14), RequeueCause::kBudget},
      MigReconfigured{NodeId(0), 0, whole_mig, At(15)},  // refused: job 2 holds an instance
      JobFinished{j_[2], JobState::kSucceeded, At(16)},
      MigReconfigured{NodeId(0), 0, whole_mig, At(17)},
      ReservationCancelled{ReservationId(1), At(18)},
  };
  for (const Event& e : later) {
    SCOPED_TRACE(EventToJson(e).dump());
    State trial = d_.state, trial_copy = b.state;
    const bool ok = Apply(trial, e).ok();
    ASSERT_EQ(ok, Apply(trial_copy, e).ok()) << "the copy and the original disagree";
    if (ok) {
      ASSERT_NO_FATAL_FAILURE(d_.Feed(e));
      ASSERT_NO_FATAL_FAILURE(b.Feed(e));
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSame(d_, b, At(20)));
  }
}

// Where each job's record starts in a state's job stream, by the layout of WriteJob
// (snapshot_codec_records.h); and, in a record, where its placement and its spec start.
std::vector<size_t> JobOffsets(const Json& st) {
  std::vector<size_t> at;
  const auto n = [&](size_t i) { return st[i].get<size_t>(); };
  for (size_t i = 0; i < st.size();) {
    at.push_back(i);
    i += 10;                                                    // id .. reason message
    i += 1 + n(i);                                              // preempted_by
    for (size_t r = n(i++); r > 0; --r) i += 2 + 4 * n(i + 1);  // placement
    i += 15;                                                    // spec to the estimate
    i += 1 + n(i);                                              // command
    i += 2;                                                     // checkpointable, rsv
    for (size_t q = n(i++); q > 0; --q) i += 3 + n(i + 2);      // node selector
    i += 1 + n(i);                                              // accepted flavors
  }
  return at;
}
size_t PlacementAt(const Json& st, size_t job) { return job + 11 + st[job + 10].get<size_t>(); }
size_t SpecAt(const Json& st, size_t job) {
  size_t i = PlacementAt(st, job);
  for (size_t r = st[i++].get<size_t>(); r > 0; --r) i += 2 + 4 * st[i + 1].get<size_t>();
  return i;
}
// Replaces st[from, to) with `values`.
void Splice(Json& st, size_t from, size_t to, const std::vector<Json>& values) {
  Json::array_t& a = st.get_ref<Json::array_t&>();
  a.erase(a.begin() + static_cast<long>(from), a.begin() + static_cast<long>(to));
  a.insert(a.begin() + static_cast<long>(from), values.begin(), values.end());
}

TEST_F(Scripted, DamagedDocumentsAreRefused) {
  const Json good = StateDoc();
  ASSERT_TRUE(SnapshotCodec::DecodeState(good).ok());
  const std::vector<size_t> off = JobOffsets(good["jobs"]["stream"]);
  ASSERT_EQ(off.size(), 9u);
  // Job k's record is off[k - 1]. Job 1 runs on n0 GPUs 2 and 3 (its placement: 1 replica, node
  // 0, 2 grants of 4 values); job 2 holds n0's MIG slice 0; jobs 5 and 6 hold nothing.
  const size_t p1 = PlacementAt(good["jobs"]["stream"], off[0]);
  const size_t p2 = PlacementAt(good["jobs"]["stream"], off[1]);
  const std::vector<std::pair<std::string, std::function<void(Json&, Json&)>>> damage = {
      {"not an object", [](Json& j, Json&) { j = Json::array(); }},
      {"no jobs", [](Json& j, Json&) { j.erase("jobs"); }},
      {"no tenant name", [](Json& j, Json&) { j["tenants"][0].erase("name"); }},
      {"weight as a string", [](Json& j, Json&) { j["tenants"][0]["weight_milli"] = "heavy"; }},
      {"unknown job state", [](Json& j, Json&) { j["jobs"]["enums"]["job_state"][2] = "asleep"; }},
      {"state code without a name", [&](Json&, Json& st) { st[off[0] + 1] = 42; }},
      {"time as a string", [&](Json&, Json& st) { st[off[0] + 2] = "yesterday"; }},
      {"unknown GPU mode", [](Json& j, Json&) { j["nodes"][0]["gpus"][0][0] = "turbo"; }},
      {"GPU that does not exist", [&](Json&, Json& st) { st[p1 + 3] = 99; }},
      {"node that does not exist", [&](Json&, Json& st) { st[p1 + 1] = 42; }},
      {"MIG slice without an instance", [&](Json&, Json& st) { st[p2 + 4] = 6; }},
      {"job id duplicated",
       [&](Json&, Json& st) {
         const std::vector<Json> job1(st.begin(), st.begin() + static_cast<long>(off[1]));
         Splice(st, off[1], off[1], job1);
       }},
      {"job id at next_job_id", [](Json& j, Json&) { j["next_job_id"] = 9; }},
      {"running job without placement", [&](Json&, Json& st) { Splice(st, p1, p1 + 11, {0}); }},
      {"finished job with placement",
       [&](Json&, Json& st) {
         const size_t p = PlacementAt(st, off[4]);
         Splice(st, p, p + 1, {1, 1, 1, 7, -1, 0, 0});
       }},
      {"two jobs on one GPU",
       [&](Json&, Json& st) {
         const size_t p = PlacementAt(st, off[5]);
         Splice(st, p, p + 1, {1, 0, 1, 2, -1, 0, 0});  // n0 GPU 2, held by job 1
         st[off[5] + 1] = 1;                            // admitted
       }},
      {"unknown tenant", [&](Json&, Json& st) { st[SpecAt(st, off[0])] = 7; }},
      {"no replicas", [&](Json&, Json& st) { st[SpecAt(st, off[7]) + 3] = 0; }},
      {"a list longer than the stream",
       [&](Json&, Json& st) { st[SpecAt(st, off[7]) + 15] = uint64_t{1} << 40; }},
      {"stream cut short", [](Json&, Json& st) { st.erase(st.size() - 1); }},
      {"removed as a string", [](Json& j, Json&) { j["nodes"][2]["removed"] = "yes"; }},
      {"a client the GPU does not hold",
       [](Json& j, Json&) { j["nodes"][0]["gpus"][1][5].push_back(8); }},
      {"another catalogue", [](Json& j, Json&) { j["flavors"][0] = "z100-1gb"; }},
      {"reservation id reused", [](Json& j, Json&) { j["reservations"][1][0] = 1; }},
      {"maintenance window with a tenant", [](Json& j, Json&) { j["reservations"][1][1] = 0; }},
  };
  for (const auto& [what, mutate] : damage) {
    Json j = good;
    Json scratch;
    mutate(j, j.is_object() && j.contains("jobs") ? j["jobs"]["stream"] : scratch);
    Result<State> s = SnapshotCodec::DecodeState(j);
    EXPECT_FALSE(s.ok()) << what << " was accepted";
    if (!s.ok()) std::printf("  %-32s -> %s\n", what.c_str(), s.error().message.c_str());
  }
}

TEST_F(Scripted, DamagedLedgerAndHistoryAreRefused) {
  const Json ledger = SnapshotCodec::EncodeLedger(d_.ledger);
  const Json history = SnapshotCodec::EncodeHistory(d_.history);
  ASSERT_TRUE(SnapshotCodec::DecodeLedger(ledger).ok());
  ASSERT_TRUE(SnapshotCodec::DecodeHistory(history).ok());
  const std::vector<std::pair<std::string, std::function<void(Json&, Json&)>>> usage_damage = {
      {"ledger: unknown kind", [](Json& l, Json&) { l["enums"]["usage_kind"][0] = "free"; }},
      {"ledger: kind code", [](Json& l, Json&) { l["closed"][8] = 99; }},
      {"ledger: not an object", [](Json& l, Json&) { l = Json::array(); }},
      {"ledger: cut short", [](Json& l, Json&) { l["open"].erase(l["open"].size() - 1); }},
      {"history: unknown type", [](Json&, Json& h) { h["enums"]["type"][0] = "exploded"; }},
      {"history: stream as a string", [](Json&, Json& h) { h["stream"] = "none"; }},
      {"history: entry count", [](Json&, Json& h) { h["stream"][2] = 1000; }},
  };
  for (const auto& [what, mutate] : usage_damage) {
    Json l = ledger, h = history;
    mutate(l, h);
    EXPECT_FALSE(SnapshotCodec::DecodeLedger(l).ok() && SnapshotCodec::DecodeHistory(h).ok())
        << what << " was accepted";
  }
}

// Every leaf of the document replaced by values of other types and ranges: each decode either
// fails or gives a state that passes its invariants and encodes stably; none crashes or throws.
TEST_F(Scripted, NoDamageCrashesTheDecoder) {
  const Json good = StateDoc();
  const Json flat = good.flatten();
  int refused = 0, accepted = 0;
  for (const auto& [pointer, leaf] : flat.items()) {
    for (const Json& other :
         {Json("x"), Json(-1), Json(uint64_t{1} << 40), Json(nullptr), Json(true), Json(0)}) {
      Json j = good;
      j[Json::json_pointer(pointer)] = other;
      Result<State> s = SnapshotCodec::DecodeState(j);
      if (!s.ok()) {
        ++refused;
        continue;
      }
      ++accepted;
      const Json again = SnapshotCodec::EncodeState(*s);
      Result<State> twice = SnapshotCodec::DecodeState(again);
      ASSERT_TRUE(twice.ok()) << pointer << ": " << twice.error().message;
      ASSERT_TRUE(SnapshotCodec::EncodeState(*twice) == again) << pointer;
    }
  }
  std::printf("  %zu leaves: %d damaged documents refused, %d accepted\n", flat.size(), refused,
              accepted);
  EXPECT_GT(refused, accepted);
}

TEST_F(Scripted, JobsLeftOutDecodeWithGaps) {
  // Jobs 5 (succeeded) and 9 (cancelled) no longer kept, as the daemon will drop old ones.
  Json j = StateDoc();
  Json& st = j["jobs"]["stream"];
  const std::vector<size_t> off = JobOffsets(st);
  Splice(st, off[8], st.size(), {});
  Splice(st, off[4], off[5], {});
  Result<State> s = SnapshotCodec::DecodeState(j);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->NextJobId(), d_.state.NextJobId());
  EXPECT_EQ(s->jobs().size(), d_.state.jobs().size() - 2);
  EXPECT_EQ(s->FindJob(j_[5]), nullptr);
  EXPECT_EQ(s->FindJob(j_[9]), nullptr);
  EXPECT_EQ(s->FindJob(JobId(0)), nullptr);
  EXPECT_EQ(s->FindJob(s->NextJobId()), nullptr);
  ASSERT_NE(s->FindJob(j_[6]), nullptr);
  EXPECT_EQ(s->FindJob(j_[6])->preemptions, 1u);
  // A copy keeps the gaps and points into itself; new jobs take the next id.
  State copy = *s;
  EXPECT_EQ(copy.FindJob(j_[5]), nullptr);
  EXPECT_EQ(copy.FindJob(j_[6]), &copy.jobs().at(j_[6]));
  JobSpec spec = s->FindJob(j_[8])->spec;
  ASSERT_TRUE(Apply(copy, JobSubmitted{copy.NextJobId(), spec, At(30)}).ok());
  EXPECT_EQ(copy.FindJob(JobId(10))->spec.name, spec.name);
  EXPECT_TRUE(CheckInvariants(copy).ok());
  EXPECT_EQ(copy.pending_jobs(TenantId(0)), d_.state.pending_jobs(TenantId(0)) + 1);
  const Plan plan = Schedule(copy, SchedulerConfig(), At(30));  // the scheduler copes with gaps
  for (const Event& e : PlanToEvents(plan, At(30))) ASSERT_TRUE(Apply(copy, e).ok());
  EXPECT_TRUE(CheckInvariants(copy).ok());
}

TEST_F(Scripted, CopiesKeepPendingCounts) {
  // Tenant a waits with jobs 6 and 8, tenant b with job 7.
  ASSERT_EQ(d_.state.pending_jobs(TenantId(0)), 2u);
  ASSERT_EQ(d_.state.pending_jobs(TenantId(1)), 1u);
  State copy = d_.state;
  EXPECT_EQ(copy.pending_jobs(TenantId(0)), 2u);
  EXPECT_EQ(copy.pending_jobs(TenantId(1)), 1u);
  ASSERT_TRUE(Apply(copy, JobFinished{j_[7], JobState::kCancelled, At(20)}).ok());
  EXPECT_EQ(copy.pending_jobs(TenantId(1)), 0u);
}

// Measures, never asserts: 200,000 jobs on 2,000 nodes of 8 GPUs, 16,000 running, 16,000
// pending, the rest finished, each with its ledger intervals and history.
TEST(SnapshotCodecTest, LargeSnapshotTiming) {
  Daemon d;
  State& s = d.state;
  AddDefaultPriorityClasses(s);
  for (int t = 0; t < 10; ++t)
    ASSERT_TRUE(AddTenant(s, "t" + std::to_string(t), {{"h100-80gb", {1600}}}).ok());
  for (int n = 0; n < 2000; ++n)
    ASSERT_TRUE(AddNode(s, "node-" + std::to_string(n),
                        {.flavor = "h100-80gb", .gpus = 8, .labels = {"zone=a"}})
                    .ok());
  const int kGpus = 16000, kJobs = 200000;
  JobSpec spec{.priority_class = PriorityClassId(1),
               .shape = *WholeGpus(s, "h100-80gb", 1),
               .estimated_duration = Duration::Hours(1),
               .command = {"python", "train.py"}};
  for (int i = 0; i < kJobs; ++i) {
    const Time at = Time::FromSeconds(1000 + i);
    spec.tenant = TenantId(static_cast<uint32_t>(i % 10));
    spec.name = "job-" + std::to_string(i);
    const JobId id = s.NextJobId();
    d.Feed(JobSubmitted{id, spec, at});
    if (i >= kJobs - kGpus) continue;  // the last ones wait
    const int g = i % kGpus;
    d.Feed(JobAdmitted{
        id,
        {{NodeId(static_cast<uint32_t>(g / 8)), {{.gpu = static_cast<uint16_t>(g % 8)}}}},
        AdmissionKind::kGuaranteed,
        at});
    d.Feed(JobStarted{id, at});
    if (i < kJobs - 2 * kGpus)
      d.Feed(JobFinished{id, JobState::kSucceeded, at + Duration::Seconds(1)});
  }
  ASSERT_FALSE(HasFatalFailure());
  using Clock = std::chrono::steady_clock;
  Clock::time_point t = Clock::now();
  const auto lap = [&t](const char* what) {
    const Clock::time_point now = Clock::now();
    std::printf("  %-14s %6.0f ms\n", what,
                std::chrono::duration<double, std::milli>(now - t).count());
    t = Clock::now();
  };
  const Json js = SnapshotCodec::EncodeState(s);
  lap("encode state");
  const Json jl = SnapshotCodec::EncodeLedger(d.ledger);
  lap("encode ledger");
  const Json jh = SnapshotCodec::EncodeHistory(d.history);
  lap("encode history");
  const std::string text = js.dump(), text_l = jl.dump(), text_h = jh.dump();
  lap("dump");
  const Json back = Json::parse(text), back_l = Json::parse(text_l), back_h = Json::parse(text_h);
  lap("parse");
  Result<State> s2 = SnapshotCodec::DecodeState(back);
  lap("decode state");
  Result<Ledger> l2 = SnapshotCodec::DecodeLedger(back_l);
  lap("decode ledger");
  Result<JobHistory> h2 = SnapshotCodec::DecodeHistory(back_h);
  lap("decode history");
  ASSERT_TRUE(s2.ok() && l2.ok() && h2.ok());
  std::printf(
      "  %d jobs, %zu ledger intervals; JSON: state %.1f MB, ledger %.1f MB, history %.1f MB\n",
      kJobs, d.ledger.closed().size() + d.ledger.open().size(), text.size() / 1e6,
      text_l.size() / 1e6, text_h.size() / 1e6);
  EXPECT_TRUE(SnapshotCodec::EncodeState(*s2) == js);
}

}  // namespace
}  // namespace gpupool
