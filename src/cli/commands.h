// The gpupool subcommands. Each takes the arguments after its name and returns an exit code.
#pragma once

#include <string>
#include <vector>

namespace gpupool::cli {

int Demo(const std::vector<std::string>& argv);
int Catalogue(const std::vector<std::string>& argv);
int Sim(const std::vector<std::string>& argv);
int Packing(const std::vector<std::string>& argv);
int Serve(const std::vector<std::string>& argv);

// The REST API client verbs (client_cmd.cc): 0 done, 1 the server refused or was unreachable,
// 2 a usage error.
int Get(const std::vector<std::string>& argv);
int Describe(const std::vector<std::string>& argv);
int Submit(const std::vector<std::string>& argv);
int Cancel(const std::vector<std::string>& argv);
int Reserve(const std::vector<std::string>& argv);
int Availability(const std::vector<std::string>& argv);
int UsageReport(const std::vector<std::string>& argv);  // gpupool usage
int Logs(const std::vector<std::string>& argv);         // gpupool logs JOB

// The node agent (agent_cmd.cc): registers with the daemon and runs what it is told until
// SIGINT/SIGTERM. 0 after a signal, 1 when NVML or the daemon refuses, 2 on usage errors.
int Agent(const std::vector<std::string>& argv);

}  // namespace gpupool::cli
