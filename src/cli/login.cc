#include "cli/login.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <poll.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <optional>
#include <thread>
#include <tuple>

#include "api/url.h"
#include "cli/client.h"
#include "cli/http.h"
#include "core/base64url.h"

extern char** environ;

namespace gpupool::cli {
namespace {

using Json = nlohmann::json;
using Fields = std::vector<std::pair<std::string, std::string>>;

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// An https URL as a request: the host, port and target. Only https: tokens never cross plain HTTP.
Result<HttpRequest> RequestFor(const std::string& method, const std::string& url, const std::string& ca_file) {
  Result<ServerUrl> u = ParseServerUrl(url);
  if (!u.ok()) return u.error();
  if (u->scheme != "https") return InvalidArgument("the provider's endpoint is not an https:// URL: " + url);
  HttpRequest req;
  req.method = method;
  req.tls = true;
  req.host = u->host;
  req.port = u->port;
  req.target = u->prefix.empty() ? "/" : u->prefix;
  req.headers = {{"Accept", "application/json"}};
  req.connect_timeout_s = 5;
  req.io_timeout_s = 15;
  req.ca_file = ca_file;
  return req;
}

// POSTs a form and parses the JSON reply: the object for a 2xx (an empty object for an empty
// body, as revocation answers); for an OAuth error reply
// ({"error": CODE, "error_description": ...}) an Error whose message starts with CODE.
Result<Json> PostForm(const std::string& url, const std::string& ca_file, const Fields& fields) {
  Result<HttpRequest> req = RequestFor("POST", url, ca_file);
  if (!req.ok()) return req.error();
  req->headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  req->body = FormEncode(fields);
  Result<HttpResponse> r = HttpSend(*req, size_t{1} << 20);
  if (!r.ok()) return Error{ErrorCode::kUnavailable, r.error().message};
  const Json j = Json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (r->status / 100 == 2) {
    if (r->body.empty()) return Json::object();
    if (!j.is_object()) return InvalidArgument("the provider's reply from " + url + " is not a JSON object");
    return j;
  }
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    std::string message = j["error"].get<std::string>();
    if (j.contains("error_description") && j["error_description"].is_string()) {
      message += ": " + j["error_description"].get<std::string>();
    }
    return Error{ErrorCode::kUnauthenticated, message};
  }
  return Error{ErrorCode::kUnavailable, "HTTP " + std::to_string(r->status) + " from " + url};
}

bool OAuthError(const Error& e, const std::string& code) {
  return e.code == ErrorCode::kUnauthenticated && (e.message == code || e.message.rfind(code + ":", 0) == 0);
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      const int hi = i + 2 < s.size() ? HexDigit(s[i + 1]) : -1, lo = i + 2 < s.size() ? HexDigit(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) return InvalidArgument("bad percent-encoding in '" + s + "'");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A file descriptor closed on every path.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// The loopback listener of BrowserLogin: one request line read (8 KiB, 5 s at most), one reply.
std::optional<std::string> ReadRequestLine(int fd) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got.find("\r\n") == std::string::npos && got.size() < 8192) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    char buf[2048];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    got.append(buf, static_cast<size_t>(n));
  }
  const size_t eol = got.find("\r\n");
  if (eol == std::string::npos) return std::nullopt;
  return got.substr(0, eol);
}

void Answer(int fd, int status, const std::string& text) {
  const std::string body = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>gpupool</title></head><body><p>" +
                           text + "</p></body></html>\n";
  const std::string reply = "HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK" : " Bad Request") +
                            "\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: " +
                            std::to_string(body.size()) +
                            "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n" + body;
  (void)!send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
}

Json StoredJson(const StoredLogin& s) {
  const OidcEndpoints& e = s.client.endpoints;
  return {{"issuer", e.issuer},
          {"client_id", s.client.client_id},
          {"scopes", s.client.scopes},
          {"token_endpoint", e.token_endpoint},
          {"revocation_endpoint", e.revocation_endpoint},
          {"ca_file", e.ca_file},
          {"id_token", s.tokens.id_token},
          {"refresh_token", s.tokens.refresh_token},
          {"expires", s.tokens.expires},
          {"username", s.tokens.username}};
}

