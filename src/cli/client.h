// The CLI's side of the REST API: where the server is, who we are, and one HTTP call at a time.
//
// The server and token come, per key, from the first of: the --url/--token flags, the
// GPUPOOL_URL/GPUPOOL_TOKEN environment variables, the config file ($GPUPOOL_CONFIG, else
// ~/.config/gpupool/config.yaml, holding `url:` and `token:`). Without a URL anywhere the
// daemon's default listen address is used; without a token the request goes out unauthenticated
// and the server says so.
//
// Errors: a malformed URL or config file is kInvalidArgument (the caller's usage error); a
// server that cannot be reached is kUnavailable with the URL in the message; an error reply
// keeps the server's code and message. Nothing here throws.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "api/url.h"
#include "core/result.h"

namespace gpupool::cli {

using Json = nlohmann::json;

constexpr const char* kDefaultServerUrl = "http://127.0.0.1:8080";

// An http(s) base URL split into what httplib wants: scheme://host:port and a path prefix
// (no trailing slash) that every API path is appended to.
struct ServerUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // a name, an IPv4 address, or an IPv6 address without brackets
  int port = 0;
  std::string prefix;  // "" or "/some/path"

  std::string Origin() const;  // scheme://host:port, IPv6 in brackets
};

// Accepts "http://h:p[/prefix]", "https://h[:p]" and a bare "h:p" (http).
Result<ServerUrl> ParseServerUrl(const std::string& url);

struct ClientConfig {
  std::string url;
  std::string token;
  std::string url_source;  // where url came from, for messages: "--url", "GPUPOOL_URL", a path
  // A PEM file of certificates to trust for https besides the system's: --ca, GPUPOOL_CA, or
  // ca: in the config file ("" for the system's only).
  std::string ca_file;
};

// The flags, the environment (through `getenv`, so tests can supply their own) and the config
// file, merged as described at the top. An explicit $GPUPOOL_CONFIG must exist; the default
// file may be absent.
using GetEnv = std::function<const char*(const char*)>;
Result<ClientConfig> ResolveClientConfig(const std::string& flag_url, const std::string& flag_token,
                                         const GetEnv& getenv);


// The error an HTTP reply carries: the server's {"error": {"code", "message", "details"}} when
// the body is one, else the status line and the start of the body.
Error ReplyError(int status, const std::string& body);

// One client per command. Not thread-safe. Each request is its own connection.
class ApiClient {
 public:
  static Result<std::unique_ptr<ApiClient>> Connect(const ClientConfig& config);

  using Headers = std::map<std::string, std::string>;
  // Each returns the reply's JSON for a 2xx status, else the error (see the top of the file).
  // `path` starts with "/v1/...", already encoded. `method` is GET, POST, PATCH or DELETE;
  // `body` (JSON) goes with POST and PATCH, nullptr for none.
  Result<Json> Send(const std::string& method, const std::string& path, const Json* body,
                    const Headers& headers = {});
  Result<Json> Get(const std::string& path) { return Send("GET", path, nullptr); }
  Result<Json> Post(const std::string& path, const Json& body, const Headers& headers = {}) {
    return Send("POST", path, &body, headers);
  }
  Result<Json> Delete(const std::string& path) { return Send("DELETE", path, nullptr); }
  // The reply's body as text, for replies that are not JSON (CSV).
  Result<std::string> GetText(const std::string& path) { return Fetch("GET", path, nullptr, {}); }

 private:
  ApiClient(std::vector<ServerUrl> urls, std::string display, std::string token, std::string ca_file)
      : urls_(std::move(urls)), display_(std::move(display)), token_(std::move(token)), ca_file_(std::move(ca_file)) {}
  // One request (cli/http.h), to the servers in turn as below; the body of a 2xx reply, else
  // the error.
  Result<std::string> Fetch(const std::string& method, const std::string& path, const Json* body,
                            const Headers& headers);

  // Several URLs (comma-separated) name a daemon's replicas: a request goes to the one that
  // answered last; a 307 from a follower is followed to the leader (at most three hops); a server
  // that cannot be reached, or answers 503, makes the request go to the next one, a write only
  // when nothing reached the server or the server said it does not lead.
  std::vector<ServerUrl> urls_;
  size_t current_ = 0;
  std::string display_;  // the URL as the user gave it
  std::string token_;
  std::string ca_file_;
};

}  // namespace gpupool::cli
