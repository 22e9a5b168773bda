#include "api/url.h"

#include <cstdio>

namespace gpupool {

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (const unsigned char ch : s) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                      ch == '-' || ch == '.' || ch == '_' || ch == '~';
    if (keep) {
      out += static_cast<char>(ch);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", ch);
      out += buf;
    }
  }
  return out;
}

}  // namespace gpupool
