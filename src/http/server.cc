#include "http/server.h"

#include "http/tls_context.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

namespace gpupool::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;


namespace {

// Past the limits, a rejected client's remaining bytes are read and dropped for at most this
// long and this much (so it reads our reply instead of a reset), then the connection closes.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kLingerBytes = 4 << 20;

std::string ErrorJson(std::string_view code, std::string_view message) {
  // The daemon's error shape (DESIGN.md §10); the messages here are fixed ASCII.
  return "{\"error\":{\"code\":\"" + std::string(code) + "\",\"message\":\"" + std::string(message) +
         "\",\"details\":{}}}";
}

const std::string& BusyReply() {
  static const std::string reply = [] {
    const std::string body = ErrorJson("RESOURCE_EXHAUSTED", "too many connections; retry later");
    return "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + body;
  }();
  return reply;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view SV(beast::string_view s) { return {s.data(), s.size()}; }

// Whoever may post replies onto a listener's io_context: closed by Stop before the context goes.
struct Gate {
  std::mutex mu;
  bool open = true;
};

}  // namespace

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string Request::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (IEquals(k, name)) return v;
  }
  return "";
}

std::string Request::Query(const std::string& key) const {
  const auto it = query.find(key);
  return it == query.end() ? "" : it->second;
}

// One listener: its socket, io_context, threads, and the counts its limits are checked against.
// Members are destroyed in reverse: the io_context (and with it every connection still
// pending in it, which releases its slot) goes before the counts and the gate.
struct ListenerState {
  Listener spec;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  int port = 0;
  std::mutex mu;  // guards per_source
  std::map<std::string, int> per_source;
  std::atomic<int64_t> open{0}, accepted{0}, refused{0}, timed_out{0}, rejected{0};

  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  net::steady_timer retry{ioc};  // accept paused after EMFILE
  std::vector<std::thread> threads;

  explicit ListenerState(Listener l) : spec(std::move(l)), ioc(std::max(1, spec.threads)) {}

  // Takes a slot for a connection from `source`, or says no.
  bool Admit(const std::string& source) {
    std::lock_guard<std::mutex> lock(mu);
    if (open.load() >= spec.limits.max_connections) return false;
    int& n = per_source[source];
    if (n >= spec.limits.max_connections_per_source) {
      if (n == 0) per_source.erase(source);
      return false;
    }
    ++n;
    ++open;
    return true;
  }
  void Release(const std::string& source) {
    std::lock_guard<std::mutex> lock(mu);
    if (--per_source[source] <= 0) per_source.erase(source);
    --open;
  }
};

namespace {

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection, plain (beast::tcp_stream) or TLS (TlsStream over one).
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  Session(Stream stream, ListenerState& l, std::string source, std::shared_ptr<TlsCredentials::Context> tls = nullptr)
      : tls_(std::move(tls)), stream_(std::move(stream)), l_(l), source_(std::move(source)),
        buffer_(l.spec.limits.max_header_bytes + 64 * 1024) {}
  ~Session() { l_.Release(source_); }

