#include "auth/jwt.h"

#include <gtest/gtest.h>

#include "auth/test_signer.h"

namespace gpupool {
namespace {

using nlohmann::json;
using testing::TestSigner;

constexpr int64_t kNow = 1'800'000'000;  // seconds

JwtPolicy Policy() { return {"https://idp.test", "gpupool", {"RS256", "RS384", "ES256"}, Duration::Seconds(60)}; }

json Claims() {
  return {{"iss", "https://idp.test"}, {"aud", "gpupool"}, {"sub", "u-1"},
          {"exp", kNow + 600},         {"iat", kNow - 5},  {"nbf", kNow - 5}};
}

KeySet Keys(std::initializer_list<const TestSigner*> signers) {
  json set = {{"keys", json::array()}};
  for (const TestSigner* s : signers) set["keys"].push_back(s->Jwk());
  Result<KeySet> keys = ParseJwks(set.dump());
  GP_CHECK(keys.ok()) << keys.error().message;
  return *keys;
}

Result<json> Verify(const std::string& token, const KeySet& keys, JwtPolicy p = Policy(), int64_t now = kNow) {
  Result<JwtParts> parts = SplitJwt(token);
  if (!parts.ok()) return parts.error();
  return VerifyJwt(*parts, keys, p, Time::FromSeconds(now));
}

std::string Message(const Result<json>& r) { return r.ok() ? "ok" : r.error().message; }

TEST(JwtTest, EachAcceptedAlgorithmVerifies) {
  for (const char* alg : {"RS256", "RS384", "ES256"}) {
    const TestSigner s(alg, std::string("k-") + alg);
    const Result<json> r = Verify(s.Sign(Claims()), Keys({&s}));
    ASSERT_TRUE(r.ok()) << alg << ": " << Message(r);
    EXPECT_EQ((*r)["sub"], "u-1");
  }
}

TEST(JwtTest, ASignatureByAnotherKeyOrAChangedPayloadFails) {
  const TestSigner good("RS256", "k1"), other("RS256", "k1");
  EXPECT_EQ(Message(Verify(other.Sign(Claims()), Keys({&good}))), "the token's signature does not verify");
  // The same signature over other claims (a raised expiry).
  std::string token = good.Sign(Claims());
  json later = Claims();
  later["sub"] = "admin";
  const std::string forged = good.Sign(later);
  token = forged.substr(0, forged.rfind('.')) + token.substr(token.rfind('.'));
  EXPECT_EQ(Message(Verify(token, Keys({&good}))), "the token's signature does not verify");
}

TEST(JwtTest, NoneAndHmacAreRefusedEvenWhenListed) {
  const TestSigner s("RS256", "k1");
  JwtPolicy p = Policy();
  p.algorithms = {"RS256", "none", "HS256"};  // a bad configuration cannot open them
  const std::string unsigned_token = Base64Url(json({{"alg", "none"}}).dump()) + "." + Base64Url(Claims().dump()) + ".";
  EXPECT_EQ(Message(Verify(unsigned_token, Keys({&s}), p)), "signature algorithm 'none' is not accepted");
  // HS256 keyed with the public key's JSON, as a confused verifier would take it.
  const std::string hmac = testing::HmacToken(Claims(), s.Jwk().dump(), "k1");
  EXPECT_EQ(Message(Verify(hmac, Keys({&s}), p)), "signature algorithm 'HS256' is not accepted");
  EXPECT_FALSE(CheckAlgorithmList({"RS256", "HS256"}).ok());
  EXPECT_FALSE(CheckAlgorithmList({}).ok());
  EXPECT_TRUE(CheckAlgorithmList({"ES256"}).ok());
}

TEST(JwtTest, TheAllowListNarrowsAndKeysMustFitTheAlgorithm) {
  const TestSigner rs("RS384", "r"), ec("ES256", "e");
  JwtPolicy only256 = Policy();
  only256.algorithms = {"RS256"};
  EXPECT_EQ(Message(Verify(rs.Sign(Claims()), Keys({&rs}), only256)), "signature algorithm 'RS384' is not accepted");
  // An RSA signature claiming ES256 with the RSA key's id.
  EXPECT_EQ(Message(Verify(rs.Sign(Claims(), {{"alg", "ES256"}}), Keys({&rs, &ec}))),
            "no key of the issuer matches the token's key id and algorithm");
  // A key whose JWK names RS384 is not used for RS256.
  EXPECT_EQ(Message(Verify(rs.Sign(Claims(), {{"alg", "RS256"}}), Keys({&rs}))),
            "no key of the issuer matches the token's key id and algorithm");
}

TEST(JwtTest, ClaimsAreCheckedWithSixtySecondsOfSkew) {
  const TestSigner s("ES256", "k");
  const KeySet keys = Keys({&s});
  struct Case {
    const char* what;
    json change;
    std::string want;
  };
  const Case cases[] = {
      {"wrong issuer", {{"iss", "https://evil.test"}}, "the token's issuer is not https://idp.test"},
      {"wrong audience", {{"aud", "other"}}, "the token's audience does not include gpupool"},
      {"audience in an array", {{"aud", {"x", "gpupool"}}}, "ok"},
      {"audience array without it", {{"aud", {"x", "y"}}}, "the token's audience does not include gpupool"},
      {"expired beyond the skew", {{"exp", kNow - 61}}, "the token expired"},
      {"expired within the skew", {{"exp", kNow - 59}}, "ok"},
      {"no expiry", {{"exp", nullptr}}, "the token's 'exp' is not a date"},
      {"nbf beyond the skew", {{"nbf", kNow + 61}}, "the token is not valid yet ('nbf')"},
      {"nbf within the skew", {{"nbf", kNow + 59}}, "ok"},
      {"iat in the future", {{"iat", kNow + 120}}, "the token was issued in the future ('iat')"},
      {"exp as a string", {{"exp", "soon"}}, "the token's 'exp' is not a date"},
      {"no subject", {{"sub", ""}}, "the token names no subject ('sub')"},
  };
  for (const Case& c : cases) {
    json claims = Claims();
    for (const auto& [k, v] : c.change.items()) claims[k] = v;
    EXPECT_EQ(Message(Verify(s.Sign(claims), keys)), c.want) << c.what;
  }
  json no_exp = Claims();
  no_exp.erase("exp");
  EXPECT_EQ(Message(Verify(s.Sign(no_exp), keys)), "the token has no expiry ('exp')");
}

TEST(JwtTest, KeyIdsFindTheKeyAndAnUnknownOneIsReported) {
  const TestSigner a("RS256", "a"), b("RS256", "b");
  const KeySet only_a = Keys({&a});
  Result<JwtParts> by_b = SplitJwt(b.Sign(Claims()));
  ASSERT_TRUE(by_b.ok());
  EXPECT_TRUE(NamesUnknownKey(*by_b, only_a));
  EXPECT_FALSE(NamesUnknownKey(*by_b, Keys({&a, &b})));
  EXPECT_TRUE(Verify(b.Sign(Claims()), Keys({&a, &b})).ok());
  // Without a kid, every key of the type is tried.
  EXPECT_TRUE(Verify(b.Sign(Claims(), {{"kid", nullptr}}), Keys({&a, &b})).ok());
}

TEST(JwtTest, MalformedTokensAndKeySetsAreErrors) {
  for (const char* bad : {"", "a.b", "a.b.c.d", "!!.e30.", "e30.e30"}) {
    EXPECT_FALSE(SplitJwt(bad).ok()) << bad;
  }
  EXPECT_FALSE(SplitJwt(std::string(17 * 1024, 'a')).ok());
  EXPECT_EQ(SplitJwt(Base64Url(R"({"alg":"RS256","crit":["exp"]})") + ".e30.").error().message,
            "the JWT has critical header extensions ('crit')");
  EXPECT_EQ(SplitJwt(Base64Url("[1]") + ".e30.").error().message, "the JWT's header or claims are not JSON objects");
  EXPECT_FALSE(ParseJwks("not json").ok());
  EXPECT_FALSE(ParseJwks(R"({"keys": []})").ok());
  // A 1024-bit RSA key, an unknown curve, an encryption key: none is usable.
  const TestSigner s("RS256", "k");
  json small = s.Jwk();
  small["n"] = Base64Url(std::string(128, '\xff'));
  json p384 = TestSigner("ES256", "e").Jwk();
  p384["crv"] = "P-384";
  json enc = s.Jwk();
  enc["use"] = "enc";
  EXPECT_FALSE(ParseJwks(json({{"keys", {small, p384, enc}}}).dump()).ok());
  // An EC point that is not on the curve.
  json off = TestSigner("ES256", "e").Jwk();
  off["y"] = Base64Url(std::string(32, '\x01'));
  EXPECT_FALSE(ParseJwks(json({{"keys", {off}}}).dump()).ok());
  EXPECT_EQ(ParseJwks(json({{"keys", {small, s.Jwk()}}}).dump())->size(), 1u);
}

}  // namespace
}  // namespace gpupool
