#include "cli/http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

namespace gpupool::cli {
namespace {

Error Unavailable(const std::string& m) { return {ErrorCode::kUnavailable, m}; }

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One connection: a socket, and an OpenSSL session over it for https.
class Connection {
 public:
  ~Connection() {
    if (ssl_) SSL_free(ssl_);
    if (ctx_) SSL_CTX_free(ctx_);
    if (fd_ >= 0) close(fd_);
  }

  Status Open(const HttpRequest& r) {
    GP_RETURN_IF_ERROR(Connect(r.host, r.port, r.connect_timeout_s));
    timeval tv{r.io_timeout_s, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return r.tls ? Handshake(r.host, r.ca_file) : Ok();
  }

  Status WriteAll(const std::string& data) {
    for (size_t done = 0; done < data.size();) {
      const size_t left = data.size() - done;
      const ssize_t n = ssl_ ? SSL_write(ssl_, data.data() + done, static_cast<int>(std::min<size_t>(left, 1 << 20)))
                             : send(fd_, data.data() + done, left, MSG_NOSIGNAL);
      if (n <= 0) return Unavailable("could not send the request" + Why());
      done += static_cast<size_t>(n);
    }
    return Ok();
  }

  // Bytes read into buf (0 at the end of the stream), or an error.
  Result<size_t> Read(char* buf, size_t size) {
    const ssize_t n = ssl_ ? SSL_read(ssl_, buf, static_cast<int>(size)) : recv(fd_, buf, size, 0);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0 || (ssl_ && SSL_get_error(ssl_, static_cast<int>(n)) == SSL_ERROR_ZERO_RETURN)) return size_t{0};
    return Unavailable(errno == EAGAIN || errno == EWOULDBLOCK ? "no reply (timed out)" : "no reply (read failed)");
  }

 private:
  static std::string Why() { return errno == 0 ? "" : std::string(" (") + std::strerror(errno) + ")"; }

  Status Connect(const std::string& host, int port, int timeout_s) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
      return Unavailable("could not resolve " + host + " (" + gai_strerror(rc) + ")");
    }
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, freeaddrinfo);
    std::string why = "could not connect";
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      fd_ = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd_ < 0) continue;
      const int flags = fcntl(fd_, F_GETFL);
      fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
      int rc = connect(fd_, a->ai_addr, a->ai_addrlen);
      if (rc < 0 && errno == EINPROGRESS) {
        pollfd p{fd_, POLLOUT, 0};
        rc = poll(&p, 1, timeout_s * 1000);
        int err = 0;
        socklen_t len = sizeof err;
        if (rc == 1 && getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
          rc = 0;
        } else {
          why = rc == 0 ? "connection timed out" : "could not connect";
          rc = -1;
        }
      }
      if (rc == 0) {
        fcntl(fd_, F_SETFL, flags);
        return Ok();
      }
      close(fd_);
      fd_ = -1;
    }
    return Unavailable(why);
  }

  static std::string TlsError() {
    const unsigned long e = ERR_get_error();
    if (e == 0) return "";
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    return std::string(": ") + buf;
  }

  Status Handshake(const std::string& host, const std::string& ca_file) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (ctx_ == nullptr) return Unavailable("cannot set up TLS" + TlsError());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    if (SSL_CTX_set_default_verify_paths(ctx_) != 1) return Unavailable("cannot load TLS certificates" + TlsError());
    if (!ca_file.empty() && SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr) != 1) {
      return Error{ErrorCode::kInvalidArgument, "cannot read the CA file " + ca_file + TlsError()};
    }
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    ssl_ = SSL_new(ctx_);
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) return Unavailable("cannot set up TLS" + TlsError());
    in6_addr ip;
    const bool is_ip = inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1;
    if (is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl_, host.c_str());
      SSL_set1_host(ssl_, host.c_str());
    }
    if (SSL_connect(ssl_) != 1) {
      const long verify = SSL_get_verify_result(ssl_);
      if (verify != X509_V_OK) {
        return Unavailable(std::string("TLS server verification failed: ") + X509_verify_cert_error_string(verify));
      }
      return Unavailable("TLS handshake failed" + TlsError());
    }
    return Ok();
  }

  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

std::string RequestText(const HttpRequest& r) {
  const bool v6 = r.host.find(':') != std::string::npos;
  const bool default_port = r.port == (r.tls ? 443 : 80);
  std::string host = v6 ? "[" + r.host + "]" : r.host;
  if (!default_port) host += ":" + std::to_string(r.port);
  std::string text = r.method + " " + r.target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n";
  for (const auto& [k, v] : r.headers) text += k + ": " + v + "\r\n";
  if (!r.body.empty() || r.method == "POST" || r.method == "PATCH") {
    text += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  }
  return text + "\r\n" + r.body;
}

enum class Parsed { kIncomplete, kComplete };

