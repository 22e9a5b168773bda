#!/usr/bin/env bash
# The client verbs for what operators and tenant admins change, end to end against a real daemon:
# tokens (create, use, revoke), service accounts and token rotation, tenants (create from flags and from YAML, edit by flags, by a
# patch file and in $EDITOR, delete), priority classes, the audit log, cordon/uncordon/drain and
# delete node, a node's labels and a job's events, delete reservation and job, and submit's
# defaults, --selector and --topology.
# Usage: cli_admin_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: cli_admin_test.sh GPUPOOL_BINARY}
source "$(dirname "$0")/lib/cli.sh"

# Two 8-GPU nodes; research and prod hold 8 of the 16 as guarantees.
cat > "$tmp/config.yaml" << 'EOF2'
scheduler: {placement: fgd, tick_ms: 50}
tenants:
  - name: research
    quotas: {h100-80gb: {guaranteed: 4}}
  - name: prod
    quotas: {h100-80gb: {guaranteed: 4}}
nodes:
  - {name: h100, count: 2, flavor: h100-80gb, gpus: 8, labels: [zone=a, ib=true]}
EOF2
start_daemon "$tmp/config.yaml" --simulate-executor  # nodes without agents are ready
export HOME="$tmp/home" GPUPOOL_URL="$url" GPUPOOL_TOKEN="$token"
unset GPUPOOL_CONFIG VISUAL EDITOR

# --- priority classes.
gp get priority-classes
expect_rc 0 "get priority-classes"
out_has '^NAME +VALUE +PREEMPTIBLE +MAY-BORROW +GRACE$'
out_has '^training +[0-9]+ +(yes|no) +(yes|no) '
gp get priority-class training -o json
expect_rc 0 "get priority-class NAME"
json "assert d['name'] == 'training', d"
gp get priority-class nosuch
expect_rc 1 "get a missing priority class"
err_has "no priority-class 'nosuch'"

# --- tokens: a tenant admin's token made, used, listed and revoked.
gp create token ra --role tenant-admin --tenant research
expect_rc 0 "create token"
out_has '^token [0-9a-z]+ \(ra, tenant-admin, expires [0-9T:.-]+Z\): gp_'
err_has 'shown only this once'
ra_id=$(sed -E 's/^token ([^ ]+) .*/\1/' "$tmp/out")
ra_secret=$(sed -E 's/.*: (gp_.*)$/\1/' "$tmp/out")
gp get tokens
expect_rc 0 "get tokens"
out_has '^ID +NAME +ROLE +TENANT +ACCOUNT +EXPIRES +LAST-USED +REVOKED$'
out_has "^ *$ra_id +ra +tenant-admin +research +<none> +[0-9T:.-]+Z +never +no$"
gp get token "$ra_id" -o json
json "assert d['name'] == 'ra' and d['revoked'] is False, d"
gp get tenants --token "$ra_secret"
expect_rc 0 "the new token works"
out_has '^research '
out_lacks '^prod '
gp create token x --role member --tenant prod --token "$ra_secret"
expect_rc 1 "a tenant admin makes no token for another tenant"
gp create token x
expect_rc 2 "create token without --role"
err_has '--role is required'
gp create token x --role member --weight 2
expect_rc 2 "a tenant flag on a token"
gp create widget x
expect_rc 2 "create an unknown kind"


# --- the audit log: newest first, paged like jobs.
gp get audit
expect_rc 0 "get audit"
out_has '^ID +TIME +PRINCIPAL +TENANT +ACTION +OBJECT +FROM$'
out_has ' token\.create +ra +127\.0\.0\.1$'
gp get audit --limit 1 -o json
json "assert len(d['items']) == 1 and d['items'][0]['action'] == 'token.create', d"
gp get audit --token "$ra_secret" -o json
expect_rc 0 "a tenant admin reads its tenant's audit log"
gp get audit 1
expect_rc 2 "get audit takes no NAME"

