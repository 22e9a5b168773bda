#!/usr/bin/env bash
# The client verbs (get, describe, submit, cancel, reserve, availability, usage) end to end against a real daemon on port 0:
# every verb and output format, the exit codes (0 done, 1 server refused or unreachable, 2 usage)
# and where the server and token come from (flags, environment, config file).
# Usage: cli_client_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: cli_client_test.sh GPUPOOL_BINARY}
source "$(dirname "$0")/lib/cli.sh"

# One 8-GPU node; research may use 4 GPUs and never borrow, prod has 4 with no borrow cap.
cat > "$tmp/config.yaml" << 'EOF'
scheduler: {placement: fgd, tick_ms: 50}
tenants:
  - name: research
    weight: 2
    quotas: {h100-80gb: {guaranteed: 4, borrow_limit: 0}}
    limits: {max_replicas: 8}
  - name: prod
    quotas: {h100-80gb: {guaranteed: 4}}
nodes:
  - {name: h100, count: 1, flavor: h100-80gb, gpus: 8, block: rack-a, nvlink_domain: nvl-0}
prices:
  flavors: {h100-80gb: {per_gpu_hour: "3.50"}}
EOF
# The simulated executor runs what is placed (these are the client's tests, not the agents').
start_daemon "$tmp/config.yaml" --simulate-executor
# Only what this test sets: no real user config, environment as given below.
export HOME="$tmp/home"
unset GPUPOOL_CONFIG
export GPUPOOL_URL="$url" GPUPOOL_TOKEN="$token"

# --- get on an empty cluster: a header and nothing else.
gp get jobs
expect_rc 0 "get jobs (empty)"
out_has '^ID +NAME +TENANT +STATE +RESOURCES +REPLICAS +AGE +REASON$'
[ "$(wc -l < "$tmp/out")" -eq 1 ] || fail "empty get jobs prints only the header"

# --- submit from flags: prints the id; the job fits and is placed.
gp submit --tenant research --name small --priority-class training --flavor h100-80gb --gpus 1 \
  --duration 30m -- sleep 60
expect_rc 0 "submit small"
out_has '^job [0-9]+ submitted \(pending\)$'
small=$(sed -E 's/^job ([0-9]+) .*/\1/' "$tmp/out")

# --- submit -o json: 2 x 4 GPUs is above research's 4 with no borrowing, so it waits.
gp submit --tenant research --name big --priority-class training --flavor h100-80gb --replicas 2 \
  --gpus 4 --duration 2h -o json -- python train.py --epochs "10 20"
expect_rc 0 "submit big -o json"
json 'assert d["state"] == "pending", d'
big=$(python3 -c "import json; print(json.load(open('$tmp/out'))['id'])")

# --- submit -f YAML, twice with one idempotency key: one job.
cat > "$tmp/job.yaml" << 'EOF'
tenant: prod
name: serve
priority_class: inference
replicas: 1
resources: {flavor: h100-80gb, gpus: 2}
duration_estimate_s: 1h
command: [serve, --port, 8000]
EOF
gp submit -f "$tmp/job.yaml" --idempotency-key deploy-1
expect_rc 0 "submit -f"
out_has '^job [0-9]+ submitted'
prod=$(sed -E 's/^job ([0-9]+) .*/\1/' "$tmp/out")
gp submit -f - --idempotency-key deploy-1 < "$tmp/job.yaml"
expect_rc 0 "submit -f - replayed"
out_has "^job $prod was already submitted with this idempotency key"

# Wait for the scheduler to place the small job and give the big one its reason.
for _ in $(seq 1 100); do
  gp get jobs -o json
  python3 -c "
import json, sys
jobs = {j['id']: j for j in json.load(open('$tmp/out'))['items']}
ok = jobs['$small']['state'] == 'running' and jobs['$big'].get('reason', {}).get('code') not in (None, 'not_yet_considered')
sys.exit(0 if ok else 1)" && break
  sleep 0.1
done

# --- get jobs: table, filters, JSON and YAML.
gp get jobs
expect_rc 0 "get jobs"
out_has "^ *$small +small +research +running +h100-80gb:1gpu +1 +[0-9]+[sm]"
out_has "^ *$big +big +research +pending +h100-80gb:4gpu +2 +[0-9a-z]+ +[a-z_]+$"
out_has "^ *$prod +serve +prod "
gp get jobs --tenant prod
expect_rc 0 "get jobs --tenant"
out_has "^ *$prod +serve"
out_lacks "research"
gp get jobs --state pending -o json
expect_rc 0 "get jobs --state pending -o json"
json "assert [j['id'] for j in d['items']] == ['$big'], d"
# --- get one job, by the singular or the plural as kubectl does: one row, or the object itself.
for kind in job jobs; do
  gp get $kind "$small"
  expect_rc 0 "get $kind ID"
  out_has "^ *$small +small +research +running "
  [ "$(wc -l < "$tmp/out")" -eq 2 ] || fail "get $kind ID prints the header and one row"
