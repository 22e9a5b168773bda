#include "auth/browser_sessions.h"

#include <gtest/gtest.h>

#include <thread>

namespace gpupool {
namespace {

using Clock = BrowserSessions::Clock;

TEST(BrowserSessions, ALoginIsTakenOnceAndOnlyByTheBrowserThatBeganIt) {
  BrowserSessions s;
  const auto t0 = Clock::now();
  auto begun = s.Begin(0, "http://127.0.0.1:1/v1/auth/callback", "/jobs", t0);
  ASSERT_TRUE(begun.ok());
  const auto& [cookie, login] = *begun;
  EXPECT_EQ(login.request.redirect_uri, "http://127.0.0.1:1/v1/auth/callback");
  EXPECT_GE(login.request.code_verifier.size(), 43u) << "RFC 7636: 43 to 128 characters";
  EXPECT_NE(login.request.state, login.request.nonce);
  EXPECT_FALSE(s.Take("another-browser", login.request.state, t0).ok());
  EXPECT_FALSE(s.Take("", login.request.state, t0).ok());
  Result<PendingLogin> taken = s.Take(cookie, login.request.state, t0);
  ASSERT_TRUE(taken.ok()) << "a wrong cookie did not spend the login";
  EXPECT_EQ(taken->return_to, "/jobs");
  EXPECT_EQ(taken->request.code_verifier, login.request.code_verifier);
  EXPECT_FALSE(s.Take(cookie, login.request.state, t0).ok()) << "a state is used once";
  EXPECT_EQ(s.pending(), 0u);

  auto late = s.Begin(0, "r", "/", t0);
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE(s.Take(late->first, late->second.request.state, t0 + BrowserSessions::kLoginTtl).ok()) << "expired";
}

TEST(BrowserSessions, PendingLoginsAreBoundedUntilTheyExpire) {
  BrowserSessions s;
  const auto t0 = Clock::now();
  for (size_t i = 0; i < BrowserSessions::kMaxPending; ++i) ASSERT_TRUE(s.Begin(0, "r", "/", t0).ok()) << i;
  Result<std::pair<std::string, PendingLogin>> full = s.Begin(0, "r", "/", t0 + std::chrono::minutes(1));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(s.pending(), BrowserSessions::kMaxPending);
  EXPECT_TRUE(s.Begin(0, "r", "/", t0 + BrowserSessions::kLoginTtl).ok()) << "the expired ones make room";
  EXPECT_EQ(s.pending(), 1u);
}

TEST(BrowserSessions, ASessionLastsAsItsTokenOrItsRefreshAndEndsOnClose) {
  BrowserSessions s;
  const auto t0 = Clock::now();
  const std::string plain = s.Open(0, {"id-1", ""}, "ada", 1000, t0);
  const std::string refreshable = s.Open(0, {"id-2", "rt-2"}, "bo", 1000, t0);
  EXPECT_NE(plain, refreshable);
  EXPECT_FALSE(s.Find("nope", t0, 900)) << "unknown cookie";
  std::optional<SessionView> v = s.Find(plain, t0, 900);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->id_token, "id-1");
  EXPECT_EQ(v->username, "ada");
  EXPECT_GE(v->csrf.size(), 32u);
  EXPECT_FALSE(v->refresh_due) << "no refresh token";
  EXPECT_FALSE(s.Find(plain, t0, 1000)) << "its ID token expired and it cannot be refreshed";
  EXPECT_EQ(s.sessions(), 1u) << "and it is gone";

