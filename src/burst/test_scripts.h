// Test support for the command provider's tests (provider_test.cc, async_provider_test.cc,
// daemon/burst_async_test.cc): a fresh temporary folder for the operator's scripts a test runs
// and the files they leave there (logs, markers, gates), and a bounded wait.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "core/check.h"

namespace gpupool {

class ScriptDir {
 public:
  ScriptDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpupool_scripts_XXXXXX").string();
    GP_CHECK(mkdtemp(tmpl.data()) != nullptr) << "mkdtemp failed";
    dir_ = tmpl;
  }
  ~ScriptDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ScriptDir(const ScriptDir&) = delete;
  ScriptDir& operator=(const ScriptDir&) = delete;

  const std::string& dir() const { return dir_; }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  bool Exists(const std::string& name) const { return std::filesystem::exists(Path(name)); }
  void Touch(const std::string& name) const { std::ofstream(Path(name)) << ""; }
  // The file's contents; empty when it does not exist.
  std::string Read(const std::string& name) const {
    std::ifstream in(Path(name));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Writes an executable /bin/sh script and returns its path.
  std::string Script(const std::string& name, const std::string& body) const {
    std::ofstream(Path(name)) << "#!/bin/sh\n" << body << "\n";
    chmod(Path(name).c_str(), 0755);
    return Path(name);
  }

 private:
  std::string dir_;
};

// Polls `done` every 10 ms for up to `limit`: a test that fails fails here instead of hanging.
inline bool WaitFor(const std::function<bool()>& done,
                    std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    usleep(10'000);
  }
  return true;
}

}  // namespace gpupool