done
gp get job "$small" -o json
json "assert d['id'] == '$small' and d['name'] == 'small', d"
gp get job 999
expect_rc 1 "get a missing job"
err_has "no job '999'"
gp get job "$small" --state running
expect_rc 2 "a NAME with a filter"
gp get jobs -o yaml
expect_rc 0 "get jobs -o yaml"
if python3 -c "import yaml" 2> /dev/null; then
  python3 -c "
import yaml
d = yaml.safe_load(open('$tmp/out'))
assert sorted(j['id'] for j in d['items']) == sorted(['$small', '$big', '$prod']), d
assert all(isinstance(j['id'], str) for j in d['items'])" || fail "get jobs -o yaml does not load"
else
  out_has '^items:'
fi

# --- pages: newest first; --limit prints one page and the cursor of the next; --cursor goes on.
gp get jobs --limit 2 -o json
expect_rc 0 "get jobs --limit 2 -o json"
json "assert [j['id'] for j in d['items']] == ['$prod', '$big'] and isinstance(d['next_cursor'], str), d"
cursor=$(python3 -c "import json; print(json.load(open('$tmp/out'))['next_cursor'])")
gp get jobs --limit 2 --cursor "$cursor" -o json
expect_rc 0 "get jobs --limit 2 --cursor"
json "assert [j['id'] for j in d['items']] == ['$small'] and d['next_cursor'] is None, d"
gp get jobs --limit 2
expect_rc 0 "get jobs --limit 2 (table)"
out_has "^ *$prod +serve"
out_lacks "^ *$small "
err_has "older jobs remain: add --cursor $cursor"
gp get jobs --cursor "$cursor" -o json
expect_rc 0 "get jobs --cursor (every page from there)"
json "assert [j['id'] for j in d['items']] == ['$small'] and d['next_cursor'] is None, d"
gp get jobs --tenant prod --limit 1 -o json
json "assert [j['id'] for j in d['items']] == ['$prod'] and d['next_cursor'] is None, d"
gp get jobs --limit 0
expect_rc 2 "--limit 0"
err_has 'from 1 to 1000'
gp get jobs --limit 1001
expect_rc 2 "--limit above 1000"
gp get nodes --limit 1
expect_rc 2 "--limit on nodes"
gp get jobs --limit 5 --cursor bogus
expect_rc 1 "a cursor the server did not hand out"
err_has "next_cursor"

# --- describe job: key: value lines with the reason and the placement.
gp describe job "$big"
expect_rc 0 "describe big"
out_has '^State: +pending$'
out_has '^Reason: +[a-z_]+: .+'
out_has '^Placement: +<none>$'
out_has "^Command: +python train.py --epochs '10 20'$"
out_has '^Duration estimate: +2h \(7200 s\)$'
gp describe job "$small"
expect_rc 0 "describe small"
out_has '^State: +running$'
out_has '^Admitted as: +guaranteed$'
out_has '^Placement:$'
out_has '^ +0 +h100-0 +[0-9]$'
gp describe job "$small" -o json
json "assert d['placement'][0]['node'] == 'h100-0', d"
gp describe job "$small" -o yaml
out_has "^id: \"$small\"$"
out_has '^state: running$'

# --- nodes and tenants.
gp get nodes
expect_rc 0 "get nodes"
out_has '^NAME +FLAVOR +CONDITION +GPUS +HEALTHY +FREE +MIG +SHARED +BLOCK +NVLINK$'
out_has '^h100-0 +h100-80gb +ready +8 +8/8 +[0-9] +0 +0 +rack-a +nvl-0$'
gp describe node h100-0
expect_rc 0 "describe node"
out_has '^Condition: +ready$'
out_has "^Jobs: +.*$small"
gp get tenants
expect_rc 0 "get tenants"
out_has '^NAME +WEIGHT +FLAVOR +GUARANTEED +ALLOCATED +BORROWED +PENDING +ACTIVE$'
out_has '^research +2 +h100-80gb +4 +1 +0 +1 +1$'
gp get tenants -o json
json "assert sorted(t['name'] for t in d['items']) == ['prod', 'research'], d"
gp describe tenant research
expect_rc 0 "describe tenant"
out_has '^Limits: +max_replicas=8$'
out_has '^  h100-80gb +4 +0 +- +1 +0$'
gp describe tenant research -o yaml
out_has '^name: research$'

