#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Pools across VM reboots and power cuts, on one backing file:
#   (utree indexes: an unused utree index holds only its root, so the
#   allocator figures below are exact; engines have their own power-cut
#   suites in powercut_data.sh)
#   1. clean reboot: format + attach + create indexes, module unload
#      detaches cleanly; next boot attaches without recovery, same indexes.
#      A b3 index loaded with 3,000 keys in boot 1 (b3's instant restart:
#      a clean attach recovers nothing; skipped when the module does not
#      build b3) is there with every key after the reboot and after the
#      power cuts below, with the allocator figures unchanged.
#   2. power cut after abandoned allocations (allocate, never link) and an
#      acknowledged create-index: after reboot recovery runs, the index
#      exists and the allocator holds exactly the linked objects again.
#   3. power cut in the middle of a multi-threaded allocator storm: after
#      reboot nothing allocated by the storm is left.
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
REPO=$PWD
VM=tools/pmidx-vm
CTL=build/bin/pmidxctl
BENCH=build/bin/pmidx-bench
OUT=build/vm/reboot
IMG=$OUT/pmem.img
rm -rf "$OUT" && mkdir -p "$OUT"
. selftests/vm/lib.sh

vm() { "$VM" --quiet --pmem "$IMG:256M" --log "$OUT/dmesg-$1.log" "${@:2}"; }


echo "TAP version 13"
echo "1..14"

# b3_keys BOOT: in the guest, the b3 index's checker passes and it holds
# the 3,000 keys of boot 1 and the anchor (into $OUT/BOOT-pages.*); true
# when there is no b3 index (no b3 in the module)
b3_keys() {
	echo "{ [ -e $OUT/b3.skip ] || { $CTL check pages --json > $OUT/$1-pages.json &&
		$CTL get pages anchor > $OUT/$1-pages.anchor; }; }"
}

# b3_ok BOOT NAME: the test NAME on what b3_keys BOOT wrote
b3_ok() {
	if [ -e "$OUT/b3.skip" ]; then
		skip "$2" "engine b3 is not built into pmidx.ko"
		return
	fi
	json "$OUT/$1-pages.json" "j['keys'] == 3001 and j['engine'] == 'b3'" &&
		[ "$(cat "$OUT/$1-pages.anchor")" = "restart" ]
	ok $? "$2"
}

# --- 1: clean reboot ------------------------------------------------------
vm boot1 -- sh -c "$CTL format /dev/pmem0 && $CTL attach /dev/pmem0 &&
	$CTL create-index inodes --engine utree &&
	$CTL create-index dentries --engine utree &&
	if ! out=\$($CTL create-index pages --engine b3 2>&1); then
		case \$out in
		*'engine not built into this module'*) touch $OUT/b3.skip ;;
		*) echo \"\$out\"; exit 1 ;;
		esac
	fi &&
	{ [ -e $OUT/b3.skip ] ||
	  { $BENCH --path ioctl --index pages --no-create --workload load \
		--keys 3000 --value-size 100 >/dev/null &&
	    $CTL put pages anchor restart; }; } &&
	$(b3_keys boot1) &&
	$CTL detach /dev/pmem0 && $CTL attach /dev/pmem0 >/dev/null &&
	$CTL stats --json > $OUT/boot1.json"
ok $? "boot 1: format, attach, create two indexes (and a loaded b3 one), clean module unload"
b3_ok boot1 "boot 1: b3: 3,000 keys loaded, and the anchor"

vm boot2 -- sh -c "$CTL attach /dev/pmem0 && $CTL list --json > $OUT/boot2-list.json &&
	$CTL stats --json > $OUT/boot2.json && $(b3_keys boot2)"
r=$?
[ $r = 0 ] && json "$OUT/boot2-list.json" \
	"sorted(i['name'] for i in j['pools'][0]['indexes'] if i['name'] != 'pages') == ['dentries','inodes'] and 'recovered' not in j['pools'][0]['flags']"
ok $? "boot 2: clean re-attach after reboot keeps the index table, no recovery"
b3_ok boot2 "boot 2: b3: every key back after a clean reboot, without recovery"
# Both figures are taken right after a clean attach: an index may hold
# DRAM-only pending objects while it writes (b3's reserve page, refilled
# by its next write) that a detach frees.
python3 - "$OUT/boot1.json" "$OUT/boot2.json" <<'PY'
import json, sys
a, b = (json.load(open(f))['pools'][0]['stats'] for f in sys.argv[1:])
sys.exit(0 if a['alloc_used_bytes'] == b['alloc_used_bytes'] and a['alloc_objects'] == b['alloc_objects'] else 1)
PY
ok $? "boot 2: allocator state identical after the clean reboot"

