#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# pmidx against LMDB, the store a user would otherwise run (issue 16 item
# 6; docs/measurements/lmdb.md). One guest, two nvdimms:
#
#   tools/pmidx-vm --quiet --pmem build/measure/lmdb-pool.img:512M \
#       --pmem build/measure/lmdb-dax.img:512M -- sh docs/measurements/lmdb-run.sh
#
# /dev/pmem0 is the pmidx pool, /dev/pmem1 ext4 mounted -o dax for LMDB
# (tools/bench/dax-mount). One pmidx-bench --compare per workload, each
# the ioctl path, uring with BATCHes (qd 64, batch 16), the kernel path
# (the in-kernel API; load, C and update only) and LMDB with one and with
# 16 operations per transaction, on the same keys; each configuration
# loads its keys first (the load phase), then runs the workload's ops (C:
# 5 x keys, update and A: 2 x keys, E: keys). JSON in build/measure/lmdb-W.json,
# the markdown table in build/measure/lmdb-table.md and on stdout.
#
# PMIDX_LMDB_KEYS (default 20000: TCG is slow) and PMIDX_LMDB_ENGINE
# (default ccl) change the keys and the engine.
set -eu
KEYS=${PMIDX_LMDB_KEYS:-20000}
ENGINE=${PMIDX_LMDB_ENGINE:-ccl}
B=build/bin/pmidx-bench
M=build/measure
LMDB=path=lmdb:/tmp/lmdb/db

mkdir -p $M
build/bin/pmidxctl format --force /dev/pmem0 >/dev/null
build/bin/pmidxctl attach /dev/pmem0 >/dev/null
insmod "${PMIDX_DENTRY_KO:-samples/pmidx_dentry/pmidx_dentry.ko}"
tools/bench/dax-mount /dev/pmem1 /tmp/lmdb

for w in C update A E; do
	# operations of the workload phase, the same for every configuration:
	# enough that a phase lasts long enough for a busy TCG host to even
	# out (reads are cheap, LMDB's synced writes are not)
	case $w in
	C) ops=$((KEYS * 5)) ;;
	update | A) ops=$((KEYS * 2)) ;;
	*) ops=$KEYS ;;
	esac
	kernel=
	case $w in C | update) kernel=path=kernel ;; esac
	echo "### workload $w, $KEYS keys, $ops ops, engine $ENGINE"
	# stderr to a file: the guest's console is a tty, so pmidx-bench
	# would draw its progress line there
	$B --engine "$ENGINE" --workload $w --keys "$KEYS" --ops $ops --json "$M/lmdb-$w.json" \
		--compare path=ioctl path=uring,qd=64,batch=16 $kernel \
		$LMDB $LMDB,batch=16 2>"$M/lmdb-$w.err" ||
		{ cat "$M/lmdb-$w.err"; exit 1; }
done
umount /tmp/lmdb
rmmod pmidx_dentry

# The table: ops/s of the ioctl path, the others as ratios to it.
python3 - "$M" "$KEYS" "$ENGINE" <<'PY' | tee "$M/lmdb-table.md"
import json, sys
m, keys, engine = sys.argv[1:]
names = {"path=ioctl": "pmidx ioctl",
         "path=uring,qd=64,batch=16": "pmidx uring, qd 64, BATCH 16",
         "path=kernel": "pmidx in-kernel API",
         "path=lmdb:/tmp/lmdb/db": "LMDB, 1 op per txn",
         "path=lmdb:/tmp/lmdb/db,batch=16": "LMDB, 16 ops per txn"}
cols = [("C", "load"), ("C", "C"), ("update", "update"), ("A", "A"), ("E", "E")]
cell = {}
for wl in ("C", "update", "A", "E"):
    for r in json.load(open("%s/lmdb-%s.json" % (m, wl)))["runs"]:
        for x in r["results"]:
            cell[(r["label"], wl, x["workload"])] = x
print("%s keys, engine %s; ops/s of the ioctl path, the others as its "
      "multiple (ratio in the same --compare run; load from the C run)\n"
      % (keys, engine))
print("| configuration | " + " | ".join(p for _, p in cols) + " |")
print("| --- |" + " --- |" * len(cols))
for label, name in names.items():
    row = []
    for wl, phase in cols:
        x = cell.get((label, wl, phase))
        if not x:
            row.append("—")
        elif label == "path=ioctl":
            row.append("%.1fk ops/s" % (x["ops_per_s"] / 1e3))
        else:
            row.append("%.2fx" % x.get("ratio", 0))
    print("| %s | %s |" % (name, " | ".join(row)))
print("\np99 latency, µs (LMDB and BATCH: of the transaction or command "
      "the op was in)\n")
print("| configuration | " + " | ".join(p for _, p in cols) + " |")
print("| --- |" + " --- |" * len(cols))
for label, name in names.items():
    row = []
    for wl, phase in cols:
        x = cell.get((label, wl, phase))
        row.append("%.1f" % (x["p99_ns"] / 1e3) if x and "p99_ns" in x else "—")
    print("| %s | %s |" % (name, " | ".join(row)))
PY
