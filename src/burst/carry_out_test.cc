// CarryOutBurst and JoinBurstNodes, the code the daemon and the simulator share to carry out a
// burst decision (burst/carry_out.h), driven over the simulated provider with steps that record
// what they are asked to do.
#include "burst/carry_out.h"

#include <gtest/gtest.h>

#include "burst/sim_provider.h"
#include "model/builder.h"

namespace gpupool {
namespace {

class Recorder final : public BurstSteps {
 public:
  Recorder(State& s, std::vector<BurstNode>& fleet) : s_(s), fleet_(fleet) {}
  Status Retire(NodeId id, Time now) override {
    log.push_back("retire " + s_.node(id).name);
    if (refuse_retire) return FailedPrecondition("refused");
    for (BurstNode& b : fleet_) {
      if (b.node == id) b.released = now;
    }
    return Ok();
  }
  bool MayProvision(TenantId t, Time) override { return t != backed_off; }
  Status Requested(const ProvisionRequest& r, const std::string& id, Time now) override {
    log.push_back("requested " + id);
    fleet_.push_back({.request_id = id, .tenant = r.tenant, .flavor = r.flavor, .gpus = r.gpus_per_node,
                      .for_job = r.for_job, .requested = now, .last_busy = now});
    return Ok();
  }
  void ProvisionFailed(TenantId, JobId job, const Error& e, Time) override {
    log.push_back("provision failed for job " + std::to_string(job.value()) + ": " + std::string(ErrorCodeName(e.code)));
  }
  void ReleaseFailed(const std::string& name, const Error&, Time) override { log.push_back("release failed " + name); }
  Status Joined(const BurstNode& entry, const Node& node, Time ready, Time) override {
    log.push_back("joined " + node.name + " for " + entry.request_id);
    if (refuse_join) return FailedPrecondition("refused");
    Result<NodeId> id = s_.AddNode(node);
    if (!id.ok()) return id.error();
    for (BurstNode& b : fleet_) {
      if (b.request_id == entry.request_id) {
        b.node = *id;
        b.ready = ready;
      }
    }
    return Ok();
  }
  void Note(const std::string& what, const std::string& node, const std::string&) override {
    log.push_back(what + " " + node);
  }
  std::vector<std::string> log;
  bool refuse_retire = false, refuse_join = false;
  TenantId backed_off;

 private:
  State& s_;
  std::vector<BurstNode>& fleet_;
};

class CarryOutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    t_ = *AddTenant(s_, "t", {{"h100-80gb", {0}}});
    flavor_ = *s_.catalogue().Find("h100-80gb");
    offers_[flavor_] = {.flavor = flavor_, .gpus_per_node = 8, .micros_per_gpu_hour = 1'000'000, .max_nodes = 2};
  }
  ProvisionRequest Request(int nodes, uint64_t job) {
    return {.tenant = t_, .flavor = flavor_, .nodes = nodes, .gpus_per_node = 8, .for_job = JobId(job)};
  }
  State s_;
  TenantId t_;
  FlavorId flavor_;
  std::map<FlavorId, OnDemandOffer> offers_;
  std::vector<BurstNode> fleet_;
};

TEST_F(CarryOutTest, ProvisionsUntilTheFirstFailureThenJoins) {
  SimulatedProvider provider(s_.catalogue(), offers_);
  Recorder steps(s_, fleet_);
  BurstDecision d;
  d.provision = {Request(3, 7)};  // capacity 2: the third is refused, and stops the request
  CarryOutBurst(d, s_, provider, steps, Time::FromSeconds(10));
  EXPECT_EQ(steps.log, (std::vector<std::string>{"requested sim-000001", "requested sim-000002",
                                                 "provision failed for job 7: resource_exhausted"}));
  steps.log.clear();
  EXPECT_EQ(JoinBurstNodes(provider, fleet_, offers_, s_.catalogue(), steps, Time::FromSeconds(10)), 2);
  ASSERT_EQ(steps.log.size(), 2u);
  EXPECT_EQ(steps.log[0].rfind("joined od-", 0), 0u) << steps.log[0];
  EXPECT_TRUE(fleet_[0].live() && fleet_[1].live());
  EXPECT_EQ(s_.nodes().size(), 2u);
}

