#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pmidx-bench's inproc options on a small pool file, on the host (the
# other paths need a guest: selftests/vm/bench_smoke.sh): --phases runs
# its list on one index and reports each phase; the pool's clwb/sfence
# counters per op reach the table and the JSON; --prefault; and
# --volatile-baseline runs the twin and records persistent/volatile
# ratios; the kapi path (the in-kernel API's calls on a pool file) on
# every engine, its writes read back through libpmidx. Options refused
# where they do not apply. Not a measurement:
# nothing here asserts a speed.
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../../.."
. selftests/vm/lib.sh
B=build/bin/pmidx-bench
OUT=build/bench-tests
rm -rf "$OUT" && mkdir -p "$OUT"
make --no-print-directory -s "$B" build/user/pmidx-poolfile >"$OUT/make.out" 2>&1 ||
	{ cat "$OUT/make.out"; echo "0 passed, 1 failed"; exit 1; }
KEYS=3000

echo "TAP version 13"
echo "1..11"

# every result of every run: all its ops done, none failed
all_done() {
	json "$1" "all(x['errors'] == 0 and x['ops'] > 0 for r in $2 for x in r['results'])"
}

PMIDX_PMEM_HW=none $B --path "inproc:$OUT/pool" --keys $KEYS --ops 500 --engine utree \
	--phases load,update,get,scan,insert,delete --json "$OUT/phases.json" \
	>"$OUT/phases.out" 2>&1 &&
	all_done "$OUT/phases.json" "[j]" &&
	json "$OUT/phases.json" "[x['workload'] for x in j['results']] == \
		['load', 'update', 'C', 'scan', 'insert', 'delete'] and \
		[x['ops'] for x in j['results']] == [$KEYS, 500, 500, 500, 500, 500]"
ok $? "--phases: six phases on one index, each reported"

json "$OUT/phases.json" "j['pmem_hw'] == 'none' and \
	all('flushes_per_op' in x and 'fences_per_op' in x for x in j['results']) and \
	j['results'][0]['flushes_per_op'] > 0 and j['results'][0]['fences_per_op'] > 0 and \
	j['results'][2]['flushes_per_op'] == 0" &&
	grep -q "pmem none, per op: load [0-9.]* clwb [0-9.]* sfence | update" "$OUT/phases.out"
ok $? "clwb/sfence per op of each phase in the JSON and the table (none on gets)"

$B --path "inproc:$OUT/pool" --keys $KEYS --engine ccl --prefault --workload update \
	--volatile-baseline --json "$OUT/volatile.json" >"$OUT/volatile.out" 2>&1 &&
	all_done "$OUT/volatile.json" "[j]" &&
	json "$OUT/volatile.json" "j['prefault'] and len(j['volatile_results']) == 2 and \
		all(x['errors'] == 0 and x['ops'] > 0 for x in j['volatile_results']) and \
		all(x['volatile_ratio'] > 0 for x in j['results'])" &&
	grep -q "persistent/volatile ops/s: load [0-9.]* ([0-9]*) | update" "$OUT/volatile.out"
ok $? "--prefault --volatile-baseline: the twin run, ratios per phase"

PMIDX_PMEM_HW=clwb $B --path "inproc:$OUT/pool" --keys 1000 --volatile-baseline \
	--phases load+update --json "$OUT/cmp.json" \
	--compare engine=ccl engine=utree,phases=load+get >"$OUT/cmp.out" 2>&1 &&
	all_done "$OUT/cmp.json" "j['runs']" &&
	json "$OUT/cmp.json" "[len(r['results']) for r in j['runs']] == [2, 2] and \
		[len(r['volatile_results']) for r in j['runs']] == [2, 2] and \
		j['runs'][1]['results'][1]['workload'] == 'C'"
ok $? "--compare with phases=LIST and the volatile twin of each configuration"

# the environment does not leak into the twin, nor the twin into the next run
json "$OUT/cmp.json" "all(r['pmem_hw'] in ('clwb', 'clflushopt', 'clflush', 'none') \
	for r in j['runs'])"
ok $? "the persistent runs keep their pmem mode around the volatile twins"

