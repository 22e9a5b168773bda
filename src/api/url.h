// URLs the clients build (the CLI's verbs, the node agent).
#pragma once

#include <string>

namespace gpupool {

// Percent-encodes one path segment or query value (RFC 3986 unreserved characters stay).
std::string UrlEncode(const std::string& s);

}  // namespace gpupool
