#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One on-media format for both builds: a pool formatted and written by the
# userspace build (build/user/pmidx-poolfile) attaches in the kernel, and
# a pool the kernel wrote opens in userspace. The image travels through
# the fsdax namespace with O_DIRECT block copies, so the bytes the kernel
# maps through DAX are exactly the file's. Every engine: utree, ccl and
# b3 (the userspace build always has b3; a module without it keeps the
# userspace-made b3 index in its table but serves no data of it, and the
# b3 test is skipped).
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
PF=build/user/pmidx-poolfile
CTL=build/bin/pmidxctl
OUT=build/vm/crossformat
rm -rf "$OUT" && mkdir -p "$OUT"
. selftests/vm/lib.sh


echo "TAP version 13"
echo "1..6"

$PF format "$OUT/user.img" 64M >/dev/null &&
	$PF create-index "$OUT/user.img" from-user --engine utree >/dev/null &&
	$PF create-index "$OUT/user.img" ccl-from-user --engine ccl >/dev/null &&
	$PF create-index "$OUT/user.img" b3-from-user --engine b3 >/dev/null &&
	$PF check "$OUT/user.img" >/dev/null
ok $? "userspace: format a 64 MiB pool file, create utree, ccl and b3 indexes"

tools/pmidx-vm --quiet --pmem "$OUT/pmem.img:256M" --log "$OUT/dmesg.log" -- sh -ec "
	dd if=$OUT/user.img of=/dev/pmem0 bs=1M oflag=direct conv=fsync status=none
	$CTL attach /dev/pmem0 >/dev/null
	$CTL list --json > $OUT/kernel-list.json
	$CTL put from-user hello world
	$CTL put ccl-from-user key-$$ value >/dev/null
	$CTL check from-user >/dev/null
	$CTL create-index from-kernel --engine utree >/dev/null
	$CTL put from-kernel k1 v1
	if $CTL create-index b3-from-kernel --engine b3 >/dev/null 2>$OUT/b3.err; then
		$CTL put b3-from-user hello b3
		$CTL check b3-from-user --json > $OUT/b3-check.json
		$CTL put b3-from-kernel k1 v1
	elif grep -q 'engine not built into this module' $OUT/b3.err; then
		touch $OUT/b3.skip
	else
		cat $OUT/b3.err; exit 1
	fi
	$CTL detach pmidx0
	dd if=/dev/pmem0 of=$OUT/kernel.img bs=1M count=64 iflag=direct status=none"
ok $? "kernel: attach the userspace-made image, write to it, create an index, detach"

json "$OUT/kernel-list.json" \
	"sorted(i['name'] for i in j['pools'][0]['indexes']) == ['b3-from-user','ccl-from-user','from-user']"
ok $? "kernel sees the indexes the userspace build created"

$PF check "$OUT/kernel.img" >/dev/null && $PF info "$OUT/kernel.img" --json > "$OUT/user-info.json"
ok $? "userspace: the kernel-written image is clean and passes the checker"

b3k="'b3-from-kernel',"
[ -e "$OUT/b3.skip" ] && b3k=
json "$OUT/user-info.json" \
	"sorted(i['name'] for i in j['indexes']) == [$b3k'b3-from-user','ccl-from-user','from-kernel','from-user'] and j['clean']"
ok $? "userspace sees the kernel's indexes and clean-detach state"

if [ -e "$OUT/b3.skip" ]; then
	skip "b3: the kernel writes to a userspace-made b3 index" "engine b3 is not built into pmidx.ko"
else
	json "$OUT/b3-check.json" "j['keys'] == 1 and j['engine'] == 'b3'"
	ok $? "b3: the kernel writes to a userspace-made b3 index, which checks"
fi

summary
