#include "cli/client.h"

#include <algorithm>
#include <optional>

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/http.h"

namespace gpupool::cli {
namespace {

bool AllDigits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

struct FileConfig {
  std::string url, token, ca;
};

// The config file: a YAML mapping with `url`, `token` and `ca`, all optional, nothing else.
Result<FileConfig> ReadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read config file " + path);
  std::stringstream text;
  text << in.rdbuf();
  FileConfig out;
  try {
    const YAML::Node root = YAML::Load(text.str());
    if (root.IsNull()) return out;
    if (!root.IsMap()) return InvalidArgument(path + ": expected a mapping with url: and token:");
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key != "url" && key != "token" && key != "ca") return InvalidArgument(path + ": unknown key '" + key + "'");
      if (!kv.second.IsScalar()) return InvalidArgument(path + ": '" + key + "' must be a string");
      (key == "url" ? out.url : key == "token" ? out.token : out.ca) = kv.second.Scalar();
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ": not valid YAML: " + e.what());
  }
  return out;
}

ErrorCode CodeNamed(const std::string& name) {
  for (ErrorCode c : {ErrorCode::kInvalidArgument, ErrorCode::kNotFound, ErrorCode::kAlreadyExists,
                      ErrorCode::kFailedPrecondition, ErrorCode::kConflict,
                      ErrorCode::kPermissionDenied, ErrorCode::kUnauthenticated,
                      ErrorCode::kResourceExhausted, ErrorCode::kUnavailable}) {
    if (ErrorCodeName(c) == name) return c;
  }
  return ErrorCode::kInternal;
}

}  // namespace

std::string ServerUrl::Origin() const {
  const bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ServerUrl> ParseServerUrl(const std::string& url) {
  ServerUrl out;
  std::string rest = url;
  if (const size_t p = rest.find("://"); p != std::string::npos) {
    out.scheme = rest.substr(0, p);
    rest = rest.substr(p + 3);
  } else {
    out.scheme = "http";
  }
  if (out.scheme != "http" && out.scheme != "https") {
    return InvalidArgument("server URL '" + url + "': scheme must be http or https");
  }
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    out.prefix = rest.substr(slash);
    rest = rest.substr(0, slash);
    while (!out.prefix.empty() && out.prefix.back() == '/') out.prefix.pop_back();
  }
  std::string port;
  if (!rest.empty() && rest[0] == '[') {  // [IPv6]:port
    const size_t close = rest.find(']');
    if (close == std::string::npos) return InvalidArgument("server URL '" + url + "': unclosed '['");
    out.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return InvalidArgument("server URL '" + url + "': junk after ']'");
      port = rest.substr(close + 2);
    }
  } else if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    out.host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  } else {
    out.host = rest;
  }
  if (out.host.empty()) return InvalidArgument("server URL '" + url + "' has no host");
  if (out.host.find_first_of("@?#") != std::string::npos) {
    return InvalidArgument("server URL '" + url + "': unexpected character in the host");
  }
  if (port.empty()) {
    out.port = out.scheme == "https" ? 443 : 80;
  } else if (!AllDigits(port) || port.size() > 5 || std::stoi(port) < 1 || std::stoi(port) > 65535) {
    return InvalidArgument("server URL '" + url + "': bad port '" + port + "'");
  } else {
    out.port = std::stoi(port);
  }
  return out;
}

Result<ClientConfig> ResolveClientConfig(const std::string& flag_url, const std::string& flag_token,
                                         const GetEnv& getenv) {
  auto env = [&](const char* name) {
    const char* v = getenv(name);
    return std::string(v ? v : "");
  };
  ClientConfig c{flag_url, flag_token, flag_url.empty() ? "" : "--url"};
  if (c.url.empty() && !env("GPUPOOL_URL").empty()) c.url = env("GPUPOOL_URL"), c.url_source = "GPUPOOL_URL";
  if (c.token.empty()) c.token = env("GPUPOOL_TOKEN");
  c.ca_file = env("GPUPOOL_CA");
  if (c.url.empty() || c.token.empty() || c.ca_file.empty()) {
    const std::string explicit_path = env("GPUPOOL_CONFIG");
    const std::string path = !explicit_path.empty() ? explicit_path
                             : !env("HOME").empty() ? env("HOME") + "/.config/gpupool/config.yaml"
                                                    : "";
    Result<FileConfig> file = path.empty() ? Result<FileConfig>(FileConfig{}) : ReadConfigFile(path);
    if (!file.ok() && (file.error().code != ErrorCode::kNotFound || !explicit_path.empty())) {
      return InvalidArgument(file.error().message);
    }
    if (file.ok()) {
      if (c.url.empty() && !file->url.empty()) c.url = file->url, c.url_source = path;
      if (c.token.empty()) c.token = file->token;
      if (c.ca_file.empty()) c.ca_file = file->ca;
    }
  }
  if (c.url.empty()) c.url = kDefaultServerUrl, c.url_source = "the default";
  // Tokens pasted from files often carry a newline; it is never part of the secret.
  while (!c.token.empty() && (c.token.back() == '\n' || c.token.back() == '\r')) c.token.pop_back();
  return c;
}

