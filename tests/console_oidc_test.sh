#!/usr/bin/env bash
# The console's single sign-on in a real browser (issue 18 item 4): the oidc-provider package
# (tests/oidc/provider.mjs) over HTTPS on loopback, the daemon trusting it with client_id
# gpupool, and playwright-core driving Debian's headless Chromium through the provider's own
# login and consent pages (tests/console/console_oidc.mjs). Covered there: the session cookie
# (HttpOnly, SameSite=Strict, unreadable by the page), reads and CSRF-checked writes through it,
# a write without the CSRF token or from another origin refused, sign-out ending the session at
# the daemon. Here, without a browser: a forged callback, a callback from another browser, the
# login cookie's attributes under TLS (Secure, __Secure- prefix), and the bound on pending logins.
# Usage: console_oidc_test.sh GPUPOOL_BINARY ARTIFACT_DIR
set -u
bin=${1:?usage: console_oidc_test.sh GPUPOOL_BINARY ARTIFACT_DIR}
artifacts=${2:?usage: console_oidc_test.sh GPUPOOL_BINARY ARTIFACT_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
command -v openssl > /dev/null || { echo "skipped: no openssl"; exit 77; }
command -v chromium > /dev/null || { echo "skipped: no chromium (scripts/setup.sh --test installs it)"; exit 77; }
[ -d "$here/oidc/node_modules/oidc-provider" ] || { echo "skipped: no oidc-provider (npm ci in tests/oidc)"; exit 77; }
[ -d "$here/console/node_modules/playwright-core" ] || { echo "skipped: no playwright-core (npm ci in tests/console)"; exit 77; }
. "$here/lib/e2e.sh"
mkdir -p "$artifacts"
start_op '{"ada": {"email": "ada@example.com", "groups": ["ml-research"]}}'
op_config "$tmp/config.yaml"
serve_oidc "$bin"
admin=$(cat "$tmp/data/admin.token")

# GET /v1/auth says the console signs in with the issuer.
curl -s "$url/v1/auth" | grep -q '"console_login":true' || fail "GET /v1/auth does not offer console login: $(curl -s "$url/v1/auth")"

# Begin a login by hand: a 302 to the provider's authorization endpoint with PKCE S256, and a
# login cookie bound to this client.
curl -s -D "$tmp/h1" -o /dev/null "$url/v1/auth/login?issuer=$iss&return=/"
grep -qi '^location: https://127.0.0.1:.*code_challenge_method=S256' "$tmp/h1" || fail "no redirect to the provider: $(cat "$tmp/h1")"
grep -qi "redirect_uri=http%3A%2F%2F127.0.0.1%3A[0-9]*%2Fv1%2Fauth%2Fcallback" "$tmp/h1" || fail "the redirect URI is not the daemon's callback: $(cat "$tmp/h1")"
grep -qi '^set-cookie: gpupool_login=[^;]*; Path=/v1/auth/callback; Max-Age=600; SameSite=Lax; HttpOnly' "$tmp/h1" ||
  fail "the login cookie's attributes: $(grep -i set-cookie "$tmp/h1")"
state=$(grep -i '^location:' "$tmp/h1" | sed 's/.*[?&]state=\([^&]*\).*/\1/' | tr -d '\r')
login_cookie=$(grep -i '^set-cookie: gpupool_login=' "$tmp/h1" | sed 's/^[^=]*=\([^;]*\);.*/\1/')
# The provider's redirect arriving at another browser (no login cookie, or another one): refused,
# and the login is not spent by it.
for c in "" "gpupool_login=someone-else"; do
  curl -s -D "$tmp/h2" -o /dev/null -H "Cookie: $c" "$url/v1/auth/callback?state=$state&code=forged"
  grep -qi '^location: /#login-error=.*another%20browser' "$tmp/h2" || fail "a callback without this browser's cookie: $(cat "$tmp/h2")"
  grep -qi '^set-cookie: gpupool_session=' "$tmp/h2" && fail "a forged callback opened a session"
done
# With the right cookie but a forged code: the provider refuses the code; no session.
curl -s -D "$tmp/h3" -o /dev/null -H "Cookie: gpupool_login=$login_cookie" "$url/v1/auth/callback?state=$state&code=forged"
grep -qi '^location: /#login-error=.*did%20not%20give%20tokens' "$tmp/h3" || fail "a forged code: $(cat "$tmp/h3")"
grep -qi '^set-cookie: gpupool_session=' "$tmp/h3" && fail "a forged code opened a session"
# The state is spent now.
curl -s -D "$tmp/h4" -o /dev/null -H "Cookie: gpupool_login=$login_cookie" "$url/v1/auth/callback?state=$state&code=forged"
grep -qi '^location: /#login-error=.*unknown' "$tmp/h4" || fail "a spent state: $(cat "$tmp/h4")"
echo "callbacks: another browser's and a forged code are refused; a state is used once"
# An unknown session cookie is a failed authentication (401), an unknown issuer a 400.
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Cookie: gpupool_session=forged' "$url/v1/jobs")" = 401 ] || fail "a forged session cookie was not refused"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/auth/login?issuer=https://evil.example")" = 400 ] || fail "an unknown issuer was not refused"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Cookie: gpupool_session=forged' "$url/")" = 200 ] ||
  fail "a stale session cookie keeps the console's page from loading"
