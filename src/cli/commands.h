// The gpupool subcommands. Each takes the arguments after its name and returns an exit code:
// 0 done, 1 a failure (the server refused or could not be reached, a file could not be read),
// 2 a usage error. Every one answers --help (and -h) with its usage text, exit 0.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace gpupool::cli {

// What each verb's --help prints; the verb table (verbs.h) and completion read them too.
extern const char* const kServeUsage;
extern const char* const kAgentUsage;
extern const char* const kDemoUsage;
extern const char* const kCatalogueUsage;
extern const char* const kSimUsage;  // both of:
extern const char* const kReplayUsage;
extern const char* const kPackingUsage;
extern const char* const kGetUsage;
extern const char* const kDescribeUsage;
extern const char* const kSubmitUsage;
extern const char* const kCancelUsage;
extern const char* const kDeleteUsage;
extern const char* const kCreateUsage;
extern const char* const kEditUsage;
extern const char* const kCordonUsage;
extern const char* const kUncordonUsage;
extern const char* const kDrainUsage;
extern const char* const kReserveUsage;
extern const char* const kAvailabilityUsage;
extern const char* const kUsageUsage;
extern const char* const kLogsUsage;
extern const char* const kWhoamiUsage;
extern const char* const kLoginUsage;
extern const char* const kLogoutUsage;
extern const char* const kCompletionUsage;
extern const char* const kServiceAccountUsage;
extern const char* const kTokenUsage;

// Built into the full binary only (the daemon, the agent, the simulator; docs/design/cli.md):
int Serve(const std::vector<std::string>& argv);
int Agent(const std::vector<std::string>& argv);  // until SIGINT/SIGTERM; 1 when NVML or the daemon refuses
int Demo(const std::vector<std::string>& argv);
int Sim(const std::vector<std::string>& argv);
int Packing(const std::vector<std::string>& argv);

int Catalogue(const std::vector<std::string>& argv);

// The REST API client verbs (client_*.cc, tenant_cmd.cc).
int Get(const std::vector<std::string>& argv);
int Describe(const std::vector<std::string>& argv);
int Submit(const std::vector<std::string>& argv);
int Cancel(const std::vector<std::string>& argv);
int Delete(const std::vector<std::string>& argv);
int Create(const std::vector<std::string>& argv);
int Edit(const std::vector<std::string>& argv);
int Cordon(const std::vector<std::string>& argv);
int Uncordon(const std::vector<std::string>& argv);
int Drain(const std::vector<std::string>& argv);
int Reserve(const std::vector<std::string>& argv);
int Availability(const std::vector<std::string>& argv);
int UsageReport(const std::vector<std::string>& argv);  // gpupool usage
int Whoami(const std::vector<std::string>& argv);       // gpupool whoami
int Login(const std::vector<std::string>& argv);        // gpupool login (cli/login_cmd.cc)
int Logout(const std::vector<std::string>& argv);
int Logs(const std::vector<std::string>& argv);         // gpupool logs JOB
int ServiceAccount(const std::vector<std::string>& argv);  // gpupool service-account (cli/account_cmd.cc)
int Token(const std::vector<std::string>& argv);           // gpupool token rotate
// A new token's reply, as the verbs that make one print it: its id, name, role and expiry and
// the secret on stdout, the warning that it is shown once on stderr.
void ShowSecret(const nlohmann::json& reply);

// `gpupool completion bash|zsh` (completion.cc).
int Completion(const std::vector<std::string>& argv);

}  // namespace gpupool::cli