Result<StoredLogin> StoredFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("a login is not an object");
  StoredLogin s;
  OidcEndpoints& e = s.client.endpoints;
  for (auto [key, field] : {std::pair{"issuer", &e.issuer}, std::pair{"client_id", &s.client.client_id},
                            std::pair{"token_endpoint", &e.token_endpoint},
                            std::pair{"revocation_endpoint", &e.revocation_endpoint},
                            std::pair{"ca_file", &e.ca_file}, std::pair{"id_token", &s.tokens.id_token},
                            std::pair{"refresh_token", &s.tokens.refresh_token},
                            std::pair{"username", &s.tokens.username}}) {
    if (j.contains(key) && !j[key].is_string()) return InvalidArgument(std::string("'") + key + "' is not a string");
    *field = j.value(key, "");
  }
  if (j.contains("scopes") && j["scopes"].is_array()) {
    for (const Json& w : j["scopes"]) {
      if (w.is_string()) s.client.scopes.push_back(w.get<std::string>());
    }
  }
  if (!j.contains("expires") || !j["expires"].is_number_integer()) return InvalidArgument("'expires' is not a number");
  s.tokens.expires = j["expires"].get<int64_t>();
  if (s.tokens.id_token.empty()) return InvalidArgument("no id_token");
  return s;
}

Status EnsureDirectory(const std::string& dir) {
  if (dir.empty()) return Ok();
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0) return Ok();
  const size_t slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0) GP_RETURN_IF_ERROR(EnsureDirectory(dir.substr(0, slash)));
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return InvalidArgument("cannot create " + dir + ": " + std::strerror(errno));
  }
  return Ok();
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

}  // namespace

std::string PkceChallenge(const std::string& verifier) {
  unsigned char digest[32];
  unsigned int len = 0;
  EVP_Digest(verifier.data(), verifier.size(), digest, &len, EVP_sha256(), nullptr);
  return Base64Url(std::string_view(reinterpret_cast<const char*>(digest), len));
}

std::string RandomToken(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) std::abort();
  return Base64Url(raw);
}

std::string FormEncode(const Fields& fields) {
  std::string out;
  for (const auto& [k, v] : fields) out += (out.empty() ? "" : "&") + UrlEncode(k) + "=" + UrlEncode(v);
  return out;
}

Result<std::pair<std::string, std::map<std::string, std::string>>> SplitTarget(const std::string& target) {
  const size_t q = target.find('?');
  std::pair<std::string, std::map<std::string, std::string>> out{target.substr(0, q), {}};
  if (q == std::string::npos) return out;
  std::stringstream query(target.substr(q + 1));
  for (std::string pair; std::getline(query, pair, '&');) {
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    Result<std::string> key = PercentDecode(pair.substr(0, eq));
    Result<std::string> value = PercentDecode(eq == std::string::npos ? "" : pair.substr(eq + 1));
    if (!key.ok()) return key.error();
    if (!value.ok()) return value.error();
    if (!out.second.emplace(*key, *value).second) return InvalidArgument("parameter '" + *key + "' given twice");
  }
  return out;
}

Result<Json> UnverifiedClaims(const std::string& jwt) {
  const size_t a = jwt.find('.'), b = a == std::string::npos ? a : jwt.find('.', a + 1);
  if (b == std::string::npos || jwt.find('.', b + 1) != std::string::npos) return InvalidArgument("not a JWT");
  std::optional<std::string> payload = FromBase64Url(std::string_view(jwt).substr(a + 1, b - a - 1));
  if (!payload) return InvalidArgument("a JWT's payload is not base64url");
  Json claims = Json::parse(*payload, nullptr, /*allow_exceptions=*/false);
  if (!claims.is_object()) return InvalidArgument("a JWT's payload is not a JSON object");
  return claims;
}

Result<Tokens> TokensFromReply(const Json& reply, const std::string& nonce) {
  if (!reply.contains("id_token") || !reply["id_token"].is_string()) {
    return InvalidArgument("the provider sent no ID token (is 'openid' among the scopes?)");
  }
  Tokens t;
  t.id_token = reply["id_token"].get<std::string>();
  if (reply.contains("refresh_token") && reply["refresh_token"].is_string()) {
    t.refresh_token = reply["refresh_token"].get<std::string>();
  }
  Result<Json> claims = UnverifiedClaims(t.id_token);
  if (!claims.ok()) return InvalidArgument("the provider's ID token: " + claims.error().message);
  if (!claims->contains("exp") || !(*claims)["exp"].is_number()) return InvalidArgument("the ID token has no exp");
  t.expires = (*claims)["exp"].get<int64_t>();
  if (!nonce.empty() && claims->value("nonce", "") != nonce) {
    return InvalidArgument("the ID token's nonce is not the one this login sent");
  }
  for (const char* claim : {"email", "preferred_username", "sub"}) {
    if (claims->contains(claim) && (*claims)[claim].is_string()) {
      t.username = (*claims)[claim].get<std::string>();
      break;
    }
  }
  return t;
}

