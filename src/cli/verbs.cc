#include "cli/verbs.h"

#include <algorithm>
#include <cctype>
#include <iostream>

#include "cli/args.h"
#include "cli/client_kinds.h"
#include "cli/commands.h"
#include "cli/completion.h"
#include "cli/exec_full.h"
#include "cli/terminal.h"

namespace gpupool::cli {
namespace {

FullVerbs full_verbs = nullptr;  // set by Main

// Runs `v`, from this binary or from the full one.
int Run(const Verb& v, const std::vector<std::string>& argv) {
  if (v.run != nullptr && v.client) {
    // What the server sends was written by other users: it must not drive the terminal.
    const SafeTerminalOutput safe;
    return v.run(argv);
  }
  if (v.run != nullptr) return v.run(argv);
  if (full_verbs != nullptr) {
    if (RunFn f = full_verbs(v.name)) return f(argv);
  }
  return ExecFull(v.name, argv);
}

constexpr const char* kVersion = "gpupool 0.1.0\n";
constexpr const char* kVersionUsage = "usage: gpupool version   (prints the version)\n";
constexpr const char* kHelpUsage = "usage: gpupool help [VERB]   (the verbs, or one verb's usage)\n";

std::vector<std::string> KindWords(bool (*has)(const Kind&)) {
  std::vector<std::string> out;
  for (const Kind& k : Kinds()) {
    if (has(k)) out.push_back(k.plural);
  }
  return out;
}

// A verb that takes nothing but --help.
int NoArgs(const std::string& verb, const char* usage, const std::vector<std::string>& argv) {
  Result<Args> args = Args::Parse(argv, {"help"}, {"help"});
  if (args.ok() && args->Has("help")) {
    std::cout << usage;
    return 0;
  }
  if (args.ok() && args->positional().empty()) return -1;
  std::cerr << "gpupool " << verb << ": " << (args.ok() ? "unexpected '" + args->positional()[0] + "'" : args.error().message)
            << "\n" << usage;
  return 2;
}

int Version(const std::vector<std::string>& argv) {
  if (int rc = NoArgs("version", kVersionUsage, argv); rc >= 0) return rc;
  std::cout << kVersion;
  return 0;
}

void PrintVerbs(std::ostream& out) {
  out << "usage: gpupool [--url URL] [--token TOKEN] [-o table|json|yaml] COMMAND [ARGS...]\n\ncommands:\n";
  for (const Verb& v : Verbs()) {
    const std::string name = v.name;
    out << "  " << name << std::string(name.size() < 13 ? 13 - name.size() : 1, ' ') << v.summary << "\n";
  }
  out << "\ngpupool COMMAND --help shows its flags. The client commands find the server and token in\n"
         "--url/--token, GPUPOOL_URL/GPUPOOL_TOKEN, or url: and token: in $GPUPOOL_CONFIG or\n"
         "~/.config/gpupool/config.yaml; they exit 1 when the server refuses, 2 on usage errors.\n";
}

int Help(const std::vector<std::string>& argv) {
  Result<Args> args = Args::Parse(argv, {"help"}, {"help"});
  if (!args.ok() || args->positional().size() > 1) {
    std::cerr << "gpupool help: " << (args.ok() ? "one verb at most" : args.error().message) << "\n" << kHelpUsage;
    return 2;
  }
  if (args->Has("help")) {
    std::cout << kHelpUsage;
    return 0;
  }
  if (args->positional().empty()) {
    PrintVerbs(std::cout);
    return 0;
  }
  const Verb* v = FindVerb(args->positional()[0]);
  if (v == nullptr) {
    std::cerr << "gpupool help: no verb '" << args->positional()[0] << "'\n";
    return 2;
  }
  return Run(*v, {"--help"});
}

// Moves connection flags written before the verb behind it, before any "--".
Result<std::vector<std::string>> HoistGlobalFlags(const std::vector<std::string>& argv) {
  std::vector<std::string> global;
  size_t i = 0;
  for (; i < argv.size() && argv[i].size() > 1 && argv[i][0] == '-'; ++i) {
    const std::string& s = argv[i];
    const bool joined = s.rfind("--url=", 0) == 0 || s.rfind("--token=", 0) == 0 || s.rfind("--ca=", 0) == 0 ||
                        s.rfind("--output=", 0) == 0 || (s.rfind("-o", 0) == 0 && s.size() > 2);
    if (joined) {
      global.push_back(s);
    } else if (s == "--url" || s == "--token" || s == "--ca" || s == "--output" || s == "-o") {
      if (i + 1 >= argv.size()) return InvalidArgument(s + " needs a value");
      global.push_back(s);
      global.push_back(argv[++i]);
    } else if (s == "--help" || s == "-h") {
      return std::vector<std::string>{"help"};
    } else {
      return InvalidArgument("unknown flag " + s + " before the command (--url, --token, --ca and -o go there)");
    }
  }
  if (i == argv.size()) return global.empty() ? std::vector<std::string>{} : std::vector<std::string>{""};
  std::vector<std::string> out(argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
  const auto sep = std::find(out.begin() + 1, out.end(), "--");
  out.insert(sep, global.begin(), global.end());
  return out;
}

}  // namespace

const std::vector<Verb>& Verbs() {
  static const std::vector<Verb> verbs = {
      {"get", "list objects, or show one as a row: jobs, nodes, tenants, reservations, tokens, ...", kGetUsage,
       KindWords([](const Kind&) { return true; }), Get, true},
      {"describe", "show one object in detail: job ID | node NAME | tenant NAME", kDescribeUsage,
       KindWords([](const Kind& k) { return k.describe != nullptr; }), Describe, true},
      {"submit", "submit a job (flags, or -f JOB.yaml)", kSubmitUsage, {}, Submit, true},
      {"cancel", "cancel a job: ID", kCancelUsage, {}, Cancel, true},
      {"delete", "delete a job, node, tenant, reservation or token", kDeleteUsage,
       KindWords([](const Kind& k) { return k.deleted != nullptr; }), Delete, true},
      {"create", "create a token or a tenant", kCreateUsage, {"token", "tenant"}, Create, true},
      {"service-account", "a tenant's service accounts: list, create, delete, token (tenant admins)",
       kServiceAccountUsage, {"list", "create", "delete", "token"}, ServiceAccount, true},
      {"token", "rotate a token: a new secret, the old one stops now or after a grace", kTokenUsage, {"rotate"}, Token,
       true},
      {"edit", "change a tenant (flags, -f PATCH.yaml, or in $EDITOR)", kEditUsage, {"tenant"}, Edit, true},
      {"cordon", "stop new work on a node", kCordonUsage, {}, Cordon, true},
      {"uncordon", "let a node take work again", kUncordonUsage, {}, Uncordon, true},
      {"drain", "cordon a node and requeue its jobs", kDrainUsage, {}, Drain, true},
      {"reserve", "book GPUs for a time window (or a maintenance window)", kReserveUsage, {}, Reserve, true},
      {"availability", "earliest start for N GPUs, or GPUs reservable in a window", kAvailabilityUsage, {},
       Availability, true},
      {"usage", "usage and cost per tenant, flavor and kind (-o csv too)", kUsageUsage, {}, UsageReport, true},
      {"logs", "a job's output as its agent sent it", kLogsUsage, {}, Logs, true},
      {"whoami", "who the token is: name, tenants and roles, issuer, expiry", kWhoamiUsage, {}, Whoami, true},
      {"login", "sign in at the server's identity provider (device code or browser)", kLoginUsage, {}, Login, true},
      {"logout", "forget the login to the server and revoke its refresh token", kLogoutUsage, {}, Logout, true},
      {"serve", "run the control-plane daemon (REST API, metrics, console, journal)", kServeUsage, {}, nullptr,
       false},
      {"agent", "run the node agent on a GPU node", kAgentUsage, {}, nullptr, false},
      {"demo", "schedule a generated day on a small demo cluster and print it", kDemoUsage, {}, nullptr, false},
      {"catalogue", "the built-in GPU models and their MIG profiles [MODEL]", kCatalogueUsage, {}, Catalogue, false},
      {"sim", "trace-driven simulation: sim replay | sim packing", kSimUsage, {"replay", "packing"}, nullptr, false},
      {"completion", "print a shell completion script: completion bash|zsh", kCompletionUsage, {"bash", "zsh"},
       Completion, false},
      {"version", "print the version", kVersionUsage, {}, Version, false},
      {"help", "list the commands, or show one's usage: help VERB", kHelpUsage, {}, Help, false},
  };
  return verbs;
}

const Verb* FindVerb(const std::string& name) {
  for (const Verb& v : Verbs()) {
    if (name == v.name) return &v;
  }
  return nullptr;
}

std::vector<std::string> FlagsIn(const std::string& usage) {
  std::vector<std::string> out;
  for (size_t i = usage.find("--"); i != std::string::npos; i = usage.find("--", i + 2)) {
    size_t end = i + 2;
    while (end < usage.size() && (std::islower(static_cast<unsigned char>(usage[end])) ||
                                  std::isdigit(static_cast<unsigned char>(usage[end])) || usage[end] == '-')) {
      ++end;
    }
    if (end > i + 2 && std::islower(static_cast<unsigned char>(usage[i + 2]))) out.push_back(usage.substr(i, end - i));
    i = end - 2;
  }
  out.push_back("--help");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int Main(const std::vector<std::string>& argv, FullVerbs full) {
  full_verbs = full;
  Result<std::vector<std::string>> args = HoistGlobalFlags(argv);
  if (!args.ok()) {
    std::cerr << "gpupool: " << args.error().message << "\n";
    PrintVerbs(std::cerr);
    return 2;
  }
  if (args->empty() || args->front().empty()) {
    PrintVerbs(std::cerr);
    return 2;
  }
  const std::string verb = args->front();
  args->erase(args->begin());
  if (verb == kCompleteVerb) return CompleteCommand(*args);
  const Verb* v = FindVerb(verb);
  if (v == nullptr) {
    std::cerr << "gpupool: unknown command '" << verb << "'\n";
    PrintVerbs(std::cerr);
    return 2;
  }
  return Run(*v, *args);
}

}  // namespace gpupool::cli
