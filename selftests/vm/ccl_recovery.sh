#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The ccl engine across detach/attach, reboots and power cuts, on one
# backing file (tools/pmidx-vm --pmem FILE:256M, booted again and again):
#   1. fill a data set, detach + attach in the same boot, verify it;
#      module unload detaches cleanly;
#   2. reboot: clean attach, the data set is there, add a second one;
#   3. power cut while two writers (per-CPU logs) put/delete with GC
#      forced often, each op logged to a host file before and after;
#   4. reboot: crash recovery replays the logs; every acknowledged op is
#      there, the data sets too, the checker passes;
#   5. power cut again with N_batch 7 and the naive GC, then
#   6. recovery with N_batch 1: more replayed KVs per leaf than buffer
#      slots (the overflow path, drained by the GC thread); all verified;
#   7. reboot once more: drop-index gives every object back.
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
VM=tools/pmidx-vm
CTL=build/bin/pmidxctl
T=build/bin/selftests/ccl_smoke
OUT=build/vm/ccl
IMG=$OUT/pmem.img
P=/sys/module/pmidx/parameters
rm -rf "$OUT" && mkdir -p "$OUT/cut1" "$OUT/cut2"
. selftests/vm/lib.sh

vm() { "$VM" --quiet --pmem "$IMG:256M" --log "$OUT/dmesg-$1.log" "${@:2}"; }

echo "TAP version 13"
echo "1..9"

vm boot1 -- sh -c "$CTL format /dev/pmem0 >/dev/null && $CTL attach /dev/pmem0 >/dev/null &&
	$CTL create-index t --engine ccl >/dev/null &&
	$T fill t 1 20000 && $T verify t 1 20000 &&
	$CTL detach pmidx0 && $CTL attach /dev/pmem0 >/dev/null &&
	$T verify t 1 20000 && $CTL check t" >"$OUT/boot1.out" 2>&1
ok $? "boot 1: fill, detach + attach, verify, clean unload"

vm boot2 -- sh -c "$CTL attach /dev/pmem0 >/dev/null && $T verify t 1 20000 &&
	$T fill t 2 5000 && $T verify t 2 5000 &&
	$CTL list --json > $OUT/boot2-list.json" >"$OUT/boot2.out" 2>&1
r=$?
[ $r = 0 ] && ! grep -q recovered "$OUT/boot2-list.json"
ok $? "boot 2: clean reboot, data set there, no recovery (rc $r)"

vm boot3 --cut-after 25 -- sh -c "$CTL attach /dev/pmem0 >/dev/null &&
	echo 1 > $P/ccl_th_log && touch $OUT/cut1/started &&
	$T ackwrite t $OUT/cut1 2 0" >"$OUT/boot3.out" 2>&1
r=$?
[ $r = 200 ] && [ -e "$OUT/cut1/started" ]
ok $? "boot 3: power cut during 2 writers with GC forced (rc $r)"

vm boot4 -- sh -c "$CTL attach /dev/pmem0 >/dev/null && $CTL list --json > $OUT/boot4-list.json &&
	$T ackverify t $OUT/cut1 2 0 && $T verify t 1 20000 && $T verify t 2 5000 &&
	$CTL check t && $CTL stats t" >"$OUT/boot4.out" 2>&1
r=$?
grep -h "ackverify\|recovery_ns\|replayed" "$OUT/boot4.out" "$OUT/dmesg-boot4.log" | sed 's/^/# /'
[ $r = 0 ] && grep -q recovered "$OUT/boot4-list.json"
ok $? "boot 4: recovery keeps every acknowledged op (rc $r)"

vm boot5 --cut-after 25 -- sh -c "echo 7 > $P/ccl_nbatch && echo 1 > $P/ccl_gc_naive &&
	echo 5 > $P/ccl_th_log && $CTL attach /dev/pmem0 >/dev/null &&
	touch $OUT/cut2/started && $T ackwrite t $OUT/cut2 2 1" >"$OUT/boot5.out" 2>&1
r=$?
[ $r = 200 ] && [ -e "$OUT/cut2/started" ]
ok $? "boot 5: power cut with N_batch 7, naive GC (rc $r)"

vm boot6 -- sh -c "echo 1 > $P/ccl_nbatch && $CTL attach /dev/pmem0 >/dev/null &&
	$T ackverify t $OUT/cut2 2 1 && $T ackverify t $OUT/cut1 2 0 &&
	$T verify t 1 20000 && $T verify t 2 5000 && sleep 3 && $CTL check t &&
	$T ackverify t $OUT/cut2 2 1 && $CTL stats t" >"$OUT/boot6.out" 2>&1
r=$?
grep -h "ackverify\|recovery_ns\|replayed" "$OUT/boot6.out" "$OUT/dmesg-boot6.log" | sed 's/^/# /'
ok $r "boot 6: recovery into N_batch 1 buffers (overflow), all verified"

vm boot7 -- sh -c "$CTL attach /dev/pmem0 >/dev/null && $T verify t 1 20000 &&
	$CTL stats --json > $OUT/boot7-before.json &&
	$CTL create-index u --engine ccl >/dev/null && CCL_INDEX=u $T fill u 3 5000 &&
	$CTL drop-index u && $CTL stats --json > $OUT/boot7-after.json" >"$OUT/boot7.out" 2>&1
ok $? "boot 7: create, fill and drop a second index"
python3 - "$OUT/boot7-before.json" "$OUT/boot7-after.json" <<'PY'
import json, sys
a, b = (json.load(open(f))['pools'][0]['stats'] for f in sys.argv[1:])
print("# objects before %d after %d" % (a['alloc_objects'], b['alloc_objects']))
sys.exit(0 if a['alloc_objects'] == b['alloc_objects'] else 1)
PY
ok $? "boot 7: drop-index returns every object"

vm boot8 -- sh -c "$CTL attach /dev/pmem0 >/dev/null && $T verify t 1 20000 &&
	$T verify t 2 5000 && $T ackverify t $OUT/cut2 2 1 && $CTL check t" >"$OUT/boot8.out" 2>&1
ok $? "boot 8: clean reboot after all that"

echo "$pass passed, $fail failed"
[ $fail = 0 ]
