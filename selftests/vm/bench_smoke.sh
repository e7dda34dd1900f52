#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pmidx-bench through every path, small and quick: one guest runs compare
# mode over ioctl, uring (qd 1, qd 16, BATCHes), ioctl BATCHes and the
# kernel path (sample client), each workload on every engine the module
# builds (the others are skipped), then the lmdb baseline beside the
# ioctl path, on ext4 -o dax on the guest's second nvdimm (/dev/pmem1,
# tools/bench/dax-mount); the inproc path runs on the host. The JSON must
# hold every configuration with every operation done and none failed. The
# keys per engine are a share of one budget, so a third engine costs no
# more time than the two before it.
# Prints KTAP lines and a final "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
B=build/bin/pmidx-bench
CTL=build/bin/pmidxctl
OUT=build/vm/bench_smoke
rm -rf "$OUT" && mkdir -p "$OUT"
. selftests/vm/lib.sh
KEYS=$((6000 / $(echo $ENGINES | wc -w)))

# every run of FILE did all its operations without an error
all_done() {
	json "$1" "len(j['runs']) == $2 and all(x['errors'] == 0 and x['ops'] > 0 \
		for r in j['runs'] for x in r['results'])"
}

echo "TAP version 13"
echo "1..$((4 + 2 * $(echo $ENGINES | wc -w)))"

LMDB=path=lmdb:/tmp/lmdb/db
tools/pmidx-vm --quiet --pmem "$OUT/pmem.img:256M" --pmem "$OUT/dax.img:64M" \
	--log "$OUT/dmesg.log" -- sh -c "
	$CTL format --force /dev/pmem0 >/dev/null && $CTL attach /dev/pmem0 >/dev/null || exit 1
	insmod \${PMIDX_DENTRY_KO:-samples/pmidx_dentry/pmidx_dentry.ko} || exit 1
	first=
	for e in $ENGINES; do
		if ! out=\$($CTL create-index probe-\$e --engine \$e 2>&1); then
			case \$out in
			*'engine not built into this module'*) touch $OUT/\$e.skip; continue ;;
			esac
			echo \"\$out\"; exit 1
		fi
		$CTL drop-index probe-\$e || exit 1
		first=\${first:-\$e}
		$B --keys $KEYS --engine \$e --workload C --json $OUT/C-\$e.json --compare \
			path=ioctl path=uring,qd=1 path=uring,qd=16 path=uring,qd=16,batch=16 \
			path=ioctl,batch=16 path=kernel || exit 1
		$B --keys $KEYS --engine \$e --threads 2 --dist zipfian --json $OUT/mix-\$e.json \
			--compare path=uring,workload=A path=uring,workload=B,batch=4 \
			path=uring,workload=E,batch=8 path=ioctl,workload=E \
			path=uring,workload=insert,key-size=40,value-size=200 \
			path=uring,workload=delete path=kernel,workload=update \
			path=kernel,workload=delete || exit 1
	done
	# phases in sequence on one index, over ioctl and over uring BATCHes
	$B --keys $KEYS --engine \${first:-ccl} --phases load,update,get,scan,delete \
		--json $OUT/phases.json --compare path=ioctl path=uring,qd=16,batch=8 \
		>$OUT/phases.out 2>&1 || echo phases failed >>$OUT/phases.out
	# the lmdb test fails by itself, from its own output; a quarter of the keys
	# (a synced commit per op is slow under TCG), single ops in C only
	tools/bench/dax-mount /dev/pmem1 /tmp/lmdb >$OUT/lmdb.out 2>&1 &&
		$B --keys $((KEYS / 4)) --engine \${first:-ccl} --json $OUT/lmdb.json --compare \
			path=ioctl $LMDB $LMDB,workload=A,batch=16,threads=2,dist=zipfian \
			$LMDB,workload=E,batch=8 $LMDB,workload=delete,batch=4 >>$OUT/lmdb.out 2>&1 &&
		umount /tmp/lmdb
	rmmod pmidx_dentry" >"$OUT/guest.out" 2>&1
ok $? "guest: compare runs over ioctl, uring, BATCH and kernel paths"

for e in $ENGINES; do
	if [ -e "$OUT/$e.skip" ]; then
		skip "$e: C on 6 configurations" "engine $e is not built into pmidx.ko"
		skip "$e: A, B, E, insert, delete, update on 8 configurations" \
			"engine $e is not built into pmidx.ko"
		continue
	fi
	all_done "$OUT/C-$e.json" 6
	ok $? "$e: C on 6 configurations, every op done, no errors"
	all_done "$OUT/mix-$e.json" 8
	ok $? "$e: A, B, E, insert, delete, update on 8 configurations"
done

all_done "$OUT/phases.json" 2 && json "$OUT/phases.json" "all([x['workload'] \
	for x in r['results']] == ['load', 'update', 'C', 'scan', 'delete'] for r in j['runs'])"
ok $? "--phases load,update,get,scan,delete on one index, ioctl and uring BATCHes"

all_done "$OUT/lmdb.json" 5 && grep -q dax=always "$OUT/lmdb.out" &&
	! grep -q "is not DAX" "$OUT/lmdb.out"
ok $? "lmdb: load, C, A, E, delete beside ioctl, on ext4 -o dax (pmem1)"

$B --path "inproc:$OUT/pool" --keys $KEYS --workload E --dist zipfian --json "$OUT/inproc.json" \
	--compare workload=E workload=A,threads=2 >"$OUT/inproc.out" 2>&1 &&
	all_done "$OUT/inproc.json" 2 && json "$OUT/inproc.json" "j['runs'][0]['recovery_ms'] > 0"
ok $? "inproc: E and A on a pool file, restart and recovery measured"
rm -f "$OUT/pool" "$OUT/pmem.img" "$OUT/dax.img"

summary