echo "a forged session cookie: 401 on the API, the console's page still loads"

# The browser: sign in through the provider, use the console, sign out.
NODE_EXTRA_CA_CERTS="$op/tls.pem" node "$here/console/console_oidc.mjs" "$url" "$iss" "$admin" "$artifacts" ||
  fail "the browser's single sign-on (see above)"

# Under TLS: the cookies are Secure with their prefixes.
daemon=${pids[-1]}
kill "$daemon"
until_ok 10 bash -c "! kill -0 $daemon 2> /dev/null" || fail "the daemon did not stop"
loopback_cert "$tmp/d.pem" "$tmp/d.key"
rm -f "$tmp/data/port"
"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 --tls-cert "$tmp/d.pem" --tls-key "$tmp/d.key" \
  > "$tmp/daemon-tls.log" 2>&1 &
pids+=($!)
until_ok 20 test -s "$tmp/data/port" || fail "the daemon did not start with TLS: $(tail -5 "$tmp/daemon-tls.log")"
turl="https://127.0.0.1:$(cat "$tmp/data/port")"
curl -s --cacert "$tmp/d.pem" -D "$tmp/h5" -o /dev/null "$turl/v1/auth/login?issuer=$iss"
grep -qi '^set-cookie: __Secure-gpupool_login=[^;]*; Path=/v1/auth/callback; Max-Age=600; SameSite=Lax; HttpOnly; Secure' "$tmp/h5" ||
  fail "under TLS the login cookie is not Secure: $(grep -i set-cookie "$tmp/h5")"
grep -qi "redirect_uri=https%3A%2F%2F127.0.0.1" "$tmp/h5" || fail "under TLS the redirect URI is not https: $(cat "$tmp/h5")"
curl -s --cacert "$tmp/d.pem" -D "$tmp/h6" -o /dev/null -X POST "$turl/v1/auth/logout"
grep -qi '^set-cookie: __Host-gpupool_session=; Path=/; Max-Age=0; SameSite=Strict; HttpOnly; Secure' "$tmp/h6" ||
  fail "under TLS the session cookie is not __Host- and Secure: $(grep -i set-cookie "$tmp/h6")"
echo "under TLS: __Secure-gpupool_login and __Host-gpupool_session, both Secure"

# Anonymous callers cannot grow the table of pending logins without bound: past 1024 the
# daemon answers 503 with Retry-After.
codes=$(for _ in $(seq 1030); do echo "url = \"$turl/v1/auth/login?issuer=$iss\""; echo "output = /dev/null"; echo 'write-out = "%{http_code}\n"'; done |
  curl -s --cacert "$tmp/d.pem" -K - | sort | uniq -c)
echo "$codes" | grep -q ' 1023 302' || fail "1024 logins did not begin: $codes"  # one is above
echo "$codes" | grep -q ' 7 503' || fail "past 1024 pending logins were not refused: $codes"
echo "pending logins are bounded: 1024 begun, then 503"
echo "PASS"