# --- service accounts and rotation (issue 18 item 6), as the tenant admin.
gp service-account create ci-bot --tenant research --role member --token "$ra_secret"
expect_rc 0 "a tenant admin creates a service account"
gp service-account create boss --tenant research --role tenant-admin --token "$ra_secret"
expect_rc 1 "but not one of a role above what it could create"
gp service-account create x --tenant prod --role member --token "$ra_secret"
expect_rc 1 "nor one in another tenant"
gp service-account create x --role member
expect_rc 2 "service-account without --tenant"
gp service-account token ci-bot --tenant research --expires-in-days 7 --token "$ra_secret"
expect_rc 0 "a token for the account"
out_has '^token [0-9a-z]+ \(ci-bot, member, expires [0-9T:.-]+Z\): gp_'
bot_id=$(sed -E 's/^token ([^ ]+) .*/\1/' "$tmp/out")
bot_secret=$(sed -E 's/.*: (gp_.*)$/\1/' "$tmp/out")
gp get jobs --token "$bot_secret"
expect_rc 0 "the account's token works"
gp service-account list --tenant research --token "$ra_secret"
expect_rc 0 "service-account list"
out_has '^ci-bot +member +[0-9T:.-]+Z +ra +1 +[0-9T:.-]+Z$'
gp get token "$bot_id" -o json
json "assert d['service_account'] == 'ci-bot' and d['last_used'] is not None, d"
# The token rotates itself with an hour's grace: both work until then; the new one is the account.
gp token rotate "$bot_id" --grace 1h --token "$bot_secret"
expect_rc 0 "token rotate"
out_has "^token $bot_id stops at [0-9T:.-]+Z$"
new_secret=$(sed -nE 's/.*: (gp_.*)$/\1/p' "$tmp/out")
new_id=$(sed -nE 's/^token ([^ ]+) \(.*/\1/p' "$tmp/out")
gp get jobs --token "$bot_secret"
expect_rc 0 "the old secret works in the grace"
gp get jobs --token "$new_secret"
expect_rc 0 "the new secret works"
gp token rotate "$new_id" --grace 8d
expect_rc 1 "a grace past 7 days is refused"
gp token rotate "$new_id" --grace soon
expect_rc 2 "a bad --grace is a usage error"
gp service-account delete ci-bot --tenant research --token "$ra_secret"
expect_rc 0 "service-account delete"
out_has '^service account ci-bot deleted; 2 tokens revoked$'
gp get jobs --token "$new_secret"
expect_rc 1 "the account's tokens die with it"

# --- tenants: create from flags and from YAML; guarantees shown per GPU model.
gp create tenant vision --weight 1.5 --quota h100-80gb=2,borrow=2 --limit max-replicas=4 --limit max-duration=2h
expect_rc 0 "create tenant from flags"
out_has '^tenant vision created$'
gp describe tenant vision
out_has '^Weight: +1\.5$'
out_has '^Limits: +max_duration_s=7200, max_replicas=4$'
out_has '^  h100-80gb +2 +2 +- '
cat > "$tmp/tenant.yaml" << 'EOF2'
name: audio
weight: 1
quotas: {h100-80gb: {guaranteed: 1}}
EOF2
gp create tenant -f "$tmp/tenant.yaml"
expect_rc 0 "create tenant -f"
gp create tenant audio --weight 1
expect_rc 1 "a tenant that exists"
err_has "exists"
gp create tenant bad --quota h100-80gb=lots
expect_rc 2 "a bad --quota"
err_has "not a number of GPUs"
gp get tenants
out_has '^vision +1\.5 +h100-80gb +2 +0 +0 +0 +0$'
out_has '^audio +1 +h100-80gb +1 '