// Decodes a chunked body from `in`; kIncomplete until the last chunk and trailers are there.
Result<Parsed> Dechunk(const std::string& in, std::string* body) {
  body->clear();
  size_t pos = 0;
  for (;;) {
    const size_t eol = in.find("\r\n", pos);
    if (eol == std::string::npos) return Parsed::kIncomplete;
    const std::string size_text = in.substr(pos, in.find_first_of(";\r", pos) - pos);
    char* end = nullptr;
    const unsigned long long size = std::strtoull(size_text.c_str(), &end, 16);
    if (size_text.empty() || *end != '\0' || size > (1ull << 40)) {
      return Error{ErrorCode::kInternal, "the server's reply has a bad chunk size"};
    }
    pos = eol + 2;
    if (size == 0) return in.find("\r\n", pos) == std::string::npos ? Parsed::kIncomplete : Parsed::kComplete;
    if (in.size() < pos + size + 2) return Parsed::kIncomplete;
    body->append(in, pos, size);
    pos += size + 2;
  }
}

// The status line and headers of a reply: what says where its body ends.
struct Head {
  int status = 0;
  size_t body_start = 0;
  long long length = -1;  // Content-Length; -1 without
  bool chunked = false;
  std::string location;
};

Result<Head> ParseHead(const std::string& raw, size_t head_end) {
  if (raw.rfind("HTTP/1.", 0) != 0 || raw.size() < 12 || raw[8] != ' ') {
    return Error{ErrorCode::kInternal, "the server's reply is not HTTP"};
  }
  Head h;
  h.status = std::atoi(raw.substr(9, 3).c_str());
  if (h.status < 100 || h.status > 599) return Error{ErrorCode::kInternal, "the server's reply has no status"};
  h.body_start = head_end + 4;
  for (size_t line = raw.find("\r\n") + 2; line < head_end;) {
    const size_t eol = raw.find("\r\n", line);
    const std::string header = raw.substr(line, eol - line);
    line = eol + 2;
    const size_t colon = header.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = Lower(header.substr(0, colon));
    const std::string value = Lower(header.substr(colon + 1));
    if (name == "content-length") h.length = std::atoll(value.c_str());
    if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) h.chunked = true;
    if (name == "location") {
      std::string v = header.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      while (!v.empty() && v.back() == ' ') v.pop_back();
      h.location = v;
    }
  }
  return h;
}

// Could the reply be whole? Cheap, so it can be asked after every read.
bool MaybeComplete(const Head& h, const std::string& raw, bool at_end) {
  if (at_end) return true;
  if (h.chunked) return raw.size() >= 5 && raw.compare(raw.size() - 4, 4, "\r\n\r\n") == 0;
  return h.length >= 0 && raw.size() >= h.body_start + static_cast<size_t>(h.length);
}

// The reply so far: kIncomplete while more is to come (per Content-Length or the chunks).
Result<Parsed> Parse(const std::string& raw, bool at_end, HttpResponse* out) {
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    if (!at_end) return Parsed::kIncomplete;
    return Error{ErrorCode::kInternal, raw.empty() ? "the server closed the connection without a reply"
                                                   : "the server's reply is not HTTP"};
  }
  Result<Head> h = ParseHead(raw, head_end);
  if (!h.ok()) return h.error();
  out->status = h->status;
  out->location = h->location;
  const std::string rest = raw.substr(h->body_start);
  if (h->chunked) {
    Result<Parsed> p = Dechunk(rest, &out->body);
    if (p.ok() && *p == Parsed::kIncomplete && at_end) return Unavailable("the connection closed mid-reply");
    return p;
  }
  if (h->length >= 0) {
    if (rest.size() < static_cast<size_t>(h->length)) {
      if (at_end) return Unavailable("the connection closed mid-reply");
      return Parsed::kIncomplete;
    }
    out->body = rest.substr(0, static_cast<size_t>(h->length));
    return Parsed::kComplete;
  }
  out->body = rest;  // no length: the body runs to the end of the stream
  return at_end ? Parsed::kComplete : Parsed::kIncomplete;
}

// SIGPIPE ignored while a request is in flight (a server that hangs up is an error, not death).
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &old_);
  }
  ~IgnoreSigpipe() { sigaction(SIGPIPE, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

}  // namespace

Result<HttpResponse> ParseHttpResponse(const std::string& raw) {
  HttpResponse out;
  Result<Parsed> p = Parse(raw, true, &out);
  if (!p.ok()) return p.error();
  return out;
}

Result<HttpResponse> HttpSend(const HttpRequest& request, size_t max_body, bool* connected) {
  IgnoreSigpipe sigpipe;
  Connection c;
  if (connected != nullptr) *connected = false;
  GP_RETURN_IF_ERROR(c.Open(request));
  if (connected != nullptr) *connected = true;
  GP_RETURN_IF_ERROR(c.WriteAll(RequestText(request)));
  std::string raw;
  char buf[65536];
  HttpResponse out;
  std::optional<Head> head;  // once the headers are in
  for (;;) {
    Result<size_t> n = c.Read(buf, sizeof buf);
    if (!n.ok()) return n.error();
    raw.append(buf, *n);
    if (raw.size() > max_body) return Error{ErrorCode::kResourceExhausted, "the server's reply is too large"};
    const bool at_end = *n == 0;
    if (const size_t end = raw.find("\r\n\r\n"); !head && end != std::string::npos) {
      Result<Head> h = ParseHead(raw, end);
      if (!h.ok()) return h.error();
      head = *h;
    }
    if (!at_end && (!head || !MaybeComplete(*head, raw, false))) continue;
    Result<Parsed> p = Parse(raw, at_end, &out);
    if (!p.ok()) return p.error();
    if (*p == Parsed::kComplete) return out;
  }
}

}  // namespace gpupool::cli
