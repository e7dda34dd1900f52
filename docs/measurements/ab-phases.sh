#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two pmidx-bench binaries, A and B, side by side in-process: REPS pairs
# in alternating order, each run on a fresh, prefaulted pool on
# /dev/shm; prints per phase the medians of A and B (Mops/s) and the
# median per-pair ratio B/A with its range.
#
#   docs/measurements/ab-phases.sh REPS ENGINE PHASES A B [KEYS]
#   docs/measurements/ab-phases.sh 3 b3 load,update,get,delete /tmp/old build/bin/pmidx-bench 1000000
#
# KEYS/2 operations per phase after the load; HW=clwb (default) or none;
# BPATH=inproc (default) or kapi, the path both binaries run.
set -eu
REPS=$1 E=$2 PH=$3 A=$4 B=$5 KEYS=${6:-2000000}
export PMIDX_PMEM_HW=${HW:-clwb}
BPATH=${BPATH:-inproc}
export PMIDX_POOLFILE=${PMIDX_POOLFILE:-$(dirname "$0")/../../build/user/pmidx-poolfile}
T=$(mktemp)
trap 'rm -f "$T" /dev/shm/ab.pool*' EXIT
for i in $(seq "$REPS"); do
	order="A B"
	[ $((i % 2)) = 0 ] && order="B A"
	for w in $order; do
		bin=$([ "$w" = A ] && echo "$A" || echo "$B")
		rm -f /dev/shm/ab.pool*
		"$bin" --path "$BPATH:/dev/shm/ab.pool" --engine "$E" --keys "$KEYS" \
			--ops $((KEYS / 2)) --prefault --sample 1000 --phases "$PH" 2>&1 |
			awk -v w="$w" -v i="$i" -v p="$BPATH" '$1 == p { print i, w, $3, $6 }' >> "$T"
	done
done
python3 - "$T" <<'PY'
import statistics as st, sys
d = {}
for line in open(sys.argv[1]):
    i, w, ph, v = line.split()
    d.setdefault(ph, {}).setdefault(int(i), {})[w] = float(v)
for ph, reps in d.items():
    pairs = [x for x in reps.values() if 'A' in x and 'B' in x]
    r = [x['B'] / x['A'] for x in pairs]
    a = st.median(x['A'] for x in pairs)
    b = st.median(x['B'] for x in pairs)
    print(f"{ph:7s} A {a / 1e6:.3f} B {b / 1e6:.3f} Mops/s  B/A median "
          f"{st.median(r):.3f} ({min(r):.2f}-{max(r):.2f}) n={len(r)}")
PY
