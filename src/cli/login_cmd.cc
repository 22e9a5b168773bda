// `gpupool login` and `gpupool logout`: single sign-on at the identity provider the server trusts
// (GET /v1/auth names it), with the tokens kept in the login cache (cli/login.h). Exit codes as
// the other client verbs: 0 done, 1 refused or unreachable, 2 a usage error.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <ctime>
#include <iostream>

#include "cli/commands.h"
#include "cli/invocation.h"
#include "cli/login.h"
#include "cli/terminal.h"

namespace gpupool::cli {

const char* const kLoginUsage =
    "usage: gpupool login [--issuer URL] [--client-id ID] [--flow auto|device|browser] [--idp-ca FILE]\n"
    "         [--timeout SECONDS]\n"
    "  Signs in at the identity provider the server trusts (GET /v1/auth) and keeps the tokens in\n"
    "  ~/.config/gpupool/credentials.json (mode 0600; $GPUPOOL_CREDENTIALS to put it elsewhere), for\n"
    "  the commands that follow; they refresh the token as it expires.\n"
    "  --flow device: a code to confirm in any browser (RFC 8628); browser: a browser on this machine\n"
    "    comes back to 127.0.0.1 (authorization code with PKCE); auto (default): device where the\n"
    "    provider offers it. $BROWSER, when set, is run with the URL to open.\n"
    "  --issuer: which of the server's issuers (when it trusts several). --idp-ca: a PEM file to\n"
    "    trust for the provider besides the system's. --timeout: how long to wait (default 300).\n";
const char* const kLogoutUsage =
    "usage: gpupool logout   (forgets the login to the server and revokes its refresh token at the provider)\n";

namespace {

std::string Rfc3339(int64_t unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Holds PATH.lock for the life of the object, as CachedToken does while it refreshes.
struct CredentialsLock {
  int fd = -1;
  explicit CredentialsLock(const std::string& path) {
    fd = open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) flock(fd, LOCK_EX);
  }
  ~CredentialsLock() {
    if (fd >= 0) close(fd);
  }
};

std::string Grants(const Json& me) {
  std::string out;
  for (const Json& g : me.value("grants", Json::array())) {
    out += (out.empty() ? "" : ", ") + g.value("tenant", "") + " (" + g.value("role", "") + ")";
  }
  return out.empty() ? me.value("role", "") : out;
}

}  // namespace

int Login(const std::vector<std::string>& argv) {
  Invocation inv("login", kLoginUsage);
  if (int rc = inv.Parse(argv, {"issuer", "client-id", "flow", "idp-ca", "timeout"}); rc >= 0) return rc;
  if (int rc = inv.ExpectPositionals(0, "login takes no arguments"); rc >= 0) return rc;
  const Args& args = inv.args();
  const std::string flow = args.Str("flow", "auto");
  if (flow != "auto" && flow != "device" && flow != "browser") return inv.Usage("--flow is auto, device or browser");
  Result<int64_t> timeout = args.Int("timeout", 300, 10, 3600);
  if (!timeout.ok()) return inv.Usage(timeout.error().message);
  Result<ClientConfig> config = inv.Config();
  if (!config.ok()) return inv.Fail(config.error(), 2);
  const std::string path = CredentialsPath([](const char* name) { return std::getenv(name); });
  if (path.empty()) return inv.Fail(InvalidArgument("no $HOME or $GPUPOOL_CREDENTIALS to keep the login in"), 2);
  if (int rc = inv.Connect(/*use_login=*/false); rc >= 0) return rc;

  // Which provider, and as which client: the server says.
  Result<Json> auth = inv.api().Get("/v1/auth");
  if (!auth.ok()) return inv.Fail(auth.error(), 1);
  const Json issuers = auth->value("oidc", Json::array());
  Json chosen;
  std::string names;
  for (const Json& i : issuers) {
    const std::string name = i.value("issuer", "");
    names += (names.empty() ? "" : ", ") + name;
    if (args.Has("issuer") ? name == args.Str("issuer", "") : issuers.size() == 1) chosen = i;
  }
  if (chosen.is_null()) {
    return inv.Fail(InvalidArgument(issuers.empty() ? config->url + " trusts no identity provider (ask for an API token)"
                                    : args.Has("issuer") ? config->url + " does not trust " + args.Str("issuer", "") +
                                                               " (it trusts " + names + ")"
                                                         : config->url + " trusts several issuers (" + names +
                                                               "); choose one with --issuer"),
                    2);
  }
  LoginClient client;
  client.client_id = args.Str("client-id", chosen.value("client_id", ""));
  if (client.client_id.empty()) {
    return inv.Fail(InvalidArgument(config->url + " names no client_id for " + chosen.value("issuer", "") +
                                    "; give --client-id"),
                    2);
  }
  for (const Json& s : chosen.value("scopes", Json::array({"openid"}))) client.scopes.push_back(s.get<std::string>());
  Result<OidcEndpoints> endpoints = Discover(chosen.value("issuer", ""), args.Str("idp-ca", ""));
  if (!endpoints.ok()) return inv.Fail(endpoints.error(), 1);
  client.endpoints = *endpoints;

  const bool device = flow == "device" || (flow == "auto" && !endpoints->device_authorization_endpoint.empty());
  const Prompt prompt = [device](const std::string& url, const std::string& code) {
    if (device) {
      std::cerr << "To sign in, open\n  " << url << "\nand confirm the code " << code << "\n";
    } else {
      std::cerr << "To sign in, open this URL in a browser on this machine:\n  " << url << "\n";
    }
    std::cerr << "Waiting for the sign-in...\n" << std::flush;
  };
  Result<Tokens> tokens = device ? DeviceLogin(client, prompt, static_cast<int>(*timeout))
                                 : BrowserLogin(client, prompt, static_cast<int>(*timeout));
  if (!tokens.ok()) return inv.Fail(tokens.error(), 1);

  // Kept only when the server takes it: a token it refuses helps nobody.
  ClientConfig with_token = *config;
  with_token.token = tokens->id_token;
  Result<std::unique_ptr<ApiClient>> api = ApiClient::Connect(with_token);
  if (!api.ok()) return inv.Fail(api.error(), 2);
  Result<Json> summary = (*api)->Get("/v1/summary");
  if (!summary.ok()) {
    return inv.Fail(Error{summary.error().code, "signed in at " + client.endpoints.issuer + " as " + tokens->username +
                                                    ", but " + config->url + " refuses the token: " +
                                                    summary.error().message},
                    1);
  }
  {
    CredentialsLock lock(path);
    Result<std::map<std::string, StoredLogin>> logins = ReadCredentials(path);
    std::map<std::string, StoredLogin> kept = logins.ok() ? *logins : std::map<std::string, StoredLogin>{};
    if (!logins.ok()) std::cerr << "gpupool login: replacing " << path << ": " << logins.error().message << "\n";
    kept[config->url] = StoredLogin{client, *tokens};
    if (Status s = WriteCredentials(path, kept); !s.ok()) return inv.Fail(s.error(), 1);
  }
  const Json me = summary->value("me", Json::object());
  if (inv.PrintedAsData(me)) return 0;
  std::cout << "signed in to " << StripControls(config->url) << " as " << StripControls(me.value("name", ""))
            << ": " << StripControls(Grants(me)) << "\n"
            << "the token expires at " << Rfc3339(tokens->expires)
            << (tokens->refresh_token.empty() ? " (no refresh token: log in again then)" : " and is refreshed as needed")
            << "\n";
  return 0;
}

int Logout(const std::vector<std::string>& argv) {
  Invocation inv("logout", kLogoutUsage);
  if (int rc = inv.Parse(argv, {}); rc >= 0) return rc;
  if (int rc = inv.ExpectPositionals(0, "logout takes no arguments"); rc >= 0) return rc;
  Result<ClientConfig> config = inv.Config();
  if (!config.ok()) return inv.Fail(config.error(), 2);
  const std::string path = CredentialsPath([](const char* name) { return std::getenv(name); });
  if (path.empty()) return inv.Fail(InvalidArgument("no $HOME or $GPUPOOL_CREDENTIALS"), 2);
  CredentialsLock lock(path);
  Result<std::map<std::string, StoredLogin>> logins = ReadCredentials(path);
  if (!logins.ok()) return inv.Fail(logins.error(), 1);
  auto it = logins->find(config->url);
  if (it == logins->end()) {
    std::cout << "not signed in to " << StripControls(config->url) << "\n";
    return 0;
  }
  const StoredLogin gone = it->second;
  logins->erase(it);
  if (Status s = WriteCredentials(path, *logins); !s.ok()) return inv.Fail(s.error(), 1);
  std::cout << "signed out of " << StripControls(config->url) << "\n";
  if (gone.tokens.refresh_token.empty()) return 0;
  if (Status s = Revoke(gone.client, gone.tokens.refresh_token); !s.ok()) {
    std::cerr << "gpupool logout: the refresh token was not revoked at " << StripControls(gone.client.endpoints.issuer)
              << ": " << StripControls(s.error().message) << "\n";
    return 1;
  }
  std::cout << "the refresh token is revoked at " << StripControls(gone.client.endpoints.issuer) << "\n";
  return 0;
}

}  // namespace gpupool::cli
