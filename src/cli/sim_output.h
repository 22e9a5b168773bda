// What `gpupool sim replay` writes: the JSON, CSV and files of a replay and of a burst-budget
// sweep, and money for the terminal (sim_cmd.cc runs them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/replay.h"

namespace gpupool::cli {

// One row per budget: cost against waiting. Budget 0 is the replay without burst.
struct SweepRow {
  int64_t budget_micros = 0;
  ReplayReport report;
  double wall_s = 0;
};

// Milliseconds as hours.
inline double Hours(int64_t ms) { return static_cast<double>(ms) / 3'600'000.0; }

// Writes `text` to `path`; false when it cannot.
bool WriteFile(const std::string& path, const std::string& text);
std::string ReplayJson(const ReplayReport& r, const ReplayOptions& o, const std::string& jobs,
                       const std::string& burst_file, double wall_s, bool timing);
std::string ReplayCsv(const ReplayReport& r);
std::string SweepJson(const std::vector<SweepRow>& rows, const ReplayOptions& o,
                      const std::string& jobs, const std::string& burst_file, bool timing);
std::string SweepCsv(const std::vector<SweepRow>& rows);
// "12.345678" -> "12.35" for the terminal (half up).
std::string Money(int64_t micros);

}  // namespace gpupool::cli