# --- cancel: the job turns cancelled; cancelling again is the server's error.
gp cancel "$big"
expect_rc 0 "cancel"
out_has "^job $big cancelled$"
gp describe job "$big"
out_has '^State: +cancelled$'
gp get jobs --state cancelled -o json
json "assert [j['id'] for j in d['items']] == ['$big'], d"
gp cancel "$big" -o json
expect_rc 1 "cancel twice"
err_has "already cancelled"
gp cancel "$prod" -o json
expect_rc 0 "cancel -o json"
json "assert d == {'id': '$prod', 'state': 'cancelled'}, d"

# --- the server's refusals: exit 1 with its message.
gp describe job 999
expect_rc 1 "describe missing job"
err_has "no job '999'"
gp submit --tenant nobody --name x --priority-class training --flavor h100-80gb --gpus 1 --duration 60 -- true
expect_rc 1 "submit to an unknown tenant"
err_has "unknown tenant 'nobody'"
gp get jobs --token wrong-token
expect_rc 1 "wrong token"
err_has 'missing or invalid bearer token'
GPUPOOL_TOKEN= gp get jobs
expect_rc 1 "no token"
err_has 'no token given'

# --- usage errors: exit 2.
gp get jobs --bogus 1
expect_rc 2 "unknown flag"
err_has 'unknown flag --bogus'
gp get widgets
expect_rc 2 "unknown kind"
gp get jobs -o xml
expect_rc 2 "bad format"
gp get nodes --state pending
expect_rc 2 "--state on nodes"
gp describe job
expect_rc 2 "describe without an id"
gp submit --tenant research --name x --priority-class training --gpus 1 --duration 60 -- true
expect_rc 2 "submit without --flavor"
err_has '--flavor is required'
gp submit --tenant research --name x --priority-class training --flavor h100-80gb --gpus 1 --duration soon -- true
expect_rc 2 "bad duration"
gp submit -f "$tmp/job.yaml" --gpus 1
expect_rc 2 "-f with body flags"
gp cancel
expect_rc 2 "cancel without an id"
gp get jobs --url ftp://example
expect_rc 2 "bad URL scheme"
gp get jobs --help
expect_rc 0 "--help"
out_has '^usage: gpupool get'

# --- unreachable server: exit 1, naming the URL.
gp get jobs --url http://127.0.0.1:1
expect_rc 1 "unreachable"
err_has 'cannot reach the gpupool server at http://127.0.0.1:1'

# --- server and token from a config file, explicit and default; flags still win.
unset GPUPOOL_URL GPUPOOL_TOKEN
# --- connection flags before the verb work as after it (not before a job's command: after '--').
gp --url "$url" --token "$token" get tenants
expect_rc 0 "global --url and --token before the verb"
out_has '^prod '
gp --url="$url" --token="$token" -o json describe tenant prod
expect_rc 0 "global --flag=value and -o before the verb"
json "assert d['name'] == 'prod', d"
gp --token "$token" --url "$url" submit --tenant prod --name g --priority-class batch --flavor h100-80gb \
  --gpus 8 --duration 60 -o json -- echo --token
expect_rc 0 "global flags with a job command"
json "assert d['state'] == 'pending', d"
gp --url "$url" --token "$token" describe job "$(python3 -c "import json; print(json.load(open('$tmp/out'))['id'])")" -o json
json "assert d['command'] == ['echo', '--token'], d"
gp --url "$url" get tenants
expect_rc 1 "global --url without a token"
err_has 'no token given'
printf 'url: %s\ntoken: %s\n' "$url" "$token" > "$tmp/client.yaml"
GPUPOOL_CONFIG="$tmp/client.yaml" gp get tenants
expect_rc 0 "config from GPUPOOL_CONFIG"
out_has '^prod '
GPUPOOL_CONFIG="$tmp/client.yaml" gp get tenants --token wrong-token
expect_rc 1 "--token over the config file"
GPUPOOL_CONFIG="$tmp/missing.yaml" gp get tenants
expect_rc 2 "missing GPUPOOL_CONFIG"
mkdir -p "$HOME/.config/gpupool"
cp "$tmp/client.yaml" "$HOME/.config/gpupool/config.yaml"
gp describe node h100-0
expect_rc 0 "config from ~/.config/gpupool/config.yaml"
out_has '^Name: +h100-0$'
GPUPOOL_URL=http://127.0.0.1:1 gp get jobs
expect_rc 1 "GPUPOOL_URL over the config file"

