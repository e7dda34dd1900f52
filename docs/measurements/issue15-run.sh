#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue 15, before -> after: two pmidx-bench binaries (the old main and
# this branch) side by side in one run, in-process on a pool file on
# /dev/shm with real clwb+sfence (PMIDX_PMEM_HW=clwb), KEYS keys, 1
# thread. Per repeat, engine and workload the OLD and the NEW binary run
# back to back (order alternating per repeat), each its own load phase
# then the workload; medians over the repeats.
#
#   docs/measurements/issue15-run.sh OLD-BENCH NEW-BENCH [KEYS] [REPEATS]
#
# THREADS (default 1): threads per run; TAG: results in
# build/measure/issue15-TAG instead.
#
# Writes build/measure/issue15/*.json and prints two markdown tables:
# Mops/s of load (insert), C (get), update, scan (100 records, SCAN_OPS
# scans) and delete, old -> new medians and their ratio; and the median
# of the per-repeat new/old ratios (each pair ran back to back, so a
# machine whose load drifts hits both alike). NORUN=1: tables only.
set -eu
cd "$(dirname "$0")/../.."
OLD=$1 NEW=$2 KEYS=${3:-1000000} REPS=${4:-3}
SCAN_OPS=${SCAN_OPS:-200000}
ENGINES=${ENGINES:-"ccl utree"}
WLS=${WLS:-"C update scan delete"}
OUT=build/measure/issue15${TAG:+-$TAG}
THREADS=${THREADS:-1}
POOL=${POOL:-/dev/shm/issue15.pool}
mkdir -p "$OUT"
if [ -z "${NORUN:-}" ]; then
rm -f "$OUT"/run-*.json
export PMIDX_PMEM_HW=${PMIDX_PMEM_HW:-clwb}
export PMIDX_POOLFILE=${PMIDX_POOLFILE:-$PWD/build/user/pmidx-poolfile}

for r in $(seq 1 "$REPS"); do
	for e in $ENGINES; do
		for w in $WLS; do
			ops=$KEYS
			[ "$w" = scan ] && ops=$SCAN_OPS
			bins="old new"
			[ $((r % 2)) = 0 ] && bins="new old"
			for b in $bins; do
				bin=$OLD
				[ $b = new ] && bin=$NEW
				# each binary formats with its own tree's pmidx-poolfile
				pf=$(dirname "$bin")/../user/pmidx-poolfile
				[ -x "$pf" ] || pf=$PMIDX_POOLFILE
				PMIDX_POOLFILE=$pf \
				"$bin" --path "inproc:$POOL" --engine "$e" --workload "$w" \
					--keys "$KEYS" --ops "$ops" --threads "$THREADS" \
					--json "$OUT/run-$b-$e-$w-$r.json" >/dev/null
			done
		done
	done
	echo "# issue15-run: repeat $r of $REPS done" >&2
done
rm -f "$POOL" "$POOL.crash"
fi

python3 - "$OUT" "$ENGINES" "$WLS" "$REPS" <<'PY'
import glob, json, statistics, sys
out, engines, wls, reps = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
def mops(b, e, w, phase):
    v = []
    for f in glob.glob(f"{out}/run-{b}-{e}-{w}-*.json"):
        for x in json.load(open(f))["results"]:
            if x["workload"] == phase:
                v.append(x["ops_per_s"] / 1e6)
    return v
cols = ["load"] + wls
print("| engine | " + " | ".join(cols) + " |")
print("| --- |" + " --- |" * len(cols))
for e in engines:
    cells = []
    for c in cols:
        if c == "load":  # every run's load phase
            o = sum((mops("old", e, w, "load") for w in wls), [])
            n = sum((mops("new", e, w, "load") for w in wls), [])
        else:
            o, n = mops("old", e, c, c), mops("new", e, c, c)
        if not o or not n:
            cells.append("-")
            continue
        mo, mn = statistics.median(o), statistics.median(n)
        cells.append(f"{mo:.3f} → {mn:.3f} ({mn / mo:.2f}×)")
    print(f"| {e} | " + " | ".join(cells) + " |")
# p50 latency: robust where other work on the machine preempts the runs
print()
print("p50 latency, us, median over the repeats, old → new:")
print("| engine | " + " | ".join(cols) + " |")
print("| --- |" + " --- |" * len(cols))
def p50(b, e, w, phase):
    v = []
    for f in glob.glob(f"{out}/run-{b}-{e}-{w}-*.json"):
        v += [x["p50_ns"] / 1e3 for x in json.load(open(f))["results"] if x["workload"] == phase]
    return v
for e in engines:
    cells = []
    for c in cols:
        if c == "load":
            o = sum((p50("old", e, w, "load") for w in wls), [])
            n = sum((p50("new", e, w, "load") for w in wls), [])
        else:
            o, n = p50("old", e, c, c), p50("new", e, c, c)
        cells.append(f"{statistics.median(o):.2f} → {statistics.median(n):.2f}" if o and n else "-")
    print(f"| {e} | " + " | ".join(cells) + " |")
# the pairs: each repeat's old and new ran back to back
print()
print("median (min-max) of new/old per repeat:")
print("| engine | " + " | ".join(cols) + " |")
print("| --- |" + " --- |" * len(cols))
for e in engines:
    cells = []
    for c in cols:
        rs = []
        for w in (wls if c == "load" else [c]):
            for r in range(1, reps + 1):
                try:
                    o = [x for x in json.load(open(f"{out}/run-old-{e}-{w}-{r}.json"))["results"] if x["workload"] == c]
                    n = [x for x in json.load(open(f"{out}/run-new-{e}-{w}-{r}.json"))["results"] if x["workload"] == c]
                except FileNotFoundError:
                    continue
                if o and n and o[0]["ops_per_s"] > 0:
                    rs.append(n[0]["ops_per_s"] / o[0]["ops_per_s"])
        cells.append(f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})" if rs else "-")
    print(f"| {e} | " + " | ".join(cells) + " |")
PY
