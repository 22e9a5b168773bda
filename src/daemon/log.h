// Structured logs: one JSON object per line on stderr, {"ts_ms", "level", "msg", ...fields}.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gpupool {

using LogFields = std::vector<std::pair<std::string, std::string>>;
void Log(const char* level, const std::string& msg, const LogFields& fields = {});

}  // namespace gpupool