Error ReplyError(int status, const std::string& body) {
  const Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const Json& e = j["error"];
    const std::string code = e.value("code", "");
    std::string message = e.contains("message") && e["message"].is_string()
                              ? e["message"].get<std::string>()
                              : "error";
    if (e.contains("details") && e["details"].is_string() && !e["details"].get<std::string>().empty()) {
      message += " (" + e["details"].get<std::string>() + ")";
    }
    return {CodeNamed(code), message + " [HTTP " + std::to_string(status) + " " + code + "]"};
  }
  std::string excerpt = body.substr(0, 200);
  while (!excerpt.empty() && (excerpt.back() == '\n' || excerpt.back() == ' ')) excerpt.pop_back();
  return {ErrorCode::kInternal, "HTTP " + std::to_string(status) + (excerpt.empty() ? "" : ": " + excerpt)};
}

Result<std::unique_ptr<ApiClient>> ApiClient::Connect(const ClientConfig& config) {
  std::vector<ServerUrl> urls;
  for (size_t from = 0; from <= config.url.size();) {
    size_t comma = config.url.find(',', from);
    if (comma == std::string::npos) comma = config.url.size();
    Result<ServerUrl> url = ParseServerUrl(config.url.substr(from, comma - from));
    if (!url.ok()) {
      return InvalidArgument(url.error().message + (config.url_source.empty() ? "" : " (from " + config.url_source + ")"));
    }
    urls.push_back(*url);
    from = comma + 1;
  }
  return std::unique_ptr<ApiClient>(new ApiClient(std::move(urls), config.url, config.token, config.ca_file));
}

namespace {

// A follower's 307 names the leader's URL followed by the request's target.
std::optional<ServerUrl> LeaderOf(const std::string& location, const std::string& target, const std::string& prefix) {
  if (location.size() <= target.size() || location.compare(location.size() - target.size(), target.size(), target) != 0) {
    return std::nullopt;
  }
  Result<ServerUrl> u = ParseServerUrl(location.substr(0, location.size() - target.size()) + prefix);
  if (!u.ok()) return std::nullopt;
  return *u;
}

bool NotLeading(const std::string& body) {
  return body.find("does not lead") != std::string::npos || body.find("no replica leads") != std::string::npos;
}

}  // namespace

Result<std::string> ApiClient::Fetch(const std::string& method, const std::string& path, const Json* body,
                                     const Headers& headers) {
  std::optional<Error> last;
  int hops = 0;
  for (size_t tried = 0; tried < urls_.size();) {
    const ServerUrl& url = urls_[current_];
    HttpRequest r{method, url.scheme == "https", url.host, url.port, url.prefix + path, {}, "", 5, 30, ca_file_};
    if (!token_.empty()) r.headers.emplace_back("Authorization", "Bearer " + token_);
    if (body != nullptr) {
      r.headers.emplace_back("Content-Type", "application/json");
      r.body = body->dump();
    }
    for (const auto& [k, v] : headers) r.headers.emplace_back(k, v);
    bool connected = false;
    Result<HttpResponse> reply = HttpSend(r, size_t{1} << 30, &connected);
    const bool more = tried + 1 < urls_.size();
    if (!reply.ok()) {
      last = Error{reply.error().code, "cannot reach the gpupool server at " + display_ + ": " + reply.error().message +
                                           " (set --url, GPUPOOL_URL or url: in the config file)"};
      if (!more || (connected && method != "GET")) return *last;
      current_ = (current_ + 1) % urls_.size();
      ++tried;
      continue;
    }
    const int status = reply->status;
    if ((status == 307 || status == 308) && hops < 3) {
      if (std::optional<ServerUrl> leader = LeaderOf(reply->location, r.target, url.prefix)) {
        ++hops;
        // The leader is tried next, and first from now on.
        const auto known = std::find_if(urls_.begin(), urls_.end(), [&](const ServerUrl& u) {
          return u.scheme == leader->scheme && u.host == leader->host && u.port == leader->port;
        });
        if (known == urls_.end()) {
          urls_.push_back(*leader);
          current_ = urls_.size() - 1;
        } else {
          current_ = static_cast<size_t>(known - urls_.begin());
        }
        continue;
      }
    }
    if (status == 503 && more && (method == "GET" || NotLeading(reply->body))) {
      last = ReplyError(status, reply->body);
      current_ = (current_ + 1) % urls_.size();
      ++tried;
      continue;
    }
    if (status < 200 || status > 299) {
      Error e = ReplyError(status, reply->body);
      if (status == 401 && token_.empty()) {
        e.message += "; no token given (set --token, GPUPOOL_TOKEN or token: in the config file)";
      }
      return e;
    }
    return std::move(reply->body);
  }
  return last.value_or(Error{ErrorCode::kUnavailable, "no gpupool server to ask"});
}

Result<Json> ApiClient::Send(const std::string& method, const std::string& path, const Json* body,
                             const Headers& headers) {
  if (method != "GET" && method != "POST" && method != "PATCH" && method != "DELETE") {
    return InvalidArgument("no HTTP method " + method);
  }
  Result<std::string> text = Fetch(method, path, body, headers);
  if (!text.ok()) return text.error();
  if (text->empty()) return Json::object();
  Json j = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Error{ErrorCode::kInternal, method + " " + path + ": the server's reply is not JSON"};
  }
  return j;
}

}  // namespace gpupool::cli
