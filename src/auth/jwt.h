// Signed JSON Web Tokens (RFC 7519) checked against a JSON Web Key Set (RFC 7517), as OpenID
// Providers issue them. Only asymmetric signatures are accepted, from an allow-list: RS256,
// RS384 (RSA, 2,048 bits or more) and ES256 (P-256). "none" and every HMAC are refused whatever
// the list says, so a public key can never be used as an HMAC secret. Pure: the key set and the
// time come from the caller (the OIDC authenticator fetches and caches keys).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/time.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace gpupool {

struct Jwk {
  std::string kid;
  std::string kty;  // "RSA" or "EC"
  std::string alg;  // "" when the set does not name one
  std::shared_ptr<evp_pkey_st> key;
};
using KeySet = std::vector<Jwk>;

// Keys for encryption ("use": "enc"), of other types, curves or sizes are left out; a document
// that is not a key set, or holds no usable key, is an error.
Result<KeySet> ParseJwks(std::string_view json);

// The algorithms a verifier may accept; any other name in a configuration is an error.
inline constexpr std::string_view kJwtAlgorithms[] = {"RS256", "RS384", "ES256"};
Status CheckAlgorithmList(const std::vector<std::string>& algs);

// What a token must satisfy besides its signature.
struct JwtPolicy {
  std::string issuer;                   // `iss`, exactly
  std::string audience;                 // one of `aud` (a string or an array)
  std::vector<std::string> algorithms;  // the allow-list (from kJwtAlgorithms)
  Duration skew = Duration::Seconds(60);  // allowed on exp, nbf and iat
};

// The header and claims of a token, read without checking anything: to find its issuer and key.
struct JwtParts {
  nlohmann::json header, claims;
  std::string signing_input;  // header.payload, as signed
  std::string signature;      // raw bytes
};
Result<JwtParts> SplitJwt(std::string_view token);

// The token's claims when its signature verifies with a key of `keys` (the one its `kid`
// names; without a kid, any key of the algorithm's type) and its claims satisfy `policy` at
// `now`; otherwise kUnauthenticated, saying what failed (never echoing the token).
Result<nlohmann::json> VerifyJwt(const JwtParts& jwt, const KeySet& keys, const JwtPolicy& policy, Time now);

// True when a key set lacks the key `jwt` names: the issuer may have rotated its keys.
bool NamesUnknownKey(const JwtParts& jwt, const KeySet& keys);

}  // namespace gpupool
