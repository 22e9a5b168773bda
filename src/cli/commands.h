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

}  // namespace gpupool::cli