Result<OidcEndpoints> Discover(const std::string& issuer, const std::string& ca_file) {
  std::string base = issuer;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string url = base + "/.well-known/openid-configuration";
  Result<HttpRequest> req = RequestFor("GET", url, ca_file);
  if (!req.ok()) return req.error();
  Result<HttpResponse> r = HttpSend(*req, size_t{1} << 20);
  if (!r.ok()) return Error{ErrorCode::kUnavailable, "cannot reach the identity provider: " + r.error().message};
  if (r->status != 200) return Error{ErrorCode::kUnavailable, "HTTP " + std::to_string(r->status) + " from " + url};
  const Json doc = Json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return InvalidArgument(url + " is not a JSON object");
  OidcEndpoints e;
  e.ca_file = ca_file;
  for (auto [key, field, required] :
       {std::tuple{"issuer", &e.issuer, true}, std::tuple{"token_endpoint", &e.token_endpoint, true},
        std::tuple{"authorization_endpoint", &e.authorization_endpoint, false},
        std::tuple{"device_authorization_endpoint", &e.device_authorization_endpoint, false},
        std::tuple{"revocation_endpoint", &e.revocation_endpoint, false}}) {
    if (doc.contains(key) && doc[key].is_string()) *field = doc[key].get<std::string>();
    if (required && field->empty()) return InvalidArgument(url + " names no " + key);
  }
  // OpenID Connect Discovery 1.0, 4.3: the document must be the issuer's own.
  if (e.issuer != issuer) return InvalidArgument(url + " is for issuer " + e.issuer + ", not " + issuer);
  return e;
}

Result<Tokens> DeviceLogin(const LoginClient& c, const Prompt& prompt, int timeout_s) {
  if (c.endpoints.device_authorization_endpoint.empty()) {
    return InvalidArgument(c.endpoints.issuer + " offers no device login; use --flow browser");
  }
  Result<Json> start = PostForm(c.endpoints.device_authorization_endpoint, c.endpoints.ca_file,
                                {{"client_id", c.client_id}, {"scope", Joined(c.scopes)}});
  if (!start.ok()) return start.error();
  const std::string device_code = start->value("device_code", ""), user_code = start->value("user_code", "");
  const std::string uri = start->value("verification_uri", ""), complete = start->value("verification_uri_complete", "");
  if (device_code.empty() || user_code.empty() || uri.empty()) {
    return InvalidArgument("the provider's device authorization reply lacks device_code, user_code or verification_uri");
  }
  int interval = start->contains("interval") && (*start)["interval"].is_number_integer() ? (*start)["interval"].get<int>() : 5;
  interval = std::max(1, std::min(interval, 60));
  int64_t lifetime = start->contains("expires_in") && (*start)["expires_in"].is_number_integer()
                         ? (*start)["expires_in"].get<int64_t>()
                         : timeout_s;
  const int64_t deadline = NowSeconds() + std::min<int64_t>(lifetime, timeout_s);
  prompt(complete.empty() ? uri : complete, user_code);
  OpenBrowser(complete.empty() ? uri : complete);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(interval));
    Result<Json> got = PostForm(c.endpoints.token_endpoint, c.endpoints.ca_file,
                                {{"grant_type", "urn:ietf:params:oauth:grant-type:device_code"},
                                 {"device_code", device_code},
                                 {"client_id", c.client_id}});
    if (got.ok()) return TokensFromReply(*got, "");
    if (OAuthError(got.error(), "slow_down")) {
      interval += 5;  // RFC 8628, 3.5
    } else if (OAuthError(got.error(), "access_denied")) {
      return Error{ErrorCode::kUnauthenticated, "the sign-in was refused at the provider"};
    } else if (OAuthError(got.error(), "expired_token")) {
      return Error{ErrorCode::kUnauthenticated, "the code " + user_code + " expired before it was entered"};
    } else if (!OAuthError(got.error(), "authorization_pending") && got.error().code != ErrorCode::kUnavailable) {
      return got.error();
    }
    if (NowSeconds() + interval > deadline) {
      return Error{ErrorCode::kUnauthenticated, "nobody entered the code " + user_code + " in time"};
    }
  }
}