  void Start() {
    if constexpr (kTls) {
      // The handshake is part of the request's header time: a client that opens a connection
      // and sends nothing is closed as one that sends no header.
      Lowest().expires_after(std::chrono::milliseconds(limits().header_timeout_ms));
      stream_.async_handshake(net::ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
        if (ec) return self->Closed(ec);
        if (self->tls_ != nullptr) self->client_names_ = ClientCertificateNames(self->stream_.native_handle());
        self->WaitForRequest();
      });
    } else {
      WaitForRequest();
    }
  }

 private:
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;
  const Limits& limits() const { return l_.spec.limits; }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  // Keep-alive: wait up to the idle timeout for a request's first byte.
  void WaitForRequest() {
    if (buffer_.size() > 0) return ReadHeader();
    Lowest().expires_after(std::chrono::milliseconds(limits().idle_timeout_ms));
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec) return self->Closed(ec);
      self->buffer_.commit(n);
      self->ReadHeader();
    });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(std::min<size_t>(limits().max_header_bytes, UINT32_MAX)));
    parser_->body_limit(limits().max_body_bytes);
    Lowest().expires_after(std::chrono::milliseconds(limits().header_timeout_ms));
    bhttp::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->OnHeader(ec);
    });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return Failed(ec);
    const auto& req = parser_->get();
    if (static_cast<size_t>(std::distance(req.begin(), req.end())) > limits().max_headers) {
      return Reject(431, "too many header fields");
    }
    if (parser_->is_done()) return Dispatch();
    Lowest().expires_after(std::chrono::milliseconds(limits().body_timeout_ms));
    if (IEquals(SV(req[bhttp::field::expect]), "100-continue")) {
      static const std::string cont = "HTTP/1.1 100 Continue\r\n\r\n";
      net::async_write(stream_, net::buffer(cont), [self = shared_from_this()](beast::error_code e, size_t) {
        if (e) return self->Closed(e);
        self->ReadBody();
      });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    bhttp::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Failed(ec);
      self->Dispatch();
    });
  }

  void Dispatch() {
    Lowest().expires_never();  // the handler may take its time (a durable write); the reply is ours to time
    auto& msg = parser_->get();
    Request r;
    r.method = std::string(SV(msg.method_string()));
    const std::string_view target = SV(msg.target());
    const size_t q = target.find('?');
    r.path = std::string(target.substr(0, q));
    // "/" is one empty segment, "/v1/jobs/" three, the last empty: no route matches by accident.
    for (size_t start = r.path.empty() ? 0 : 1; start <= r.path.size();) {
      const size_t end = std::min(r.path.find('/', start), r.path.size());
      r.segments.push_back(PercentDecode(std::string_view(r.path).substr(start, end - start), false));
      start = end + 1;
    }
    if (q != std::string_view::npos) {
      std::string_view rest = target.substr(q + 1);
      while (!rest.empty()) {
        const size_t amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        const size_t eq = pair.find('=');
        if (!pair.empty()) {
          r.query[PercentDecode(pair.substr(0, eq), true)] =
              eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
        }
        if (amp == std::string_view::npos) break;
        rest.remove_prefix(amp + 1);
      }
    }
    for (const auto& f : msg) r.headers.emplace_back(std::string(SV(f.name_string())), std::string(SV(f.value())));
    r.has_body = parser_->chunked() || parser_->content_length().has_value();
    r.body = std::move(msg.body());
    r.remote = source_;
    r.client_names = client_names_;
    keep_alive_ = msg.keep_alive();
    parser_.reset();

    auto once = std::make_shared<std::atomic<bool>>(false);
    std::weak_ptr<Gate> gate = l_.gate;
    Respond respond = [self = shared_from_this(), once, gate](Response res) {
      if (once->exchange(true)) return;
      const std::shared_ptr<Gate> g = gate.lock();
      if (!g) return;
      std::lock_guard<std::mutex> lock(g->mu);
      if (!g->open) return;
      net::post(self->stream_.get_executor(), [self, res = std::move(res)]() mutable { self->Write(std::move(res)); });
    };
    try {
      l_.spec.handler(std::move(r), respond);
    } catch (const std::exception&) {
      respond(Response{500, ErrorJson("INTERNAL", "internal error"), "application/json", {}, true});
    }
  }

  void Write(Response res) {
    auto msg = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(res.status), 11);
    msg->set(bhttp::field::content_type, res.content_type);
    for (const auto& [k, v] : res.headers) msg->set(k, v);
    msg->body() = std::move(res.body);
    msg->keep_alive(keep_alive_ && !res.close);
    msg->prepare_payload();
    Lowest().expires_after(std::chrono::milliseconds(limits().write_timeout_ms));
    bhttp::async_write(stream_, *msg, [self = shared_from_this(), msg](beast::error_code ec, size_t) {
      if (ec) return self->Closed(ec);
      if (!msg->keep_alive()) return self->Linger();
      self->WaitForRequest();
    });
  }

  // Before any handler: a reply of our own, then the connection closes.
  void Reject(int status, std::string_view message) {
    ++l_.rejected;
    keep_alive_ = false;
    const char* code = status == 400 ? "INVALID_ARGUMENT" : "RESOURCE_EXHAUSTED";
    Write(Response{status, ErrorJson(code, message), "application/json", {}, true});
  }

  void Failed(beast::error_code ec) {
    if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
      return Reject(431, "request header fields too large");
    }
    if (ec == bhttp::error::body_limit) return Reject(413, "request body too large");
    if (ec == beast::error::timeout || ec == bhttp::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted || ec == bhttp::error::partial_message) {
      return Closed(ec);
    }
    return Reject(400, "bad request");
  }

  // Sends FIN, drops what the client still sends for a while, then closes: a client that sent
  // more than we read sees our reply rather than a reset.
  void Linger() {
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    Lowest().expires_after(kLingerTime);
    Drain();
  }
  void Drain() {
    stream_.async_read_some(net::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > kLingerBytes) {
        beast::error_code ignored;
        self->Lowest().socket().close(ignored);
        return;
      }
      self->Drain();
    });
  }

  void Closed(beast::error_code ec) {
    if (ec == beast::error::timeout) ++l_.timed_out;
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Lowest().socket().close(ignored);
  }

  std::shared_ptr<TlsCredentials::Context> tls_;  // outlives stream_, which uses its context
  Stream stream_;
  ListenerState& l_;
  const std::string source_;
  std::vector<std::string> client_names_;  // a verified client certificate's, from the handshake
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bool keep_alive_ = true;
  size_t drained_ = 0;
  std::array<char, 16 * 1024> scratch_{};
};

