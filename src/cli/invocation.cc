#include "cli/invocation.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/page.h"
#include "api/url.h"
#include "cli/client_request.h"
#include "cli/login.h"

namespace gpupool::cli {

const char* const kConnectionFlags =
    "  --url URL  --token TOKEN  --ca FILE  (else GPUPOOL_URL, GPUPOOL_TOKEN, GPUPOOL_CA, or url:/token:/ca: in\n"
    "  $GPUPOOL_CONFIG or ~/.config/gpupool/config.yaml; else the login gpupool login keeps)  -o table|json|yaml\n"
    "  (these may also come before the verb: gpupool --token T get jobs)\n";

namespace {
const std::set<std::string> kCommonFlags = {"url", "token", "ca", "output", "help"};
}  // namespace

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int Invocation::Parse(const std::vector<std::string>& argv, std::set<std::string> flags, bool takes_command,
                      std::set<std::string> switches) {
  switches.insert("help");
  Result<SplitArgs> split = SplitCommandLine(argv, switches);
  if (!split.ok()) return Usage(split.error().message);
  if (split->has_separator && !takes_command) return Usage("unexpected '--'");
  command_ = split->command;
  flags.insert(kCommonFlags.begin(), kCommonFlags.end());
  flags.insert(switches.begin(), switches.end());
  Result<Args> args = Args::Parse(split->flags, flags, switches);
  if (!args.ok()) return Usage(args.error().message);
  args_ = std::move(*args);
  if (args_.Has("help")) {
    std::cout << usage_ << kConnectionFlags;
    return 0;
  }
  Result<Format> format = ParseFormat(args_.Str("output", "table"));
  if (!format.ok()) return Usage(format.error().message);
  if (*format == Format::kCsv && verb_ != "usage") return Usage("-o csv is for gpupool usage");
  format_ = *format;
  return -1;
}

int Invocation::ExpectPositionals(size_t n, const std::string& message) const {
  const auto& pos = args_.positional();
  if (pos.size() == n) return -1;
  return Usage(pos.size() > n ? "unexpected '" + pos[n] + "'; " + message : message);
}

Result<ClientConfig> Invocation::Config() const {
  Result<ClientConfig> config = ResolveClientConfig(args_.Str("url", ""), args_.Str("token", ""),
                                                    [](const char* name) { return std::getenv(name); });
  if (config.ok() && args_.Has("ca")) config->ca_file = args_.Str("ca", "");
  return config;
}

int Invocation::Connect(bool use_login) {
  Result<ClientConfig> config = Config();
  if (!config.ok()) return Fail(config.error(), 2);
  if (use_login && config->token.empty()) {
    // No token given: the one `gpupool login` keeps for this server, refreshed when due.
    Result<std::string> cached = CachedToken(CredentialsPath([](const char* name) { return std::getenv(name); }),
                                             config->url, NowMillis() / 1000);
    if (cached.ok()) config->token = *cached;
    if (!cached.ok() && cached.error().code != ErrorCode::kNotFound) return Fail(cached.error(), 1);
  }
  Result<std::unique_ptr<ApiClient>> api = ApiClient::Connect(*config);
  if (!api.ok()) return Fail(api.error(), 2);
  api_ = std::move(*api);
  return -1;
}

int Invocation::Call(const std::string& method, const std::string& path, const Json* body, const Render& table,
                     const ApiClient::Headers& headers) {
  if (!api_) {
    if (int rc = Connect(); rc >= 0) return rc;
  }
  return Show(api_->Send(method, path, body, headers), table);
}

int Invocation::Show(const Result<Json>& reply, const Render& table) const {
  if (!reply.ok()) return Fail(reply.error(), 1);
  if (!PrintedAsData(*reply)) table(*reply);
  return 0;
}

int Invocation::Usage(const std::string& message) const {
  std::cerr << "gpupool " << verb_ << ": " << message << "\n" << usage_;
  return 2;
}

int Invocation::Fail(const Error& e, int code) const {
  std::cerr << "gpupool " << verb_ << ": " << e.message << "\n";
  return code;
}

bool Invocation::PrintedAsData(const Json& reply) const {
  if (format_ == Format::kTable) return false;
  std::cout << (format_ == Format::kJson ? ToJsonText(reply) : ToYaml(reply));
  return true;
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path);
  if (!in) return InvalidArgument("cannot read " + path);
  text << in.rdbuf();
  return text.str();
}

Result<Json> GetPages(ApiClient& api, const std::string& path, const std::string& query, const std::string& limit,
                      std::string cursor) {
  const std::string base = path + query + (query.empty() ? "?" : "&") + "limit=";
  auto after = [&] { return cursor.empty() ? std::string() : "&cursor=" + UrlEncode(cursor); };
  if (!limit.empty()) return api.Get(base + limit + after());
  Json items = Json::array();
  for (;;) {
    Result<Json> page = api.Get(base + std::to_string(kMaxPageLimit) + after());
    if (!page.ok()) return page.error();
    if (!page->is_object() || !page->contains("items") || !(*page)["items"].is_array()) return page;
    for (Json& j : (*page)["items"]) items.push_back(std::move(j));
    const Json next = page->value("next_cursor", Json());
    // A server without pages sends no next_cursor; a cursor that does not move would loop.
    if (!next.is_string() || next.get<std::string>() == cursor) break;
    cursor = next.get<std::string>();
  }
  return Json({{"items", std::move(items)}, {"next_cursor", nullptr}});
}

}  // namespace gpupool::cli
