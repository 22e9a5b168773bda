#!/usr/bin/env bash
# The daemon against a real OpenID Provider (issue 18 item 7, part): the oidc-provider npm
# package (tests/oidc/provider.mjs) over HTTPS on loopback, with a scripted login (authorization
# code with PKCE through the provider's own login and consent forms, tests/oidc/login.mjs).
# Covered: its ID tokens accepted and mapped to the tenant of the user's group; a token of another
# client of the same provider (wrong audience) refused; a refreshed token accepted; a user removed
# from the group losing access with the next login; the provider rotating its signing key (restart
# with a new key first) while a session's old token still verifies.
# Usage: daemon_oidc_provider_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: daemon_oidc_provider_test.sh GPUPOOL_BINARY}
here="$(cd "$(dirname "$0")" && pwd)"
command -v openssl > /dev/null || { echo "skipped: no openssl"; exit 77; }
command -v node > /dev/null || { echo "skipped: no node"; exit 77; }
[ -d "$here/oidc/node_modules/oidc-provider" ] || { echo "skipped: no oidc-provider (npm ci in tests/oidc)"; exit 77; }
. "$here/lib/e2e.sh"
start_op '{"ada": {"email": "ada@example.com", "groups": ["ml-research"]}}'
login() { NODE_EXTRA_CA_CERTS="$op/tls.pem" node "$here/oidc/login.mjs" "$iss" "$@"; }
id_token() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "${1:-id_token}"; }

op_config "$tmp/config.yaml"
serve_oidc "$bin"
status() { curl -s -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer $1" "$url$2"; }

session=$(login ada) || fail "the scripted login failed"
t1=$(echo "$session" | id_token)
[ "$(status "$t1" /v1/jobs)" = 200 ] || fail "the provider's ID token was refused: $(cat "$tmp/body")"
grep -q '"grants":\[{"role":"member","tenant":"research"}\]' <(curl -s -H "Authorization: Bearer $t1" "$url/v1/summary") ||
  fail "the provider's user is not a member of research"
echo "a login at oidc-provider gives an ID token the daemon maps to research/member"

other=$(login ada other | id_token) || fail "the login to the other client failed"
[ "$(status "$other" /v1/jobs)" = 401 ] || fail "a token for another audience was accepted: $(cat "$tmp/body")"
grep -q "audience does not include gpupool" "$tmp/body" || fail "the refusal does not say why: $(cat "$tmp/body")"
echo "a token of another client of the same provider (aud other): 401"

refresh=$(echo "$session" | id_token refresh_token) || fail "no refresh token"
t2=$(curl -sf --cacert "$op/tls.pem" -d grant_type=refresh_token -d client_id=gpupool --data-urlencode "refresh_token=$refresh" \
  "$iss/token" | id_token) || fail "the refresh failed"
# (Within the same second it may equal t1: same claims, and RS256 signatures are deterministic.)
[ -n "$t2" ] && [ "$(status "$t2" /v1/jobs)" = 200 ] || fail "the refreshed token was refused: $(cat "$tmp/body"); claims: $(echo "$t2" | cut -d. -f2 | base64 -d 2>/dev/null)"
echo "a refreshed ID token is accepted"

echo '{"ada": {"email": "ada@example.com", "groups": []}}' > "$op/accounts.json"
t3=$(login ada | id_token) || fail "the login after the group change failed"
[ "$(status "$t3" /v1/jobs)" = 403 ] || fail "a user out of the group kept access: $(cat "$tmp/body")"
grep -q "no mapping of issuer $iss grants ada@example.com a role (groups: none)" "$tmp/body" || fail "the 403 does not name the mapping: $(cat "$tmp/body")"
echo '{"ada": {"email": "ada@example.com", "groups": ["ml-research"]}}' > "$op/accounts.json"
echo "a user removed from the group loses access with the next login (403 naming the missing mapping)"

# Key rotation: the provider restarts on its port with a new key first (it signs with it) and
# the old one still published; the daemon fetches the new set when it first sees the new kid.
kill "$provider"; wait "$provider" 2> /dev/null
node -e '
const fs = require("fs"), crypto = require("crypto");
const f = process.argv[1], set = JSON.parse(fs.readFileSync(f, "utf8"));
const { privateKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
set.keys.unshift({ ...privateKey.export({ format: "jwk" }), kid: "r2", alg: "RS256", use: "sig" });
fs.writeFileSync(f, JSON.stringify(set));' "$op/jwks.json" || fail "no new key"
before=$iss
start_op "" "${iss##*:}"
[ "$iss" = "$before" ] || fail "the provider came back on another port"
sleep $(( 11 - ($(date +%s) - started) > 0 ? 11 - ($(date +%s) - started) : 0 ))
t4=$(login ada | id_token) || fail "the login after the rotation failed"
python3 -c 'import base64,json,sys; h=sys.argv[1].split(".")[0]; print(json.loads(base64.urlsafe_b64decode(h+"="*(-len(h)%4)))["kid"])' "$t4" |
  grep -qx r2 || fail "the provider did not sign with the new key"
[ "$(status "$t4" /v1/jobs)" = 200 ] || fail "a token of the rotated-in key was refused: $(cat "$tmp/body")"
[ "$(status "$t2" /v1/jobs)" = 200 ] || fail "the session's token of the old key was refused after the rotation: $(cat "$tmp/body")"
echo "rotation: the provider's new key is fetched and its tokens accepted; the old key's token still verifies"
echo "PASS"
