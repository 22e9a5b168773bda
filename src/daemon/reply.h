// The replies ControlPlane's handlers build (control_plane.cc, control_plane_burst.cc): JSON bodies and the error
// shape of DESIGN.md §10.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/decode.h"
#include "daemon/control_plane.h"

namespace gpupool::reply {

// Replies never throw on text that is not UTF-8 (decoders reject it before it is stored).
inline Reply JsonReply(int status, const nlohmann::json& j) {
  return {status, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}
inline Reply Err(const Error& e) { return {HttpStatus(e.code), ErrorBody(e)}; }
inline Reply Unauthenticated() { return Err({ErrorCode::kUnauthenticated, "missing or invalid bearer token"}); }
inline Reply Forbidden(const std::string& what) {
  return Err({ErrorCode::kPermissionDenied, "your role may not " + what});
}

}  // namespace gpupool::reply