std::string AuthorizationUrl(const LoginClient& c, const std::string& redirect_uri, const std::string& state,
                             const std::string& nonce, const std::string& verifier) {
  Fields query = {{"response_type", "code"},
                  {"client_id", c.client_id},
                  {"redirect_uri", redirect_uri},
                  {"scope", Joined(c.scopes)},
                  {"state", state},
                  {"nonce", nonce},
                  {"code_challenge", PkceChallenge(verifier)},
                  {"code_challenge_method", "S256"}};
  // OpenID Connect Core 11: offline_access (a refresh token) is granted only with prompt=consent.
  if (std::find(c.scopes.begin(), c.scopes.end(), "offline_access") != c.scopes.end()) query.emplace_back("prompt", "consent");
  const std::string& auth = c.endpoints.authorization_endpoint;
  return auth + (auth.find('?') == std::string::npos ? "?" : "&") + FormEncode(query);
}

Result<Tokens> ExchangeCode(const LoginClient& c, const std::string& code, const std::string& redirect_uri,
                            const std::string& verifier, const std::string& nonce) {
  Result<Json> got = PostForm(c.endpoints.token_endpoint, c.endpoints.ca_file,
                              {{"grant_type", "authorization_code"},
                               {"code", code},
                               {"redirect_uri", redirect_uri},
                               {"client_id", c.client_id},
                               {"code_verifier", verifier}});
  return got.ok() ? TokensFromReply(*got, nonce) : Result<Tokens>(got.error());
}

Result<Tokens> BrowserLogin(const LoginClient& c, const Prompt& prompt, int timeout_s) {
  if (c.endpoints.authorization_endpoint.empty()) {
    return InvalidArgument(c.endpoints.issuer + " names no authorization_endpoint");
  }
  Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener.fd < 0 || bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener.fd, 8) != 0 || getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Error{ErrorCode::kUnavailable, std::string("cannot listen on 127.0.0.1 for the redirect: ") + std::strerror(errno)};
  }
  const std::string redirect = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/callback";
  const std::string verifier = RandomToken(32), state = RandomToken(16), nonce = RandomToken(16);
  const std::string url = AuthorizationUrl(c, redirect, state, nonce, verifier);
  prompt(url, "");
  OpenBrowser(url);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Error{ErrorCode::kUnauthenticated, "the browser did not come back in time"};
    pollfd p{listener.fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000))) <= 0) continue;
    Fd conn(accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.fd < 0) continue;
    std::optional<std::string> line = ReadRequestLine(conn.fd);
    // "GET /callback?... HTTP/1.1"
    const size_t sp1 = line ? line->find(' ') : std::string::npos;
    const size_t sp2 = sp1 == std::string::npos ? sp1 : line->find(' ', sp1 + 1);
    if (sp2 == std::string::npos || line->substr(0, sp1) != "GET") {
      Answer(conn.fd, 400, "Not a sign-in redirect.");
      continue;
    }
    auto target = SplitTarget(line->substr(sp1 + 1, sp2 - sp1 - 1));
    if (!target.ok() || target->first != "/callback") {
      Answer(conn.fd, 400, "Not a sign-in redirect.");
      continue;
    }
    auto& params = target->second;
    if (params["state"] != state) {  // someone else's request on this port: ignored
      Answer(conn.fd, 400, "This is not the sign-in gpupool started.");
      continue;
    }
    if (!params["error"].empty()) {
      Answer(conn.fd, 400, "The sign-in was refused. You may close this page.");
      return Error{ErrorCode::kUnauthenticated,
                   "the provider refused: " + params["error"] +
                       (params["error_description"].empty() ? "" : ": " + params["error_description"])};
    }
    if (params["code"].empty()) {
      Answer(conn.fd, 400, "The redirect carries no code.");
      return InvalidArgument("the provider's redirect carries no code");
    }
    Result<Tokens> tokens = ExchangeCode(c, params["code"], redirect, verifier, nonce);
    Answer(conn.fd, tokens.ok() ? 200 : 400,
           tokens.ok() ? "Signed in to gpupool. You may close this page." : "The sign-in failed; see the terminal.");
    return tokens;
  }
}

Result<Tokens> Refresh(const LoginClient& c, const std::string& refresh_token) {
  Result<Json> got = PostForm(c.endpoints.token_endpoint, c.endpoints.ca_file,
                              {{"grant_type", "refresh_token"}, {"refresh_token", refresh_token}, {"client_id", c.client_id}});
  if (!got.ok()) return got.error();
  Result<Tokens> t = TokensFromReply(*got, "");
  if (t.ok() && t->refresh_token.empty()) t->refresh_token = refresh_token;  // not rotated
  return t;
}

Status Revoke(const LoginClient& c, const std::string& refresh_token) {
  if (c.endpoints.revocation_endpoint.empty()) return InvalidArgument("the provider offers no revocation");
  Result<Json> r = PostForm(c.endpoints.revocation_endpoint, c.endpoints.ca_file,
                            {{"token", refresh_token}, {"token_type_hint", "refresh_token"}, {"client_id", c.client_id}});
  if (!r.ok()) return r.error();
  return Ok();
}

