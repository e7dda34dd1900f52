#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Media errors known at attach (issue 11), inside a pmidx-vm guest:
#   tools/pmidx-vm -- selftests/vm/media_errors.sh
# QEMU's emulated NFIT has no error injection (ndctl inject-error says
# "not supported"; tried and reported here), so the bad blocks are written
# to /sys/block/pmem0/badblocks, the same list the pmem driver fills from
# the platform's scrub and from machine checks. A pool with bad blocks in
# its data area is refused (6.1's dax_direct_access() fails on any range
# with one) with a reason naming the data area, and so is a format; bad
# blocks in pool metadata are named as such; the kernel log lists every
# bad range with the pool structure it falls in. Bad blocks cannot be
# cleared without the platform's help, so this runs on a throwaway device.
# The pool holds an index of every engine the module serves (a skipped
# test names an engine it does not).
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
[ "${PMIDX_VM:-}" = 1 ] || { echo "media_errors: run me under tools/pmidx-vm"; exit 2; }
CTL=build/bin/pmidxctl
. selftests/vm/lib.sh
BB=/sys/block/pmem0/badblocks
ERR=$(mktemp)

# klog PATTERN: the kernel log has a line matching the ERE since the mark
klog() { dmesg | sed -n '/pmidx-media-mark/,$p' | grep -Eq "$1"; }
mark() { echo "pmidx-media-mark" >/dev/kmsg; }

echo "TAP version 13"
echo "1..12"

out=$(ndctl inject-error --block=4096 --count=1 namespace0.0 2>&1)
echo "# ndctl inject-error --block=4096 --count=1 namespace0.0: rc $?: $out"

$CTL format --force /dev/pmem0 >/dev/null && $CTL attach /dev/pmem0 >/dev/null &&
	$CTL create-index c --engine ccl >/dev/null &&
	$CTL create-index u --engine utree >/dev/null &&
	$CTL put c k1 v1 && $CTL put u k1 v1
ok $? "setup: a pool with a ccl and a utree index"

for e in b3 lodge pfart; do
	create_index "$e" "$e"
	r=$?
	if [ $r = 4 ]; then
		skip "setup: and a $e index" "engine $e is not built into pmidx.ko"
	else
		[ $r = 0 ] && $CTL put "$e" k1 v1 && [ "$($CTL get "$e" k1)" = v1 ]
		ok $? "setup: and a $e index"
	fi
done

$CTL detach pmidx0
ok $? "setup: the pool detaches (no bad blocks)"

sectors=$(cat /sys/block/pmem0/size)
data=$((sectors * 3 / 4 / 8 * 8))
echo "$data 8" >$BB && grep -q "^$data 8$" $BB
ok $? "a bad block in the data area (sector $data) is on the device's list"

mark
! $CTL attach /dev/pmem0 >/dev/null 2>"$ERR" &&
	grep -q "media errors in the pool's data area" "$ERR"
ok $? "attach refused: $(cat "$ERR")"

klog "pmidx: /dev/pmem0: media error: disk sectors $data\+8, pool bytes 0x[0-9a-f]+-0x[0-9a-f]+: data area" &&
	klog "pmidx: /dev/pmem0: 1 bad range, 8 bad sectors \(data area only\)"
ok $? "the kernel log names the bad range and the data area"

! $CTL format --force /dev/pmem0 >/dev/null 2>"$ERR" &&
	grep -q "media errors in the pool's data area" "$ERR"
ok $? "format refused too: $(cat "$ERR")"

# sector 1: the superblock; sector 20: the index table (8 KiB..16 KiB)
echo "1 1" >$BB && echo "20 2" >$BB
mark
! $CTL attach /dev/pmem0 >/dev/null 2>"$ERR" &&
	grep -q "media errors in pool metadata" "$ERR"
ok $? "bad blocks in metadata: attach refused: $(cat "$ERR")"

klog "media error: disk sectors 1\+1, pool bytes 0x200-0x3ff: superblock" &&
	klog "media error: disk sectors 20\+2, pool bytes 0x2800-0x2bff: index table" &&
	klog "3 bad ranges, 11 bad sectors \(pool metadata hit\)"
ok $? "the kernel log names the superblock and the index table"

! $CTL list 2>/dev/null | grep -q pmidx0
ok $? "no pool attached after the refusals"

rm -f "$ERR"
summary
