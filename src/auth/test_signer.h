// Tests only: an issuer's signing key made with OpenSSL, its public JWK, and tokens signed with
// it (or deliberately broken), so the verifier is tested against real signatures.
#pragma once

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/base64url.h"
#include "core/check.h"

namespace gpupool::testing {

class TestSigner {
 public:
  // alg: "RS256", "RS384" or "ES256".
  TestSigner(std::string alg, std::string kid) : alg_(std::move(alg)), kid_(std::move(kid)) {
    EVP_PKEY* k = alg_ == "ES256" ? EVP_EC_gen("P-256") : EVP_RSA_gen(2048);
    GP_CHECK(k != nullptr);
    key_.reset(k, EVP_PKEY_free);
  }

  nlohmann::json Jwk() const {
    nlohmann::json j = {{"kid", kid_}, {"use", "sig"}, {"alg", alg_}};
    if (alg_ == "ES256") {
      j["kty"] = "EC";
      j["crv"] = "P-256";
      j["x"] = Base64Url(Bignum(OSSL_PKEY_PARAM_EC_PUB_X, 32));
      j["y"] = Base64Url(Bignum(OSSL_PKEY_PARAM_EC_PUB_Y, 32));
    } else {
      j["kty"] = "RSA";
      j["n"] = Base64Url(Bignum(OSSL_PKEY_PARAM_RSA_N, 0));
      j["e"] = Base64Url(Bignum(OSSL_PKEY_PARAM_RSA_E, 0));
    }
    return j;
  }

  // A compact JWS of `claims`; `header` fields override the default {alg, kid, typ}.
  std::string Sign(const nlohmann::json& claims, const nlohmann::json& header = nlohmann::json::object()) const {
    nlohmann::json h = {{"alg", alg_}, {"kid", kid_}, {"typ", "JWT"}};
    for (const auto& [k, v] : header.items()) h[k] = v;
    const std::string input = Base64Url(h.dump()) + "." + Base64Url(claims.dump());
    return input + "." + Base64Url(RawSignature(input));
  }

  const std::string& kid() const { return kid_; }

 private:
  std::string Bignum(const char* name, int pad) const {
    BIGNUM* bn = nullptr;
    GP_CHECK(EVP_PKEY_get_bn_param(key_.get(), name, &bn) == 1);
    std::string out(pad > 0 ? pad : BN_num_bytes(bn), '\0');
    BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size()));
    BN_free(bn);
    return out;
  }

  std::string RawSignature(const std::string& input) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    size_t len = 0;
    const EVP_MD* md = alg_ == "RS384" ? EVP_sha384() : EVP_sha256();
    GP_CHECK(EVP_DigestSignInit(ctx, nullptr, md, nullptr, key_.get()) == 1);
    const auto* data = reinterpret_cast<const unsigned char*>(input.data());
    GP_CHECK(EVP_DigestSign(ctx, nullptr, &len, data, input.size()) == 1);
    std::string sig(len, '\0');
    GP_CHECK(EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len, data, input.size()) == 1);
    sig.resize(len);
    EVP_MD_CTX_free(ctx);
    if (alg_ != "ES256") return sig;
    // DER to JWS's r || s.
    const unsigned char* p = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    std::string raw(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(es), reinterpret_cast<unsigned char*>(raw.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(es), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
    ECDSA_SIG_free(es);
    return raw;
  }

  std::string alg_, kid_;
  std::shared_ptr<EVP_PKEY> key_;
};

// An HS256 token whose secret is `secret` (the attack that verifies an HMAC with a public key).
inline std::string HmacToken(const nlohmann::json& claims, const std::string& secret, const std::string& kid) {
  const std::string input =
      Base64Url(nlohmann::json({{"alg", "HS256"}, {"kid", kid}}).dump()) + "." + Base64Url(claims.dump());
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), reinterpret_cast<const unsigned char*>(input.data()),
       input.size(), mac, &len);
  return input + "." + Base64Url(std::string(reinterpret_cast<char*>(mac), len));
}

}  // namespace gpupool::testing
