#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# End-to-end check of pmidxctl against the real module, inside a pmidx-vm
# guest (never on the host). Wipes the pmem devices it is given.
#
#   tools/pmidx-vm --pmem /tmp/a.img --pmem /tmp/b.img -- \
#	tools/pmidxctl/tests/vm_e2e.sh
#
# PMIDX_CTL overrides the binary (default: pmidxctl from PATH, which
# pmidx-vm starts with build/bin).
set -u

P=${PMIDX_CTL:-pmidxctl}
AS=
pass=0
fail=0

[ "${PMIDX_VM:-}" = 1 ] || { echo "vm_e2e: run me under tools/pmidx-vm"; exit 2; }
D0=$(ls /dev/pmem* 2>/dev/null | sed -n 1p)
D1=$(ls /dev/pmem* 2>/dev/null | sed -n 2p)
[ -n "$D0" ] || { echo "vm_e2e: no /dev/pmem*"; exit 1; }

# t RC 'PATTERN' ARGS...: pmidxctl ARGS exits with RC and its stdout+stderr
# matches the grep -E PATTERN ('' = anything).
t() {
	want=$1 pat=$2
	shift 2
	out=$($AS "$P" "$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && { [ -z "$pat" ] || echo "$out" | grep -Eq -- "$pat"; }; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: pmidxctl $* -> $rc (want $want, /$pat/):"
		echo "$out" | sed 's/^/    /'
	fi
}

long=$(printf 'n%.0s' $(seq 64))
huge=$(printf 'h%.0s' $(seq 300))

t 0 '^no pools attached$' list
t 0 '^\{"pools":\[\]\}$' list --json
t 0 '' format "$D0" --force
t 1 "^pmidxctl: format $D0: File exists: " format "$D0"
t 1 '^pmidxctl: attach /dev/nonexistent: ' attach /dev/nonexistent
t 0 '^pmidx0$' attach "$D0"
t 1 'Device or resource busy' attach "$D0"
t 0 '^index inodes \(id 0, engine ccl\) created in pmidx0$' create-index inodes
t 0 'engine utree\) created in pmidx0$' create-index --engine utree dirs --pool pmidx0
t 0 'engine ccl\) created in pmidx0$' create-index y --pool "$D0" --engine=ccl
t 0 'engine pfart\) created in pmidx0$' create-index later --engine=pfart
t 0 'engine lodge\) created in pmidx0$' create-index buffered --engine=lodge
t 0 '' drop-index later
t 0 '' drop-index buffered
t 2 "unknown engine 'btrfs'" create-index z --engine=btrfs
t 1 '^pmidxctl: create-index dirs: File exists: ' create-index dirs
t 1 "^pmidxctl: create-index $long: .*: .*63" create-index "$long"
t 1 "^pmidxctl: create-index $huge: .*\\(attribute INDEX_NAME, max length 255\\)$" create-index "$huge"
t 1 '^pmidxctl: create-index x: No such device: ' create-index x --pool 7
t 1 '^pmidxctl: create-index z: No such device: no pool attached on /dev/pmem9$' create-index z --pool /dev/pmem9
t 0 '^ +1  dirs +utree$' list
t 0 '"indexes":\[\{"id":0,"name":"inodes","engine":"ccl"\},\{"id":1,"name":"dirs","engine":"utree"\}' list --json
t 0 '^index dirs \(pool pmidx0, id 1, engine utree\)$' stats
t 0 '^\{"pools":\[\{"id":0,"name":"pmidx0","stats":\{"alloc_used_bytes":[0-9]+,' stats --json
t 0 '^\{"pools":\[\],"indexes":\[\{"pool":0,"id":0,"name":"inodes","engine":"ccl","stats":\{' stats inodes --json
t 1 '^pmidxctl: stats nosuch: No such file or directory: no such index$' stats nosuch
t 1 '^pmidxctl: stats: No such device: ' stats --pool pmidx9
t 0 '"test":\{"mode":"storm","threads":2,"ops":500,"size":0,"seed":7\}\}$' alloc-test --threads 2 --ops 500 --seed 7 --json
t 1 '\(attribute TEST_THREADS, range 1\.\.64\)$' alloc-test --threads 100
t 0 '^alloc-test leak on pmidx0: 4 threads x 10 ops, size 64 bytes, seed 1$' alloc-test --mode leak --ops 10 --size 64
t 0 '' drop-index dirs
t 1 '^pmidxctl: drop-index dirs: No such file or directory: ' drop-index dirs
if command -v setpriv >/dev/null; then
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
	t 1 '^pmidxctl: create-index x: Operation not permitted$' create-index x
	t 0 '^pmidx0 ' list
	AS=
fi
if [ -n "$D1" ]; then
	t 0 '' format --force "$D1"
	t 0 '^pmidx1$' attach "$D1"
	t 1 'several pools attached' create-index q
	t 0 'engine utree\) created in pmidx1$' create-index q --pool /dev/pmidx1 --engine utree
	t 0 '^\{"pools":\[\{"id":1,"name":"pmidx1"' stats --pool "$D1" --json
	t 0 '' drop-index q --pool 1
	t 0 'engine b3\) created in pmidx1$' create-index pages --pool pmidx1 --engine b3
	t 0 '^ +[0-9]+  pages +b3$' list
	t 0 '^index pages \(pool pmidx1, id [0-9]+, engine b3\)$' stats pages --pool pmidx1
	t 0 '' drop-index pages --pool 1
	t 0 '' detach "$D1"
fi
t 1 '^pmidxctl: detach 5: No such device: ' detach 5
t 0 '' detach /dev/pmidx0
t 0 '^\{"pools":\[\]\}$' list --json

echo "pmidxctl vm_e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
