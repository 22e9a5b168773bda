// What every client verb does: parse its command line (with the connection flags every verb
// takes), resolve the server and token, send one request and show the reply, as a table or as
// the server's JSON (-o json|yaml), with the exit codes of the client verbs: 0 done, 1 the
// server refused or could not be reached, 2 a usage error (nothing was sent).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/client_view.h"

namespace gpupool::cli {

// The flags every client verb takes, as its --help shows them.
extern const char* const kConnectionFlags;

int64_t NowMillis();

class Invocation {
 public:
  using Render = std::function<void(const Json& reply)>;

  // `usage` is what --help prints (with kConnectionFlags) and what follows a usage error.
  Invocation(std::string verb, const char* usage) : verb_(std::move(verb)), usage_(usage) {}

  // Returns an exit code to stop with (0 for --help, 2 for a usage error), or -1 to go on.
  // `flags` take a value; `switches` take none (--help is always one). With `takes_command`,
  // the words after "--" are command(); without, "--" is a usage error.
  int Parse(const std::vector<std::string>& argv, std::set<std::string> flags, bool takes_command = false,
            std::set<std::string> switches = {});
  // -1 when there are exactly `n` positionals, else a usage error with `message`.
  int ExpectPositionals(size_t n, const std::string& message) const;

  // The server and token from the flags, the environment and the config file (not the login
  // cache).
  Result<ClientConfig> Config() const;
  // Resolves the server and token (without one given, the login cache's for the server, with
  // `use_login`); returns an exit code on failure, -1 on success.
  int Connect(bool use_login = true);
  // The one way the verbs talk to the server: connects (if not yet), sends, and shows the
  // reply: as JSON or YAML with -o json|yaml, else through `table`. Returns the exit code.
  int Call(const std::string& method, const std::string& path, const Json* body, const Render& table,
           const ApiClient::Headers& headers = {});
  // Shows a reply obtained otherwise (several requests) the same way.
  int Show(const Result<Json>& reply, const Render& table) const;

  int Usage(const std::string& message) const;
  int Fail(const Error& e, int code) const;
  // Prints `reply` as JSON or YAML; false for table output, which the verb renders itself.
  bool PrintedAsData(const Json& reply) const;

  const Args& args() const { return args_; }
  Format format() const { return format_; }
  const std::vector<std::string>& command() const { return command_; }
  ApiClient& api() { return *api_; }

 private:
  std::string verb_;
  const char* usage_;
  Args args_;
  std::vector<std::string> command_;
  Format format_ = Format::kTable;
  std::unique_ptr<ApiClient> api_;
};

// A file's text ("-": standard input); kInvalidArgument when it cannot be read.
Result<std::string> ReadTextFile(const std::string& path);

// GET `path` (/v1/jobs or /v1/audit, with `query` "" or "?k=v&..."): one page of `limit` items
// (the reply as the server sent it, next_cursor and all), or, without a limit, every page from
// `cursor` on, as one list whose next_cursor is null.
Result<Json> GetPages(ApiClient& api, const std::string& path, const std::string& query, const std::string& limit,
                      std::string cursor);

}  // namespace gpupool::cli
