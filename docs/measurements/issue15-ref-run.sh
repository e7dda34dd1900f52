#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue 15's goals, side by side: the papers' public code and pmidx-bench
# in-process, back to back on one machine, in one run.
#
#   docs/measurements/issue15-ref-run.sh REF_DIR [KEYS] [REPEATS]
#
# REF_DIR is a build of https://github.com/ISCS-ZJU/CCL-BTree (d80d8c0:
# CCL-BTree's FF variant and its copy of uTree), kept outside this tree,
# with three defines changed because there is no Optane here:
# NVM_FILE_PATH0 "/dev/shm/refccl/" and NVM_FILE_SIZE 1 GiB
# (include/util_normal.h), LOG_FILE_SIZE 256 (include/tools/log.h); built
# as its m_normal_test.sh builds one index (needs libpmem-dev,
# libpmemobj-dev, libgoogle-perftools-dev):
#
#   g++ -I include/multiThread/cclbtree_ff -I include -DDO_DELETE -DDO_UPDATE \
#       -DDO_SEARCH -DDO_SCAN -DUNIFIED_NODE -DCCLBTREE_FF -O3 -w \
#       -o mybin/m_normal_test_cclbtree_ff test/multiThread/normal_test.cpp \
#       include/tools/mempool.c include/tools/log.cpp -lpmem -lpmemobj \
#       -lpthread -march=native
#   (and the same with utree / -DUTREE)
#
# Its driver inserts KEYS/2 random keys (a warm-up), then times the
# insertion of the other KEYS/2, then KEYS/2 updates, gets, scans of 100
# and deletes, each phase over the keys shuffled; clwb + sfence
# (include/tools/persist.h). pmidx-bench does the nearest on one tree:
# a load of KEYS keys, then KEYS/2 updates, gets, scans of 100 and
# deletes (--phases), clwb + sfence, the pool prefaulted as the
# reference pre-touches its file, the latency of one op in 1000 taken
# (--sample: the reference times whole phases only). Per repeat and pair (ccl with
# cclbtree_ff, utree with utree) the two run back to back, in
# alternating order; the table gives medians and the median of the
# per-pair ratios. THREADS (default 1); TAG names the result folder.
# OURPATHS (default "inproc"): pmidx-bench's paths, each run beside the
# reference in every repeat: inproc (libpmidx and the dispatcher) and
# kapi (the in-kernel API's calls, the engine on the caller's buffers, as
# the papers' drivers call their trees).
set -eu
cd "$(dirname "$0")/../.."
REF=$1 KEYS=${2:-2000000} REPS=${3:-3}
THREADS=${THREADS:-1}
OUT=build/measure/issue15-ref${TAG:+-$TAG}
POOL=${POOL:-/dev/shm/issue15-ref.pool}
BENCH=${BENCH:-build/bin/pmidx-bench}
PAIRS=${PAIRS:-"ccl:cclbtree_ff utree:utree"}
OURPATHS=${OURPATHS:-inproc}
mkdir -p "$OUT"
if [ -z "${NORUN:-}" ]; then
rm -f "$OUT"/*.json "$OUT"/*.log
export PMIDX_PMEM_HW=clwb
export PMIDX_POOLFILE=${PMIDX_POOLFILE:-$PWD/build/user/pmidx-poolfile}

run_ref() {	# index, repeat
	rm -rf /dev/shm/refccl && mkdir -p /dev/shm/refccl
	PMEM_IS_PMEM_FORCE=1 timeout 600 "$REF/mybin/m_normal_test_$1" \
		"$KEYS" "$THREADS" 100 >"$OUT/ref-$1-$2.log" 2>&1
	rm -rf /dev/shm/refccl
}

run_ours() {	# engine, repeat
	local p
	for p in $OURPATHS; do
		run_path "$1" "$2" "$p"
	done
}

run_path() {	# engine, repeat, path
	rm -f "$POOL" "$POOL.crash"
	timeout 600 "$BENCH" --path "$3:$POOL" --engine "$1" \
		--keys "$KEYS" --ops $((KEYS / 2)) --threads "$THREADS" \
		--prefault --sample 1000 --phases load,update,get,scan,delete \
		--json "$OUT/ours-$3-$1-$2.json" >/dev/null
	rm -f "$POOL" "$POOL.crash"
}

for r in $(seq 1 "$REPS"); do
	for p in $PAIRS; do
		e=${p%%:*} i=${p#*:}
		if [ $((r % 2)) = 1 ]; then
			run_ref "$i" "$r"; run_ours "$e" "$r"
		else
			run_ours "$e" "$r"; run_ref "$i" "$r"
		fi
	done
	echo "# issue15-ref-run: repeat $r of $REPS done" >&2
done
fi

python3 - "$OUT" "$PAIRS" "$REPS" "$KEYS" "$OURPATHS" <<'PY'
import json, re, statistics, sys
out, pairs, reps, keys = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), int(sys.argv[4])
paths = sys.argv[5].split()
phases = ["insert", "update", "get", "scan", "delete"]
ref_name = {"insert": "insert", "update": "update", "get": "search",
            "scan": "scan", "delete": "delete"}
our_name = {"insert": "load", "update": "update", "get": "C",
            "scan": "scan", "delete": "delete"}

def ref(i, r):
    try:
        text = open(f"{out}/ref-{i}-{r}.log").read()
    except FileNotFoundError:
        return {}
    got = {}
    for ph in phases:
        m = re.search(rf"threads {ref_name[ph]} time cost is (\d+)", text)
        if m:
            got[ph] = (keys - keys // 2) / int(m.group(1)) * 1e3
    return got

def ours(path, e, r):
    try:
        res = json.load(open(f"{out}/ours-{path}-{e}-{r}.json"))["results"]
    except FileNotFoundError:
        return {}
    return {ph: x["ops_per_s"] / 1e6 for ph in phases for x in res
            if x["workload"] == our_name[ph]}

print("Mops/s, median of the repeats: reference → pmidx (median of per-pair pmidx/reference, min-max)")
print()
print("| pair | " + " | ".join(phases) + " |")
print("| --- |" + " --- |" * len(phases))
def row(e, i, path):
    cells = []
    for ph in phases:
        a = [ref(i, r).get(ph) for r in range(1, reps + 1)]
        b = [ours(path, e, r).get(ph) for r in range(1, reps + 1)]
        pr = [y / x for x, y in zip(a, b) if x and y]
        a, b = [x for x in a if x], [y for y in b if y]
        if not a or not b:
            cells.append("-")
            continue
        cells.append(f"{statistics.median(a):.3f} → {statistics.median(b):.3f} "
                     f"({statistics.median(pr):.2f}, {min(pr):.2f}-{max(pr):.2f})")
    return f"| {e} ({path}) vs {i} | " + " | ".join(cells) + " |"

for p in pairs:
    for path in paths:
        print(row(*p.split(":"), path))
PY
