#!/usr/bin/env bash
# OIDC bearer tokens on the daemon (issue 18 item 2), end to end over HTTPS: the daemon finds the
# issuer's keys by discovery (trusting the issuer's certificate through ca_file), verifies the
# tokens a test issuer signs (tests/lib/test_issuer.mjs: Node's crypto, no login), and maps groups
# to tenants and roles. Covered: the union of several mappings, a valid token with no mapping
# (403 naming it), expired, wrong audience, wrong issuer, alg none, a token by an unpublished
# key, key rotation (a new key fetched once), a user removed from a group losing access with the
# next token, the audit log's issuer and subject, and mappings made through the API (audited,
# durable across kill -9).
# Usage: daemon_oidc_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: daemon_oidc_test.sh GPUPOOL_BINARY}
command -v openssl > /dev/null || { echo "skipped: no openssl"; exit 77; }
command -v node > /dev/null || { echo "skipped: no node"; exit 77; }
. "$(dirname "$0")/lib/e2e.sh"
issuer_js="$(cd "$(dirname "$0")" && pwd)/lib/test_issuer.mjs"
idp="$tmp/idp"
mkdir -p "$idp"
loopback_cert "$idp/tls.pem" "$idp/tls.key"
node "$issuer_js" keygen "$idp" k1 RS256 || fail "keygen"
node "$issuer_js" serve "$idp" > "$tmp/idp.log" 2>&1 &
pids+=($!)
until_ok 20 test -s "$idp/port" || fail "the test issuer did not start: $(cat "$tmp/idp.log")"
iss=$(cat "$idp/issuer")
mint() { node "$issuer_js" mint "$idp" "$@"; }

cat > "$tmp/config.yaml" <<YAML
tenants:
  - {name: research, quotas: {h100-80gb: {guaranteed: 8}}}
  - {name: vision, quotas: {h100-80gb: {guaranteed: 8}}}
nodes:
  - {name: n, count: 2, flavor: h100-80gb, gpus: 8}
auth:
  oidc:
    - issuer: $iss
      audience: gpupool
      username_claim: email
      groups_claim: groups
      ca_file: $idp/tls.pem
      mappings:
        - {group: ml-research, tenant: research, role: member}
        - {group: vision-admins, tenant: vision, role: tenant-admin}
        - {group: vision-all, tenant: vision, role: viewer}
        - {group: platform-team, role: cluster-admin}
        - {group: observers, role: metrics-reader}
YAML
serve_oidc "$bin" --metrics-require-token
daemon_pid=${pids[-1]}
grep -q '"accepting OIDC tokens"' "$tmp/daemon.log" || fail "the start does not name the issuer"
[ "$(grep -c '^/jwks$' "$idp/requests.log")" = 1 ] || fail "the key set was not loaded once at start"

# call TOKEN METHOD PATH [BODY]: prints "STATUS BODY".
call() {
  local out
  out=$(curl -s -o "$tmp/body" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $1" \
    ${4:+-H 'Content-Type: application/json' --data "$4"} "$url$3")
  echo "$out $(cat "$tmp/body")"
}
expect() {  # expect WHAT WANT_STATUS WANT_TEXT TOKEN METHOD PATH [BODY]
  local what=$1 status=$2 text=$3; shift 3
  local got; got=$(call "$@")
  [ "${got%% *}" = "$status" ] || fail "$what: wanted $status, got $got"
  case "$got" in *"$text"*) ;; *) fail "$what: the reply does not say '$text': $got" ;; esac
}
job='{"tenant": "research", "name": "oidc-job", "resources": {"flavor": "h100-80gb", "gpus": 1}, "command": ["true"], "duration_estimate_s": 60}'
vjob='{"tenant": "vision", "name": "v-job", "resources": {"flavor": "h100-80gb", "gpus": 1}, "command": ["true"], "duration_estimate_s": 60}'

ada=$(mint k1 '{"sub": "u-ada", "email": "ada@example.com", "groups": ["ml-research"]}')
expect "a member submits in its tenant" 201 '"id"' "$ada" POST /v1/jobs "$job"
expect "a member cannot see another tenant" 404 "unknown tenant 'vision'" "$ada" POST /v1/jobs "$vjob"
expect "who a member is" 200 '"name":"ada@example.com"' "$ada" GET /v1/summary
expect "an OIDC caller's issuer" 200 "\"issuer\":\"$iss\"" "$ada" GET /v1/summary

# The union: member of research, tenant-admin of vision (its wider role there beats viewer).
bob=$(mint k1 '{"sub": "u-bob", "email": "bob@example.com", "groups": ["ml-research", "vision-all", "vision-admins"]}')
got=$(call "$bob" GET /v1/summary)
echo "$got" | grep -q '"grants":\[{"role":"member","tenant":"research"},{"role":"tenant-admin","tenant":"vision"}\]' ||
  fail "the union of mappings is not research member + vision tenant-admin: $got"
