// The CLI's HTTP/1.1 client: one request per connection (Connection: close), over TCP, or TLS
// with the system's CA certificates and the server's name (or IP address) verified. Small on
// purpose: the lean `gpupool` binary links no HTTP library (docs/design/cli.md, start time), and
// OpenSSL is set up only when an https URL is used.
//
// Errors: kUnavailable for what a retry or another URL might cure (name resolution, connect,
// TLS handshake or verification, a timeout, a connection closed early), with a short
// description; kInternal for a reply that is not HTTP. Nothing here throws.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpupool::cli {

struct HttpRequest {
  std::string method;  // GET, POST, PATCH, DELETE
  bool tls = false;
  std::string host;    // a name, an IPv4 address or an IPv6 address without brackets
  int port = 0;
  std::string target;  // "/v1/jobs?limit=5", already encoded
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;    // sent with Content-Length when not empty, or for POST and PATCH
  int connect_timeout_s = 5;
  int io_timeout_s = 30;  // each read and write
  std::string ca_file;    // with tls: a PEM file trusted besides the system's certificates
};

struct HttpResponse {
  int status = 0;
  std::string body;      // de-chunked
  std::string location;  // the Location header, as sent ("" without)
};

// Sends `request` and reads the whole reply. Replies above `max_body` bytes are an error.
// `connected`, if given, says whether the connection was made (an error before it: nothing
// reached the server, so another server may be tried even for a write).
Result<HttpResponse> HttpSend(const HttpRequest& request, size_t max_body = size_t{1} << 30,
                              bool* connected = nullptr);

// The body of an HTTP/1.1 reply (status line and headers included in `raw`): its status and
// body, honouring Content-Length and chunked transfer coding. Exposed for tests.
Result<HttpResponse> ParseHttpResponse(const std::string& raw);

}  // namespace gpupool::cli
