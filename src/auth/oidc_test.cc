#include "auth/oidc.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <thread>

#include "auth/test_signer.h"

namespace gpupool {
namespace {

using nlohmann::json;
using testing::TestSigner;

const std::string kIss = "https://idp.test/realm";

// An issuer's documents, served by the Fetch the authenticator is given.
struct FakeIssuerDocs {
  std::map<std::string, std::string> docs;
  std::vector<std::string> asked;
  OidcAuthenticator::Fetch Fetch() {
    return [this](const std::string& url, const std::string&) -> Result<std::string> {
      asked.push_back(url);
      auto it = docs.find(url);
      if (it == docs.end()) return Error{ErrorCode::kUnavailable, "HTTP 404 from " + url};
      return it->second;
    };
  }
  void Publish(std::initializer_list<const TestSigner*> signers, const std::string& issuer = kIss) {
    docs[kIss + "/.well-known/openid-configuration"] = json({{"issuer", issuer}, {"jwks_uri", kIss + "/jwks"}}).dump();
    json set = {{"keys", json::array()}};
    for (const TestSigner* s : signers) set["keys"].push_back(s->Jwk());
    docs[kIss + "/jwks"] = set.dump();
  }
};

OidcIssuer Issuer() {
  OidcIssuer i;
  i.issuer = kIss;
  i.audience = "gpupool";
  i.username_claim = "email";
  return i;
}

json Claims(int64_t now_s) {
  return {{"iss", kIss}, {"aud", "gpupool"}, {"sub", "s-42"}, {"email", "ada@example.com"},
          {"groups", {"ml-research", "ops"}}, {"iat", now_s}, {"exp", now_s + 300}};
}

Time Now() { return Time::FromSeconds(1'800'000'000); }

TEST(OidcTest, DiscoveryThenTheKeySetAndTheIdentity) {
  FakeIssuerDocs idp;
  const TestSigner k1("RS256", "k1");
  idp.Publish({&k1});
  OidcAuthenticator auth({Issuer()}, idp.Fetch());
  EXPECT_TRUE(auth.LoadAll().empty());
  Result<OidcIdentity> id = auth.Verify(k1.Sign(Claims(Now().seconds())), Now());
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id->username, "ada@example.com");
  EXPECT_EQ(id->subject, "s-42");
  EXPECT_EQ(id->issuer, kIss);
  EXPECT_EQ(id->groups, (std::vector<std::string>{"ml-research", "ops"}));
  EXPECT_EQ(id->expires, Now() + Duration::Seconds(300));
  EXPECT_EQ(idp.asked, (std::vector<std::string>{kIss + "/.well-known/openid-configuration", kIss + "/jwks"}));
  // Cached: more tokens fetch nothing.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(auth.Verify(k1.Sign(Claims(Now().seconds())), Now()).ok());
  EXPECT_EQ(auth.fetches(), 1);
}

TEST(OidcTest, ARotatedKeyIsFetchedOnceAndUnknownKeysAreRateLimited) {
  FakeIssuerDocs idp;
  const TestSigner k1("RS256", "k1"), k2("ES256", "k2"), rogue("RS256", "rogue");
  idp.Publish({&k1});
  OidcAuthenticator auth({Issuer()}, idp.Fetch(), std::chrono::milliseconds(200));
  (void)auth.LoadAll();
  idp.Publish({&k2, &k1});  // the issuer rotates: k2 signs from now on, k1 still verifies
  // Within the interval of the last load, an unknown key is not fetched.
  EXPECT_FALSE(auth.Verify(k2.Sign(Claims(Now().seconds())), Now()).ok());
  EXPECT_EQ(auth.fetches(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  ASSERT_TRUE(auth.Verify(k2.Sign(Claims(Now().seconds())), Now()).ok());
  EXPECT_EQ(auth.fetches(), 2);
  ASSERT_TRUE(auth.Verify(k1.Sign(Claims(Now().seconds())), Now()).ok());
  // A flood of tokens naming a key nobody published: one fetch per interval, not one per token.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  for (int i = 0; i < 50; ++i) {
    Result<OidcIdentity> r = auth.Verify(rogue.Sign(Claims(Now().seconds())), Now());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kUnauthenticated);
  }
  EXPECT_EQ(auth.fetches(), 3);
}

TEST(OidcTest, AnUnreachableIssuerIsUnavailableNotUnauthenticated) {
  FakeIssuerDocs idp;  // publishes nothing
  const TestSigner k1("RS256", "k1");
  OidcAuthenticator auth({Issuer()}, idp.Fetch(), std::chrono::milliseconds(0));
  EXPECT_EQ(auth.LoadAll().size(), 1u);
  Result<OidcIdentity> r = auth.Verify(k1.Sign(Claims(Now().seconds())), Now());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  idp.Publish({&k1});
  EXPECT_TRUE(auth.Verify(k1.Sign(Claims(Now().seconds())), Now()).ok());
}

TEST(OidcTest, ADiscoveryDocumentForAnotherIssuerIsRefused) {
  FakeIssuerDocs idp;
  const TestSigner k1("RS256", "k1");
  idp.Publish({&k1}, "https://evil.test");
  OidcAuthenticator auth({Issuer()}, idp.Fetch());
  const std::vector<std::string> errors = auth.LoadAll();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("another issuer"), std::string::npos) << errors[0];
}

TEST(OidcTest, TokensOfOtherIssuersOrWithoutAUsernameAreRefused) {
  FakeIssuerDocs idp;
  const TestSigner k1("RS256", "k1");
  idp.Publish({&k1});
  OidcAuthenticator auth({Issuer()}, idp.Fetch());
  json other = Claims(Now().seconds());
  other["iss"] = "https://other.test";
  EXPECT_EQ(auth.Verify(k1.Sign(other), Now()).error().message, "the token's issuer is not trusted");
  json nameless = Claims(Now().seconds());
  nameless.erase("email");
  EXPECT_EQ(auth.Verify(k1.Sign(nameless), Now()).error().message, "the token has no 'email' claim to name its user");
  EXPECT_EQ(idp.asked.size(), 2u);  // the untrusted issuer was never asked for anything
}

TEST(OidcTest, AStaticKeySetFileNeedsNoNetwork) {
  const TestSigner k1("ES256", "k1");
  const std::string path = ::testing::TempDir() + "/jwks.json";
  {
    std::ofstream(path) << json({{"keys", {k1.Jwk()}}}).dump();
  }
  OidcIssuer iss = Issuer();
  iss.jwks_file = path;
  OidcAuthenticator auth({iss}, [](const std::string&, const std::string&) -> Result<std::string> {
    ADD_FAILURE() << "fetched with a jwks_file";
    return Error{ErrorCode::kUnavailable, "no"};
  });
  EXPECT_TRUE(auth.LoadAll().empty());
  EXPECT_TRUE(auth.Verify(k1.Sign(Claims(Now().seconds())), Now()).ok());
}

TEST(OidcTest, TheConfigurationIsCheckedWhole) {
  const json good = json::parse(R"({"oidc": [{"issuer": "https://login.example.com/t/v2.0", "audience": "gpupool",
      "username_claim": "email", "algorithms": ["RS256"], "client_id": "gpupool-cli",
      "scopes": ["openid", "groups", "offline_access"],
      "mappings": [{"group": "ml-research", "tenant": "research", "role": "member"},
                   {"user": "root@example.com", "role": "cluster-admin"}]}]})");
  Result<std::vector<OidcIssuer>> parsed = ParseAuthConfig(good);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].mappings.size(), 2u);
  EXPECT_EQ((*parsed)[0].groups_claim, "groups");
  EXPECT_EQ((*parsed)[0].scopes, (std::vector<std::string>{"openid", "groups", "offline_access"}));
  struct Case {
    const char* yaml_json;
    const char* want;
  };
  const Case bad[] = {
      {R"({"oidc": [{"audience": "a"}]})", "auth: oidc issuer 1: 'issuer' is required"},
      {R"({"oidc": [{"issuer": "http://x", "audience": "a"}]})", "auth: oidc issuer 1: the issuer must be an https:// URL (or give a jwks_file)"},
      {R"({"oidc": [{"issuer": "https://x", "audience": "a", "algorithms": ["HS256"]}]})",
       "auth: oidc issuer 1: algorithm 'HS256' is not accepted (RS256, RS384, ES256)"},
      {R"({"oidc": [{"issuer": "https://x", "audience": "a", "mappings": [{"group": "g", "role": "member"}]}]})",
       "auth: oidc issuer 1 mapping 1: role member needs a 'tenant'"},
      {R"({"oidc": [{"issuer": "https://x", "audience": "a", "mappings": [{"group": "g", "role": "node-agent"}]}]})",
       "auth: oidc issuer 1 mapping 1: role 'node-agent' cannot be mapped (cluster-admin, tenant-admin, member, viewer, metrics-reader)"},
      {R"({"oidc": [{"issuer": "https://x", "audience": "a", "mappings": [{"role": "viewer", "tenant": "t"}]}]})",
       "auth: oidc issuer 1 mapping 1: give one of 'group' and 'user'"},
      {R"({"oidc": [{"issuer": "https://x", "audience": "a", "scopes": ["openid email"]}]})",
       "auth: oidc issuer 1: 'scopes' must be a list of names"},
      {R"({"oidc": [{"issuer": "https://x", "audience": "a", "scopes": []}]})", "auth: oidc issuer 1: 'scopes' must be a list"},
      {R"({"oidc": [{"issuer": "https://x", "audience": "a", "secret": "s"}]})", "unknown key 'auth.oidc[0].secret'"},
      {R"({"oidc": [{"issuer": "https://x", "audience": "a"}, {"issuer": "https://x", "audience": "b"}]})",
       "auth: issuer https://x is listed twice"},
  };
  for (const Case& c : bad) {
    Result<std::vector<OidcIssuer>> r = ParseAuthConfig(json::parse(c.yaml_json));
    ASSERT_FALSE(r.ok()) << c.yaml_json;
    EXPECT_EQ(r.error().message, c.want);
  }
}

TEST(OidcTest, OnlyThreePartTokensThatAreNotApiTokensLookLikeJwts) {
  EXPECT_TRUE(LooksLikeJwt("a.b.c"));
  EXPECT_FALSE(LooksLikeJwt("gp_abc_def"));
  EXPECT_FALSE(LooksLikeJwt("a.b"));
}

}  // namespace
}  // namespace gpupool
