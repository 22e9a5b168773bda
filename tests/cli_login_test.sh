#!/usr/bin/env bash
# `gpupool login` against a real OpenID Provider (issue 18 items 3 and 7): the oidc-provider npm
# package (tests/oidc/provider.mjs) over HTTPS on loopback, and a scripted browser run as
# $BROWSER (tests/oidc/browse.mjs) that walks its pages. Covered: GET /v1/auth without a token;
# the device grant and the loopback PKCE flow end to end; the cache's modes; later commands using
# the cached token with no flag; a refresh when it is due (and four commands refreshing at once
# spending the rotating refresh token once); a user taken out of the group losing access at the
# next refresh; a refused sign-in; a login the server refuses not kept; logout revoking the
# refresh token at the provider.
# Usage: cli_login_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: cli_login_test.sh GPUPOOL_BINARY}
here="$(cd "$(dirname "$0")" && pwd)"
command -v openssl > /dev/null || { echo "skipped: no openssl"; exit 77; }
command -v node > /dev/null || { echo "skipped: no node"; exit 77; }
[ -d "$here/oidc/node_modules/oidc-provider" ] || { echo "skipped: no oidc-provider (npm ci in tests/oidc)"; exit 77; }
. "$here/lib/e2e.sh"
start_op '{"ada": {"email": "ada@example.com", "groups": ["ml-research"]}, "bob": {"email": "bob@example.com", "groups": []}}'
op_config "$tmp/config.yaml"
serve_oidc "$bin"
export HOME="$tmp/home" GPUPOOL_URL="$url" NODE_EXTRA_CA_CERTS="$op/tls.pem" BROWSE_LOG="$tmp/browse.log"
export BROWSER="node $here/oidc/browse.mjs"
creds="$HOME/.config/gpupool/credentials.json"
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["logins"][sys.argv[2]][sys.argv[3]])' "$creds" "$url" "$1"; }
set_expires() {
  python3 - "$creds" "$url" "$1" <<'PY'
import json, sys
p, u, e = sys.argv[1:]
d = json.load(open(p)); d["logins"][u]["expires"] = int(e); json.dump(d, open(p, "w"))
PY
}

curl -sf "$url/v1/auth" > "$tmp/auth.json" || fail "GET /v1/auth without a token failed"
grep -q "\"client_id\":\"gpupool\"" "$tmp/auth.json" && grep -q "\"issuer\":\"$iss\"" "$tmp/auth.json" ||
  fail "GET /v1/auth does not name the issuer and client: $(cat "$tmp/auth.json")"
echo "GET /v1/auth (no token) names the issuer, its client_id and scopes"

# The device grant (the provider offers it, so auto picks it).
LOGIN_USER=ada timeout 60 "$bin" login --idp-ca "$op/tls.pem" > "$tmp/login.out" 2> "$tmp/login.err" ||
  fail "device login failed: $(cat "$tmp/login.err") / $(cat "$tmp/browse.log")"
grep -q "and confirm the code [A-Z]" "$tmp/login.err" || fail "no code shown: $(cat "$tmp/login.err")"
grep -q "signed in to $url as ada@example.com: research (member)" "$tmp/login.out" || fail "login says: $(cat "$tmp/login.out")"
[ "$(stat -c %a "$creds")" = 600 ] && [ "$(stat -c %a "$(dirname "$creds")")" = 700 ] ||
  fail "the cache is not private: $(stat -c '%a %n' "$creds" "$(dirname "$creds")")"
"$bin" whoami > "$tmp/whoami" 2>&1 || fail "whoami with the cached login failed: $(cat "$tmp/whoami")"
grep -q "name:     ada@example.com" "$tmp/whoami" && grep -q "issuer:   $iss" "$tmp/whoami" || fail "whoami: $(cat "$tmp/whoami")"
"$bin" get jobs > /dev/null 2>&1 || fail "get jobs with the cached login failed"
echo "device login: code shown, confirmed in the browser; cache 0600 in a 0700 directory; whoami and get jobs use it"

