#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The "pmidx" family driven by the kernel's own YNL CLI
# (tools/net/ynl/cli.py of Debian's linux-source-6.12, extracted by
# `tools/fetch-kernel-files --ynl build/ynl`) through
# Documentation/netlink/specs/pmidx.yaml, inside a pmidx-vm guest:
#   tools/fetch-kernel-files --ynl build/ynl
#   PMIDX_KO=build/test-module/pmidx.ko tools/pmidx-vm -- selftests/vm/ynl_cli.sh
# format, attach, detach, list and stats dumps, create-index (also two in
# one payload, --multi) and drop-index, a policy error with its extack
# (attribute and policy decoded), the permission flag of an op,
# alloc-test when the module has its test interface (skipped otherwise),
# pmidxctl seeing what the CLI did, the policy the running module dumps
# (nlctrl.yaml, getpolicy) against the spec (tools/ynl-check
# --live-policy), and the "events" group: a CLI subscribed (--subscribe
# events --sleep) while the pool is detached and attached. The listener
# is a CLI of its own, and pmidxctl makes the changes: 6.12's CLI fails
# a --do whose own notification arrives before its ack (lib/ynl.py
# _ops() loses the request's op), and pmidxctl is quick enough for a
# short sleep. Every CLI call but the first skips the schema check
# (--no-schema: seconds each under TCG). Wipes the first pmem device.
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
[ "${PMIDX_VM:-}" = 1 ] || { echo "ynl_cli: run me under tools/pmidx-vm"; exit 2; }
. selftests/vm/lib.sh
YNL=${PMIDX_YNL_DIR:-build/ynl}
SPEC=Documentation/netlink/specs/pmidx.yaml
SCHEMA=$YNL/Documentation/netlink/genetlink-legacy.yaml
CLI=$YNL/tools/net/ynl/cli.py
CTL=build/bin/pmidxctl
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
DEV=$(ls /dev/pmem* 2>/dev/null | head -n1)
AS=

# ynl NAME ARGS...: the CLI with the spec, without the schema check; its
# output in $OUT/NAME (JSON: the reply; an error's text otherwise). The
# CLI's status.
ynl() {
	local name=$1
	shift
	$AS python3 "$CLI" --spec "$SPEC" --no-schema --output-json "$@" \
		>"$OUT/$name" 2>&1
}

# listen NAME SECS: a CLI subscribed to the "events" group for SECS
# seconds (--subscribe events --sleep SECS), in the background; returns
# once it sleeps, i.e. has subscribed. heard NAME: wait for it; its output
# (a JSON list of the notifications) in $OUT/NAME.
listen() {
	local i
	python3 "$CLI" --spec "$SPEC" --no-schema --output-json \
		--subscribe events --sleep "$2" >"$OUT/$1" 2>&1 &
	eval "pid_$1=$!"
	for i in $(seq 600); do
		grep -q nanosleep "/proc/$!/wchan" 2>/dev/null && return 0
		kill -0 $! 2>/dev/null || return 1
		sleep 0.5
	done
	return 1
}
heard() {
	eval "wait \$pid_$1"
}

# js NAME PYTHON-EXPR: true when EXPR holds, r being $OUT/NAME's JSON. A
# false or failing EXPR prints the output.
js() {
	python3 - "$OUT/$1" "$2" <<'PY' || { sed 's/^/# /' "$OUT/$1"; return 1; }
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if eval('(' + sys.argv[2] + ')') else 1)
PY
}

# fails NAME ERE: the CLI failed and its output matches ERE
fails() {
	grep -Eq -- "$2" "$OUT/$1" || { sed 's/^/# /' "$OUT/$1"; return 1; }
}

echo "TAP version 13"
[ -r "$CLI" ] && [ -n "$DEV" ]
ok $? "setup: the kernel's YNL CLI ($CLI) and a pmem device" || { summary; exit 1; }

# the schema checked once, by the first call (and on the host by ynl-spec)
python3 "$CLI" --spec "$SPEC" --schema "$SCHEMA" --output-json \
	--do format --json "{\"dev-path\": \"$DEV\", \"force\": true}" >"$OUT/format" 2>&1 &&
	js format 'r is None'
ok $? "format $DEV (force), the spec checked against the kernel's schema"

ynl attach --do attach --json "{\"dev-path\": \"$DEV\"}" &&
	js attach "(p := r['pool'])['pool-name'] == 'pmidx0' and p['pool-id'] == 0 and
		p['dev-path'] == '$DEV' and p['pool-size'] > 0 and len(p['pool-uuid']) == 36 and
		isinstance(p['pool-flags'], list) and 'stats' not in p"
ok $? "attach: the reply's pool nest, flags and uuid decoded"