expect "the union writes in its second tenant" 201 '"id"' "$bob" POST /v1/jobs "$vjob"
expect "a tenant admin by mapping reads its audit log" 200 '"items"' "$bob" GET /v1/audit
cara=$(mint k1 '{"sub": "u-cara", "email": "cara@example.com", "groups": ["vision-all"]}')
expect "a viewer by mapping cannot submit" 403 "your role may not submit jobs" "$cara" POST /v1/jobs "$vjob"
root=$(mint k1 '{"sub": "u-root", "email": "root@example.com", "groups": ["platform-team"]}')
who=$(GPUPOOL_TOKEN=$bob "$bin" whoami --url "$url") || fail "gpupool whoami failed"
for want in "name:     bob@example.com" "issuer:   $iss" "subject:  u-bob" "tenant:   research (member)" \
            "tenant:   vision (tenant-admin)" "expires:  20"; do
  echo "$who" | grep -qF "$want" || fail "whoami does not say '$want': $who"
done
admin_who=$("$bin" whoami --url "$url" --token "$(cat "$tmp/data/admin.token")") || fail "whoami as the admin failed"
echo "$admin_who" | grep -q "role:     cluster-admin (no tenant)" && echo "$admin_who" | grep -q "expires:  never" ||
  fail "whoami of the bootstrap admin: $admin_who"
expect "a cluster admin by mapping" 201 '"name":"extra"' "$root" POST /v1/tenants '{"name": "extra"}'
echo "mappings: one tenant, the union of several with the widest role, viewer, cluster-admin"

# /metrics behind a token takes OIDC callers too: cluster-admin and metrics-reader mappings
# (alone, or besides a tenant), not a member's.
obs=$(mint k1 '{"sub": "u-obs", "email": "obs@example.com", "groups": ["observers"]}')
obs_member=$(mint k1 '{"sub": "u-om", "email": "om@example.com", "groups": ["ml-research", "observers"]}')
expect "metrics as a metrics-reader by mapping" 200 "gpupool_" "$obs" GET /metrics
expect "metrics as a member and metrics-reader" 200 "gpupool_" "$obs_member" GET /metrics
expect "metrics as a cluster admin by mapping" 200 "gpupool_" "$root" GET /metrics
expect "metrics as a member" 403 "needs a metrics-reader" "$ada" GET /metrics
expect "metrics with an expired token" 401 "the token expired" "$(mint k1 "{\"sub\": \"u-obs\", \"email\": \"o@x\", \"groups\": [\"observers\"], \"exp\": $(( $(date +%s) - 120 ))}")" GET /metrics
expect "a metrics-reader by mapping reads nothing else" 403 "may only read /metrics" "$obs" GET /v1/jobs
echo "metrics: OIDC metrics-reader and cluster-admin mappings read it, a member does not"

nobody=$(mint k1 '{"sub": "u-dan", "email": "dan@example.com", "groups": ["sales"]}')
expect "a valid token with no mapping" 403 "no mapping of issuer $iss grants dan@example.com a role (groups: sales)" "$nobody" GET /v1/jobs
now=$(date +%s)
expect "expired" 401 "the token expired" "$(mint k1 "{\"sub\": \"u-ada\", \"email\": \"a@x\", \"groups\": [\"ml-research\"], \"exp\": $((now - 120))}")" GET /v1/jobs
expect "wrong audience" 401 "audience does not include gpupool" "$(mint k1 '{"sub": "u-ada", "email": "a@x", "aud": "other"}')" GET /v1/jobs
expect "wrong issuer" 401 "issuer is not trusted" "$(mint k1 '{"sub": "u-ada", "email": "a@x", "iss": "https://evil.example"}')" GET /v1/jobs
expect "alg none" 401 "signature algorithm 'none' is not accepted" "$(mint k1 '{"sub": "u-ada", "email": "a@x", "groups": ["platform-team"]}' '{"alg": "none"}')" GET /v1/jobs
# A key the issuer never published, under the published key's id.
mkdir -p "$tmp/rogue" && cp "$idp/issuer" "$tmp/rogue/" && node "$issuer_js" keygen "$tmp/rogue" k1 RS256
forged=$(node "$issuer_js" mint "$tmp/rogue" k1 '{"sub": "u-root", "email": "root@example.com", "groups": ["platform-team"]}')
expect "a token signed by another key" 401 "signature does not verify" "$forged" GET /v1/jobs
echo "refused: no mapping (403, naming it), expired, wrong audience, wrong issuer, alg none, another key (401)"

# Rotation: the issuer publishes k2 (ES256) and signs with it; the daemon fetches the key set
# again when it first sees k2 (at most once per 10 s, so wait out the start's load).
node "$issuer_js" keygen "$idp" k2 ES256 || fail "keygen k2"
sleep $(( 11 - ($(date +%s) - started) > 0 ? 11 - ($(date +%s) - started) : 0 ))
ada2=$(mint k2 '{"sub": "u-ada", "email": "ada@example.com", "groups": ["ml-research"]}')
expect "a token by the rotated-in key" 200 '"items"' "$ada2" GET /v1/jobs
expect "a token by the old key still published" 200 '"items"' "$ada" GET /v1/jobs
for _ in 1 2 3 4 5; do call "$ada2" GET /v1/jobs > /dev/null; done
[ "$(grep -c '^/jwks$' "$idp/requests.log")" = 2 ] || fail "the key set was not fetched exactly once more: $(cat "$idp/requests.log")"
echo "rotation: the new key is fetched once, tokens of both keys verify"