TEST_F(CarryOutTest, ReleasesComeFirstAndABackedOffTenantIsNotAsked) {
  SimulatedProvider provider(s_.catalogue(), offers_);
  Recorder steps(s_, fleet_);
  BurstDecision first;
  first.provision = {Request(1, 1)};
  CarryOutBurst(first, s_, provider, steps, Time::FromSeconds(1));
  ASSERT_EQ(JoinBurstNodes(provider, fleet_, offers_, s_.catalogue(), steps, Time::FromSeconds(1)), 1);
  steps.log.clear();

  BurstDecision d;
  d.release = {fleet_[0].node};
  d.provision = {Request(1, 2)};
  CarryOutBurst(d, s_, provider, steps, Time::FromSeconds(5));
  ASSERT_EQ(steps.log.size(), 2u);
  EXPECT_EQ(steps.log[0].rfind("retire od-", 0), 0u) << steps.log[0];
  EXPECT_EQ(steps.log[1], "requested sim-000002");
  EXPECT_TRUE(fleet_[0].released.has_value());
  EXPECT_EQ(provider.in_use(flavor_), 1) << "the released node went back to the provider";

  // A backed-off tenant's request is not sent; a retirement that fails keeps the node.
  steps.log.clear();
  steps.backed_off = t_;
  steps.refuse_retire = true;
  ASSERT_EQ(JoinBurstNodes(provider, fleet_, offers_, s_.catalogue(), steps, Time::FromSeconds(5)), 1);
  BurstDecision again;
  again.release = {fleet_[1].node};
  again.provision = {Request(1, 3)};
  steps.log.clear();
  CarryOutBurst(again, s_, provider, steps, Time::FromSeconds(6));
  ASSERT_EQ(steps.log.size(), 1u);
  EXPECT_EQ(steps.log[0].rfind("retire od-", 0), 0u);
  EXPECT_EQ(provider.in_use(flavor_), 1) << "a node that did not retire is not given back";
}

TEST_F(CarryOutTest, ANodeNobodyWaitsForIsGivenBack) {
  SimulatedProvider provider(s_.catalogue(), offers_);
  Recorder steps(s_, fleet_);
  ASSERT_TRUE(provider.Provision(Request(1, 1), 0, Time()).ok());  // not through the fleet
  EXPECT_EQ(JoinBurstNodes(provider, fleet_, offers_, s_.catalogue(), steps, Time()), 0);
  ASSERT_EQ(steps.log.size(), 1u);
  EXPECT_EQ(steps.log[0].rfind("on-demand node nobody waits for: giving it back od-", 0), 0u) << steps.log[0];
  EXPECT_EQ(provider.in_use(flavor_), 0);
  EXPECT_TRUE(s_.nodes().empty());
}

// A node that cannot join is given back, and its request no longer counts as capacity.
TEST_F(CarryOutTest, ANodeThatCannotJoinIsGivenBackAndItsRequestReleased) {
  SimulatedProvider provider(s_.catalogue(), offers_);
  Recorder steps(s_, fleet_);
  BurstDecision d;
  d.provision = {Request(1, 1)};
  CarryOutBurst(d, s_, provider, steps, Time());
  steps.refuse_join = true;
  EXPECT_EQ(JoinBurstNodes(provider, fleet_, offers_, s_.catalogue(), steps, Time::FromSeconds(1)), 0);
  ASSERT_EQ(fleet_.size(), 1u);
  EXPECT_EQ(fleet_[0].released, Time::FromSeconds(1));
  EXPECT_FALSE(fleet_[0].in_flight());
  EXPECT_EQ(provider.in_use(flavor_), 0) << "given back";
  EXPECT_EQ(steps.log.back().rfind("on-demand node cannot join: giving it back od-", 0), 0u) << steps.log.back();
}

}  // namespace
}  // namespace gpupool
