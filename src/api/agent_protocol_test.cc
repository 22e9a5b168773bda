// The agent protocol's codecs (agent_protocol.h): round trips, bodies as today's agent and
// daemon write them, and refusals with their messages.
#include "api/agent_protocol.h"

#include <gtest/gtest.h>

namespace gpupool {
namespace {

// A body as the agent wrote it before these types (agent_register.cc's Json literal).
constexpr const char* kTodaysRegister =
    R"({"node":"n1","flavor":"a100-80gb","gpus":[{"index":0,"uuid":"GPU-0","mig":true,)"
    R"("instances":[{"start":0,"size":4,"profile":"3g.40gb","uuid":"MIG-0"}]},)"
    R"({"index":1,"uuid":"GPU-1","mig":false}],"labels":["zone=a"],)"
    R"("reported_labels":["node.gpupool.io/driver-version=550","node.gpupool.io/cuda-version=12.4"],)"
    R"("cpu_milli":0,"memory_mib":0,"acceptance":{"passed":true,"output":"ok"}})";

TEST(AgentProtocolCodecTest, TodaysRegisterBodyDecodesAndRoundTrips) {
  Result<RegisterRequest> r = DecodeRegisterRequest(kTodaysRegister);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->node, "n1");
  ASSERT_EQ(r->gpus.size(), 2u);
  EXPECT_TRUE(r->gpus[0].mig);
  EXPECT_EQ(r->gpus[0].instances[0], (MigInstanceReport{0, 4, "3g.40gb", "MIG-0"}));
  // Sorted by the decoder: cuda before driver.
  EXPECT_EQ(r->reported_labels->front(), "node.gpupool.io/cuda-version=12.4");
  EXPECT_TRUE(r->acceptance->passed);
  Result<RegisterRequest> again = DecodeRegisterRequest(Encode(*r));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, *r);
}

TEST(AgentProtocolCodecTest, RegisterRefusesUnknownTopLevelFieldsAndWrongTypes) {
  auto error = [](const std::string& body) {
    Result<RegisterRequest> r = DecodeRegisterRequest(body);
    return r.ok() ? std::string("accepted") : r.error().message;
  };
  const std::string base = R"({"node":"n1","flavor":"h100-80gb","gpus":[{"uuid":"GPU-a"}])";
  EXPECT_EQ(error(base + "}"), "accepted");
  EXPECT_EQ(error(base + R"(,"colour":1})"), "unknown field 'colour'");
  EXPECT_EQ(error(base + R"(,"cpu_milli":"8"})"), "'cpu_milli' must be an integer");
  EXPECT_EQ(error(R"({"node":"n1","flavor":"h100-80gb","gpus":[{"uuid":"GPU-a","mig":"yes"}]})"),
            "'gpus[0].mig' must be a boolean");
  EXPECT_EQ(error(R"({"node":"n1","flavor":"h100-80gb","gpus":[]})"), "'gpus' must list 1 to 16 GPUs");
  EXPECT_EQ(error(R"({"flavor":"h100-80gb","gpus":[{"uuid":"GPU-a"}]})"), "'node' must be a node name (1..63 characters)");
}

TEST(AgentProtocolCodecTest, HeartbeatRequestRoundTripsAndDropsOnlyAdvisoryEntries) {
  HeartbeatRequest hb;
  hb.replicas = {{"12", 0, 2, ReplicaRunState::kRunning, {}, {}, false},
                 {"5", 0, 3, ReplicaRunState::kExited, 143, 15, true}};
  hb.logs = {{"12", 0, 2, "out", "err"}};
  hb.health = {{0, "xid", 79, {}, {}, {}}, {3, "temperature", {}, {}, {}, 92}};
  hb.gpus = {{0, "GPU-0", true, {{0, 1, "1g.10gb", "MIG-a"}}}};
  hb.mig_errors = {{1, "7g.80gb@0", "off"}};
  Result<HeartbeatRequest> back = DecodeHeartbeatRequest(Encode(hb));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, hb);
  // Advisory entries with a wrong type are dropped, and said; a bad replica refuses the body.
  Result<HeartbeatRequest> odd = DecodeHeartbeatRequest(R"({"health":[{"gpu":0,"kind":"xid","code":"79"}]})");
  ASSERT_TRUE(odd.ok());
  EXPECT_TRUE(odd->health.empty());
  EXPECT_EQ(odd->skipped, std::vector<std::string>{"'health[0].code' must be an integer"});
  Result<HeartbeatRequest> bad = DecodeHeartbeatRequest(
      R"({"replicas":[{"job":"1","replica":0,"attempt":1,"state":"exited","fenced":"yes"}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "'replicas[0].fenced' must be a boolean");
  EXPECT_EQ(DecodeHeartbeatRequest(R"({"replicas":3})").error().message, "'replicas' must be a list");
}

TEST(AgentProtocolCodecTest, HeartbeatReplyKeepsGoodEntriesAndSaysWhatItDropped) {
  HeartbeatReply reply;
  ReplicaStart s;
  s.job = "12";
  s.attempt = 2;
  s.command = {"python", "train.py"};
  s.tenant = "research";
  s.grace = Duration::Seconds(120);
  s.devices = {"GPU-0"};
  s.env = {{"GPUPOOL_JOB", "12"}};
  reply.start = {s};
  reply.stop = {{"7", 0, 1, Duration::Seconds(30)}};
  reply.forget = {{"9", 1, 1}};
  reply.mig = {{0, "1g.10gb@0"}};
  reply.lease_ms = 10000;
  reply.condition = "ready";
  Result<HeartbeatReply> back = DecodeHeartbeatReply(Encode(reply));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, reply);
  // Today's daemon wrote grace_s as an integer: the encoder still does.
  EXPECT_NE(Encode(reply).find(R"("grace_s":120)"), std::string::npos);
  Result<HeartbeatReply> mixed = DecodeHeartbeatReply(
      R"({"start":[{"job":"1","replica":0},{"job":"2","replica":0,"attempt":1,"command":[]}],"stop":5})");
  ASSERT_TRUE(mixed.ok());
  ASSERT_EQ(mixed->start.size(), 1u);
  EXPECT_EQ(mixed->start[0].error, "'command' must be a non-empty list of strings");
  EXPECT_EQ(mixed->skipped, (std::vector<std::string>{"missing field 'start[0].attempt'", "'stop' must be a list"}));
  EXPECT_TRUE(DecodeHeartbeatReply("").ok()) << "an empty 2xx body reads as {}";
}

}  // namespace
}  // namespace gpupool
