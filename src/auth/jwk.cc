// JSON Web Key Sets: public RSA and P-256 keys turned into OpenSSL keys (OpenSSL 3's
// EVP_PKEY_fromdata, no deprecated RSA/EC_KEY calls).
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include "auth/jwt.h"
#include "core/base64url.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;

struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
using Bn = std::unique_ptr<BIGNUM, BnFree>;

std::optional<std::string> Member(const Json& k, const char* name) {
  if (!k.contains(name) || !k[name].is_string()) return std::nullopt;
  return FromBase64Url(k[name].get<std::string>());
}

// Builds a public key of OpenSSL type `type` from `params`; nullptr when OpenSSL refuses it.
std::shared_ptr<evp_pkey_st> FromParams(const char* type, OSSL_PARAM_BLD* bld) {
  std::shared_ptr<evp_pkey_st> out;
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* pkey = nullptr;
  if (params != nullptr && ctx != nullptr && EVP_PKEY_fromdata_init(ctx) == 1 &&
      EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) == 1) {
    out.reset(pkey, EVP_PKEY_free);
  }
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  return out;
}

std::shared_ptr<evp_pkey_st> RsaKey(const Json& k) {
  const auto n = Member(k, "n"), e = Member(k, "e");
  if (!n || !e || n->empty() || e->empty() || e->size() > 8) return nullptr;
  Bn bn_n(BN_bin2bn(reinterpret_cast<const unsigned char*>(n->data()), static_cast<int>(n->size()), nullptr));
  Bn bn_e(BN_bin2bn(reinterpret_cast<const unsigned char*>(e->data()), static_cast<int>(e->size()), nullptr));
  if (!bn_n || !bn_e || BN_num_bits(bn_n.get()) < 2048 || BN_num_bits(bn_n.get()) > 16384) return nullptr;
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  std::shared_ptr<evp_pkey_st> key;
  if (bld != nullptr && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n.get()) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e.get()) == 1) {
    key = FromParams("RSA", bld);
  }
  OSSL_PARAM_BLD_free(bld);
  return key;
}

std::shared_ptr<evp_pkey_st> P256Key(const Json& k) {
  if (!k.contains("crv") || k["crv"] != "P-256") return nullptr;
  const auto x = Member(k, "x"), y = Member(k, "y");
  if (!x || !y || x->size() != 32 || y->size() != 32) return nullptr;
  const std::string point = std::string(1, '\x04') + *x + *y;  // uncompressed
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  std::shared_ptr<evp_pkey_st> key;
  if (bld != nullptr && OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1 &&
      OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) == 1) {
    key = FromParams("EC", bld);  // OpenSSL checks the point is on the curve
  }
  OSSL_PARAM_BLD_free(bld);
  return key;
}

}  // namespace

Result<KeySet> ParseJwks(std::string_view text) {
  const Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("keys") || !doc["keys"].is_array()) {
    return Error{ErrorCode::kInvalidArgument, "not a JSON Web Key Set (an object with a \"keys\" array)"};
  }
  KeySet out;
  for (const Json& k : doc["keys"]) {
    if (!k.is_object() || !k.contains("kty") || !k["kty"].is_string()) continue;
    if (k.contains("use") && k["use"] != "sig") continue;
    Jwk jwk;
    jwk.kty = k["kty"].get<std::string>();
    if (k.contains("kid") && k["kid"].is_string()) jwk.kid = k["kid"].get<std::string>();
    if (k.contains("alg") && k["alg"].is_string()) jwk.alg = k["alg"].get<std::string>();
    if (jwk.kty == "RSA") jwk.key = RsaKey(k);
    if (jwk.kty == "EC") jwk.key = P256Key(k);
    if (jwk.key) out.push_back(std::move(jwk));
  }
  if (out.empty()) {
    return Error{ErrorCode::kInvalidArgument,
                 "the key set holds no usable signing key (RSA of 2048 bits or more, or EC P-256)"};
  }
  return out;
}

}  // namespace gpupool