  std::optional<SessionView> due = s.Find(refreshable, t0, 950);
  ASSERT_TRUE(due);
  EXPECT_TRUE(due->refresh_due) << "within a minute of exp";
  std::optional<SessionView> other = s.Find(refreshable, t0, 950);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->refresh_due) << "one refresh at a time";
  s.Refreshed(refreshable, CodeTokens{"id-3", ""}, 5000);
  std::optional<SessionView> after = s.Find(refreshable, t0, 2000);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->id_token, "id-3");
  EXPECT_EQ(after->refresh_token, "rt-2") << "kept when the provider does not rotate it";
  EXPECT_EQ(after->expires, 5000);
  EXPECT_NE(after->csrf, v->csrf) << "each session has its own CSRF token";

  ASSERT_TRUE(s.Find(refreshable, t0, 4950)->refresh_due);
  s.Refreshed(refreshable, std::nullopt, 0);
  std::optional<SessionView> failed = s.Find(refreshable, t0, 4960);
  ASSERT_TRUE(failed) << "a failed refresh keeps the session while its token lasts";
  EXPECT_FALSE(failed->refresh_due) << "and is not retried";
  EXPECT_FALSE(s.Find(refreshable, t0, 5000)) << "then it ends";

  const std::string c = s.Open(0, {"id", "rt"}, "cy", 1000, t0);
  EXPECT_FALSE(s.Find(c, t0 + BrowserSessions::kMaxAge, 10)) << "no session outlives kMaxAge, refreshed or not";
  const std::string d = s.Open(0, {"id", "rt"}, "di", 1000, t0);
  EXPECT_TRUE(s.Close(d));
  EXPECT_FALSE(s.Close(d));
  EXPECT_FALSE(s.Find(d, t0, 10));
}

// The console fires several requests at once after a pause: those that find the token expired
// while another refreshes it wait for the refresh instead of failing with the old token.
TEST(BrowserSessions, AnExpiredTokenWaitsForTheRefreshInFlight) {
  BrowserSessions s;
  const auto t0 = Clock::now();
  const std::string c = s.Open(0, {"old", "rt"}, "ada", 1000, t0);
  ASSERT_TRUE(s.Find(c, t0, 1500)->refresh_due);
  std::thread refresher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    s.Refreshed(c, CodeTokens{"new", "rt-2"}, 9000);
  });
  std::optional<SessionView> v = s.Find(c, t0, 1500);
  refresher.join();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->id_token, "new");
  EXPECT_FALSE(v->refresh_due);
}

TEST(BrowserSessions, TheTableIsBounded) {
  BrowserSessions s;
  const auto t0 = Clock::now();
  const std::string first = s.Open(0, {"id", ""}, "u", 1000, t0);
  for (size_t i = 1; i < BrowserSessions::kMaxSessions; ++i) s.Open(0, {"id", ""}, "u", 1000, t0 + std::chrono::seconds(1));
  EXPECT_EQ(s.sessions(), BrowserSessions::kMaxSessions);
  const std::string newest = s.Open(0, {"id", ""}, "u", 1000, t0 + std::chrono::seconds(2));
  EXPECT_EQ(s.sessions(), BrowserSessions::kMaxSessions);
  EXPECT_FALSE(s.Find(first, t0, 10)) << "the oldest made room";
  EXPECT_TRUE(s.Find(newest, t0, 10));
}

TEST(CookieValue, FindsTheNamedCookieOnly) {
  EXPECT_EQ(CookieValue("a=1; gpupool_session=xyz; b=2", "gpupool_session"), "xyz");
  EXPECT_EQ(CookieValue("gpupool_session=xyz", "gpupool_session"), "xyz");
  EXPECT_EQ(CookieValue("x_gpupool_session=no; gpupool_session_x=no", "gpupool_session"), "");
  EXPECT_EQ(CookieValue("", "gpupool_session"), "");
  EXPECT_EQ(CookieValue("gpupool_session=", "gpupool_session"), "");
  EXPECT_TRUE(SameSecret("abc", "abc"));
  EXPECT_FALSE(SameSecret("abc", "abd"));
  EXPECT_FALSE(SameSecret("abc", "abcd"));
  EXPECT_FALSE(SameSecret("", "a"));
}

}  // namespace
}  // namespace gpupool