void Accept(ListenerState& l) {
  l.acceptor.async_accept(net::make_strand(l.ioc), [&l](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;  // stopping
    if (ec) {
      // Out of file descriptors (or another transient failure): pause instead of spinning.
      l.retry.expires_after(std::chrono::milliseconds(100));
      l.retry.async_wait([&l](beast::error_code e) {
        if (!e) Accept(l);
      });
      return;
    }
    beast::error_code e;
    const tcp::endpoint peer = socket.remote_endpoint(e);
    const std::string source = e ? std::string("?") : peer.address().to_string();
    ++l.accepted;
    if (!l.Admit(source)) {
      ++l.refused;
      // One non-blocking send of a static reply; whatever does not fit is not waited for.
      socket.non_blocking(true, e);
      const std::string& busy = BusyReply();
      (void)::send(socket.native_handle(), busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      socket.shutdown(tcp::socket::shutdown_both, e);
      socket.close(e);
    } else {
      socket.set_option(tcp::no_delay(true), e);  // small JSON replies must not wait for delayed ACKs
      if (l.spec.tls) {
        std::shared_ptr<TlsCredentials::Context> ctx = l.spec.tls->current();
        TlsStream stream(beast::tcp_stream(std::move(socket)), ctx->ssl);
        std::make_shared<Session<TlsStream>>(std::move(stream), l, source, std::move(ctx))->Start();
      } else {
        std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)), l, source)->Start();
      }
    }
    Accept(l);
  });
}

// Raises the soft limit on open files to the hard one: each connection is a descriptor, and
// the default soft limit (1024) is below the connection limits.
void RaiseFileLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

class Server::Impl {
 public:
  std::vector<std::unique_ptr<ListenerState>> listeners;
  bool stopped = false;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> Server::Start(std::vector<Listener> listeners) {
  RaiseFileLimit();
  auto impl = std::make_unique<Impl>();
  for (Listener& spec : listeners) {
    auto l = std::make_unique<ListenerState>(std::move(spec));
    beast::error_code ec;
    const net::ip::address addr = net::ip::make_address(l->spec.host == "localhost" ? "127.0.0.1" : l->spec.host, ec);
    if (ec) return InvalidArgument("cannot listen on '" + l->spec.host + "': not an IP address");
    const tcp::endpoint ep(addr, static_cast<unsigned short>(l->spec.port));
    const auto fail = [&](const char* what) {
      return Error{ErrorCode::kUnavailable, "cannot listen on " + l->spec.host + ":" + std::to_string(l->spec.port) +
                                                " (" + l->spec.name + "): " + what + ": " + ec.message()};
    };
    l->acceptor.open(ep.protocol(), ec);
    if (ec) return fail("open");
    l->acceptor.set_option(net::socket_base::reuse_address(true), ec);
    l->acceptor.bind(ep, ec);
    if (ec) return fail("bind");
    l->acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) return fail("listen");
    l->port = l->acceptor.local_endpoint().port();
    impl->listeners.push_back(std::move(l));
  }
  for (auto& l : impl->listeners) {
    Accept(*l);
    for (int i = 0; i < std::max(1, l->spec.threads); ++i) {
      ListenerState* s = l.get();
      l->threads.emplace_back([s] { s->ioc.run(); });
    }
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port(size_t i) const { return impl_->listeners.at(i)->port; }

ListenerStats Server::stats(size_t i) const {
  const ListenerState& l = *impl_->listeners.at(i);
  return {l.open.load(), l.accepted.load(), l.refused.load(), l.timed_out.load(), l.rejected.load()};
}

void Server::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  for (auto& l : impl_->listeners) {
    {
      std::lock_guard<std::mutex> lock(l->gate->mu);
      l->gate->open = false;
    }
    l->ioc.stop();
  }
  for (auto& l : impl_->listeners) {
    for (std::thread& t : l->threads) t.join();
  }
}

}  // namespace gpupool::http
