#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The in-kernel API through its sample client (samples/pmidx_dentry), run
# inside a pmidx-vm guest for each engine:
#   tools/pmidx-vm --pmem IMG -- selftests/vm/kapi_client.sh
# Directory entries are created, looked up, listed, renamed and unlinked
# by the kernel client; a held handle must pin the pool (detach and
# drop-index refused); bad commands and names fail cleanly; what the
# client wrote survives a detach/attach and is visible to userspace.
# An engine the module does not build (creating its index is refused) is
# one skipped test.
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
[ "${PMIDX_VM:-}" = 1 ] || { echo "kapi_client: run me under tools/pmidx-vm"; exit 2; }
CTL=build/bin/pmidxctl
. selftests/vm/lib.sh
DEV=/dev/pmidx_dentry
# The sample client built with pmidx.ko (tools/pmidx-vm points it at
# build/debug/... for the debug tier's kernel).
DENTRY_KO=${PMIDX_DENTRY_KO:-samples/pmidx_dentry/pmidx_dentry.ko}

# cmd FD LINE: send one command; its status is write(2)'s
cmd() { printf '%s\n' "$2" >&"$1" 2>/dev/null; }
# out FD: the last command's output
out() { cat <&"$1"; }
# expect FD LINE WANT: the command succeeds and prints exactly WANT
expect() {
	cmd "$1" "$2" && [ "$(out "$1")" = "$3" ]
}

echo "TAP version 13"
$CTL format --force /dev/pmem0 >/dev/null && $CTL attach /dev/pmem0 >/dev/null &&
	insmod "$DENTRY_KO"
ok $? "setup: pool attached, sample client loaded" || { summary; exit 1; }

for e in $ENGINES; do
	ix=d_$e
	create_index $ix $e
	r=$?
	if [ $r = 4 ]; then
		skip "$e: the sample client on a $e index" "engine $e is not built into pmidx.ko"
		continue
	fi
	ok $r "$e: create-index $ix" || continue

	exec 3<>$DEV
	! cmd 3 "lookup 1 a"
	ok $? "$e: a command before open fails"
	! cmd 3 "open pmidx9 $ix" && ! cmd 3 "open /dev/pmem7 $ix"
	ok $? "$e: open of an unknown pool fails"
	! cmd 3 "open pmidx0 nosuch"
	ok $? "$e: open of an unknown index fails"
	cmd 3 "open /dev/pmem0 $ix" && cmd 3 "close" && cmd 3 "open pmidx0 $ix"
	ok $? "$e: open by device path and by pool name"
	! cmd 3 "open pmidx0 $ix"
	ok $? "$e: a second open on one session is refused"

	cmd 3 "create 1 a 100" && cmd 3 "create 1 b 101" &&
		cmd 3 "create 2 a 200" && cmd 3 "create 1 cc 102"
	ok $? "$e: create four entries"
	! cmd 3 "create 1 a 5"
	ok $? "$e: create of an existing name fails (insert-only put)"
	expect 3 "lookup 1 a" "ino=100" && expect 3 "lookup 2 a" "ino=200"
	ok $? "$e: lookup"
	expect 3 "list 1" "a 100
b 101
cc 102"
	ok $? "$e: list one directory (a range scan)"
	cmd 3 "rename 1 b 2 c" && ! cmd 3 "lookup 1 b" && expect 3 "lookup 2 c" "ino=101"
	ok $? "$e: rename across directories"
	cmd 3 "unlink 2 a" && ! cmd 3 "unlink 2 a" && expect 3 "list 2" "c 101"
	ok $? "$e: unlink, then unlink of the missing name fails"
	! cmd 3 "frobnicate 1" && ! cmd 3 "create x a 1" && ! cmd 3 "bench put 0 10 99999" &&
		! cmd 3 "lookup 1 $(printf 'n%.0s' $(seq 260))"
	ok $? "$e: malformed commands and a too-long name are refused"

	! $CTL detach pmidx0 >/dev/null 2>&1 && ! $CTL drop-index $ix >/dev/null 2>&1
	ok $? "$e: a kernel handle pins the pool (detach, drop-index: EBUSY)"

	cmd 3 "bench put 1000000 2000 16" && out 3 | grep -q "^ops=2000 failed=0 ns=[0-9]*$"
	ok $? "$e: bench put of 2000 keys in the kernel"
	cmd 3 "bench get 1000000 2000 0" && out 3 | grep -q "^ops=2000 failed=0 "
	ok $? "$e: bench get finds all 2000"
	cmd 3 "bench get 5000000 10 0" && out 3 | grep -q "^ops=10 failed=10 "
	ok $? "$e: bench get of absent keys counts failures"
	$CTL check $ix 2>&1 | grep -Eq '\b2003\b'
	ok $? "$e: the userspace path sees the client's 2003 keys, check passes"
	exec 3>&-

	$CTL detach pmidx0 >/dev/null && $CTL attach /dev/pmem0 >/dev/null
	ok $? "$e: detach succeeds once the handle is closed"
	exec 3<>$DEV
	cmd 3 "open pmidx0 $ix" && expect 3 "list 1" "a 100
cc 102" && expect 3 "lookup 2 c" "ino=101"
	ok $? "$e: entries survive detach and attach"
	cmd 3 "bench del 1000000 2000 0" && out 3 | grep -q "^ops=2000 failed=0 "
	ok $? "$e: bench del removes them"
	exec 3>&-
done

# many sessions on one index at once
$CTL create-index many >/dev/null
pids=
for i in 1 2 3 4; do
	( exec 4<>$DEV && cmd 4 "open pmidx0 many" &&
	  cmd 4 "bench put $((i * 100000)) 500 8" && out 4 | grep -q "failed=0" ) &
	pids="$pids $!"
done
r=0
for p in $pids; do wait $p || r=1; done
[ $r = 0 ] && $CTL check many 2>&1 | grep -Eq '\b2000\b'
ok $? "four concurrent sessions each put 500 keys"

rmmod pmidx_dentry && $CTL detach pmidx0 >/dev/null
ok $? "sample client unloads; the pool detaches"
summary
