// Finding a cgroup v2 tree for the replicas (executor.h, point 5, and docs/design/agent.md).
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "agent/executor.h"
#include "agent/spawn.h"

namespace gpupool {
namespace {

bool IsCgroupV2(const std::string& path) {
  struct statfs fs;
  return statfs(path.c_str(), &fs) == 0 && static_cast<unsigned long>(fs.f_type) == CGROUP2_SUPER_MAGIC;
}

}  // namespace

CgroupSupport DetectCgroupV2(const std::string& parent) {
  if (parent.empty()) return {false, "skipped: cgroups disabled by configuration"};
  // The nearest existing ancestor tells which filesystem the cgroup would live on.
  std::string probe = parent;
  struct statfs fs;
  while (statfs(probe.c_str(), &fs) != 0) {
    const size_t slash = probe.find_last_of('/');
    if (errno != ENOENT || slash == std::string::npos || slash == 0) {
      return {false, "skipped: cannot stat " + probe + ": " + std::strerror(errno)};
    }
    probe.resize(slash);
  }
  if (static_cast<unsigned long>(fs.f_type) != CGROUP2_SUPER_MAGIC) {
    return {false, "skipped: " + probe + " is not a cgroup v2 mount (cgroup v1 or hybrid)"};
  }
  if (mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) {
    return {false, "skipped: cannot create " + parent + ": " + std::strerror(errno)};
  }
  if (access((parent + "/cgroup.procs").c_str(), W_OK) != 0) {
    return {false, "skipped: " + parent + "/cgroup.procs is not writable: " + std::strerror(errno)};
  }
  // Limits need the controllers in the parent's subtree_control (v2's rule: only where the
  // hierarchy above offers them; a hybrid host's v2 tree often offers none).
  std::string offered = internal::ReadAll(parent + "/cgroup.controllers"), enabled;
  for (const char* c : {"memory", "cpu"}) {
    std::istringstream words(offered);
    bool has = false;
    for (std::string w; words >> w;) has = has || w == c;
    if (has && internal::WriteSmallFile(parent + "/cgroup.subtree_control", std::string("+") + c)) {
      enabled += std::string(enabled.empty() ? "" : ",") + c;
    }
  }
  return {true, "cgroup v2 at " + parent +
                    (enabled.empty() ? " (no memory or cpu controller: limits not enforced)"
                                     : " (limits: " + enabled + ")")};
}

std::string DefaultCgroupParent(const std::string& node, const std::string& state_dir) {
  std::error_code ec;
  const std::string where = std::filesystem::absolute(state_dir, ec).lexically_normal().string();
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : where) h = (h ^ c) * 16777619u;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    if (IsCgroupV2(mount)) return std::string(mount) + "/gpupool-" + node + "-" + hex;
  }
  return "";
}

}  // namespace gpupool