# Removed from the group: the next token has no ml-research, and loses access.
ada3=$(mint k2 '{"sub": "u-ada", "email": "ada@example.com", "groups": []}')
expect "a user removed from its group" 403 "no mapping" "$ada3" GET /v1/jobs
echo "a user removed from the group loses access with the next token"

# The audit log names the issuer and subject of OIDC changes.
admin=$(cat "$tmp/data/admin.token")
audit=$(curl -sf -H "Authorization: Bearer $admin" "$url/v1/audit") || fail "no audit log"
echo "$audit" | python3 -c '
import json, sys
items = [e for e in json.load(sys.stdin)["items"] if e["action"] == "job.submit" and e["principal"] == "ada@example.com"]
assert items, "no audit entry of ada submitting"
e = items[-1]
assert e["issuer"] == sys.argv[1] and e["subject"] == "u-ada" and e["tenant"] == "research", e
' "$iss" || fail "the audit log does not name the OIDC issuer and subject"
echo "audit: OIDC changes carry issuer and subject"

# Mappings through the API (cluster admins, audited, journaled): dan's group "sales" maps to
# nothing in the configuration; a mapping made by root (a cluster admin by mapping) gives it
# research viewer from the next request on, survives a restart, and its deletion takes it away.
expect "a member may not map" 403 "may not manage OIDC mappings" "$ada" POST /v1/oidc-mappings \
  "{\"issuer\": \"$iss\", \"group\": \"sales\", \"tenant\": \"research\", \"role\": \"tenant-admin\"}"
expect "an untrusted issuer" 400 "is not trusted here" "$root" POST /v1/oidc-mappings \
  '{"issuer": "https://evil.example", "group": "sales", "tenant": "research", "role": "viewer"}'
expect "an unknown tenant" 404 "unknown tenant 'nope'" "$root" POST /v1/oidc-mappings \
  "{\"issuer\": \"$iss\", \"group\": \"sales\", \"tenant\": \"nope\", \"role\": \"viewer\"}"
expect "both group and user" 400 "give one of 'group' and 'user'" "$root" POST /v1/oidc-mappings \
  "{\"issuer\": \"$iss\", \"group\": \"sales\", \"user\": \"x\", \"tenant\": \"research\", \"role\": \"viewer\"}"
expect "no mapping yet" 403 "no mapping" "$nobody" GET /v1/jobs
got=$(call "$root" POST /v1/oidc-mappings "{\"issuer\": \"$iss\", \"group\": \"sales\", \"tenant\": \"research\", \"role\": \"viewer\"}")
[ "${got%% *}" = 201 ] || fail "a cluster admin maps a group: $got"
mapping=$(echo "${got#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
expect "the same mapping twice" 409 "is the same" "$root" POST /v1/oidc-mappings \
  "{\"issuer\": \"$iss\", \"group\": \"sales\", \"tenant\": \"research\", \"role\": \"viewer\"}"
expect "the mapped group reads its tenant" 200 '"items"' "$nobody" GET /v1/jobs
expect "as a viewer only" 403 "your role may not submit jobs" "$nobody" POST /v1/jobs "$job"
expect "the mapping is listed" 200 "\"id\":\"$mapping\"" "$admin" GET /v1/oidc-mappings
kill -9 "$daemon_pid" 2> /dev/null
rm -f "$tmp/data/port"
serve_oidc "$bin" --metrics-require-token
expect "the mapping survives a kill -9 and a restart" 200 '"items"' "$nobody" GET /v1/jobs
expect "delete the mapping" 200 '"deleted":true' "$admin" DELETE "/v1/oidc-mappings/$mapping"
expect "the group loses it with the next request" 403 "no mapping" "$nobody" GET /v1/jobs
expect "an unknown mapping id" 404 "no OIDC mapping" "$admin" DELETE /v1/oidc-mappings/000000000000
audit=$(curl -sf -H "Authorization: Bearer $admin" "$url/v1/audit") || fail "no audit log"
echo "$audit" | python3 -c '
import json, sys
acts = {e["action"]: e for e in json.load(sys.stdin)["items"] if e["action"].startswith("oidc_mapping.")}
c = acts["oidc_mapping.create"]
assert c["principal"] == "root@example.com" and c["issuer"] == sys.argv[1] and c["subject"] == "u-root", c
assert "group sales -> research viewer" in c["object"], c
assert "oidc_mapping.delete" in acts, acts
' "$iss" || fail "the audit log lacks the mapping changes with the issuer and subject"
echo "mappings through the API: refused for members and bad input, effective at once, durable, audited"
echo "PASS"
