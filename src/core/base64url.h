// base64url (RFC 4648 section 5) without padding: page cursors and the parts of a JWT.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpupool {

std::string Base64Url(std::string_view in);
// nullopt on a character outside the alphabet, on padding, or on a length no encoding has.
std::optional<std::string> FromBase64Url(std::string_view in);

}  // namespace gpupool
