# SPDX-License-Identifier: GPL-2.0
# Issue 15 item 5, guest side: where a uring BATCH 16's time goes.
#
#   tools/pmidx-vm --quiet --pmem build/measure/i15.img:512M -- \
#     env ENGINE=ccl WORKLOAD=C TAG=a sh docs/measurements/issue15-item5-prof.sh
#
# Loads 100k sequential keys, runs the paths side by side (the
# single-op ioctl with and without its per-op clock reads, uring qd 64
# BATCH 16, the kernel API through the sample client), then profiles the
# uring BATCH run and, for writes, the ioctl BATCH run beside it.
# Results: build/measure/prof-TAG-*.txt (self time, and callers).
B=build/bin/pmidx-bench
E=${ENGINE:-ccl} W=${WORKLOAD:-C}
build/bin/pmidxctl format --force /dev/pmem0 >/dev/null || exit 1
build/bin/pmidxctl attach /dev/pmem0 >/dev/null || exit 1
insmod samples/pmidx_dentry/pmidx_dentry.ko || exit 1
$B --engine $E --workload $W --keys 100000 --ops 200000 --dist sequential \
	--compare path=ioctl path=ioctl,sample=1000 path=uring,qd=64,batch=16 \
	path=kernel 2>&1 | grep -v '%'
for p in uring ioctl; do
	[ $p = ioctl ] && [ $W = C ] && break
	perf record -q -e cpu-clock -F 4000 -a -g -o /tmp/perf.$p -- \
		$B --engine $E --workload $W --keys 100000 --ops 400000 \
		--dist sequential --no-create --no-load --path $p --qd 64 \
		--batch 16 >/dev/null 2>&1
	perf report -i /tmp/perf.$p --no-children --sort sym --stdio -g none \
		2>/dev/null | grep -v '^#' | grep -v '^$' | head -60 \
		> build/measure/prof-$TAG-$p.txt
	perf report -i /tmp/perf.$p --no-children --sort comm,sym --stdio \
		-g caller 2>/dev/null | head -400 > build/measure/prof-$TAG-$p-callers.txt
done
rmmod pmidx_dentry
