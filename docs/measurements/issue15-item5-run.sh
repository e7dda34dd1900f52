# SPDX-License-Identifier: GPL-2.0
# Issue 15 item 5, guest side: one boot, 8-byte gets (workload C) and
# updates on ccl and utree, each path side by side in one --compare run.
#
#   tools/pmidx-vm --quiet --pmem build/measure/i15.img:512M -- \
#     env BENCH=build/bin/pmidx-bench \
#         DENTRY=samples/pmidx_dentry/pmidx_dentry.ko \
#         TAG=new1 DIST=sequential SQ=1 \
#     sh docs/measurements/issue15-item5-run.sh
#
# BENCH and DENTRY name the pmidx-bench and sample client to use (an older
# build's copies under build/measure/old/ for "before", with PMIDX_KO set
# for pmidx-vm; pmidx-bench runs the pmidxctl beside it). DIST=sequential
# walks the keys in order as the kernel path does; SQ=1 adds an SQPOLL
# ring; ENGINES (default "ccl utree") and WORKLOADS (default "C update")
# pick what runs. Results: build/measure/i15-TAG-DIST-WORKLOAD-ENGINE.json, read by
# docs/measurements/issue15-item5-table.py.
#
# path=ioctl reads the clock twice per operation (the guest's clocksource
# is the HPET: a syscall and an emulated MMIO read each); with sample=1000
# it reads it for one operation in 1000, as BATCH and the kernel path
# nearly do. That one is the fair single-op baseline.
set -e
build/bin/pmidxctl format --force /dev/pmem0 >/dev/null
build/bin/pmidxctl attach /dev/pmem0 >/dev/null
insmod "$DENTRY"
extra=""
[ -n "$SQ" ] && extra="path=uring,qd=64,batch=16,sqpoll=1"
for w in ${WORKLOADS:-C update}; do
	for e in ${ENGINES:-ccl utree}; do
		echo "### $TAG workload $w engine $e dist $DIST"
		"$BENCH" --engine $e --workload $w --keys 100000 --ops 200000 \
			--dist "$DIST" \
			--json "build/measure/i15-$TAG-$DIST-$w-$e.json" \
			--compare path=ioctl path=ioctl,sample=1000 \
			path=ioctl,batch=16 path=uring,qd=64,batch=16 $extra \
			path=kernel
	done
done
rmmod pmidx_dentry
