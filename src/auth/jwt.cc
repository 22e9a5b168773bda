#include "auth/jwt.h"

#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>

#include <algorithm>

#include "core/base64url.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxTokenBytes = 16 * 1024;

Error Unauthenticated(std::string m) { return {ErrorCode::kUnauthenticated, std::move(m)}; }

bool Allowed(std::string_view alg) {
  return std::find(std::begin(kJwtAlgorithms), std::end(kJwtAlgorithms), alg) != std::end(kJwtAlgorithms);
}

// The key type an algorithm needs.
std::string_view KeyType(std::string_view alg) { return alg == "ES256" ? "EC" : "RSA"; }

// JWS carries an ECDSA signature as r || s (RFC 7518 section 3.4); OpenSSL wants DER.
std::optional<std::string> EcdsaDer(const std::string& raw) {
  if (raw.size() != 64) return std::nullopt;
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), 32, nullptr);
  BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()) + 32, 32, nullptr);
  std::optional<std::string> out;
  if (sig != nullptr && r != nullptr && s != nullptr && ECDSA_SIG_set0(sig, r, s) == 1) {
    r = s = nullptr;  // owned by sig now
    unsigned char* der = nullptr;
    const int len = i2d_ECDSA_SIG(sig, &der);
    if (len > 0) out.emplace(reinterpret_cast<char*>(der), static_cast<size_t>(len));
    OPENSSL_free(der);
  }
  BN_free(r);
  BN_free(s);
  ECDSA_SIG_free(sig);
  return out;
}

bool SignatureVerifies(const JwtParts& jwt, std::string_view alg, evp_pkey_st* key) {
  std::string sig = jwt.signature;
  if (alg == "ES256") {
    const std::optional<std::string> der = EcdsaDer(sig);
    if (!der) return false;
    sig = *der;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const EVP_MD* md = alg == "RS384" ? EVP_sha384() : EVP_sha256();
  const bool ok = ctx != nullptr && EVP_DigestVerifyInit(ctx, nullptr, md, nullptr, key) == 1 &&
                  EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                                   reinterpret_cast<const unsigned char*>(jwt.signing_input.data()),
                                   jwt.signing_input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

// A NumericDate claim in milliseconds; nullopt when absent; an error when not a number.
Result<std::optional<int64_t>> DateClaim(const Json& claims, const char* name) {
  if (!claims.contains(name)) return std::optional<int64_t>();
  const Json& v = claims[name];
  if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1e13) {
    return Unauthenticated(std::string("the token's '") + name + "' is not a date");
  }
  return std::optional<int64_t>(static_cast<int64_t>(v.get<double>() * 1000));
}

Status CheckClaims(const Json& claims, const JwtPolicy& p, Time now) {
  if (!claims.contains("iss") || claims["iss"] != p.issuer) return Unauthenticated("the token's issuer is not " + p.issuer);
  const Json& aud = claims.contains("aud") ? claims["aud"] : Json();
  const bool aud_ok = (aud.is_string() && aud == p.audience) ||
                      (aud.is_array() && std::find(aud.begin(), aud.end(), Json(p.audience)) != aud.end());
  if (!aud_ok) return Unauthenticated("the token's audience does not include " + p.audience);
  const Result<std::optional<int64_t>> exp = DateClaim(claims, "exp");
  const Result<std::optional<int64_t>> nbf = DateClaim(claims, "nbf");
  const Result<std::optional<int64_t>> iat = DateClaim(claims, "iat");
  for (const auto* r : {&exp, &nbf, &iat}) {
    if (!r->ok()) return r->error();
  }
  const int64_t skew = p.skew.millis(), at = now.millis();
  if (!exp->has_value()) return Unauthenticated("the token has no expiry ('exp')");
  if (at >= **exp + skew) return Unauthenticated("the token expired");
  if (nbf->has_value() && at + skew < **nbf) return Unauthenticated("the token is not valid yet ('nbf')");
  if (iat->has_value() && at + skew < **iat) return Unauthenticated("the token was issued in the future ('iat')");
  if (!claims.contains("sub") || !claims["sub"].is_string() || claims["sub"].get<std::string>().empty()) {
    return Unauthenticated("the token names no subject ('sub')");
  }
  return Ok();
}

}  // namespace

Status CheckAlgorithmList(const std::vector<std::string>& algs) {
  if (algs.empty()) return InvalidArgument("the algorithm list is empty");
  for (const std::string& a : algs) {
    if (!Allowed(a)) return InvalidArgument("algorithm '" + a + "' is not accepted (RS256, RS384, ES256)");
  }
  return Ok();
}

Result<JwtParts> SplitJwt(std::string_view token) {
  if (token.size() > kMaxTokenBytes) return Unauthenticated("the token is longer than 16 KiB");
  const size_t a = token.find('.');
  const size_t b = a == std::string_view::npos ? a : token.find('.', a + 1);
  if (b == std::string_view::npos || token.find('.', b + 1) != std::string_view::npos) {
    return Unauthenticated("not a signed JWT (three base64url parts)");
  }
  const auto header = FromBase64Url(token.substr(0, a));
  const auto payload = FromBase64Url(token.substr(a + 1, b - a - 1));
  const auto signature = FromBase64Url(token.substr(b + 1));
  if (!header || !payload || !signature) return Unauthenticated("a part of the JWT is not base64url");
  JwtParts out;
  out.header = Json::parse(*header, nullptr, false);
  out.claims = Json::parse(*payload, nullptr, false);
  if (!out.header.is_object() || !out.claims.is_object()) return Unauthenticated("the JWT's header or claims are not JSON objects");
  if (out.header.contains("crit")) return Unauthenticated("the JWT has critical header extensions ('crit')");
  out.signing_input = std::string(token.substr(0, b));
  out.signature = *signature;
  return out;
}

bool NamesUnknownKey(const JwtParts& jwt, const KeySet& keys) {
  if (!jwt.header.contains("kid") || !jwt.header["kid"].is_string()) return keys.empty();
  const std::string kid = jwt.header["kid"].get<std::string>();
  return std::none_of(keys.begin(), keys.end(), [&](const Jwk& k) { return k.kid == kid; });
}

Result<Json> VerifyJwt(const JwtParts& jwt, const KeySet& keys, const JwtPolicy& policy, Time now) {
  const Json& h = jwt.header;
  const std::string alg = h.contains("alg") && h["alg"].is_string() ? h["alg"].get<std::string>() : "";
  // "none" and HS* are never in kJwtAlgorithms, whatever the policy lists.
  if (!Allowed(alg) || std::find(policy.algorithms.begin(), policy.algorithms.end(), alg) == policy.algorithms.end()) {
    return Unauthenticated("signature algorithm '" + alg + "' is not accepted");
  }
  const bool has_kid = h.contains("kid") && h["kid"].is_string();
  bool candidate = false;
  for (const Jwk& k : keys) {
    if (has_kid && k.kid != h["kid"].get<std::string>()) continue;
    if (k.kty != KeyType(alg) || (!k.alg.empty() && k.alg != alg)) continue;
    candidate = true;
    if (SignatureVerifies(jwt, alg, k.key.get())) {
      GP_RETURN_IF_ERROR(CheckClaims(jwt.claims, policy, now));
      return jwt.claims;
    }
  }
  return Unauthenticated(candidate ? "the token's signature does not verify"
                                   : "no key of the issuer matches the token's key id and algorithm");
}

}  // namespace gpupool
