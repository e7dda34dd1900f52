#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue 15: what one operation costs, counted rather than timed.
# callgrind counts the instructions and the cache misses of the
# benchmark's worker thread, phase by phase. On this machine a timed run
# cannot tell a 5 % change from none (an L3 shared with other tenants);
# these counts are the same from run to run.
#
#   docs/measurements/issue15-callgrind.sh [KEYS] [ENGINES]
#
# BENCH (default build/bin/pmidx-bench) runs in-process, one thread:
# a load of KEYS keys, then KEYS/2 updates, gets and deletes on one tree
# (--phases), with --dump-before=bench_phase so that each phase is its
# own profile. What is counted is everything under sync_op(): libpmidx,
# the dispatcher, the engine; not the engine's background threads.
#
# REF=DIR adds the papers' code (https://github.com/ISCS-ZJU/CCL-BTree at
# d80d8c0, the build of issue15-ref-run.sh) built for valgrind, whose
# 3.19 decodes neither clwb nor AVX-512: the same g++ line as there with
# -DeADR_TEST (no write-back), -g, -march=x86-64-v3 -mclwb -mclflushopt
# instead of -march=native, and without -DDO_SCAN, into
# $REF/mybin/cg_cclbtree_ff and cg_utree. Its phases are the lambdas of
# its driver (#2 insert, #3 update, #4 search, #5 delete, KEYS/2 each).
#
# Ours runs with PMIDX_PMEM_HW=none (no write-back either: valgrind
# cannot run clwb). The cache is the one this machine gives each core,
# 48 KiB L1d and a 2 MiB L2 (--LL), since its 300 MiB L3 is shared with
# other tenants. callgrind ignores prefetches: a miss counted here may
# be one a prefetch hides.
#
# OURPATH=kapi counts pmidx-bench's kapi path instead (everything under
# kapi_op(): the in-kernel API's calls and the engine).
set -eu
cd "$(dirname "$0")/../.."
KEYS=${1:-2000000} ENGINES=${2:-"ccl utree"}
BENCH=${BENCH:-build/bin/pmidx-bench}
OURPATH=${OURPATH:-inproc}
OUT=build/measure/issue15-callgrind${TAG:+-$TAG}
CG="valgrind --tool=callgrind --cache-sim=yes --LL=2097152,16,64"
mkdir -p "$OUT"
rm -f "$OUT"/*.out* "$OUT"/*.log
# pools are 4 GiB of /dev/shm each: never leave one behind
trap 'rm -rf /dev/shm/issue15-cg-*.pool* /dev/shm/refccl' EXIT
export PMIDX_PMEM_HW=none
export PMIDX_POOLFILE=${PMIDX_POOLFILE:-$PWD/build/user/pmidx-poolfile}

for e in $ENGINES; do
	pool=/dev/shm/issue15-cg-$e.pool
	rm -f "$pool" "$pool.crash"
	$CG --dump-before=bench_phase --callgrind-out-file="$OUT/ours-$e.out" \
		"$BENCH" --path "$OURPATH:$pool" --engine "$e" --keys "$KEYS" \
		--ops $((KEYS / 2)) --prefault --sample 1000 \
		--phases load,update,get,delete >"$OUT/ours-$e.log" 2>&1 &
done
declare -A REFIDX=([ccl]=cclbtree_ff [utree]=utree)
if [ -n "${REF:-}" ]; then
	wait	# two at a time on this machine's two cores
	for e in $ENGINES; do
		i=${REFIDX[$e]}
		# its NVM file's path is compiled in: one run at a time
		rm -rf /dev/shm/refccl && mkdir -p /dev/shm/refccl
		PMEM_IS_PMEM_FORCE=1 $CG --callgrind-out-file="$OUT/ref-$e.out" \
			"$REF/mybin/cg_$i" "$KEYS" 1 100 >"$OUT/ref-$e.log" 2>&1
		rm -rf /dev/shm/refccl
	done
fi
wait

python3 - "$OUT" "$KEYS" "$ENGINES" "$OURPATH" <<'PY'
import os, re, subprocess, sys
out, keys, engines = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
opfn = ":kapi_op" if sys.argv[4] == "kapi" else ":sync_op"
EV = ["Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"]

def functions(path):
    """(name, inclusive counts) per function of a callgrind profile."""
    txt = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=yes",
                          "--threshold=100", path], capture_output=True,
                         text=True).stdout
    for line in txt.splitlines():
        f = re.sub(r"\(\s*[\d.]+%\)", "", line).split()
        if len(f) <= len(EV) or not all(re.fullmatch(r"[\d,]+|\.", x)
                                        for x in f[:len(EV)]):
            continue
        yield " ".join(f[len(EV):]), {k: 0 if v == "." else int(v.replace(",", ""))
                                      for k, v in zip(EV, f)}

def ours(e):
    base = f"{out}/ours-{e}.out"
    dumps = {"insert": base + ".2", "update": base + ".3", "get": base + ".4",
             "delete": base}
    ops = {"insert": keys, "update": keys // 2, "get": keys // 2,
           "delete": keys // 2}
    got = {}
    for ph, path in dumps.items():
        if not os.path.exists(path):
            continue
        for name, c in functions(path):
            if opfn in name:
                got[ph] = {k: v / ops[ph] for k, v in c.items()}
                break
    return got

def ref(e):
    path = f"{out}/ref-{e}.out"
    if not os.path.exists(path):
        return {}
    lam = {2: "insert", 3: "update", 4: "get", 5: "delete"}
    best = {}
    for name, c in functions(path):
        m = re.search(r"lambda\(unsigned long, unsigned long, unsigned long\)#(\d)\}", name)
        if m and int(m.group(1)) in lam:
            ph = lam[int(m.group(1))]
            if c["Ir"] > best.get(ph, {"Ir": 0})["Ir"]:
                best[ph] = c
    return {ph: {k: v / (keys - keys // 2) for k, v in c.items()}
            for ph, c in best.items()}

phases = ["insert", "update", "get", "delete"]
print(f"per operation, {keys} keys, 1 thread: instructions / L1d misses / "
      f"2 MiB-L2 misses (reads + writes)")
print()
print("| | " + " | ".join(phases) + " |")
print("| --- |" + " --- |" * len(phases))
for e in engines:
    for who, got in (("pmidx " + e, ours(e)), ("reference " + e, ref(e))):
        if not got:
            continue
        cells = []
        for ph in phases:
            c = got.get(ph)
            cells.append("-" if not c else
                         f"{c['Ir']:.0f} / {c['D1mr'] + c['D1mw']:.1f} / "
                         f"{c['DLmr'] + c['DLmw']:.1f}")
        print(f"| {who} | " + " | ".join(cells) + " |")
PY
