// The HTTP front end's limits, each against a real server on loopback and raw sockets: what a
// client without a token can do to it, and what it still answers meanwhile.
#include "http/server.h"
#include "support/raw_socket.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace gpupool::http {
namespace {

using Clock = std::chrono::steady_clock;

using testing::SendAll;
int Connect(int port) { return testing::ConnectLoopback(port); }
std::string ReadAll(int fd, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  return testing::ReadFor(fd, timeout);
}

// Reads one reply with a Content-Length body.
std::string ReadReply(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    const size_t head = out.find("\r\n\r\n");
    if (head != std::string::npos) {
      const size_t cl = out.find("Content-Length: ");
      if (cl != std::string::npos && cl < head) {
        const size_t len = std::stoul(out.substr(cl + 16));
        if (out.size() >= head + 4 + len) return out;
      }
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return out;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// True if the server closed `fd` within `t` (whatever it sent before).
bool ClosedWithin(int fd, std::chrono::milliseconds t) {
  (void)ReadAll(fd, t);  // returns early when the peer closes
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(Limits limits, Handler handler = {}) {
    if (!handler) {
      handler = [this](Request r, Respond respond) {
        last_ = r;
        respond(Response{200, "{\"path\":\"" + r.path + "\",\"bytes\":" + std::to_string(r.body.size()) + "}"});
      };
    }
    Result<std::unique_ptr<Server>> s = Server::Start({Listener{"api", "127.0.0.1", 0, limits, 1, handler}});
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    port_ = server_->port(0);
  }
  std::string Get(const std::string& path) {
    const int fd = Connect(port_);
    SendAll(fd, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    std::string r = ReadAll(fd);
    ::close(fd);
    return r;
  }

  std::unique_ptr<Server> server_;
  int port_ = 0;
  Request last_;
};

TEST_F(HttpServerTest, ServesKeepAliveAndDecodesPathAndQuery) {
  StartServer({});
  const int fd = Connect(port_);
  ASSERT_TRUE(SendAll(fd, "GET /v1/jobs/a%2Fb?state=pending&x=1+2&x=3%20 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n"));
  EXPECT_NE(ReadReply(fd).find("200 OK"), std::string::npos);
  EXPECT_EQ(last_.segments, (std::vector<std::string>{"v1", "jobs", "a/b"}));
  EXPECT_EQ(last_.Query("state"), "pending");
  EXPECT_EQ(last_.Query("x"), "3 ");
  EXPECT_EQ(last_.Header("authorization"), "Bearer t");
  EXPECT_FALSE(last_.has_body);
  // The same connection, a second request with a body.
  ASSERT_TRUE(SendAll(fd, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"));
  const std::string second = ReadReply(fd);
  EXPECT_NE(second.find("\"bytes\":5"), std::string::npos) << second;
  EXPECT_TRUE(last_.has_body);
  EXPECT_EQ(last_.body, "hello");
  ::close(fd);
  EXPECT_EQ(server_->stats(0).accepted, 1);
}

TEST_F(HttpServerTest, HeadersPastTheirLimitsAre431) {
  Limits l;
  l.max_header_bytes = 4096;
  l.max_headers = 10;
  StartServer(l);
  std::string many = "GET / HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 20; ++i) many += "X-" + std::to_string(i) + ": y\r\n";
  const int a = Connect(port_);
  SendAll(a, many + "\r\n");
  EXPECT_NE(ReadAll(a).find("431"), std::string::npos);
  ::close(a);
  // Bytes past the limit are never buffered: the server answers before the header ends.
  const int b = Connect(port_);
  SendAll(b, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(8192, 'a'));
  EXPECT_NE(ReadAll(b).find("431"), std::string::npos);
  ::close(b);
  EXPECT_EQ(server_->stats(0).rejected, 2);
}

TEST_F(HttpServerTest, BodiesPastTheLimitAre413ChunkedOrNot) {
  Limits l;
  l.max_body_bytes = 1000;
  bool called = false;
  StartServer(l, [&called](Request, Respond respond) {
    called = true;
    respond(Response{200, "{}"});
  });
  const int a = Connect(port_);
  SendAll(a, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n");
  EXPECT_NE(ReadAll(a).find("413"), std::string::npos) << "refused on the Content-Length alone";
  ::close(a);
  // A chunked body that never ends: refused once it passes the limit, not read to its end.
  const int b = Connect(port_);
  SendAll(b, "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::string reply;
  for (int i = 0; i < 100 && reply.empty(); ++i) {
    if (!SendAll(b, "100\r\n" + std::string(256, 'z') + "\r\n")) break;
    reply = ReadAll(b, std::chrono::milliseconds(5));
  }
  reply += ReadAll(b, std::chrono::milliseconds(500));
  EXPECT_NE(reply.find("413"), std::string::npos) << reply;
  ::close(b);
  EXPECT_FALSE(called);
}

TEST_F(HttpServerTest, IdleAndSlowClientsAreClosed) {
  Limits l;
  l.idle_timeout_ms = 300;
  l.header_timeout_ms = 300;
  StartServer(l);
  const int idle = Connect(port_);
  const int slow = Connect(port_);
  const auto start = Clock::now();
  SendAll(slow, "G");
  // A byte every 100 ms would keep a per-read timer alive forever; the header has 300 ms in all.
  for (const char c : std::string("ET / HTTP/1.1\r\nHost: x\r\n")) {
    if (!SendAll(slow, std::string(1, c))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (Clock::now() - start > std::chrono::seconds(2)) break;
  }
  EXPECT_TRUE(ClosedWithin(slow, std::chrono::milliseconds(1000)));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  EXPECT_TRUE(ClosedWithin(idle, std::chrono::milliseconds(1000)));
  ::close(idle);
  ::close(slow);
  EXPECT_GE(server_->stats(0).timed_out, 2);
}

TEST_F(HttpServerTest, ConnectionsPastTheLimitGet429AndOthersStillWork) {
  Limits l;
  l.max_connections = 8;
  l.max_connections_per_source = 4;
  StartServer(l);
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) held.push_back(Connect(port_));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // accepted
  const int over = Connect(port_);
  const std::string r = ReadAll(over, std::chrono::milliseconds(2000));
  EXPECT_NE(r.find("429"), std::string::npos) << r;
  ::close(over);
  EXPECT_EQ(server_->stats(0).refused, 1);
  ::close(held[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_NE(Get("/ok").find("200 OK"), std::string::npos) << "a freed slot is usable again";
  for (size_t i = 1; i < held.size(); ++i) ::close(held[i]);
}

// One I/O thread, a handler that answers later from another thread: the thread is never held,
// so 200 idle connections and one slow answer do not delay the others.
TEST_F(HttpServerTest, ASlowAnswerHoldsNoThread) {
  std::vector<std::thread> later;
  StartServer({}, [&later](Request r, Respond respond) {
    if (r.path == "/slow") {
      later.emplace_back([respond] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        respond(Response{200, "{}"});
      });
      return;
    }
    respond(Response{200, "{}"});
  });
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) idle.push_back(Connect(port_));
  const int slow = Connect(port_);
  SendAll(slow, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = Clock::now();
  EXPECT_NE(Get("/fast").find("200 OK"), std::string::npos);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_NE(ReadReply(slow).find("200 OK"), std::string::npos);
  ::close(slow);
  for (int fd : idle) ::close(fd);
  for (std::thread& t : later) t.join();
}

// A client that asks before sending its body gets "100 Continue", then its reply.
TEST_F(HttpServerTest, ExpectContinueIsAnswered) {
  StartServer({});
  const int fd = Connect(port_);
  SendAll(fd, "POST /x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
  const std::string cont = ReadAll(fd, std::chrono::milliseconds(500));
  EXPECT_NE(cont.find("100 Continue"), std::string::npos) << cont;
  SendAll(fd, "hello");
  const std::string reply = ReadReply(fd);
  EXPECT_NE(reply.find("\"bytes\":5"), std::string::npos) << reply;
  ::close(fd);
}

TEST_F(HttpServerTest, GarbageIs400AndTheServerGoesOn) {
  StartServer({});
  const int a = Connect(port_);
  SendAll(a, "NOT HTTP AT ALL\r\n\r\n");
  EXPECT_NE(ReadAll(a).find("400"), std::string::npos);
  ::close(a);
  EXPECT_NE(Get("/ok").find("200 OK"), std::string::npos);
}

TEST(PercentDecodeTest, Decodes) {
  EXPECT_EQ(PercentDecode("a%20b+c", true), "a b c");
  EXPECT_EQ(PercentDecode("a%20b+c", false), "a b+c");
  EXPECT_EQ(PercentDecode("bad%zzend%4", false), "bad%zzend%4");
  EXPECT_EQ(PercentDecode("%41%42", false), "AB");
}

}  // namespace
}  // namespace gpupool::http
