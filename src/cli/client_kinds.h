// The kinds of object the client verbs name (`get KIND [NAME]`, `describe KIND NAME`,
// `delete KIND NAME`), each with its API path and its views, so every verb builds its request
// and renders its reply one way.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cli/client.h"

namespace gpupool::cli {

struct Kind {
  const char* plural;    // "jobs": what `get` takes, and the kind's name in messages
  const char* singular;  // "job": also accepted, as kubectl does
  const char* path;      // "/v1/jobs"
  const char* key;       // the field that names one object: "id" or "name"
  bool get_one;          // GET path/NAME exists; else `get KIND NAME` picks it from the list
  bool paged;            // the list takes limit and cursor
  // The `get` table of a list's items, and `describe` of one object (nullptr: none).
  void (*print)(const Json& items, int64_t now_ms, std::ostream& out);
  void (*describe)(const Json& object, int64_t now_ms, std::ostream& out);
  // What `delete KIND NAME` prints after "KIND NAME " ("deleted", "revoked"); nullptr: the API
  // has no DELETE for it.
  const char* deleted;
};

// Every kind, in the order usage texts list them.
const std::vector<Kind>& Kinds();
// "jobs" or "job" -> its Kind; nullptr for no kind.
const Kind* FindKind(const std::string& word);
// The kind of a `VERB KIND NAME` command line (describe, delete): its two positionals name a kind
// for which `has` holds; else nullptr.
const Kind* KindOfObject(const std::vector<std::string>& positional, bool (*has)(const Kind&));
// "/v1/jobs/42": the API path of one object.
std::string ObjectPath(const Kind& kind, const std::string& name);
// "jobs, nodes, ..." of the kinds for which `has` holds, for usage messages.
std::string KindNames(bool (*has)(const Kind&));

}  // namespace gpupool::cli
