#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Data across power cuts, on one backing file: writers put and delete on
# one index per engine (each engine when built into pmidx.ko:
# creating the index of another is refused, and its tests are skipped;
# the engines share the guest's CPUs within the same cut delays) and log
# every acknowledged operation to build/ (the guest writes it over 9p
# and fsyncs each line). QEMU is killed after several
# different delays (an engine's writers may not have started before an
# early cut: that round has no log of theirs); after each cut the next
# boot attaches (recovery) and checks that
#   - every acknowledged op is there with its latest value (the op in
#     flight at the cut may be old or new), nothing else is, and CHECK
#     passes with the right key count;
#   - a clean detach + attach of the recovered pool keeps the content,
#     and a second one gives the same allocator figures as the first
#     (the figures right after recovery are printed: an engine may hold
#     log state until its clean close, so they can be higher);
# and at the end, with the indexes dropped, the allocator is back to the
# empty pool's: nothing allocated before, during or after the cuts leaked.
#
#   selftests/vm/powercut_data.sh [CUT_SECONDS...]   (default: 4 7 11 16)
#
# With PC_URING_BATCH=N the writers send N ops per BATCH command over
# io_uring, so whole batches are in flight at the cut (acknowledged =
# CQE seen); their files go to build/vm/powercut-uring. On another
# kernel (PMIDX_VM_KERNEL, PMIDX_VM_KVER) the directory's name says which.
#
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
VM=tools/pmidx-vm
CTL=build/bin/pmidxctl
PC=build/bin/selftests/powercut_data
BATCH=${PC_URING_BATCH:-0}
OUT=build/vm/powercut
[ "$BATCH" != 0 ] && OUT=build/vm/powercut-uring
# the 6.12 and debug tiers run beside the Debian-kernel suites
# (tools/run-suites all): a directory of their own
OUT=$OUT${PMIDX_VM_KERNEL:+-$PMIDX_VM_KERNEL}${PMIDX_VM_KVER:+-$PMIDX_VM_KVER}
IMG=$OUT/pmem.img
DEV=/dev/pmidx0
ENGINES="utree ccl b3 lodge pfart"
CUTS=${*:-4 7 11 16}
SEED=${PMIDX_SEED:-$(date +%s)}
rm -rf "$OUT" && mkdir -p "$OUT"
pass=0 fail=0 n=0

ok() { # STATUS NAME [# SKIP ...]
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		pass=$((pass + 1)); echo "ok $n - $2"
	else
		fail=$((fail + 1)); echo "not ok $n - $2"
	fi
	[ "$1" = 0 ]
}

skip() {
	n=$((n + 1)); echo "ok $n - $1 # SKIP $2"
}

vm() { "$VM" --quiet --pmem "$IMG:256M" --log "$OUT/dmesg-$1.log" "${@:2}"; }

# same_alloc A.json B.json: pool allocator figures equal
same_alloc() {
	python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(f))['pools'][0]['stats'] for f in sys.argv[1:])
keys = ('alloc_objects', 'alloc_used_bytes')
print("# objects, bytes: %s %s, %s %s" %
      (sys.argv[1].split('/')[-1], [a[k] for k in keys],
       sys.argv[2].split('/')[-1], [b[k] for k in keys]))
sys.exit(0 if all(a[k] == b[k] for k in keys) else 1)
PY
}

echo "TAP version 13"
ncuts=$(echo "$CUTS" | wc -w)
echo "1..$((2 + ncuts * (3 + 2 * $(echo $ENGINES | wc -w))))"
echo "# seed $SEED, cuts after: $CUTS seconds, ops per io_uring BATCH: $BATCH (0: one ioctl per op)"

# --- boot 0: empty pool, one index per engine ------------------------------
vm boot0 -- sh -c "$CTL format /dev/pmem0 --force && $CTL attach /dev/pmem0 >/dev/null &&
	$CTL stats --json > $OUT/empty.json &&
	for e in $ENGINES; do
		if ! out=\$($CTL create-index pc_\$e --engine \$e 2>&1); then
			case \$out in
			*'engine not built into this module'*) touch $OUT/\$e.skip; continue ;;
			esac
			echo \"\$out\"; exit 1
		fi
		$PC probe $DEV pc_\$e || exit 1
	done"