std::string CredentialsPath(const GetEnvFn& getenv) {
  const char* explicit_path = getenv("GPUPOOL_CREDENTIALS");
  if (explicit_path != nullptr && *explicit_path != '\0') return explicit_path;
  const char* home = getenv("HOME");
  if (home == nullptr || *home == '\0') return "";
  return std::string(home) + "/.config/gpupool/credentials.json";
}

Result<std::map<std::string, StoredLogin>> ReadCredentials(const std::string& path) {
  std::map<std::string, StoredLogin> out;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return out;
    return InvalidArgument("cannot read " + path + ": " + std::strerror(errno));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return InvalidArgument(path + " may be read by others (mode " + mode + "); chmod 600 it or run gpupool login again");
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const Json doc = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("logins") || !doc["logins"].is_object()) {
    return InvalidArgument(path + " is damaged (not {\"logins\": {...}}); remove it and run gpupool login");
  }
  for (const auto& [server, entry] : doc["logins"].items()) {
    Result<StoredLogin> s = StoredFromJson(entry);
    if (!s.ok()) return InvalidArgument(path + ": the login to " + server + ": " + s.error().message);
    out.emplace(server, *s);
  }
  return out;
}

Status WriteCredentials(const std::string& path, const std::map<std::string, StoredLogin>& logins) {
  GP_RETURN_IF_ERROR(EnsureDirectory(DirOf(path)));
  Json doc = {{"logins", Json::object()}};
  for (const auto& [server, s] : logins) doc["logins"][server] = StoredJson(s);
  const std::string text = doc.dump(2) + "\n";
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  Fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.fd < 0) return InvalidArgument("cannot write " + tmp + ": " + std::strerror(errno));
  const bool written = write(fd.fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       fchmod(fd.fd, 0600) == 0 && fsync(fd.fd) == 0;
  if (!written || rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    return InvalidArgument("cannot write " + path + ": " + why);
  }
  return Ok();
}

Result<std::string> CachedToken(const std::string& path, const std::string& server_url, int64_t now) {
  if (path.empty()) return NotFound("no credentials file (no $HOME)");
  auto due = [&](const StoredLogin& s) { return s.tokens.expires - now < 60; };
  {
    Result<std::map<std::string, StoredLogin>> logins = ReadCredentials(path);
    if (!logins.ok()) return logins.error();
    auto it = logins->find(server_url);
    if (it == logins->end()) return NotFound("no login to " + server_url);
    if (!due(it->second)) return it->second.tokens.id_token;
  }
  Fd lock(open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (lock.fd < 0 || flock(lock.fd, LOCK_EX) != 0) {
    return InvalidArgument("cannot lock " + path + ".lock: " + std::strerror(errno));
  }
  // Another command may have refreshed while this one waited for the lock.
  Result<std::map<std::string, StoredLogin>> logins = ReadCredentials(path);
  if (!logins.ok()) return logins.error();
  auto it = logins->find(server_url);
  if (it == logins->end()) return NotFound("no login to " + server_url);
  if (!due(it->second)) return it->second.tokens.id_token;
  const std::string again = "; run gpupool login --url " + server_url;
  if (it->second.tokens.refresh_token.empty()) {
    return Error{ErrorCode::kUnauthenticated, "the login to " + server_url + " has expired (no refresh token)" + again};
  }
  Result<Tokens> fresh = Refresh(it->second.client, it->second.tokens.refresh_token);
  if (!fresh.ok()) {
    return Error{fresh.error().code == ErrorCode::kUnavailable ? ErrorCode::kUnavailable : ErrorCode::kUnauthenticated,
                 "the login to " + server_url + " could not be refreshed: " + fresh.error().message + again};
  }
  if (fresh->username.empty()) fresh->username = it->second.tokens.username;
  it->second.tokens = *fresh;
  GP_RETURN_IF_ERROR(WriteCredentials(path, *logins));
  return fresh->id_token;
}

bool OpenBrowser(const std::string& url) {
  const char* browser = std::getenv("BROWSER");
  if (browser == nullptr || *browser == '\0') return false;
  // sh -c '$BROWSER "$1"' sh URL: the URL is an argument, never shell text.
  const std::string script = std::string(browser) + " \"$1\"";
  const char* argv[] = {"sh", "-c", script.c_str(), "sh", url.c_str(), nullptr};
  pid_t pid = 0;
  return posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char* const*>(argv), environ) == 0;
}

}  // namespace gpupool::cli
