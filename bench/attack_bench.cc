// attack_bench: what a client without a token can do to a running `gpupool serve`, and whether
// the daemon still answers meanwhile.
//
// For --seconds it holds --idle connections that send nothing and --slow connections that send a
// header one byte per second (each reopened when the daemon closes it), and streams --chunked-mib
// of chunked request bodies (reconnecting after each refusal) as fast as the daemon reads them.
// Meanwhile it probes: GET /healthz on the API listener every 50 ms, each on a new connection,
// and a node heartbeat (POST /v1/agents/NODE/heartbeat with the admin token) every 100 ms on the
// agents' listener, over one keep-alive connection. It prints the probes' latency (p50, p99,
// max) and failures, and what the attackers achieved.
//
// usage: attack_bench --api HOST:PORT --agents HOST:PORT --token ADMIN_TOKEN --node NODE
//                     [--idle 500] [--slow 500] [--chunked-mib 1024] [--seconds 30] [--json OUT]
// Started by bench/http_attack.sh, which also starts the daemon and samples its RSS.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/raw_socket.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string api, agents, token, node, json;
  int idle = 500, slow = 500;
  int64_t chunked_mib = 1024;
  double seconds = 30;
};

[[noreturn]] void Die(const std::string& why) {
  std::cerr << "attack_bench: " << why << "\n";
  std::exit(1);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--api") o.api = next();
    else if (a == "--agents") o.agents = next();
    else if (a == "--token") o.token = next();
    else if (a == "--node") o.node = next();
    else if (a == "--idle") o.idle = std::stoi(next());
    else if (a == "--slow") o.slow = std::stoi(next());
    else if (a == "--chunked-mib") o.chunked_mib = std::stoll(next());
    else if (a == "--seconds") o.seconds = std::stod(next());
    else if (a == "--json") o.json = next();
    else Die("unknown flag " + a);
  }
  if (o.api.empty() || o.agents.empty() || o.token.empty() || o.node.empty()) {
    Die("usage: attack_bench --api HOST:PORT --agents HOST:PORT --token T --node NODE [...]");
  }
  return o;
}

int Connect(const std::string& hostport) {
  const size_t colon = hostport.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(hostport.substr(colon + 1))));
  if (::inet_pton(AF_INET, hostport.substr(0, colon).c_str(), &a.sin_addr) != 1) Die("bad address " + hostport);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

using gpupool::testing::SendAll;

// One reply with a Content-Length body, within `timeout`; returns its status or -1.
int ReadStatus(int fd, std::chrono::milliseconds timeout) {
  std::string in;
  char buf[4096];
  const auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    const size_t head = in.find("\r\n\r\n");
    if (head != std::string::npos) {
      const size_t cl = in.find("Content-Length: ");
      const size_t len = cl != std::string::npos && cl < head ? std::stoul(in.substr(cl + 16)) : 0;
      if (in.size() >= head + 4 + len) return in.size() > 12 ? std::stoi(in.substr(9, 3)) : -1;
    }
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left))) <= 0) return -1;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return -1;
    in.append(buf, static_cast<size_t>(n));
  }
  return -1;
}

