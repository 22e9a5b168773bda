// The fault file of fake GPUs (agent_loop.h, "Fault injection").
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <thread>

#include "agent/agent_internal.h"
#include "agent/agent_loop.h"
#include "agent/fake_probe.h"

namespace gpupool {
using namespace agent_internal;

void Agent::ApplyFaultFile(Time now) {
  const int fd = open(options_.fault_file.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) {
      Log("warn", "cannot open the fault file",
          {{"path", options_.fault_file}, {"error", std::strerror(errno)}});
    }
    return;
  }
  std::string text;
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  if (!text.empty() && ftruncate(fd, 0) != 0) {
    Log("warn", "cannot truncate the fault file", {{"error", std::strerror(errno)}});
  }
  close(fd);

  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty() || w[0][0] == '#') continue;
    auto gpu = [&](const std::string& s) -> std::optional<uint32_t> {
      const std::optional<uint64_t> g = ParseU64(s);
      if (!g || *g >= fake_->gpu_count()) return std::nullopt;
      return static_cast<uint32_t>(*g);
    };
    bool ok = false;
    if (w[0] == "xid" && w.size() == 3) {
      const auto g = gpu(w[1]);
      const auto code = ParseU64(w[2]);
      if ((ok = g && code)) fake_->InjectXid(*g, *code);
    } else if (w[0] == "ecc" && w.size() == 3) {
      const auto g = gpu(w[1]);
      const auto count = ParseU64(w[2]);
      if ((ok = g && count)) fake_->InjectEcc(*g, *count);
    } else if (w[0] == "row_remap" && w.size() == 2) {
      const auto g = gpu(w[1]);
      if ((ok = g.has_value())) fake_->InjectRowRemapFailure(*g);
    } else if (w[0] == "row_remap_pending" && w.size() == 2) {
      const auto g = gpu(w[1]);
      if ((ok = g.has_value())) fake_->InjectRowRemapPending(*g);
    } else if (w[0] == "gpu_lost" && w.size() == 2) {
      const auto g = gpu(w[1]);
      if ((ok = g.has_value())) fake_->InjectGpuLost(*g);
    } else if (w[0] == "gpu_gone" && w.size() == 2) {
      const auto g = gpu(w[1]);
      if ((ok = g.has_value())) fake_->RemoveGpu(*g);
    } else if (w[0] == "mig_delay" && w.size() == 2) {
      const auto ms = ParseU64(w[1]);
      if ((ok = ms && *ms <= 3'600'000)) {
        fake_->SetMigDelay(Duration::Millis(static_cast<int64_t>(*ms)));
      }
    } else if (w[0] == "temp" && w.size() == 3) {
      const auto g = gpu(w[1]);
      const auto c = ParseU64(w[2]);
      if ((ok = g && c && *c <= 1000)) fake_->SetTemperature(*g, static_cast<uint32_t>(*c));
    } else if (w[0] == "lose_heartbeats" && w.size() == 2) {
      char* end = nullptr;
      const double secs = std::strtod(w[1].c_str(), &end);
      if ((ok = end != w[1].c_str() && *end == '\0' && std::isfinite(secs) && secs >= 0 &&
                secs <= 7 * 24 * 3600)) {
        lost_until_ = now + Duration::Millis(static_cast<int64_t>(std::llround(secs * 1000)));
        fake_->SetHeartbeatLost(true);
      }
    }
    if (ok) {
      Log("warn", "fault injected", {{"fault", line}});
    } else {
      Log("warn", "fault file: skipping an unknown or malformed line", {{"line", line}});
    }
  }
}

}  // namespace gpupool
