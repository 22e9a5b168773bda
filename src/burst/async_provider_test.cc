// AsyncProvider around a real CommandProvider: real scripts through /bin/sh on a real worker
// thread. A script that must still be running when a call returns waits for a gate file that
// the test creates only after the call returned, so the ordering is asserted, not timed.
#include "burst/async_provider.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "burst/command_provider.h"
#include "burst/test_scripts.h"

namespace gpupool {
namespace {

const Catalogue& Cat() {
  static const Catalogue c = Catalogue::BuiltIn();
  return c;
}
bool Says(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Prints a node named after its request id.
constexpr const char* kPrintNode =
    "printf '{\"name\": \"n-%s\", \"gpus\": %s, \"flavor\": \"%s\"}' \"$GPUPOOL_REQUEST_ID\" "
    "\"$GPUPOOL_GPUS\" \"$GPUPOOL_FLAVOR\"";

// The scripts and what they leave are in a fresh folder (ScriptDir).
class AsyncProviderTest : public ::testing::Test, public ScriptDir {
 protected:
  // The delete script logs "deleted <node>"; `delete_body` replaces it.
  std::unique_ptr<AsyncProvider> Make(const std::string& create_body,
                                      Duration timeout = Duration::Seconds(20),
                                      const std::string& delete_body = "") {
    CommandProviderConfig cc{
        .create_command = Script("create.sh", create_body),
        .delete_command = Script(
            "delete.sh",
            delete_body.empty() ? "echo \"deleted $GPUPOOL_NODE\" >> " + Path("log") : delete_body),
        .timeout = timeout};
    return std::make_unique<AsyncProvider>(std::make_unique<CommandProvider>(Cat(), std::move(cc)));
  }
  static ProvisionRequest H100(int nodes = 1) {
    return {.tenant = TenantId(3),
            .flavor = *Cat().Find("h100-80gb"),
            .nodes = nodes,
            .gpus_per_node = 8,
            .for_job = JobId(9),
            .tenant_name = "team-3"};
  }
};

TEST_F(AsyncProviderTest, ProvisionReturnsWhileTheScriptRunsAndPollBringsTheNode) {
  // The script cannot finish before the test opens the gate, which it does only after
  // Provision returned: a blocking Provision would wait for the script's timeout and fail.
  auto p = Make("echo \"$GPUPOOL_TENANT\" > " + Path("started") + "\nwhile [ ! -e " + Path("go") +
                " ]; do sleep 0.01; done\n" + kPrintNode);
  const Time t0 = Time::FromSeconds(5000);
  auto id = p->Provision(H100(), 0, t0);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "async-5000000-1");
  EXPECT_EQ(p->outstanding(), 1u);
  ASSERT_TRUE(WaitFor([&] { return Exists("started"); }));
  EXPECT_EQ(Read("started"), "team-3\n");  // the name came in the request
  EXPECT_TRUE(p->Poll(t0).empty());
  EXPECT_TRUE(p->Failures().empty());
  Touch("go");
  ASSERT_TRUE(WaitFor([&] { return p->outstanding() == 0; }));
  const std::vector<ProvisionedNode> ready = p->Poll(t0);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].request_id, *id);            // the wrapper's id, ...
  EXPECT_EQ(ready[0].name, "n-async-5000000-1");  // ... which the script saw too
  EXPECT_EQ(ready[0].gpus, 8);
  EXPECT_GT(ready[0].ready, t0);  // it waited for the gate
  EXPECT_TRUE(p->Poll(t0).empty());
  EXPECT_TRUE(p->Failures().empty());
}

TEST_F(AsyncProviderTest, AFailingCreateIsReportedAsAFailedProvision) {
  auto p = Make("echo 'quota exceeded in us-east-1' >&2; exit 3");
  auto id = p->Provision(H100(), 0, Time::FromMillis(42));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(WaitFor([&] { return p->outstanding() == 0; }));
  EXPECT_TRUE(p->Poll(Time()).empty());
  const ProviderFailures f = p->Failures();
  ASSERT_EQ(f.provisions.size(), 1u);
  EXPECT_TRUE(f.releases.empty());
  EXPECT_EQ(f.provisions[0].request_id, *id);
  EXPECT_EQ(f.provisions[0].error.code, ErrorCode::kUnavailable);
  EXPECT_TRUE(Says(f.provisions[0].error.message,
                   "exited with status 3; stderr: quota exceeded in us-east-1"))
      << f.provisions[0].error.message;
  EXPECT_TRUE(p->Failures().empty());  // reported once
}

