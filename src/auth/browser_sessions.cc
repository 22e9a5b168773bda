#include "auth/browser_sessions.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <cstdlib>

#include "api/auth.h"
#include "core/base64url.h"

namespace gpupool {
namespace {

std::string Random(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) std::abort();
  return Base64Url(raw);
}

}  // namespace

Result<std::pair<std::string, PendingLogin>> BrowserSessions::Begin(size_t issuer, std::string redirect_uri,
                                                                    std::string return_to, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_.size() >= kMaxPending) std::erase_if(pending_, [&](const auto& p) { return p.second.expires <= now; });
  if (pending_.size() >= kMaxPending) {
    return Error{ErrorCode::kResourceExhausted, "too many sign-ins are waiting for their provider; retry in a minute"};
  }
  PendingLogin login{issuer, {std::move(redirect_uri), Random(16), Random(16), Random(32)}, std::move(return_to)};
  const std::string cookie = Random(32);
  pending_[login.request.state] = Pending{login, Sha256Hex(cookie), now + kLoginTtl};
  return std::pair{cookie, std::move(login)};
}

Result<PendingLogin> BrowserSessions::Take(const std::string& login_cookie, const std::string& state,
                                           Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = pending_.find(state);
  if (it == pending_.end() || it->second.expires <= now) {
    return Error{ErrorCode::kUnauthenticated, "this sign-in is unknown or took longer than 10 minutes; start again"};
  }
  // A redirect that reaches another browser than the one that began it (login CSRF: an
  // attacker's code pressed on a victim) does not spend the login.
  if (login_cookie.empty() || !SameSecret(Sha256Hex(login_cookie), it->second.cookie_hash)) {
    return Error{ErrorCode::kUnauthenticated, "this sign-in was started in another browser; start again"};
  }
  PendingLogin out = std::move(it->second.login);
  pending_.erase(it);
  return out;
}

std::string BrowserSessions::Open(size_t issuer, CodeTokens tokens, std::string username, int64_t expires_unix,
                                  Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sessions_.size() >= kMaxSessions) {
    std::erase_if(sessions_, [&](const auto& s) { return now - s.second.opened >= kMaxAge; });
  }
  if (sessions_.size() >= kMaxSessions) {
    auto oldest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.opened < oldest->second.opened) oldest = it;
    }
    sessions_.erase(oldest);
  }
  const std::string cookie = Random(32);
  Session s;
  s.view = SessionView{issuer,       std::move(tokens.id_token), std::move(tokens.refresh_token), Random(24),
                       std::move(username), expires_unix, false};
  s.opened = now;
  sessions_[Sha256Hex(cookie)] = std::move(s);
  return cookie;
}

std::optional<SessionView> BrowserSessions::Find(const std::string& cookie, Clock::time_point now, int64_t now_unix) {
  if (cookie.empty()) return std::nullopt;
  const std::string key = Sha256Hex(cookie);
  std::unique_lock<std::mutex> lock(mu_);
  // A token already expired while another request refreshes it: wait for that refresh (the
  // console sends several requests at once after a pause) rather than fail with the old one.
  refreshed_.wait_for(lock, kRefreshWait, [&] {
    const auto w = sessions_.find(key);
    return w == sessions_.end() || !w->second.refreshing || now_unix < w->second.view.expires;
  });
  const auto it = sessions_.find(key);
  if (it == sessions_.end()) return std::nullopt;
  Session& s = it->second;
  const bool refreshable = !s.view.refresh_token.empty() && !s.refresh_failed;
  if (now - s.opened >= kMaxAge || (now_unix >= s.view.expires && !refreshable)) {
    sessions_.erase(it);
    return std::nullopt;
  }
  SessionView v = s.view;
  v.refresh_due = refreshable && !s.refreshing && now_unix >= s.view.expires - kRefreshAheadS;
  if (v.refresh_due) s.refreshing = true;
  return v;
}

void BrowserSessions::Refreshed(const std::string& cookie, std::optional<CodeTokens> tokens, int64_t expires_unix) {
  std::lock_guard<std::mutex> lock(mu_);
  refreshed_.notify_all();
  const auto it = sessions_.find(Sha256Hex(cookie));
  if (it == sessions_.end()) return;
  Session& s = it->second;
  s.refreshing = false;
  if (!tokens) {
    s.refresh_failed = true;
    return;
  }
  s.view.id_token = std::move(tokens->id_token);
  if (!tokens->refresh_token.empty()) s.view.refresh_token = std::move(tokens->refresh_token);
  s.view.expires = expires_unix;
}

bool BrowserSessions::Close(const std::string& cookie) {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.erase(Sha256Hex(cookie)) > 0;
}

size_t BrowserSessions::sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

size_t BrowserSessions::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

std::string CookieValue(const std::string& header, const std::string& name) {
  size_t at = 0;
  while (at < header.size()) {
    size_t end = header.find(';', at);
    if (end == std::string::npos) end = header.size();
    size_t b = at;
    while (b < end && header[b] == ' ') ++b;
    const size_t eq = header.find('=', b);
    if (eq != std::string::npos && eq < end && header.compare(b, eq - b, name) == 0 && eq - b == name.size()) {
      return header.substr(eq + 1, end - eq - 1);
    }
    at = end + 1;
  }
  return "";
}

bool SameSecret(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace gpupool