# --- edit tenant: flags keep the quotas they do not name; a patch file; the editor.
gp edit tenant vision --weight 3 --quota h100-80gb=1 --limit max-replicas=none
expect_rc 0 "edit tenant by flags"
out_has '^tenant vision edited$'
gp describe tenant vision -o json
json "assert d['weight'] == 3 and d['quotas'] == {'h100-80gb': {'guaranteed': 1}} and d['limits'] == {'max_duration_s': 7200}, d"
printf 'allow_gpu_cotenancy: true\nlimits: {max_duration_s: 0}\n' > "$tmp/patch.yaml"
gp edit tenant vision -f "$tmp/patch.yaml"
expect_rc 0 "edit tenant -f"
gp describe tenant vision -o json
json "assert d['allow_gpu_cotenancy'] is True and d['limits'] == {} and d['weight'] == 3, d"
# The editor: a script that sets the weight to 5 and drops the H100 quota's nothing else.
cat > "$tmp/editor.sh" << 'EOF2'
#!/bin/sh
grep -q '^name: vision$' "$1" || exit 3
sed -i 's/^weight: .*/weight: 5/' "$1"
EOF2
chmod +x "$tmp/editor.sh"
EDITOR="$tmp/editor.sh" gp edit tenant vision
expect_rc 0 "edit tenant in \$EDITOR"
out_has '^tenant vision edited$'
gp describe tenant vision -o json
json "assert d['weight'] == 5 and d['quotas'] == {'h100-80gb': {'guaranteed': 1}}, d"
VISUAL=true EDITOR=false gp edit tenant vision
expect_rc 0 "an unchanged file"
out_has '^edit cancelled, no changes made$'
EDITOR=false gp edit tenant vision
expect_rc 1 "an editor that fails"
err_has 'the editor \(false\) failed; nothing was sent'
printf '#!/bin/sh\nsed -i "s/^weight: .*/weight: -1/" "$1"\n' > "$tmp/bad-editor.sh"
chmod +x "$tmp/bad-editor.sh"
EDITOR="$tmp/bad-editor.sh" gp edit tenant vision
expect_rc 1 "the server refuses the edit"
err_has "'weight' must be in"
err_has 'your changes are in .*gpupool-edit-'
kept=$(sed -nE 's/.*your changes are in (.*)$/\1/p' "$tmp/err")
grep -q '^weight: -1$' "$kept" || fail "the kept file has the edit"
rm -f "$kept"
gp edit tenant nosuch --weight 2
expect_rc 1 "edit a missing tenant"
gp edit tenant vision --quota h100-80gb
expect_rc 2 "a bad --quota in an edit"
gp edit tenant vision -f "$tmp/patch.yaml" --weight 2
expect_rc 2 "-f with flags"
gp edit node h100-0
expect_rc 2 "edit what is not a tenant"

# --- nodes: cordon, uncordon, drain (requeues), and what get nodes shows.
gp submit --tenant research --name one --priority-class training --flavor h100-80gb --gpus 4 --duration 1h -- sleep 60
expect_rc 0 "submit a job"
job=$(sed -E 's/^job ([0-9]+) .*/\1/' "$tmp/out")
for _ in $(seq 1 100); do
  gp get job "$job" -o json
  python3 -c "import json, sys; sys.exit(json.load(open('$tmp/out'))['state'] not in ('admitted', 'running'))" && break
  sleep 0.1
