#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# End-to-end check of pmidxctl's data subcommands (put, get, del, scan,
# check; libpmidx underneath) against the real module, inside a pmidx-vm
# guest (never on the host). Wipes the pmem devices it is given; a
# second one is used for pool selection when present.
#
#   tools/pmidx-vm --pmem /tmp/a.img --pmem /tmp/b.img -- \
#	tools/pmidxctl/tests/vm_data.sh [ENGINE]	(default: utree)
#
# Skips (exit 0, "SKIP") when ENGINE is not built into the module.
set -u

P=${PMIDX_CTL:-pmidxctl}
E=${1:-utree}
pass=0
fail=0

[ "${PMIDX_VM:-}" = 1 ] || { echo "vm_data: run me under tools/pmidx-vm"; exit 2; }
D0=$(ls /dev/pmem* 2>/dev/null | sed -n 1p)
D1=$(ls /dev/pmem* 2>/dev/null | sed -n 2p)
[ -n "$D0" ] || { echo "vm_data: no /dev/pmem*"; exit 1; }

# t RC 'PATTERN' ARGS...: pmidxctl ARGS exits with RC and its stdout+stderr
# matches the grep -E PATTERN ('' = anything; matched against all lines).
t() {
	want=$1 pat=$2
	shift 2
	out=$("$P" "$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && { [ -z "$pat" ] || printf '%s\n' "$out" | grep -Eq -- "$pat"; }; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: pmidxctl $* -> $rc (want $want, /$pat/):"
		printf '%s\n' "$out" | sed 's/^/    /'
	fi
}

# exact 'OUTPUT' ARGS...: pmidxctl ARGS succeeds and prints exactly OUTPUT
exact() {
	want=$1
	shift
	out=$("$P" "$@" 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && [ "$out" = "$want" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: pmidxctl $* -> $rc, output:"
		printf '%s\n' "$out" | sed 's/^/    /'
		echo "  want:"
		printf '%s\n' "$want" | sed 's/^/    /'
	fi
}

for d in /dev/pmidx*; do [ -e "$d" ] && "$P" detach "$d" >/dev/null 2>&1; done
"$P" format "$D0" --force >/dev/null && "$P" attach "$D0" >/dev/null ||
	{ echo "vm_data: setup failed"; exit 1; }
if ! out=$("$P" create-index kv --engine "$E" 2>&1); then
	case $out in
	*'engine not built into this module'*)
		echo "SKIP: engine $E is not built into pmidx.ko"
		"$P" detach pmidx0
		echo "pmidxctl vm_data ($E): 0 passed, 0 failed"
		exit 0 ;;
	esac
	echo "vm_data: setup failed: $out"
	exit 1
fi

# put / get / del, strings
t 0 '^$' put kv apple red
t 0 '' put kv banana yellow
exact 'red' get kv apple
t 1 '^pmidxctl: get kv: no such key$' get kv cherry
t 0 '' put kv apple green
exact 'green' get kv apple
t 1 '^pmidxctl: put kv: key exists \(--insert\)$' put kv apple blue --insert
t 0 '' put kv cherry 'dark red' --insert
exact 'dark red' get kv cherry
t 0 '' del kv cherry
t 1 '^pmidxctl: del kv: no such key$' del kv cherry
t 0 '' put kv empty ''
exact '' get kv empty
# escaping and hex
t 0 '' put kv tab "$(printf 'a\tb\\c')"
exact 'a\tb\\c' get kv tab
t 0 '' put kv 00ff c3a96e --hex
exact '00ff	c3a96e' scan kv 00 01 --hex
exact 'c3a96e' get kv 00ff --hex
t 0 '^\{"key":"00ff","value":"c3a96e"\}$' get kv 00ff --hex --json
t 0 '' put kv 6869 c3a96e --hex	# "hi": UTF-8 text prints as is
exact 'én' get kv hi
t 0 '^\{"key":"apple","value":"green"\}$' get kv apple --json
t 0 '' put kv 62696e ff00 --hex	# "bin": bytes that are not text
exact '\xff\x00' get kv bin
t 0 '^\{"key":"bin","value_hex":"ff00"\}$' get kv bin --json
# limits: the kernel's, explained
long=$(printf 'k%.0s' $(seq 255))
t 0 '' put kv "$long" v
exact 'v' get kv "$long"
t 1 '^pmidxctl: put kv: keys are 1\.\.255 bytes, not 256$' put kv "${long}x" v
t 1 '^pmidxctl: put kv: keys are 1\.\.255 bytes, not 0$' put kv '' v
t 0 '' del kv "$long"
# scan: order, bounds (end exclusive), limit, JSON
"$P" create-index nums --engine "$E" >/dev/null
for i in 1 2 10 255 256 65536 18446744073709551615; do
	"$P" put nums --u64 "$i" "v$i" || fail=$((fail + 1))
done
exact "$(printf '1\tv1\n2\tv2\n10\tv10\n255\tv255\n256\tv256\n65536\tv65536\n18446744073709551615\tv18446744073709551615')" \
	scan nums --u64
exact "$(printf '2\tv2\n10\tv10\n255\tv255')" scan nums 2 256 --u64
exact "$(printf '10\tv10\n255\tv255')" scan nums 3 --u64 --limit 2
exact '{"records":[{"key":256,"value":"v256"},{"key":65536,"value":"v65536"}]}' \
	scan nums 256 65537 --u64 --json
exact '{"records":[]}' scan nums 5 6 --u64 --json
exact '' scan nums 5 6 --u64
exact "$(printf '0000000000000001\t7631')" scan nums --hex --limit 1
exact "$(printf 'apple\tgreen\nbanana\tyellow\nbin\t\\xff\\x00')" scan kv a c
exact "$(printf '\\x00\\xff\t\303\251n\napple\tgreen')" scan kv '' b
t 0 '^index nums \('"$E"'\): ok, 7 keys$' check nums
t 0 '^\{"index":"kv","engine":"'"$E"'","keys":[0-9]+\}$' check kv --json
# a scan bigger than one batch (64 KiB): 40 records of 4,000 bytes, three
# batches (one pmidxctl per put costs ~0.7 s under TCG, per engine: few
# big records rather than many small ones)
i=0 bad=0
while [ $i -lt 40 ]; do
	"$P" put nums --u64 $((i + 1000000)) "$(printf '%04000d' $i)" --pool 0 ||
		bad=$((bad + 1))
	i=$((i + 1))
done
[ $bad = 0 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: $bad puts"; }
t 0 ', 47 keys$' check nums
[ "$("$P" scan nums 1000000 2000000 --u64 | wc -l)" = 40 ] && pass=$((pass + 1)) ||
	{ fail=$((fail + 1)); echo "FAIL: scan of 40 big records"; }
# six small keys first: the 30th record (in the second batch) is big one 23
[ "$("$P" scan nums --u64 --limit 30 | sed -n '30p')" = \
  "$(printf '1000023\t%04000d' 23)" ] && pass=$((pass + 1)) ||
	{ fail=$((fail + 1)); echo "FAIL: scan --limit 30"; }
# pools: by name, number, char device, pmem device; errors
t 0 '^green$' get kv apple --pool pmidx0
t 0 '^green$' get kv apple --pool 0
t 0 '^green$' get kv apple --pool /dev/pmidx0
t 0 '^green$' get kv apple --pool "$D0"
t 1 '^pmidxctl: get nosuch: no such index in /dev/pmidx0$' get nosuch k
t 1 '^pmidxctl: get kv: /dev/pmidx7: no such pool device$' get kv apple --pool 7
t 1 '^pmidxctl: get kv: No such device: no pool attached on /dev/nonexistent$' \
	get kv apple --pool /dev/nonexistent
if [ -n "$D1" ]; then
	"$P" format "$D1" --force >/dev/null && "$P" attach "$D1" >/dev/null &&
		"$P" create-index other --engine "$E" --pool pmidx1 >/dev/null &&
		"$P" create-index kv --engine "$E" --pool pmidx1 >/dev/null
	t 0 '' put other k in-pool-1		# found in the one pool that has it
	t 0 '^in-pool-1$' get other k --pool "$D1"
	t 1 'exists in several pools; choose one with --pool' get kv apple
	t 1 '^pmidxctl: get nosuch: No such file or directory: no index nosuch in any attached pool$' \
		get nosuch k
	t 1 '^pmidxctl: get kv: no such key$' get kv apple --pool pmidx1
	t 0 '' detach pmidx1
fi
t 0 '' detach pmidx0

echo "pmidxctl vm_data ($E): $pass passed, $fail failed"
[ "$fail" = 0 ]
