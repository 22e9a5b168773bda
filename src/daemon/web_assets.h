// The web console's files (web/), embedded at build time by cmake/embed_web.cmake.
#pragma once

#include <string_view>
#include <vector>

namespace gpupool {

struct WebAsset {
  std::string_view url;           // e.g. "/" or "/app.js"
  std::string_view content_type;  // e.g. "text/javascript; charset=utf-8"
  std::string_view bytes;
};

const std::vector<WebAsset>& WebAssets();

}  // namespace gpupool