# Notifications: a CLI subscribed while pmidxctl (quick, so the listener's
# sleep can be short) detaches and attaches the pool.
listen ev 30 && $CTL detach pmidx0 >"$OUT/ctl" 2>&1 && $CTL attach "$DEV" >>"$OUT/ctl" 2>&1 &&
	heard ev &&
	js ev "[e['name'] for e in r] == ['event-detached', 'event-attached'] and
		all((p := e['msg']['pool'])['pool-name'] == 'pmidx0' and p['dev-path'] == '$DEV' and
		    len(p['pool-uuid']) == 36 for e in r)"
ok $? "events: event-detached and event-attached carry the pool" || sed 's/^/# /' "$OUT/ctl"

ynl ci --multi create-index '{"index-name": "t1", "engine": "utree"}' \
	--multi create-index '{"index-name": "t2", "pool-name": "pmidx0"}' &&
	js ci "r == [{'index': {'pool-id': 0, 'index-id': 0, 'index-name': 't1',
			'engine': 'utree', 'engine-name': 'utree'}},
		{'index': {'pool-id': 0, 'index-id': 1, 'index-name': 't2',
			'engine': 'ccl', 'engine-name': 'ccl'}}]"
ok $? "create-index t1 (utree) and t2 (default engine, pool by name) in one payload"

long=$(printf 'n%.0s' $(seq 300))
! ynl ci4 --do create-index --json "{\"index-name\": \"$long\"}" &&
	fails ci4 'Invalid argument' && fails ci4 "'bad-attr': '\.index-name'" &&
	fails ci4 "'max-length': 255"
ok $? "create-index with a 300-byte name: the policy names .index-name, max-length 255"

ynl list --dump list &&
	js list "len(r) == 3 and (p := r[0]['pool'])['pool-name'] == 'pmidx0' and
		'stats' not in p and
		[(m['index']['index-name'], m['index']['engine']) for m in r[1:]] ==
		[('t1', 'utree'), ('t2', 'ccl')]"
ok $? "list: the pool, then its two indexes"

ynl st1 --dump stats &&
	js st1 "len(r) == 3 and (s := r[0]['pool']['stats'])['chunk-size'] > 0 and
		s['alloc-total-chunks'] > 0 and 'alloc-used-bytes' in s and
		all('keys' in m['index']['stats'] and
		    all(isinstance(v, int) for v in m['index']['stats'].values())
		    for m in r[1:])"
ok $? "stats: u64 statistics by name, for the pool and each index"

# ctl "NAME:ENGINE...": what pmidxctl list --json shows
ctl() {
	$CTL list --json >"$OUT/ctl" 2>&1 && python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
got = [i["name"] + ":" + i["engine"] for p in j["pools"] for i in p["indexes"]]
sys.exit(0 if got == sys.argv[2].split() else 1)' "$OUT/ctl" "$1" ||
		{ sed 's/^/# /' "$OUT/ctl"; false; }
}
ctl "t1:utree t2:ccl"
ok $? "pmidxctl list sees the indexes the CLI created"

if command -v setpriv >/dev/null; then
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
	! ynl u1 --do create-index --json '{"index-name": "u"}' &&
		fails u1 'Operation not permitted'
	ok $? "unprivileged: create-index (admin-perm) is EPERM"
	AS=
else
	skip "unprivileged create-index" "no setpriv"
fi

if ynl at1 --do alloc-test --json '{"test-threads": 2, "test-ops": 200, "test-mode": "storm", "test-seed": 7}'; then
	js at1 "r['pool']['pool-name'] == 'pmidx0' and 'alloc-objects' in r['pool']['stats']"
	ok $? "alloc-test storm: the pool and its statistics"
elif grep -q 'Operation not supported' "$OUT/at1"; then
	skip "alloc-test" "the module has no test interface (make test-module)"
else
	sed 's/^/# /' "$OUT/at1"
	ok 1 "alloc-test storm"
fi

python3 "$CLI" --spec "$YNL/Documentation/netlink/specs/nlctrl.yaml" --no-schema \
	--output-json --dump getpolicy --json '{"family-name": "pmidx"}' >"$OUT/policy" 2>&1 &&
	tools/ynl-check --live-policy "$OUT/policy" >"$OUT/live" 2>&1
r=$?
# kept for a look at what the module reported (run-suites' results)
[ -d build/results ] && cp "$OUT/policy" build/results/ynl_cli-policy.json
# one test here: its lines as comments, without its summary line
grep -v 'passed, [0-9]* failed$' "$OUT/live" | sed 's/^/# /'
[ $r = 0 ] || sed 's/^/# /' "$OUT/policy" | head -n 20
ok $r "the running module's policy (nlctrl getpolicy through the CLI) is the spec's"

ynl di1 --do drop-index --json '{"index-name": "t1"}' && js di1 'r is None' && ctl "t2:ccl"
ok $? "drop-index t1"

ynl detach --do detach --json '{"pool-name": "pmidx0"}' && js detach 'r is None' &&
	$CTL list >"$OUT/ctl" 2>&1 && grep -q '^no pools attached$' "$OUT/ctl"
ok $? "detach pmidx0"

summary
