// An event-driven HTTP/1.1 server (Boost.Beast over Asio) that a client without a token cannot
// starve: every limit holds before a handler, hence before authentication, sees the request.
//
//   - connections: at most `max_connections` open per listener and `max_connections_per_source`
//     from one address; one over is answered 429 at once, from a static buffer, and closed;
//   - time: a connection may idle `idle_timeout_ms` between requests, then its header must
//     arrive within `header_timeout_ms` and its body within `body_timeout_ms`, and a reply must
//     be taken within `write_timeout_ms`; past any of them the connection is closed;
//   - size: at most `max_header_bytes` of request line and headers, `max_headers` fields (431
//     past either), and `max_body_bytes` of body, chunked or not (413, before the rest is read:
//     the parser stops at the limit, nothing beyond it is buffered).
//
// Each listener has its own io_context and threads, so a flood on one (the public API) does not
// delay another (the node agents' heartbeats). A handler runs on an I/O thread and must not
// block: it answers through `Respond`, from any thread, exactly once. Connections are read
// one request at a time; the next is read once the reply is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpupool::http {

struct Limits {
  size_t max_header_bytes = 16 * 1024;
  size_t max_headers = 100;
  size_t max_body_bytes = 1 << 20;
  int max_connections = 4096;
  int max_connections_per_source = 1024;
  int idle_timeout_ms = 60'000;
  int header_timeout_ms = 10'000;
  int body_timeout_ms = 30'000;
  int write_timeout_ms = 30'000;
};

struct Request {
  std::string method;                 // "GET", "POST", ...
  std::string path;                   // as sent, without the query ("/v1/jobs/12")
  std::vector<std::string> segments;  // after the first '/', split at '/', percent-decoded:
                                      // "/v1/jobs/12" is {"v1", "jobs", "12"}, "/" is {""}
  std::map<std::string, std::string> query;  // decoded; the last value of a repeated key wins
  std::vector<std::pair<std::string, std::string>> headers;
  bool has_body = false;  // sent a Content-Length or a chunked body (a POST without either has none)
  std::string body;
  std::string remote;  // the peer's address
  // A TLS client certificate that verified against the listener's client CA: its DNS
  // subjectAltNames in order, or, when it has none, its subject's common name. Empty without one.
  std::vector<std::string> client_names;

  // The value of the first header named `name` (any case), or "".
  std::string Header(std::string_view name) const;
  std::string Query(const std::string& key) const;
};

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // close the connection after this reply
};

// Answers one request; may be called from any thread, once. Copies share the one answer.
using Respond = std::function<void(Response)>;
using Handler = std::function<void(Request, Respond)>;

// A listener's TLS: a certificate chain and its private key, PEM files, and optionally the CA
// (PEM, one or more certificates) whose client certificates it accepts. A client may still come
// without one (an API token's caller); one that offers a certificate the CA did not sign, or
// not for client authentication, fails the handshake. Read at Load and again at each Reload
// (SIGHUP); a reload that fails keeps what was in use, and a connection keeps the credentials it
// was accepted with. TLS 1.2 and later. Thread-safe.
class TlsCredentials {
 public:
  static Result<std::shared_ptr<TlsCredentials>> Load(std::string cert_file, std::string key_file,
                                                      std::string client_ca_file = "");
  Status Reload();
  ~TlsCredentials();
  const std::string& cert_file() const { return cert_file_; }
  const std::string& client_ca_file() const { return client_ca_file_; }

  class Context;  // an OpenSSL context (server.cc)
  std::shared_ptr<Context> current() const;

 private:
  TlsCredentials(std::string cert_file, std::string key_file, std::string client_ca_file);
  std::string cert_file_, key_file_, client_ca_file_;
  mutable std::mutex mu_;
  std::shared_ptr<Context> context_;  // guarded by mu_
};

struct Listener {
  std::string name;  // "api", "agents": for logs and stats
  std::string host;
  int port = 0;      // 0: any free port
  Limits limits;
  int threads = 1;
  Handler handler;
  // HTTPS with these; null: plain HTTP. The handshake must finish within header_timeout_ms.
  std::shared_ptr<TlsCredentials> tls;
};

struct ListenerStats {
  int64_t open = 0;      // connections now
  int64_t accepted = 0;  // since start
  int64_t refused = 0;   // 429 at accept: over max_connections or per source
  int64_t timed_out = 0; // closed for idling, a slow header, body or reader
  int64_t rejected = 0;  // 400, 413, 431 before any handler
};

class Server {
 public:
  // Binds and listens on every listener, then serves on their threads until Stop().
  static Result<std::unique_ptr<Server>> Start(std::vector<Listener> listeners);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port(size_t listener) const;
  ListenerStats stats(size_t listener) const;
  // Stops accepting, closes every connection and joins the threads. Replies that arrive later
  // are dropped. Idempotent.
  void Stop();

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Percent-decoding as in URLs; `plus_is_space` for query strings. Bad escapes stay as they are.
std::string PercentDecode(std::string_view s, bool plus_is_space);

}  // namespace gpupool::http