# --- 2: power cut after abandoned allocations -----------------------------
rm -f "$OUT/cut1.done"
vm boot3 --cut-after 15 -- sh -c "$CTL attach /dev/pmem0 &&
	$CTL stats --json > $OUT/before-leak.json &&
	$CTL alloc-test --mode leak --threads 2 --ops 400 --json > $OUT/leaked.json &&
	$CTL create-index acked-late --engine utree && touch $OUT/cut1.done; sleep 600"
r=$?
[ $r = 200 ] && [ -e "$OUT/cut1.done" ]
ok $? "boot 3: leak allocations + acknowledged create-index, then power cut (rc $r)"
python3 - "$OUT/before-leak.json" "$OUT/leaked.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))['pools'][0]['stats']
b = json.load(open(sys.argv[2]))['pool']['stats']
sys.exit(0 if b['alloc_objects'] == a['alloc_objects'] + 800 else 1)
PY
ok $? "boot 3: 800 abandoned objects were allocated before the cut"

vm boot4 -- sh -c "$CTL attach /dev/pmem0 && $CTL list --json > $OUT/boot4-list.json &&
	$CTL stats --json > $OUT/boot4.json && $(b3_keys boot4)"
r=$?
[ $r = 0 ] && json "$OUT/boot4-list.json" \
	"sorted(i['name'] for i in j['pools'][0]['indexes'] if i['name'] != 'pages') == ['acked-late','dentries','inodes'] and 'recovered' in j['pools'][0]['flags']"
ok $? "boot 4: recovery ran, acknowledged index present"
python3 - "$OUT/before-leak.json" "$OUT/boot4.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))['pools'][0]['stats']
b = json.load(open(sys.argv[2]))['pools'][0]['stats']
ok = b['alloc_objects'] == a['alloc_objects'] + 1 and \
     b['alloc_used_bytes'] == a['alloc_used_bytes'] + 256
print("# before: %d objects %d bytes; after recovery: %d objects %d bytes" %
      (a['alloc_objects'], a['alloc_used_bytes'], b['alloc_objects'], b['alloc_used_bytes']))
sys.exit(0 if ok else 1)
PY
ok $? "boot 4: no leak: allocator = objects before + the new index root"
b3_ok boot4 "boot 4: b3: every key back after the power cut"

# --- 3: power cut during an allocator storm -------------------------------
rm -f "$OUT/cut2.started"
vm boot5 --cut-after 6 -- sh -c "$CTL attach /dev/pmem0 &&
	$CTL stats --json > $OUT/before-storm.json && touch $OUT/cut2.started &&
	$CTL alloc-test --mode storm --threads 4 --ops 5000000 --seed 9; sleep 600"
r=$?
[ $r = 200 ] && [ -e "$OUT/cut2.started" ]
ok $? "boot 5: power cut while 4 threads allocate and free (rc $r)"

vm boot6 -- sh -c "$CTL attach /dev/pmem0 && $CTL stats --json > $OUT/boot6.json &&
	$(b3_keys boot6) && $CTL alloc-test --threads 2 --ops 2000 >/dev/null &&
	$CTL drop-index inodes && $CTL drop-index dentries && $CTL drop-index acked-late &&
	{ [ -e $OUT/b3.skip ] || $CTL drop-index pages; } &&
	$CTL stats --json > $OUT/empty.json && $CTL detach pmidx0"
r=$?
[ $r = 0 ] && python3 - "$OUT/before-storm.json" "$OUT/boot6.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))['pools'][0]['stats']
b = json.load(open(sys.argv[2]))['pools'][0]['stats']
sys.exit(0 if (a['alloc_objects'], a['alloc_used_bytes']) ==
	(b['alloc_objects'], b['alloc_used_bytes']) else 1)
PY
ok $? "boot 6: storm allocations reclaimed, pool usable and detaches cleanly"
b3_ok boot6 "boot 6: b3: every key back after the power cut in the storm"

[ -e "$OUT/empty.json" ] && json "$OUT/empty.json" \
	"j['pools'][0]['stats']['alloc_objects'] == 0 and j['pools'][0]['stats']['alloc_used_bytes'] == 0"
ok $? "boot 6: dropping every index returns the allocator to an empty pool"

echo "# $OUT holds the guest logs and JSON"
summary