ok $? "boot 0: format, attach, create one index per engine"
built=
for e in $ENGINES; do
	[ -e "$OUT/$e.skip" ] || built="$built pc_$e"
done
echo "# engines built into pmidx.ko:${built:- none}"

round=0
for cut in $CUTS; do
	round=$((round + 1))
	# --- write until the power cut ---------------------------------------
	rm -f "$OUT/r$round.started"
	if [ -n "$built" ]; then
		cmd="$CTL attach /dev/pmem0 >/dev/null && touch $OUT/r$round.started &&
			PC_URING_BATCH=$BATCH $PC write $DEV $OUT $round $SEED$round $built; sleep 600"
	else
		cmd="$CTL attach /dev/pmem0 >/dev/null && touch $OUT/r$round.started; sleep 600"
	fi
	vm "r$round-write" --cut-after "$cut" -- sh -c "$cmd" >"$OUT/r$round-write.out" 2>&1
	r=$?
	acked=0
	for f in "$OUT"/pc_*.r$round.w*.log; do
		[ -e "$f" ] && acked=$((acked + $(grep -c '^A ' "$f")))
	done
	[ $r = 200 ] && [ -e "$OUT/r$round.started" ] &&
		{ [ -z "$built" ] || [ $acked -gt 0 ]; }
	ok $? "round $round: power cut after ${cut}s while writing (rc $r, $acked ops acknowledged)" ||
		sed 's/^/# /' "$OUT/r$round-write.out"

	# --- recover, verify, then compare with a clean detach + attach ------
	vm "r$round-verify" -- sh -c "$CTL attach /dev/pmem0 >/dev/null &&
		$CTL stats --json > $OUT/r$round-recovered.json &&
		for i in $built; do
			$PC verify $DEV $OUT \$i $round > $OUT/r$round-\$i.verify 2>&1
			echo \$? > $OUT/r$round-\$i.rc
		done
		$CTL detach pmidx0 && $CTL attach /dev/pmem0 >/dev/null &&
		$CTL stats --json > $OUT/r$round-clean.json &&
		for i in $built; do
			$PC verify $DEV $OUT \$i $round > $OUT/r$round-\$i.verify2 2>&1
			echo \$? > $OUT/r$round-\$i.rc2
		done
		$CTL detach pmidx0 && $CTL attach /dev/pmem0 >/dev/null &&
		$CTL stats --json > $OUT/r$round-clean2.json &&
		$CTL detach pmidx0" >"$OUT/r$round-verify.out" 2>&1
	r=$?
	ok $r "round $round: attach with recovery, clean detach and re-attach (rc $r)" ||
		sed 's/^/# /' "$OUT/r$round-verify.out"
	for e in $ENGINES; do
		if [ -e "$OUT/$e.skip" ]; then
			skip "round $round: $e: acknowledged ops after the cut" "$e not built in"
			skip "round $round: $e: same content after a clean re-attach" "$e not built in"
			continue
		fi
		sed 's/^/# /;s/^# # /# /' "$OUT/r$round-pc_$e.verify" 2>/dev/null
		[ "$(cat "$OUT/r$round-pc_$e.rc" 2>/dev/null)" = 0 ]
		ok $? "round $round: $e: every acknowledged op present, nothing else, CHECK passes"
		[ "$(cat "$OUT/r$round-pc_$e.rc2" 2>/dev/null)" = 0 ]
		ok $? "round $round: $e: same content after a clean re-attach"
	done
	same_alloc "$OUT/r$round-recovered.json" "$OUT/r$round-clean.json" || :
	same_alloc "$OUT/r$round-clean.json" "$OUT/r$round-clean2.json"
	ok $? "round $round: allocator stable across clean re-attaches after recovery"
done

# --- drop everything: back to the empty pool -------------------------------
vm final -- sh -c "$CTL attach /dev/pmem0 >/dev/null &&
	for i in $built; do $CTL drop-index \$i || exit 1; done &&
	$CTL stats --json > $OUT/final.json && $CTL detach pmidx0" >"$OUT/final.out" 2>&1
r=$?
[ $r = 0 ] && same_alloc "$OUT/empty.json" "$OUT/final.json"
ok $? "indexes dropped: allocator back to the empty pool's (nothing leaked)"

echo "# $OUT holds the logs, guest kernel logs and JSON"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