# --sample: every op counted, one in N timed, N in the JSON
PMIDX_PMEM_HW=none $B --path "inproc:$OUT/pool" --keys $KEYS --ops 700 --engine utree \
	--phases load,get --json "$OUT/sample.json" --compare sample=1 sample=7 \
	>"$OUT/sample.out" 2>&1 &&
	all_done "$OUT/sample.json" "j['runs']" &&
	json "$OUT/sample.json" "[r['sample'] for r in j['runs']] == [1, 7] and \
		all([x['ops'] for x in r['results']] == [$KEYS, 700] and \
		    x['p50_ns'] > 0 for r in j['runs'] for x in r['results'])"
ok $? "--sample 7: every op counted, latencies from one in seven"

# kapi: every engine through the in-kernel API's calls, in-process
r=0
for e in ccl utree b3 lodge pfart; do
	PMIDX_PMEM_HW=none $B --path "kapi:$OUT/pool" --keys $KEYS --ops 500 --engine $e \
		--phases load,update,get,scan,insert,delete --json "$OUT/kapi-$e.json" \
		>"$OUT/kapi-$e.out" 2>&1 &&
		all_done "$OUT/kapi-$e.json" "[j]" &&
		json "$OUT/kapi-$e.json" "j['path'] == 'kapi' and \
			[x['ops'] for x in j['results']] == [$KEYS, 500, 500, 500, 500, 500] and \
			j['results'][0]['flushes_per_op'] > 0" &&
		build/user/pmidx-poolfile check "$OUT/pool" >>"$OUT/kapi-$e.out" 2>&1 ||
		{ echo "# kapi, engine $e: see $OUT/kapi-$e.out"; r=1; }
done
ok $r "kapi: six phases on each of the five engines, none failed, the pool checks clean"

# scans of 100 records of 16 KiB: more than the 1 MiB out buffer holds
PMIDX_PMEM_HW=none $B --path "kapi:$OUT/pool" --keys 400 --ops 50 --engine ccl \
	--value-size 16384 --phases load,scan --json "$OUT/kapi-big.json" \
	>"$OUT/kapi-big.out" 2>&1 &&
	all_done "$OUT/kapi-big.json" "[j]"
ok $? "kapi: scans return what fits in the buffer (16 KiB values)"

# what the kapi path wrote is the index's: libpmidx's path reads it back
PMIDX_PMEM_HW=none $B --path "kapi:$OUT/pool" --keys $KEYS --engine utree --workload load \
	--value-size 24 >"$OUT/kapi-rw.out" 2>&1 &&
	PMIDX_PMEM_HW=none $B --path "inproc:$OUT/pool" --keys $KEYS --no-create --no-load \
		--workload C --ops $KEYS --value-size 24 --dist sequential \
		--json "$OUT/kapi-rw1.json" \
		>>"$OUT/kapi-rw.out" 2>&1 &&
	all_done "$OUT/kapi-rw1.json" "[j]" &&
	PMIDX_PMEM_HW=none $B --path "kapi:$OUT/pool" --keys $KEYS --no-create --no-load \
		--workload delete >>"$OUT/kapi-rw.out" 2>&1 &&
	PMIDX_PMEM_HW=none $B --path "inproc:$OUT/pool" --keys $KEYS --no-create --no-load \
		--workload C --ops $KEYS --value-size 24 --dist sequential \
		--json "$OUT/kapi-rw2.json" \
		>>"$OUT/kapi-rw.out" 2>&1 &&
	json "$OUT/kapi-rw2.json" "j['results'][0]['errors'] == $KEYS"
ok $? "kapi puts read back through libpmidx, kapi deletes gone there"

r=0
for args in "--path kapi" "--path kapi:" "--path kapi:$OUT/pool --batch 4"; do
	$B $args --keys 10 >"$OUT/refused.out" 2>&1
	[ $? = 2 ] || { echo "# not refused: $args"; r=1; }
done
ok $r "refused: kapi without a pool file, kapi with --batch"

r=0
for args in "--path ioctl --prefault" "--path ioctl --volatile-baseline" \
	"--path inproc:$OUT/pool --volatile-baseline --no-create" \
	"--path inproc:$OUT/pool --phases load,nosuch" \
	"--path inproc:$OUT/pool --phases load,A,B,C,E,insert,update,delete,scan" \
	"--path inproc:$OUT/pool --sample 0"; do
	$B $args --keys 10 >"$OUT/refused.out" 2>&1
	[ $? = 2 ] || { echo "# not refused: $args"; r=1; }
done
ok $r "refused: --prefault/--volatile-baseline off inproc or on an old pool, bad --phases, --sample 0"
rm -f "$OUT/pool" "$OUT/pool.crash"

summary
