// The views of the verbs added for the first week (issue 14): nodes' health and labels, job
// events, tenants per flavor, tokens, priority classes and the audit log, from JSON literals in
// the shape the API sends.
#include <gtest/gtest.h>

#include <sstream>

#include "cli/client_view.h"

namespace gpupool::cli {
namespace {

template <typename F>
std::string Render(F f) {
  std::ostringstream out;
  f(out);
  return out.str();
}

// One node with GPU 3 failed (XID 79) and GPU 5 failed without a reason, labelled and
// dedicated to research.
const Json kNode = Json::parse(R"({"name":"h100-0","flavor":"h100-80gb","condition":"draining",
  "condition_reason":"XID 79 on GPU 3","gpus":8,
  "healthy_gpus":6,"mig_gpus":0,"shared_gpus":0,"free_whole_gpus":2,"block":"rack-a","nvlink_domain":"nvl-0",
  "labels":["ib=true","zone=a"],"dedicated_to":"research","jobs":["4"],
  "devices":[{"index":2,"mode":"whole","healthy":true},
             {"index":3,"mode":"whole","healthy":false,"health_reason":"XID 79: GPU fell off the bus"},
             {"index":5,"mode":"whole","healthy":false}]})");

TEST(PrintNodes, HealthyOutOfAll) {
  EXPECT_EQ(Render([](std::ostream& o) { PrintNodes(Json::array({kNode}), o); }),
            "NAME    FLAVOR     CONDITION  GPUS  HEALTHY  FREE  MIG  SHARED  BLOCK   NVLINK\n"
            "h100-0  h100-80gb  draining      8  6/8         2    0       0  rack-a  nvl-0\n");
}

TEST(DescribeNode, LabelsDedicationAndUnhealthyGpus) {
  EXPECT_EQ(Render([](std::ostream& o) { DescribeNode(kNode, o); }),
            "Name:             h100-0\n"
            "Flavor:           h100-80gb\n"
            "Condition:        draining (XID 79 on GPU 3)\n"
            "GPUs:             8 (6 healthy)\n"
            "Free whole GPUs:  2\n"
            "MIG GPUs:         0\n"
            "Shared GPUs:      0\n"
            "Block:            rack-a\n"
            "NVLink domain:    nvl-0\n"
            "Labels:           ib=true, zone=a\n"
            "Dedicated to:     research\n"
            "Jobs:             4\n"
            "Unhealthy GPUs:\n"
            "  GPU  REASON\n"
            "    3  XID 79: GPU fell off the bus\n"
            "    5  <no reason given>\n");
  Json shared = kNode;
  shared["dedicated_to"] = nullptr;
  shared["labels"] = Json::array();
  const std::string text = Render([&](std::ostream& o) { DescribeNode(shared, o); });
  EXPECT_NE(text.find("Labels:           <none>\nDedicated to:     <none>\n"), std::string::npos) << text;
  // A server that sends neither field: no lines for them.
  Json old = kNode;
  old.erase("labels");
  old.erase("dedicated_to");
  const std::string plain = Render([&](std::ostream& o) { DescribeNode(old, o); });
  EXPECT_EQ(plain.find("Labels"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("Dedicated"), std::string::npos) << plain;
}

TEST(DescribeJob, EventsAtTheEndOldestFirst) {
  const Json job = Json::parse(R"({"id":"4","name":"train","tenant":"research","priority_class":"training",
    "state":"running","replicas":1,"resources":{"flavor":"h100-80gb","gpus":1},"command":["true"],
    "placement":[{"node":"h100-0","gpus":[{"gpu":2}]}],
    "events":[{"at":"2026-12-01T10:00:00Z","type":"submitted","message":"by alice"},
              {"at":"2026-12-01T10:00:01Z","type":"admitted","message":"guaranteed"},
              {"at":"2026-12-01T10:00:03Z","type":"started","message":"on h100-0"}]})");
  const std::string text = Render([&](std::ostream& o) { DescribeJob(job, 0, o); });
  EXPECT_NE(text.find("Placement:\n  REPLICA  NODE    GPUS\n        0  h100-0     2\n"
                      "Events:\n"
                      "  TIME                  TYPE       MESSAGE\n"
                      "  2026-12-01T10:00:00Z  submitted  by alice\n"
                      "  2026-12-01T10:00:01Z  admitted   guaranteed\n"
                      "  2026-12-01T10:00:03Z  started    on h100-0\n"),
            std::string::npos)
      << text;
  const std::string last = "  2026-12-01T10:00:03Z  started    on h100-0\n";
  EXPECT_EQ(text.substr(text.size() - last.size()), last);  // the events come last
  Json quiet = job;
  quiet["events"] = Json::array();
  EXPECT_NE(Render([&](std::ostream& o) { DescribeJob(quiet, 0, o); }).find("Events:  <none>\n"), std::string::npos);
  quiet.erase("events");
  EXPECT_EQ(Render([&](std::ostream& o) { DescribeJob(quiet, 0, o); }).find("Events"), std::string::npos);
}

TEST(PrintTenants, OneRowPerFlavorNotASumAcrossModels) {
  // 16 H100s and 8 A100s guaranteed are two rows, not "24".
  const Json tenants = Json::parse(R"([
    {"name":"research","weight":2,"quotas":{"h100-80gb":{"guaranteed":16,"borrow_limit":8},
      "a100-80gb":{"guaranteed":8}},"usage":{"h100-80gb":{"allocated":4.5,"borrowed":0.5},
      "l4":{"allocated":1,"borrowed":1}},"pending_jobs":1,"active_jobs":2},
    {"name":"idle","weight":1,"quotas":{},"usage":{},"pending_jobs":0,"active_jobs":0}])");
  EXPECT_EQ(Render([&](std::ostream& o) { PrintTenants(tenants, o); }),
            "NAME      WEIGHT  FLAVOR     GUARANTEED  ALLOCATED  BORROWED  PENDING  ACTIVE\n"
            "research       2  a100-80gb           8          0         0        1       2\n"
            "research       2  h100-80gb          16        4.5       0.5        1       2\n"
            "research       2  l4                  0          1         1        1       2\n"
            "idle           1  <none>              0          0         0        0       0\n");
}