# Due for refresh: the next command refreshes (the provider rotates the refresh token).
r1=$(field refresh_token)
set_expires 0
"$bin" get jobs > /dev/null 2> "$tmp/err" || fail "a command with a due token failed: $(cat "$tmp/err")"
r2=$(field refresh_token)
[ "$(field expires)" -gt "$(date +%s)" ] && [ "$r2" != "$r1" ] || fail "the token was not refreshed (expires $(field expires))"
set_expires 0
par=()
for i in 1 2 3 4; do ( "$bin" get jobs > /dev/null 2> "$tmp/par-$i.err"; echo $? > "$tmp/par-$i.rc" ) & par+=($!); done
wait "${par[@]}"  # (not a bare wait: the daemon and the provider are children too)
for i in 1 2 3 4; do
  [ "$(cat "$tmp/par-$i.rc")" = 0 ] || fail "command $i of four refreshing at once failed: $(cat "$tmp/par-$i.err")"
done
[ "$(field refresh_token)" != "$r2" ] || fail "the four commands did not refresh"
echo "a due token is refreshed (refresh token rotated); four commands refreshing at once all succeed"

# Out of the group: the next refresh's token has no mapping.
sed -i 's/"groups": \["ml-research"\]/"groups": []/' "$op/accounts.json"
set_expires 0
"$bin" get jobs > /dev/null 2> "$tmp/err" && fail "a user out of the group kept access after the refresh"
grep -q "no mapping of issuer $iss grants ada@example.com a role" "$tmp/err" || fail "the refusal: $(cat "$tmp/err")"
sed -i 's/"groups": \[\]/"groups": ["ml-research"]/' "$op/accounts.json"
set_expires 0
"$bin" get jobs > /dev/null 2> "$tmp/err" || fail "back in the group, the next refresh did not restore access: $(cat "$tmp/err")"
echo "a user taken out of the group loses access at the next refresh, and gets it back"

# The loopback flow with PKCE; the scripted browser sends a forged redirect first.
: > "$tmp/browse.log"
LOGIN_USER=ada timeout 60 "$bin" login --flow browser --idp-ca "$op/tls.pem" > "$tmp/login.out" 2> "$tmp/login.err" ||
  fail "browser login failed: $(cat "$tmp/login.err") / $(cat "$tmp/browse.log")"
grep -q "code_challenge_method=S256" "$tmp/login.err" || fail "the authorization URL has no PKCE: $(cat "$tmp/login.err")"
grep -q "forged redirect: 400" "$tmp/browse.log" && grep -q "redirect to the CLI: 200" "$tmp/browse.log" ||
  fail "the redirects: $(cat "$tmp/browse.log")"
grep -q "as ada@example.com: research (member)" "$tmp/login.out" || fail "login says: $(cat "$tmp/login.out")"
echo "browser login: PKCE on a 127.0.0.1 redirect; a redirect with another state is refused (400) and ignored"

# A sign-in refused at the provider, and one the server refuses, change nothing.
cp "$creds" "$tmp/creds.before"
ABORT=1 timeout 60 "$bin" login --flow device --idp-ca "$op/tls.pem" > /dev/null 2> "$tmp/err" && fail "an aborted login succeeded"
grep -q "the sign-in was refused at the provider" "$tmp/err" || fail "abort: $(cat "$tmp/err")"
LOGIN_USER=bob timeout 60 "$bin" login --flow browser --idp-ca "$op/tls.pem" > /dev/null 2> "$tmp/err" && fail "bob's login was kept"
grep -q "signed in at $iss as bob@example.com, but $url refuses the token: no mapping" "$tmp/err" || fail "bob: $(cat "$tmp/err")"
cmp -s "$creds" "$tmp/creds.before" || fail "a failed login changed the cache"
echo "a sign-in refused at the provider, and one the server refuses, leave the cache as it was"

# Logout forgets the login and revokes the refresh token at the provider.
r3=$(field refresh_token)
"$bin" logout > "$tmp/out" 2>&1 || fail "logout failed: $(cat "$tmp/out")"
grep -q "the refresh token is revoked at $iss" "$tmp/out" || fail "logout: $(cat "$tmp/out")"
curl -s --cacert "$op/tls.pem" -d grant_type=refresh_token -d client_id=gpupool --data-urlencode "refresh_token=$r3" \
  "$iss/token" | grep -q invalid_grant || fail "the revoked refresh token still works"
"$bin" get jobs > /dev/null 2> "$tmp/err" && fail "a command after logout was let in"
grep -q "HTTP 401" "$tmp/err" || fail "after logout: $(cat "$tmp/err")"
echo "logout: the login is gone and its refresh token revoked at the provider (invalid_grant)"
echo "PASS"
