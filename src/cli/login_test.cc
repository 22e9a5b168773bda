// gpupool login's pure parts and its cache. The flows themselves run against a real OpenID
// Provider in tests/cli_login_test.sh.
#include "cli/login.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/base64url.h"

namespace gpupool::cli {
namespace {

TEST(Login, PkceMatchesTheRfcExample) {
  // RFC 7636, appendix B.
  EXPECT_EQ(PkceChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  const std::string a = RandomToken(32), b = RandomToken(32);
  EXPECT_EQ(a.size(), 43u);  // 256 bits, unpadded
  EXPECT_NE(a, b);
}

TEST(Login, TheRedirectTargetIsDecodedAndDuplicatesAreRefused) {
  auto t = SplitTarget("/callback?code=a%2Bb+c&state=s1&iss=https%3A%2F%2Fidp");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->first, "/callback");
  EXPECT_EQ(t->second.at("code"), "a+b c");
  EXPECT_EQ(t->second.at("iss"), "https://idp");
  EXPECT_FALSE(SplitTarget("/callback?state=a&state=b").ok());  // which one would be checked?
  EXPECT_FALSE(SplitTarget("/callback?code=%zz").ok());
  EXPECT_EQ(FormEncode({{"scope", "openid email"}, {"redirect_uri", "http://127.0.0.1:5/cb"}}),
            "scope=openid%20email&redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcb");
}

std::string Jwt(const nlohmann::json& claims) {
  return Base64Url(R"({"alg":"RS256"})") + "." + Base64Url(claims.dump()) + ".c2ln";
}

TEST(Login, TokensComeFromTheIdTokenAndItsNonceMustBeOurs) {
  const nlohmann::json reply = {{"id_token", Jwt({{"sub", "u1"}, {"email", "ada@example.com"}, {"exp", 1900000000}, {"nonce", "n1"}})},
                                {"refresh_token", "r1"}, {"access_token", "a1"}};
  Result<Tokens> t = TokensFromReply(reply, "n1");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->expires, 1900000000);
  EXPECT_EQ(t->username, "ada@example.com");
  EXPECT_EQ(t->refresh_token, "r1");
  EXPECT_EQ(TokensFromReply(reply, "n2").error().message, "the ID token's nonce is not the one this login sent");
  EXPECT_EQ(TokensFromReply({{"access_token", "a1"}}, "").error().message,
            "the provider sent no ID token (is 'openid' among the scopes?)");
  EXPECT_FALSE(TokensFromReply({{"id_token", "not-a-jwt"}}, "").ok());
  EXPECT_FALSE(TokensFromReply({{"id_token", Jwt({{"sub", "u1"}})}}, "").ok());  // no exp
}

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gpupool-login-test-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    path_ = (dir_ / "config" / "gpupool" / "credentials.json").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static StoredLogin Login(int64_t expires, std::string refresh) {
    StoredLogin s;
    s.client.client_id = "gpupool";
    s.client.scopes = {"openid", "offline_access"};
    s.client.endpoints.issuer = "https://idp.example";
    s.client.endpoints.token_endpoint = "https://127.0.0.1:1/token";  // nothing listens there
    s.tokens = {Jwt({{"exp", expires}}), std::move(refresh), expires, "ada"};
    return s;
  }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(CacheTest, TheFileIsPrivateAndReadsBackWhole) {
  ASSERT_TRUE(WriteCredentials(path_, {{"https://gp:8443", Login(2000, "r")}}).ok());
  struct stat st {};
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir_ / "config" / "gpupool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  auto back = ReadCredentials(path_);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->count("https://gp:8443"), 1u);
  const StoredLogin& s = back->at("https://gp:8443");
  EXPECT_EQ(s.client.scopes, (std::vector<std::string>{"openid", "offline_access"}));
  EXPECT_EQ(s.tokens.refresh_token, "r");
  EXPECT_EQ(s.tokens.expires, 2000);
  EXPECT_EQ(s.client.endpoints.token_endpoint, "https://127.0.0.1:1/token");
  // No file yet is no login, not an error.
  auto none = ReadCredentials((dir_ / "absent.json").string());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(CacheTest, AFileOthersMayReadOrADamagedOneIsRefused) {
  ASSERT_TRUE(WriteCredentials(path_, {{"u", Login(2000, "r")}}).ok());
  chmod(path_.c_str(), 0644);
  auto open = ReadCredentials(path_);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("may be read by others (mode 0644)"), std::string::npos) << open.error().message;
  chmod(path_.c_str(), 0600);
  std::ofstream(path_) << "{\"logins\": ";
  auto damaged = ReadCredentials(path_);
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.error().message.find("is damaged"), std::string::npos);
  EXPECT_EQ(CachedToken(path_, "u", 1000).error().code, ErrorCode::kInvalidArgument);
}

TEST_F(CacheTest, ATokenIsUsedUntilAMinuteBeforeItExpiresThenRefreshed) {
  ASSERT_TRUE(WriteCredentials(path_, {{"fresh", Login(2000, "r")}, {"stale", Login(1030, "r")},
                                       {"no-refresh", Login(1030, "")}}).ok());
  Result<std::string> fresh = CachedToken(path_, "fresh", 1000);
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  EXPECT_EQ(*fresh, Jwt({{"exp", 2000}}));
  EXPECT_EQ(CachedToken(path_, "elsewhere", 1000).error().code, ErrorCode::kNotFound);
  // Due: a refresh is tried, and the provider cannot be reached; the message says what to do.
  Result<std::string> stale = CachedToken(path_, "stale", 1000);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(stale.error().message.find("could not be refreshed"), std::string::npos) << stale.error().message;
  EXPECT_NE(stale.error().message.find("run gpupool login --url stale"), std::string::npos);
  Result<std::string> lost = CachedToken(path_, "no-refresh", 1000);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.error().code, ErrorCode::kUnauthenticated);
  // Nothing was lost on the way.
  EXPECT_EQ(ReadCredentials(path_)->size(), 3u);
}

}  // namespace
}  // namespace gpupool::cli