TEST(AdminViews, TokensClassesAndAudit) {
  EXPECT_EQ(Render([](std::ostream& o) {
              PrintTokens(Json::parse(R"([{"id":"1","name":"admin","role":"cluster-admin","tenant":"","revoked":false,
                 "expires":null,"last_used":null,"service_account":null},
                {"id":"7","name":"ci","role":"member","tenant":"research","revoked":true,"service_account":"ci",
                 "expires":"2027-03-01T00:00:00Z","last_used":"2026-12-04T10:00:00Z"}])"), o);
            }),
            "ID  NAME   ROLE           TENANT    ACCOUNT  EXPIRES               LAST-USED             REVOKED\n"
            " 1  admin  cluster-admin  <none>    <none>   never                 never                 no\n"
            " 7  ci     member         research  ci       2027-03-01T00:00:00Z  2026-12-04T10:00:00Z  yes\n");
  EXPECT_EQ(Render([](std::ostream& o) {
              PrintPriorityClasses(Json::parse(R"([{"name":"training","value":100,"preemptible":true,
                "may_borrow":true,"grace_period_s":300}])"), o);
            }),
            "NAME      VALUE  PREEMPTIBLE  MAY-BORROW  GRACE\n"
            "training    100  yes          yes         5m\n");
  EXPECT_EQ(Render([](std::ostream& o) {
              PrintAudit(Json::parse(R"([{"id":"3","at_ms":1000,"principal":"admin","tenant":"",
                "action":"node.cordon","object":"h100-1","remote":"127.0.0.1"}])"), o);
            }),
            "ID  TIME                  PRINCIPAL  TENANT  ACTION       OBJECT  FROM\n"
            " 3  1970-01-01T00:00:01Z  admin      <none>  node.cordon  h100-1  127.0.0.1\n");
}

}  // namespace
}  // namespace gpupool::cli