done
node=$(python3 -c "import json; print(json.load(open('$tmp/out'))['placement'][0]['node'])")
gp cordon "$node"
expect_rc 0 "cordon"
out_has "^node $node cordoned$"
gp get node "$node"
out_has "^$node +h100-80gb +cordoned +8 +8/8 "
gp uncordon "$node"
expect_rc 0 "uncordon"
out_has "^node $node uncordoned$"
gp drain "$node" -o json
expect_rc 0 "drain -o json"
json "assert d['condition'] == 'draining' and d['requeued_jobs'] == 1, d"
gp describe node "$node"
out_has '^Condition: +draining$'
out_has '^Labels: +.*zone=a'
out_has '^Dedicated to: +<none>$'
# The job's history, oldest first, at the end of describe job: placed, started, sent back by
# the drain (and placed again on the other node).
gp describe job "$job"
expect_rc 0 "describe job with events"
out_has '^Events:$'
out_has '^  TIME +TYPE +MESSAGE$'
out_has '^  [0-9T:.Z-]+ +submitted '
out_has '^  [0-9T:.Z-]+ +requeued .*drained'
python3 -c "
lines = open('$tmp/out').read().split('Events:\n')[1].splitlines()[1:]
types = [l.split()[1] for l in lines]
assert types[:3] == ['submitted', 'admitted', 'started'] and 'requeued' in types[3:], types" || fail "events in order"
# A node leaves only drained and empty.
other=$(gp get nodes -o json; python3 -c "import json; print([n['name'] for n in json.load(open('$tmp/out'))['items'] if n['name'] != '$node'][0])")
gp delete node "$other"
expect_rc 1 "delete a node that is not drained"
err_has "drain it first"
gp delete node "$node"
expect_rc 0 "delete a drained, empty node"
out_has "^node $node deleted$"
gp get nodes -o json
json "assert [n['name'] for n in d['items']] == ['$other'], d"
gp cordon nosuch
expect_rc 1 "cordon a missing node"
err_has "no node 'nosuch'"
gp cordon
expect_rc 2 "cordon without a node"
gp drain a b
expect_rc 2 "drain two nodes"
gp cordon "$node" --token "$ra_secret"
expect_rc 1 "a tenant admin cordons nothing"

# --- delete: a reservation, a job, a token, a tenant.
gp reserve --maintenance --flavor h100-80gb --gpus 1 --start 2031-01-02T00:00:00Z --end 2031-01-02T06:00:00Z
rid=$(sed -E 's/^maintenance window ([0-9]+):.*/\1/' "$tmp/out")
gp delete reservation "$rid"
expect_rc 0 "delete reservation"
out_has "^reservation $rid cancelled$"
gp get reservations -o json
json "assert all(r['id'] != '$rid' or r.get('state') == 'cancelled' for r in d['items']), d"
gp delete job "$job"
expect_rc 0 "delete job"
out_has "^job $job cancelled$"
gp delete token "$ra_id"
expect_rc 0 "delete token"
out_has "^token $ra_id revoked$"
gp get tenants --token "$ra_secret"
expect_rc 1 "a revoked token"
gp delete tenant audio
expect_rc 0 "delete tenant"
out_has '^tenant audio deleted$'
gp get tenant audio
expect_rc 1 "a deleted tenant"
gp delete priority-class training
expect_rc 2 "priority classes are not deleted"
gp delete job
expect_rc 2 "delete without a name"

# --- submit without --priority-class and --duration: the default class, the tenant's default.
gp edit tenant research --limit default-duration=30m
expect_rc 0 "a default duration for research"
gp submit --tenant research --name defaults --flavor h100-80gb --gpus 1 -o json -- true
expect_rc 0 "submit without --priority-class and --duration"
gp describe job "$(python3 -c "import json; print(json.load(open('$tmp/out'))['id'])")" -o json
json "assert d['priority_class'] == 'training' and d['duration_estimate_s'] == 1800, d"

# --- submit: --selector and --topology are usage errors when malformed, with nothing sent.
gp submit --tenant research --name s --flavor h100-80gb --gpus 1 --selector 'zone in (a' -- true
expect_rc 2 "an unclosed selector set"
err_has "--selector: selector 'zone in \(a': missing '\)'"
gp submit --tenant research --name s --flavor h100-80gb --gpus 1 --selector '-zone' -- true
expect_rc 2 "a bad label key"
gp submit --tenant research --name s --flavor h100-80gb --gpus 1 --topology rack -- true
expect_rc 2 "a bad topology level"
err_has 'node, nvlink-domain or block'
gp submit --tenant research --name topo --priority-class training --flavor h100-80gb --gpus 2 --replicas 2 \
  --duration 60 --topology block:preferred -o json -- true
expect_rc 0 "submit --topology"
gp get jobs --state pending -o json
json "assert not any(j['name'] == 's' for j in d['items']), d"

echo "cli admin ok"
