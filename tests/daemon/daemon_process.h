// Starts the real `gpupool serve` as a child process on a free loopback port and talks HTTP to
// it. Used by the daemon integration tests; the binary's path comes from CMake.
#pragma once

#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace gpupool::testing {

using Json = nlohmann::json;

inline std::filesystem::path FreshDir(const std::string& what) {
  auto dir = std::filesystem::temp_directory_path() /
             ("gpupool-" + what + "-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  return dir;
}

class DaemonProcess {
 public:
  // Starts `gpupool serve --data-dir DIR --listen 127.0.0.1:0 EXTRA...` and waits until it
  // answers /healthz. A data dir that already holds a journal is recovered.
  DaemonProcess(std::filesystem::path dir, std::vector<std::string> extra = {}) : dir_(std::move(dir)) {
    std::filesystem::remove(dir_ / "port");
    std::vector<std::string> args = {GPUPOOL_BINARY, "serve", "--data-dir", dir_.string(), "--listen", "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = (dir_ / "daemon.log").string();
      FILE* f = fopen(log.c_str(), "a");
      if (f) {
        dup2(fileno(f), 1);
        dup2(fileno(f), 2);
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 400 && port_ == 0; ++i) {
      std::ifstream in(dir_ / "port");
      int p = 0;
      if (in >> p && p > 0) port_ = p;
      else std::this_thread::sleep_for(std::chrono::milliseconds(25));
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
    }
    if (port_ != 0) {
      std::ifstream tok(dir_ / "admin.token");
      std::getline(tok, admin_token_);
    }
  }
  ~DaemonProcess() { Stop(SIGTERM); }

  bool ok() const { return port_ != 0 && pid_ > 0; }
  int port() const { return port_; }
  const std::string& admin_token() const { return admin_token_; }
  const std::filesystem::path& dir() const { return dir_; }
  std::string log() const {
    std::ifstream in(dir_ / "daemon.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // SIGKILL: no shutdown path runs, as in a crash or power loss of the process.
  void Kill() { Stop(SIGKILL); }
  int Stop(int sig) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(5);
    c.set_read_timeout(30);
    return c;
  }

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string admin_token_;
};

struct Response {
  int status = 0;  // 0: no response (connection failed)
  Json body;
};

inline Response Call(httplib::Client& c, const std::string& method, const std::string& path,
                     const std::string& token, const std::string& body = "",
                     httplib::Headers headers = {}) {
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  httplib::Result r = method == "GET"     ? c.Get(path, headers)
                      : method == "POST"  ? c.Post(path, headers, body, "application/json")
                      : method == "PATCH" ? c.Patch(path, headers, body, "application/json")
                      : method == "PUT"   ? c.Put(path, headers, body, "application/json")
                                          : c.Delete(path, headers);
  if (!r) return {};
  Response out{r->status, Json::parse(r->body, nullptr, false)};
  return out;
}

}  // namespace gpupool::testing
