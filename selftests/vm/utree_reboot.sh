#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# uTree indexes across VM reboots, each on one backing file:
#   clean:  boot 1 fills index t (utree_smoke, PMIDX_UTREE_PHASE=fill),
#           module unload detaches cleanly (the tree image is saved);
#           boot 2 attaches (instant restart from the image) and verifies.
#   cut:    boot 1 fills, then the power is cut while idle;
#           boot 2 attaches (crash recovery: parallel list walk from the
#           trackers, allocator trace) and verifies; boot 3 verifies once
#           more after boot 2's clean detach.
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
VM=tools/pmidx-vm
CTL=build/bin/pmidxctl
T=build/bin/selftests/utree_smoke
OUT=build/vm/utree-reboot
rm -rf "$OUT" && mkdir -p "$OUT"
. selftests/vm/lib.sh

vm() {
	local img=$1 log=$2
	shift 2
	"$VM" --quiet --pmem "$OUT/$img:256M" --log "$OUT/dmesg-$log.log" "$@"
}

setup="$CTL format /dev/pmem0 && $CTL attach /dev/pmem0 && $CTL create-index t --engine utree"

echo "TAP version 13"
echo "1..7"

# --- clean reboot -------------------------------------------------------
vm clean.img clean1 -- sh -c "$setup && PMIDX_UTREE_PHASE=fill $T" >"$OUT/clean1.out" 2>&1
ok $? "clean 1: fill, clean detach at module unload"
vm clean.img clean2 -- sh -c "$CTL attach /dev/pmem0 && PMIDX_UTREE_PHASE=verify $T" \
	>"$OUT/clean2.out" 2>&1
ok $? "clean 2: attach and verify"
grep -q "uTree open: .* saved tree image" "$OUT/dmesg-clean2.log"
ok $? "clean 2: the tree came back from the saved image (instant restart)"

# --- power cut ----------------------------------------------------------
rm -f "$OUT/cut.done"
vm cut.img cut1 --cut-after 45 -- sh -c "$setup && PMIDX_UTREE_PHASE=fill $T &&
	touch $OUT/cut.done; sleep 600" >"$OUT/cut1.out" 2>&1
r=$?
[ $r = 200 ] && [ -e "$OUT/cut.done" ]
ok $? "cut 1: fill acknowledged, then power cut (rc $r)"
vm cut.img cut2 -- sh -c "$CTL attach /dev/pmem0 && PMIDX_UTREE_PHASE=verify $T" \
	>"$OUT/cut2.out" 2>&1
ok $? "cut 2: crash recovery and verify"
grep -q "uTree open: .* list walk" "$OUT/dmesg-cut2.log"
ok $? "cut 2: the tree was rebuilt from the list"
vm cut.img cut3 -- sh -c "$CTL attach /dev/pmem0 && PMIDX_UTREE_PHASE=verify $T" \
	>"$OUT/cut3.out" 2>&1
ok $? "cut 3: verify again after the recovered boot's clean detach"

grep -h "uTree open" "$OUT"/dmesg-*.log | sed 's/^/# /'
rm -f "$OUT"/*.img
echo "$pass passed, $fail failed"
[ $fail = 0 ]