struct Probe {
  std::vector<double> ms;
  int failures = 0;
  void Print(const char* name) const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    const auto at = [&s](double q) { return s.empty() ? 0.0 : s[std::min(s.size() - 1, static_cast<size_t>(q * s.size()))]; };
    std::printf("%-10s %5zu probes, %d failed: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", name, s.size(), failures, at(0.5),
                at(0.99), s.empty() ? 0.0 : s.back());
  }
  std::string Json() const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    const auto at = [&s](double q) { return s.empty() ? 0.0 : s[std::min(s.size() - 1, static_cast<size_t>(q * s.size()))]; };
    char buf[200];
    std::snprintf(buf, sizeof buf, "{\"probes\":%zu,\"failed\":%d,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f}", s.size(),
                  failures, at(0.5), at(0.99), s.empty() ? 0.0 : s.back());
    return buf;
  }
};

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  std::atomic<bool> stop{false};
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.seconds * 1000));

  // The node the heartbeats are for: registered with the admin token (no GPUs of its own).
  {
    const int fd = Connect(o.agents);
    if (fd < 0) Die("cannot connect to " + o.agents);
    const std::string body = "{\"node\":\"" + o.node + "\",\"flavor\":\"h100-80gb\",\"gpus\":[{\"index\":0,\"uuid\":\"GPU-probe-0\"}]}";
    SendAll(fd, "POST /v1/agents/register HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + o.token +
                    "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    const int status = ReadStatus(fd, std::chrono::milliseconds(5000));
    ::close(fd);
    if (status != 200) Die("registering " + o.node + " got " + std::to_string(status));
  }

  // Idle connections: opened, then silent; reopened when closed.
  std::atomic<int64_t> idle_reopened{0}, slow_reopened{0}, refused_429{0}, chunk_bytes{0}, chunk_replies{0};
  std::thread idle([&] {
    std::vector<int> fds;
    for (int i = 0; i < o.idle; ++i) fds.push_back(Connect(o.api));
    while (!stop) {
      std::vector<pollfd> p;
      for (int fd : fds) p.push_back({fd, POLLIN, 0});
      ::poll(p.data(), p.size(), 200);
      for (size_t i = 0; i < p.size(); ++i) {
        if (fds[i] >= 0 && !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[512];
        if (fds[i] >= 0 && ::recv(fds[i], buf, sizeof buf, MSG_DONTWAIT) > 12 && std::string(buf + 9, 3) == "429") ++refused_429;
        if (fds[i] >= 0) ::close(fds[i]);
        fds[i] = Connect(o.api);
        ++idle_reopened;
      }
    }
    for (int fd : fds) if (fd >= 0) ::close(fd);
  });
  // Slow connections: a header one byte per connection per second, never finished.
  std::thread slow([&] {
    std::vector<int> fds;
    const std::string start = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < o.slow; ++i) {
      fds.push_back(Connect(o.api));
      if (fds.back() >= 0) SendAll(fds.back(), start);
    }
    while (!stop) {
      for (int& fd : fds) {
        if (fd < 0 || !SendAll(fd, "X")) {
          if (fd >= 0) ::close(fd);
          fd = Connect(o.api);
          if (fd >= 0) SendAll(fd, start);
          ++slow_reopened;
        }
      }
      for (int i = 0; i < 10 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (int fd : fds) if (fd >= 0) ::close(fd);
  });
  // Chunked bodies, 64 KiB chunks as fast as the daemon takes them, until --chunked-mib are sent.
  std::thread chunked([&] {
    const std::string chunk = "10000\r\n" + std::string(65536, 'x') + "\r\n";
    const int64_t total = o.chunked_mib << 20;
    while (!stop && chunk_bytes < total) {
      const int fd = Connect(o.api);
      if (fd < 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      SendAll(fd, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n");
      while (!stop && chunk_bytes < total && SendAll(fd, chunk)) chunk_bytes += 65536;
      if (ReadStatus(fd, std::chrono::milliseconds(100)) > 0) ++chunk_replies;
      ::close(fd);
    }
  });

  // The probes.
  Probe health, beat;
  std::thread healthz([&] {
    while (Clock::now() < deadline) {
      const auto t = Clock::now();
      const int fd = Connect(o.api);
      if (fd < 0 || !SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") ||
          ReadStatus(fd, std::chrono::milliseconds(2000)) != 200) {
        ++health.failures;
      } else {
        health.ms.push_back(MsSince(t));
      }
      if (fd >= 0) ::close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::thread heartbeat([&] {
    int fd = -1;
    const std::string req = "POST /v1/agents/" + o.node + "/heartbeat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + o.token +
                            "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    while (Clock::now() < deadline) {
      const auto t = Clock::now();
      if (fd < 0) fd = Connect(o.agents);
      if (fd < 0 || !SendAll(fd, req) || ReadStatus(fd, std::chrono::milliseconds(2000)) != 200) {
        ++beat.failures;
        if (fd >= 0) ::close(fd);
        fd = -1;
      } else {
        beat.ms.push_back(MsSince(t));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (fd >= 0) ::close(fd);
  });
  healthz.join();
  heartbeat.join();
  stop = true;
  idle.join();
  slow.join();
  chunked.join();

  std::printf("attack     %d idle and %d slow connections held for %.0f s (reopened %lld and %lld times, 429 seen %lld times); "
              "%lld MiB of chunked bodies sent in %lld refused requests\n",
              o.idle, o.slow, o.seconds, static_cast<long long>(idle_reopened.load()),
              static_cast<long long>(slow_reopened.load()), static_cast<long long>(refused_429.load()),
              static_cast<long long>(chunk_bytes.load() >> 20), static_cast<long long>(chunk_replies.load()));
  health.Print("healthz");
  beat.Print("heartbeat");
  if (!o.json.empty()) {
    std::ofstream(o.json) << "{\"healthz\":" << health.Json() << ",\"heartbeat\":" << beat.Json()
                          << ",\"chunked_mib\":" << (chunk_bytes.load() >> 20) << ",\"idle\":" << o.idle
                          << ",\"slow\":" << o.slow << "}\n";
  }
  return 0;
}
