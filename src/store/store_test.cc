#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "model/builder.h"
#include "model/demo_cluster.h"
#include "store/codec.h"
#include "store/journal.h"

namespace gpupool {
namespace {

std::string TempPath(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpupool-store-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

TEST(SqliteJournal, AppendsInOrderAndSurvivesReopen) {
  const std::string path = TempPath("j.db");
  {
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(path);
    ASSERT_TRUE(j.ok()) << j.error().message;
    std::vector<Record> batch = {{0, "a", "{\"x\":1}"}, {0, "b", "{\"x\":2}"}};
    ASSERT_TRUE((*j)->Append(batch).ok());
    EXPECT_EQ(batch[0].seq, 1);
    EXPECT_EQ(batch[1].seq, 2);
  }
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(path);
  ASSERT_TRUE(j.ok());
  std::vector<Record> more = {{0, "c", "{}"}};
  ASSERT_TRUE((*j)->Append(more).ok());
  EXPECT_EQ(more[0].seq, 3) << "sequence numbers continue after a reopen";
  Result<std::vector<Record>> all = (*j)->ReadAll();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].kind, "a");
  EXPECT_EQ((*all)[1].body, "{\"x\":2}");
  EXPECT_EQ((*all)[2].kind, "c");
}

TEST(SqliteJournal, BodiesKeepEveryByte) {
  const std::string path = TempPath("bytes.db");
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(path);
  ASSERT_TRUE(j.ok());
  const std::string body = "{\"s\":\"caf\xc3\xa9 \\u0000 'quote' \\\"dq\\\"\"}";
  std::vector<Record> batch = {{0, "k", body}};
  ASSERT_TRUE((*j)->Append(batch).ok());
  EXPECT_EQ((*(*j)->ReadAll())[0].body, body);
}

TEST(SqliteJournal, UnopenablePathIsAnError) {
  EXPECT_FALSE(OpenSqliteJournal("/nonexistent-dir/x/j.db").ok());
}

TEST(Codec, TenantsRoundTripExactly) {
  const State s = DemoCluster();
  for (const Tenant& t : s.tenants()) {
    const Json j = TenantToJson(s, t);
    Result<Tenant> back = TenantFromJson(s, Json::parse(j.dump()));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(TenantToJson(s, *back), j);
    EXPECT_EQ(back->quotas.size(), t.quotas.size());
    for (const auto& [f, q] : t.quotas) {
      EXPECT_EQ(back->quotas.at(f).guaranteed, q.guaranteed);
      EXPECT_EQ(back->quotas.at(f).borrow_limit, q.borrow_limit);
    }
  }
}

TEST(Codec, NodesRoundTripIncludingMigLayoutsAndSharing) {
  const State s = DemoCluster();
  State rebuilt;
  for (const PriorityClass& pc : s.priority_classes()) {
    ASSERT_TRUE(rebuilt.AddPriorityClass(*PriorityClassFromJson(PriorityClassToJson(pc))).ok());
  }
  for (const Node& n : s.nodes()) {
    Result<Node> back = NodeFromJson(rebuilt, Json::parse(NodeToJson(s, n).dump()));
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_TRUE(rebuilt.AddNode(*back).ok());
    const Node& r = rebuilt.node(*rebuilt.FindNode(n.name));
    ASSERT_EQ(r.gpus.size(), n.gpus.size());
    for (size_t g = 0; g < n.gpus.size(); ++g) {
      EXPECT_EQ(r.gpus[g].mode, n.gpus[g].mode);
      EXPECT_EQ(r.gpus[g].layout, n.gpus[g].layout);
      EXPECT_EQ(r.gpus[g].max_clients, n.gpus[g].max_clients);
    }
    EXPECT_EQ(r.block, n.block);
  }
  EXPECT_EQ(rebuilt.priority_classes().size(), s.priority_classes().size());
}

TEST(Codec, EveryEventKindRoundTrips) {
  State s = DemoCluster();
  JobSpec spec;
  spec.tenant = *s.FindTenant("research");
  spec.priority_class = *s.FindPriorityClass("training");
  spec.shape = *WholeGpus(s, "h100-80gb", 2);
  spec.replicas = 2;
  spec.name = "a \"quoted\" name";
  spec.command = {"python", "x.py"};
  spec.estimated_duration = Duration::Minutes(90);
  ReplicaPlacement rp{NodeId(3), {{1, -1, 0, 0}, {2, -1, 0, 0}}};
  MigLayout layout = s.node(NodeId(6)).gpus[0].layout;
  JobSpec listed = spec;  // accepts two flavors
  listed.flavors = {spec.shape.flavor, *s.catalogue().Find("a100-80gb")};
  const std::vector<Event> events = {
      JobSubmitted{JobId(1), spec, Time::FromMillis(5)},
      JobAdmitted{JobId(1), {rp, rp}, AdmissionKind::kBorrowed, Time::FromMillis(6)},
      JobStarted{JobId(1), Time::FromMillis(7)},
      JobFinished{JobId(1), JobState::kCancelled, Time::FromMillis(8)},
      JobPreempted{JobId(1), JobId(2), Time::FromMillis(9)},
      JobLost{JobId(1), Time::FromMillis(10)},
      MigReconfigured{NodeId(6), 3, layout, Time::FromMillis(11)},
      NodeConditionChanged{NodeId(2), NodeCondition::kDraining, Time::FromMillis(12)},
      GpuHealthChanged{NodeId(2), 5, false, Time::FromMillis(13)},
      ReservationCreated{Reservation{.id = ReservationId(4), .tenant = TenantId(1),
                                     .flavor = FlavorId(2), .amount = GpuEq::Gpus(8),
                                     .start = Time::FromMillis(100), .end = Time::FromMillis(200),
                                     .created = Time::FromMillis(14)}},
      ReservationCreated{Reservation{.id = ReservationId(5), .flavor = FlavorId(0),
                                     .amount = GpuEq::Gpus(3), .start = Time::FromMillis(-5),
                                     .end = Time::Never(), .maintenance = true,
                                     .created = Time::FromMillis(15)}},
      ReservationCancelled{ReservationId(4), Time::FromMillis(16)},
      // The fields added later, each away from its default.
      JobFinished{JobId(1), JobState::kFailed, Time::FromMillis(17), "replica 1 on h100-2 exited with code 3"},
      JobPreempted{JobId(1), JobId(2), Time::FromMillis(18), PreemptKind::kPriority},
      JobLost{JobId(1), Time::FromMillis(19), RequeueCause::kStartTimeout, "node h100-3 has no agent"},
      JobLost{JobId(1), Time::FromMillis(19), RequeueCause::kBudget, ""},
      NodeConditionChanged{NodeId(2), NodeCondition::kNotReady, Time::FromMillis(20), "no node agent has registered"},
      GpuHealthChanged{NodeId(2), 5, false, Time::FromMillis(21), "XID 79: GPU fell off the bus"},
      NodeRemoved{NodeId(2), Time::FromMillis(22)},
      NodeLabelsReported{NodeId(2), {"node.gpupool.io/cuda-version=12.4"}, Time::FromMillis(23)},
      GpuModeChanged{NodeId(3), 7, GpuMode::kShared, Time::FromMillis(24)},
      JobSubmitted{JobId(2), listed, Time::FromMillis(24)},
      JobFlavorChosen{JobId(2), FlavorId(1), Time::FromMillis(24)},
      GpuModeChanged{NodeId(3), 7, GpuMode::kWhole, Time::FromMillis(25)},
  };
  EXPECT_FALSE(EventFromJson(Json::parse(R"({"type":"gpu_mode","node":3,"gpu":7,"mode":"mig","at":5})")).ok())
      << "a dynamic GPU is whole or shared, never MIG";
  // An admission from before attempt counters: its attempt was its time in ms, now the floor.
  Result<Event> old_admitted = EventFromJson(Json::parse(R"({"type":"admitted","id":1,"at":1795995814000,"kind":0,"placement":[]})"));
  ASSERT_TRUE(old_admitted.ok()) << old_admitted.error().message;
  EXPECT_EQ(std::get<JobAdmitted>(*old_admitted).min_attempt, 1795995814000);
  Result<Event> new_admitted = EventFromJson(EventToJson(JobAdmitted{JobId(1), {rp}, AdmissionKind::kBorrowed, Time::FromMillis(6)}));
  EXPECT_EQ(std::get<JobAdmitted>(*new_admitted).min_attempt, 0) << "a counted admission stays counted";
  // An old journal's records (before causes and reasons) read as the defaults.
  Result<Event> old_lost = EventFromJson(Json::parse(R"({"type":"lost","id":1,"at":5})"));
  ASSERT_TRUE(old_lost.ok());
  EXPECT_EQ(std::get<JobLost>(*old_lost).cause, RequeueCause::kNodeLost);
  EXPECT_FALSE(EventFromJson(Json::parse(R"({"type":"lost","id":1,"at":5,"cause":"gremlins"})")).ok());
  for (const Event& e : events) {
    const Json j = EventToJson(e);
    Result<Event> back = EventFromJson(Json::parse(j.dump()));
    ASSERT_TRUE(back.ok()) << j.dump() << ": " << back.error().message;
    EXPECT_EQ(back->index(), e.index());
    EXPECT_EQ(EventToJson(*back), j);
  }
}

TEST(Codec, ReservationsRoundTripExactly) {
  // Every field survives, a maintenance window's missing tenant included, and the decoded
  // record applies to a state as the original does.
  State s = DemoCluster();
  const Reservation r{.id = s.NextReservationId(), .tenant = *s.FindTenant("research"),
                      .flavor = *s.catalogue().Find("h100-80gb"), .amount = GpuEq::Gpus(4),
                      .start = Time::FromMillis(1'800'000'000'123),
                      .end = Time::FromMillis(1'800'003'600'123), .maintenance = false,
                      .created = Time::FromMillis(1'700'000'000'000)};
  Reservation m = r;
  m.id = ReservationId(r.id.value() + 1);
  m.tenant = TenantId();
  m.maintenance = true;
  m.end = Time::Never();
  for (const Reservation& x : {r, m}) {
    const Json j = EventToJson(ReservationCreated{x});
    EXPECT_EQ(j.at("tenant").is_null(), x.maintenance) << j.dump();
    Result<Event> back = EventFromJson(Json::parse(j.dump()));
    ASSERT_TRUE(back.ok()) << j.dump() << ": " << back.error().message;
    ASSERT_TRUE(std::holds_alternative<ReservationCreated>(*back));
    EXPECT_EQ(std::get<ReservationCreated>(*back).reservation, x) << j.dump();
    ASSERT_TRUE(Apply(s, *back).ok());
    EXPECT_EQ(*s.FindReservation(x.id), x);
  }
  const Json c = EventToJson(ReservationCancelled{r.id, Time::FromMillis(9)});
  Result<Event> back = EventFromJson(Json::parse(c.dump()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::get<ReservationCancelled>(*back).id, r.id);
  EXPECT_EQ(std::get<ReservationCancelled>(*back).at, Time::FromMillis(9));
  ASSERT_TRUE(Apply(s, *back).ok());
  EXPECT_EQ(s.FindReservation(r.id), nullptr);
  for (const char* text :
       {"{\"type\":\"reservation\",\"at\":1}", "{\"type\":\"reservation_cancelled\",\"at\":1}",
        "{\"type\":\"reservation\",\"at\":1,\"id\":1,\"tenant\":\"x\",\"flavor\":0,"
        "\"amount_units\":7000,\"start_ms\":0,\"end_ms\":1,\"maintenance\":false}"}) {
    EXPECT_FALSE(EventFromJson(Json::parse(text)).ok()) << text;
  }
}

TEST(Codec, MalformedRecordsAreErrorsNotExceptions) {
  const State s = DemoCluster();
  for (const char* text : {"{}", "{\"type\":\"submitted\"}", "{\"type\":\"nope\"}", "[]", "null",
                           "{\"type\":\"admitted\",\"id\":\"x\"}"}) {
    EXPECT_FALSE(EventFromJson(Json::parse(text)).ok()) << text;
  }
  EXPECT_FALSE(TenantFromJson(s, Json::parse("{\"name\":1}")).ok());
  EXPECT_FALSE(NodeFromJson(s, Json::parse("{\"name\":\"n\"}")).ok());
}

}  // namespace
}  // namespace gpupool
