// How the client verbs show the server's JSON: terminal tables and key: value pages, or the JSON
// itself as JSON or YAML. Pure functions of the JSON (and `now_ms` for ages), so they are tested
// without a server. Fields the server leaves out print as empty or "<none>", never throw.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "cli/client.h"
#include "core/result.h"

namespace gpupool::cli {

enum class Format { kTable, kJson, kYaml, kCsv };
Result<Format> ParseFormat(const std::string& name);  // table | json | yaml | csv

// The JSON as indented JSON or as block YAML; strings that YAML would read as something else
// ("12", "true", "") are quoted, so the YAML loads back to the same values. Ends with a newline.
std::string ToJsonText(const Json& j);
std::string ToYaml(const Json& j);

// "45s", "5m12s", "2h", "3d4h": the `max_parts` largest units of a number of seconds.
std::string CompactDuration(int64_t seconds, int max_parts);

// One replica's resources, no spaces: "h100-80gb:2gpu", "a100-40gb:1g.5gb",
// "h100-80gb:0.25gpu,20GB".
std::string ResourcesCell(const Json& resources);

// `get`: the items of a list reply, one row each.
void PrintJobs(const Json& items, int64_t now_ms, std::ostream& out);
void PrintNodes(const Json& items, std::ostream& out);
void PrintTenants(const Json& items, std::ostream& out);
void PrintReservations(const Json& items, std::ostream& out);
void PrintTokens(const Json& items, std::ostream& out);            // client_view_admin.cc
void PrintPriorityClasses(const Json& items, std::ostream& out);   // client_view_admin.cc
void PrintAudit(const Json& items, std::ostream& out);             // client_view_admin.cc
// GET /v1/usage as a table: one line per row, then the total.
void PrintUsage(const Json& report, std::ostream& out);
// GET /v1/usage/reconcile: a line per job and admission, the ledger beside the backend's job.
void PrintReconcile(const Json& report, std::ostream& out);

// `describe`: one object as aligned "Key: value" lines with tables for placements and quotas;
// a job's `events` (oldest first) as an Events table at the end, a node's condition reason,
// labels, dedicated tenant and the reason of each unhealthy GPU, when the server sends them.
void DescribeJob(const Json& job, int64_t now_ms, std::ostream& out);
void DescribeNode(const Json& node, std::ostream& out);
void DescribeTenant(const Json& tenant, std::ostream& out);

}  // namespace gpupool::cli
