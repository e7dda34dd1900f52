#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# compare-engines.sh: engines side by side with pmidx-bench (inproc, pool
# file), one run: every engine x threads x workload, repeated, engines
# interleaved innermost so that a noisy machine hits them alike. Prints a
# markdown table of ranges (min-max over the repeats; load over every run
# of that engine and thread count) and keeps each run's JSON.
#
#   tools/bench/compare-engines.sh [-k KEYS] [-r REPEATS] [-e "ccl utree b3 lodge pfart"]
#        [-t "1 2"] [-w "C update scan delete"] [-p POOL] [-o OUTDIR] [-b BENCH] [-n]
#
# -n: no runs, only the tables from the JSON already in OUTDIR. With more
# than one engine, one more table per other engine gives the first over
# it, run by run.
#
# Defaults: 1000000 keys, 3 repeats, build/bench.pool (removed at the
# end), JSON under build/compare/, build/bin/pmidx-bench. Runs from the
# repository root (pmidx-bench calls build/user/pmidx-poolfile) with
# PMIDX_PMEM_HW=1 (real clwb/sfence on the page cache) unless set.
# Needs jq.
set -eu

keys=1000000 reps=3 engines="ccl utree b3 lodge pfart" threads="1 2"
workloads="C update scan delete"
pool=build/bench.pool out=build/compare bench=build/bin/pmidx-bench
norun=
while getopts k:r:e:t:w:p:o:b:n o; do
	case $o in
	k) keys=$OPTARG ;; r) reps=$OPTARG ;; e) engines=$OPTARG ;;
	t) threads=$OPTARG ;; w) workloads=$OPTARG ;; p) pool=$OPTARG ;;
	o) out=$OPTARG ;; b) bench=$OPTARG ;; n) norun=1 ;;
	*) sed -n '2,20p' "$0" >&2; exit 2 ;;
	esac
done
export PMIDX_PMEM_HW=${PMIDX_PMEM_HW:-1}
# where the full pmidx-bench finds pmidx-poolfile when run from elsewhere
export PMIDX_POOLFILE=${PMIDX_POOLFILE:-$PWD/build/user/pmidx-poolfile}
if [ -z "$norun" ]; then
mkdir -p "$out"
rm -f "$out"/bench-*.json
for r in $(seq 1 "$reps"); do
	for t in $threads; do
		for w in $workloads; do
			for e in $engines; do
				"$bench" --path "inproc:$pool" --engine "$e" --workload "$w" \
					--keys "$keys" --threads "$t" \
					--json "$out/bench-$e-$t-$w-$r.json" >/dev/null
			done
		done
	done
	echo "# compare-engines: repeat $r of $reps done" >&2
done
rm -f "$pool" "$pool.crash"
fi

# "median (min-max)" of numbers on stdin
stat() {
	sort -g | awk -v f="$1" '{ v[NR] = $1 }
		END { if (!NR) { print "-"; exit }
		      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      if (NR == 1 || sprintf(f, v[1]) == sprintf(f, v[NR])) printf f "\n", m
		      else printf f " (" f "-" f ")\n", m, v[1], v[NR] }'
}

# jq filters for one JSON file: the metrics of the table
q_load='.results[] | select(.workload == "load") | .mops'
q_get='.results[] | select(.workload == "C") | .mops'
q_upd='.results[] | select(.workload == "update") | .mops'
q_scan='.results[] | select(.workload == "scan") | .mops'
q_del='.results[] | select(.workload == "delete") | .mops'
q_ins999='.results[] | select(.workload == "load") | .p999_ns / 1000'
q_upd999='.results[] | select(.workload == "update") | .p999_ns / 1000'
q_restart='.restart_ms'
q_recov='.recovery_ms'

# metric $1 over every run of engine $2, $3 threads
col() {
	jq -r "$1" "$out"/bench-$2-$3-*.json | stat "$4"
}

# ratio: $1 of engine $2 over engine $3 at $4 threads, run
# by run (same repeat and workload: adjacent runs), median (min-max)
ratio() {
	local f a b
	for f in "$out"/bench-$2-$4-*.json; do
		a=$(jq -r "$1" "$f")
		b=$(jq -r "$1" "${f/bench-$2-/bench-$3-}")
		[ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) print a / b }'
	done | stat %.2f
}

echo "pmidx-bench inproc, $keys keys, 8-byte keys and values, $reps repeats, PMIDX_PMEM_HW=$PMIDX_PMEM_HW, $(nproc) CPUs; median (min-max)"
echo
echo "| engine | thr | load Mops/s | get Mops/s | update Mops/s | scan-100 Mops/s | delete Mops/s | p99.9 insert us | p99.9 update us | restart ms | crash recovery ms |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for t in $threads; do
	for e in $engines; do
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$e" "$t" \
			"$(col "$q_load" "$e" "$t" %.2f)" "$(col "$q_get" "$e" "$t" %.2f)" \
			"$(col "$q_upd" "$e" "$t" %.2f)" "$(col "$q_scan" "$e" "$t" %.3f)" \
			"$(col "$q_del" "$e" "$t" %.2f)" \
			"$(col "$q_ins999" "$e" "$t" %.0f)" "$(col "$q_upd999" "$e" "$t" %.0f)" \
			"$(col "$q_restart" "$e" "$t" %.0f)" "$(col "$q_recov" "$e" "$t" %.0f)"
	done
done
set -- $engines
first=$1
shift
for e in "$@"; do
	echo
	echo "$first / $e, run by run (the runs of one repeat and workload, close in time):"
	echo
	echo "| thr | load | get | update | scan-100 | delete | p99.9 insert | p99.9 update | restart | crash recovery |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for t in $threads; do
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" \
			"$(ratio "$q_load" "$first" "$e" "$t")" "$(ratio "$q_get" "$first" "$e" "$t")" \
			"$(ratio "$q_upd" "$first" "$e" "$t")" "$(ratio "$q_scan" "$first" "$e" "$t")" \
			"$(ratio "$q_del" "$first" "$e" "$t")" \
			"$(ratio "$q_ins999" "$first" "$e" "$t")" "$(ratio "$q_upd999" "$first" "$e" "$t")" \
			"$(ratio "$q_restart" "$first" "$e" "$t")" "$(ratio "$q_recov" "$first" "$e" "$t")"
	done
done
