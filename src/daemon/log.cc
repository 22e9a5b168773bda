#include "daemon/log.h"

#include <chrono>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>

namespace gpupool {

void Log(const char* level, const std::string& msg, const LogFields& fields) {
  nlohmann::json j;
  j["ts_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  j["level"] = level;
  j["msg"] = msg;
  for (const auto& [k, v] : fields) j[k] = v;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace gpupool
