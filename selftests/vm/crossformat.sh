#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One on-media format for both builds: a pool formatted and written by the
# userspace build (build/user/pmidx-poolfile) attaches in the kernel, and
# a pool the kernel wrote opens in userspace. The image travels through
# the fsdax namespace with O_DIRECT block copies, so the bytes the kernel
# maps through DAX are exactly the file's. Every engine of lib.sh's
# ENGINES: the userspace build serves them all; a module without one keeps
# the userspace-made index in its table but serves no data of it, and that
# engine's test is skipped.
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
PF=build/user/pmidx-poolfile
CTL=build/bin/pmidxctl
OUT=build/vm/crossformat
rm -rf "$OUT" && mkdir -p "$OUT"
. selftests/vm/lib.sh

# the index names, sorted, as a Python list: NAMES SUFFIX...
names() {
	local e s
	for e in $ENGINES; do
		for s in "$@"; do
			[ "$s" = kernel ] && [ -e "$OUT/$e.skip" ] && continue
			echo "$e-$s"
		done
	done | sort | sed "s/.*/'&'/" | paste -sd, | sed 's/^/[/; s/$/]/'
}

echo "TAP version 13"
echo "1..$((5 + $(echo $ENGINES | wc -w)))"

r=0
$PF format "$OUT/user.img" 64M >/dev/null || r=1
for e in $ENGINES; do
	$PF create-index "$OUT/user.img" "$e-user" --engine "$e" >/dev/null || r=1
done
[ "$r" = 0 ] && $PF check "$OUT/user.img" >/dev/null
ok $? "userspace: format a 64 MiB pool file, create an index per engine ($ENGINES)"

tools/pmidx-vm --quiet --pmem "$OUT/pmem.img:256M" --log "$OUT/dmesg.log" -- sh -ec "
	dd if=$OUT/user.img of=/dev/pmem0 bs=1M oflag=direct conv=fsync status=none
	$CTL attach /dev/pmem0 >/dev/null
	$CTL list --json > $OUT/kernel-list.json
	for e in $ENGINES; do
		if $CTL create-index \$e-kernel --engine \$e >/dev/null 2>$OUT/\$e.err; then
			$CTL put \$e-user hello \$e
			$CTL put \$e-user key-$$ value >/dev/null
			$CTL check \$e-user --json > $OUT/\$e-check.json
			$CTL put \$e-kernel k1 v1
		elif grep -q 'engine not built into this module' $OUT/\$e.err; then
			touch $OUT/\$e.skip
		else
			cat $OUT/\$e.err; exit 1
		fi
	done
	$CTL detach pmidx0
	dd if=/dev/pmem0 of=$OUT/kernel.img bs=1M count=64 iflag=direct status=none"
ok $? "kernel: attach the userspace-made image, write to its indexes, create more, detach"

json "$OUT/kernel-list.json" \
	"sorted(i['name'] for i in j['pools'][0]['indexes']) == $(names user)"
ok $? "kernel sees the indexes the userspace build created"

$PF check "$OUT/kernel.img" >/dev/null && $PF info "$OUT/kernel.img" --json > "$OUT/user-info.json"
ok $? "userspace: the kernel-written image is clean and passes the checker"

json "$OUT/user-info.json" \
	"sorted(i['name'] for i in j['indexes']) == $(names user kernel) and j['clean']"
ok $? "userspace sees the kernel's indexes and clean-detach state"

for e in $ENGINES; do
	if [ -e "$OUT/$e.skip" ]; then
		skip "$e: the kernel writes to a userspace-made $e index" "engine $e is not built into pmidx.ko"
	else
		json "$OUT/$e-check.json" "j['keys'] == 2 and j['engine'] == '$e'"
		ok $? "$e: the kernel writes to a userspace-made $e index, which checks"
	fi
done

summary