# --- reservations: the 8 GPUs are all guaranteed, so a reservation is refused with the short
# interval; a maintenance window (admins) may take guaranteed capacity.
export GPUPOOL_URL="$url" GPUPOOL_TOKEN="$token"
gp reserve --tenant research --flavor h100-80gb --gpus 1 --start 2031-01-01T10:00:00Z --end 2031-01-01T12:00:00Z
expect_rc 1 "reservation with nothing reservable"
err_has 'short by 1 GPU from 2031-01-01T10:00:00Z to 2031-01-01T12:00:00Z'
gp reserve --maintenance --flavor h100-80gb --gpus 8 --start 2031-01-02T00:00:00Z --end 2031-01-02T06:00:00+02:00
expect_rc 0 "maintenance window"
out_has '^maintenance window [0-9]+: 8 x h100-80gb'
gp get reservations
expect_rc 0 "get reservations"
out_has '^ID +TENANT +FLAVOR +GPUS +START +END'
out_has '<maintenance> +h100-80gb +8 +2031-01-02T00:00:00Z +2031-01-02T04:00:00Z'
gp get reservations -o json
json "assert d['items'][0]['maintenance'] is True and d['items'][0]['gpus'] == 8"
gp availability --flavor h100-80gb --start 2031-01-01T00:00:00Z --end 2031-01-01T01:00:00Z
expect_rc 0 "reservable GPUs"
out_has '^0 x h100-80gb can be reserved'
gp availability --flavor h100-80gb --gpus 1 --duration 1h
expect_rc 0 "earliest start"
out_has 'no start within a year fits 1 x h100-80gb'
gp availability --flavor h100-80gb --gpus 1
expect_rc 2 "--gpus without --duration"
gp reserve --flavor h100-80gb --gpus 1 --start 2031-01-01T10:00:00Z --end 2031-01-01T12:00:00Z
expect_rc 2 "neither --tenant nor --maintenance"
gp reserve --tenant research --flavor h100-80gb --gpus 1 --start tomorrow --end 2031-01-01T12:00:00Z
expect_rc 1 "bad time (the server says why)"
err_has "RFC 3339"
gp submit --tenant research --name r --priority-class training --flavor h100-80gb --gpus 1 --duration 60 \
  --reservation 99 -- true
expect_rc 1 "a job naming an unknown reservation"
err_has "unknown reservation 99 for tenant research"

# --- usage: the jobs above held GPUs since they were admitted; table, JSON and CSV agree.
gp usage --from 2020-01-01T00:00:00Z
expect_rc 0 "usage table"
out_has '^TENANT +FLAVOR +KIND +GPU-HOURS +COST'
out_has '^research +h100-80gb +guaranteed +[0-9.]+ +[0-9]+\.[0-9]{6}'
out_has '^TOTAL'
gp usage --from 2020-01-01T00:00:00Z --group-by none -o json
json "assert all('kind' not in r and 'flavor' not in r for r in d['items']) and float(d['total']['gpu_hours']) > 0"
gp usage --from 2020-01-01T00:00:00Z --tenant research -o csv
expect_rc 0 "usage csv"
out_has '^tenant,flavor,kind,gpu_hours,unit_ms,billed_unit_ms,cost,priced_cost,unpriced_unit_ms$'
out_has '^research,h100-80gb,guaranteed,[0-9]+\.[0-9]{6},[0-9]+,[0-9]+,[0-9]+\.[0-9]{6},[0-9]+\.[0-9]{6},0$'
gp usage --from 2020-01-01T00:00:00Z --group-by team
expect_rc 1 "bad group-by (the server says why)"
err_has "group_by"
gp get jobs -o csv
expect_rc 2 "-o csv outside usage"

# --- more jobs than a page (1000): without --limit, get jobs fetches every page.
python3 - "$url" "$token" << 'PY' || fail "submitting 1000 jobs"
import json, sys, urllib.request
url, token = sys.argv[1], sys.argv[2]
for i in range(1000):
    body = {"tenant": "prod", "name": f"bulk-{i}", "priority_class": "batch", "replicas": 1,
            "resources": {"flavor": "h100-80gb", "gpus": 8}, "duration_estimate_s": 60, "command": ["true"]}
    req = urllib.request.Request(url + "/v1/jobs", data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
PY
gp get jobs -o json
expect_rc 0 "get jobs over two pages"
json "ids = [int(j['id']) for j in d['items']]; assert len(ids) == 1004 and ids == sorted(set(ids), reverse=True) and d['next_cursor'] is None, (len(ids), d['next_cursor'])"
gp get jobs --state pending --limit 999 -o json
json "assert len(d['items']) == 999 and isinstance(d['next_cursor'], str), len(d['items'])"
unset GPUPOOL_URL GPUPOOL_TOKEN

# --- serve refuses what it cannot do safely, with a clear message and exit 1.
gp serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0
expect_rc 1 "a second daemon on the same data directory"
err_has 'another gpupool serve is using'
gp serve --data-dir "$tmp/empty-data" --listen 127.0.0.1:0
expect_rc 1 "a new data directory without a cluster"
err_has 'needs a cluster: pass --config'
gp serve --demo --config "$tmp/config.yaml" --data-dir "$tmp/demo-data" --listen 127.0.0.1:0
expect_rc 1 "--demo with a cluster in --config"
err_has 'demo brings its own cluster'

echo "cli client ok"