TEST_F(AsyncProviderTest, AFailingDeleteIsReportedAsAFailedRelease) {
  auto p = Make(kPrintNode, Duration::Seconds(20), "echo no such instance >&2; exit 4");
  EXPECT_TRUE(p->Release("gpu-0", Time()).ok());  // at once
  ASSERT_TRUE(WaitFor([&] { return p->outstanding() == 0; }));
  const ProviderFailures f = p->Failures();
  ASSERT_EQ(f.releases.size(), 1u);
  EXPECT_TRUE(f.provisions.empty());
  EXPECT_EQ(f.releases[0].node_name, "gpu-0");
  EXPECT_EQ(f.releases[0].error.code, ErrorCode::kUnavailable);
  EXPECT_TRUE(Says(f.releases[0].error.message,
                   "exited with status 4; stderr: no such instance (node gpu-0)"))
      << f.releases[0].error.message;
}

// Destruction with a script still running: it ends at its own timeout (1 s here, while it would
// sleep 30), the provision queued behind it never starts, the queued release still runs, and
// the worker is joined.
TEST_F(AsyncProviderTest, DestructionWaitsForTheRunningScriptOnlyUpToItsTimeout) {
  auto p = Make("touch " + Path("started-") + "$GPUPOOL_INDEX\nsleep 30\n" + kPrintNode,
                Duration::Seconds(1));
  ASSERT_TRUE(p->Provision(H100(2), 0, Time()).ok());
  ASSERT_TRUE(p->Provision(H100(2), 1, Time()).ok());
  ASSERT_TRUE(p->Release("old-node", Time()).ok());
  ASSERT_TRUE(WaitFor([&] { return Exists("started-0"); }));
  const auto start = std::chrono::steady_clock::now();
  p.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));  // not 30 s
  EXPECT_FALSE(Exists("started-1"));
  EXPECT_EQ(Read("log"), "deleted old-node\n");
}

// A node made that its owner never took through Poll would be left running unseen: the
// destructor gives it back.
TEST_F(AsyncProviderTest, NodesNeverPolledAreReleasedAtDestruction) {
  auto p = Make(kPrintNode);
  ASSERT_TRUE(p->Provision(H100(), 0, Time::FromMillis(5)).ok());
  ASSERT_TRUE(WaitFor([&] { return p->outstanding() == 0; }));
  p.reset();
  EXPECT_EQ(Read("log"), "deleted n-async-5-1\n");
}

// Many calls while the owner polls: each id comes back exactly once, made or failed (every
// third index fails here), and Poll hands nodes over in ready order.
TEST_F(AsyncProviderTest, EveryRequestComesBackExactlyOnce) {
  auto p = Make("if [ $((GPUPOOL_INDEX % 3)) = 0 ]; then echo no >&2; exit 1; fi\n" +
                std::string(kPrintNode));
  constexpr int kNodes = 12;
  std::set<std::string> asked, made, failed;
  for (int i = 0; i < kNodes; ++i) {
    auto id = p->Provision(H100(kNodes), i, Time::FromMillis(1000));
    ASSERT_TRUE(id.ok());
    asked.insert(*id);
  }
  EXPECT_EQ(asked.size(), size_t{kNodes});
  ASSERT_TRUE(WaitFor([&] {
    const std::vector<ProvisionedNode> ready = p->Poll(Time());
    for (size_t i = 1; i < ready.size(); ++i) EXPECT_LE(ready[i - 1].ready, ready[i].ready);
    for (const ProvisionedNode& n : ready)
      EXPECT_TRUE(made.insert(n.request_id).second) << n.request_id;
    for (const FailedProvision& f : p->Failures().provisions) {
      EXPECT_TRUE(failed.insert(f.request_id).second) << f.request_id;
    }
    return made.size() + failed.size() >= size_t{kNodes};
  }));
  EXPECT_EQ(made.size(), 8u);
  EXPECT_EQ(failed.size(), 4u);
  std::set<std::string> all = made;
  all.insert(failed.begin(), failed.end());
  EXPECT_EQ(all, asked);
}

}  // namespace
}  // namespace gpupool
