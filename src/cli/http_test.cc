// The CLI's HTTP client: reply parsing (http.h); the round trips are tests/cli_client_test.sh
// (a real daemon) and tests/cli_tls_test.sh (openssl s_server).
#include "cli/http.h"

#include <gtest/gtest.h>

namespace gpupool::cli {
namespace {

TEST(ParseHttpResponse, ContentLength) {
  Result<HttpResponse> r = ParseHttpResponse("HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX: y\r\n\r\nhello");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, "hello");
  // Bytes after the declared length are not the body.
  EXPECT_EQ(ParseHttpResponse("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA")->body, "ok");
}

TEST(ParseHttpResponse, ChunkedAndToTheEnd) {
  Result<HttpResponse> r = ParseHttpResponse(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3;ext=1\r\n:1}\r\n0\r\n\r\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "{\"a\":1}");
  // Neither length nor chunks: the body runs to the end of the stream (HTTP/1.0 servers).
  EXPECT_EQ(ParseHttpResponse("HTTP/1.0 200 ok\r\nContent-type: text/html\r\n\r\n<html>")->body, "<html>");
}

TEST(ParseHttpResponse, CutShortOrNotHttp) {
  const std::pair<const char*, ErrorCode> bad[] = {
      {"", ErrorCode::kInternal},                                                    // nothing at all
      {"SSH-2.0-OpenSSH_9.2\r\n", ErrorCode::kInternal},                             // not HTTP
      {"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n", ErrorCode::kInternal},            // no end of headers
      {"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", ErrorCode::kUnavailable},  // closed mid-body
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", ErrorCode::kUnavailable},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", ErrorCode::kInternal},  // bad size
      {"HTTP/1.1 999 What\r\n\r\n", ErrorCode::kInternal},
  };
  for (const auto& [raw, code] : bad) {
    Result<HttpResponse> r = ParseHttpResponse(raw);
    ASSERT_FALSE(r.ok()) << raw;
    EXPECT_EQ(r.error().code, code) << raw << ": " << r.error().message;
  }
}

}  // namespace
}  // namespace gpupool::cli
