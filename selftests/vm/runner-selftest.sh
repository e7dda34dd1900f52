#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Self-test of tools/pmidx-vm, the QEMU runner. Needs no pmidx.ko: the runs
# use --no-module, or a stock kernel module (crc-itu-t) standing in for
# pmidx.ko to exercise the insmod/rmmod path.
#
# usage: selftests/vm/runner-selftest.sh [-v]
#   -v  show every run's stdout/stderr, not only those of failed tests
#
# Output is KTAP-ish: "ok N - name" / "not ok N - name", "# ..." diagnostics,
# then "N passed, N failed". Exit status 0 only when everything passed.

set -u

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
VM=$REPO/tools/pmidx-vm
VERBOSE=0
[ "${1:-}" = -v ] && VERBOSE=1

PASS=0
FAIL=0
N=0
BOOTS=()

# Work files live in the repository: the guest sees it read-write at the same
# path (host /tmp is hidden by the guest's own tmpfs).
mkdir -p "$REPO/build/vm"
W=$(mktemp -d "$REPO/build/vm/selftest.XXXXXX")
trap 'rm -rf "$W"' EXIT

KVER=$("$REPO/tools/kver.sh")
STANDIN_KO=/lib/modules/$KVER/kernel/lib/crc-itu-t.ko

ok() { # name
	N=$((N + 1)) PASS=$((PASS + 1))
	echo "ok $N - $1"
}

not_ok() { # name why
	N=$((N + 1)) FAIL=$((FAIL + 1))
	echo "not ok $N - $1"
	echo "# $2"
	show_run "$LAST" always
}

check() { # name why condition...
	local name=$1 why=$2
	shift 2
	if "$@"; then ok "$name"; else not_ok "$name" "$why"; fi
}

show_run() { # tag [always]
	[ -n "$1" ] || return 0
	[ "$VERBOSE" = 1 ] || [ "${2:-}" = always ] || return 0
	echo "# --- $1: status $RC, ${ELAPSED}s"
	sed 's/^/# stdout: /' "$W/$1.out"
	sed 's/^/# stderr: /' "$W/$1.err"
}

# run_vm TAG ARGS... : run the runner, stdout/stderr in $W/TAG.{out,err}.
# Sets RC and ELAPSED (seconds, one decimal); records the boot time.
run_vm() {
	local tag=$1 t0 t1 b
	shift
	LAST=$tag
	t0=${EPOCHREALTIME//[!0-9]/}
	"$VM" "$@" >"$W/$tag.out" 2>"$W/$tag.err"
	RC=$?
	t1=${EPOCHREALTIME//[!0-9]/}
	ELAPSED=$(( (t1 - t0) / 1000000 )).$(( (t1 - t0) / 100000 % 10 ))
	b=$(sed -n 's/.*booted in \([0-9.]*s ([a-z]*)\).*/\1/p' "$W/$tag.err" | head -n1)
	[ -n "$b" ] && BOOTS+=("$b")
	show_run "$tag"
}

out_has() { grep -qF -- "$2" "$W/$1.out"; }
err_has() { grep -qF -- "$2" "$W/$1.err"; }
# No QEMU of ours is left: every run below names a file under $W.
no_qemu_left() { ! pgrep -f "qemu-system.*$W/" >/dev/null; }

echo "TAP version 13"
echo "# pmidx-vm selftest, kernel $KVER"

# --- exit status, argv form
run_vm status --no-module -- sh -c 'exit 3'
check "exit status propagates (sh -c 'exit 3' -> 3)" "status $RC" [ "$RC" = 3 ]

# --- output streaming, shell-string form, cwd, environment
export PMIDX_SELFTEST_VAR="it's a b"
: >"$W/stream.times"
t0=${EPOCHREALTIME//[!0-9]/}
# Timestamp each line as it arrives: the first line must come while the
# guest is still sleeping, i.e. the output is streamed, not dumped at exit.
"$VM" --no-module -- 'echo first-line; echo err-line >&2;
	echo "var=$PMIDX_SELFTEST_VAR"; echo "cwd=$(pwd)"; echo "vm=$PMIDX_VM";
	sleep 4; echo last-line; exit 4' 2>"$W/stream.err" |
	while IFS= read -r line; do
		echo "$line" >>"$W/stream.out"
		echo "${EPOCHREALTIME//[!0-9]/} $line" >>"$W/stream.times"
	done
RC=${PIPESTATUS[0]}
LAST=stream ELAPSED=$(( (${EPOCHREALTIME//[!0-9]/} - t0) / 1000000 ))
unset PMIDX_SELFTEST_VAR
touch "$W/stream.out"
b=$(sed -n 's/.*booted in \([0-9.]*s ([a-z]*)\).*/\1/p' "$W/stream.err" | head -n1)
[ -n "$b" ] && BOOTS+=("$b")
show_run stream
check "exit status propagates (shell string, exit 4)" "status $RC" [ "$RC" = 4 ]
check "stdout and stderr of CMD reach stdout" "missing lines" \
	eval 'out_has stream first-line && out_has stream err-line && out_has stream last-line'
check "CMD runs in the repo root with PMIDX_* exported" "wrong cwd/env" \
	eval "out_has stream \"var=it's a b\" && out_has stream 'cwd=$REPO' && out_has stream vm=1"
tf=$(awk '$2 == "first-line" { print $1 }' "$W/stream.times")
tl=$(awk '$2 == "last-line" { print $1 }' "$W/stream.times")
check "output is streamed live" "first-line at $tf, last-line at $tl" \
	eval '[ -n "$tf" ] && [ -n "$tl" ] && [ $((tl - tf)) -ge 3000000 ]'

# --- fsdax conversion
run_vm fsdax --no-module -- 'echo "dax=$(cat /sys/block/pmem0/queue/dax)"; ndctl list'
check "namespace converted to fsdax (queue/dax = 1, ndctl mode fsdax)" "status $RC" \
	eval '[ "$RC" = 0 ] && out_has fsdax dax=1 && grep -q "\"mode\":\"fsdax\"" "$W/fsdax.out"'

# --- persistence across boots on the same --pmem file
head -c 4096 /dev/urandom >"$W/pattern"
run_vm persist1 --no-module --pmem "$W/persist.img:256M" -- \
	"dd if=$W/pattern of=/dev/pmem0 bs=4096 seek=4096 oflag=direct conv=fsync status=none"
rc1=$RC
run_vm persist2 --no-module --pmem "$W/persist.img" -- \
	"dd if=/dev/pmem0 bs=4096 skip=4096 count=1 iflag=direct status=none | cmp - $W/pattern && echo same"
check "data written in boot 1 is read back in boot 2" "status $rc1/$RC" \
	eval '[ "$rc1" = 0 ] && [ "$RC" = 0 ] && out_has persist2 same'
check "fsdax mode persists in the backing file (no reconversion)" "see stderr" \
	err_has persist2 "namespace0.0: already fsdax"

# --- power cut: fast, status 200, no QEMU left, stores kept (eADR)
marker="pmidx-vm-cut-$RANDOM$RANDOM"
{ printf '%s' "$marker"; head -c $((4096 - ${#marker})) /dev/zero; } >"$W/marker"
run_vm cut --no-module --pmem "$W/cut.img:256M" --cut-after 2 -- \
	"dd if=$W/marker of=/dev/pmem0 bs=4096 seek=100 oflag=direct status=none; sleep 100"
check "--cut-after 2 on 'sleep 100' exits 200" "status $RC" [ "$RC" = 200 ]
# well before the command's own 100 s: the cut, not the command, ended it
# (the bound leaves room for a slow boot on a loaded machine)
check "--cut-after ends the run before its command (${ELAPSED}s)" "took ${ELAPSED}s" \
	[ "${ELAPSED%.*}" -lt 90 ]
check "no QEMU process survives a power cut" "$(pgrep -af "qemu-system.*$W/")" no_qemu_left
check "stores before the cut are in the backing file" "marker not found" \
	grep -qa "$marker" "$W/cut.img"

# --- raw namespace
run_vm raw --no-module --raw -- 'echo "dax=$(cat /sys/block/pmem0/queue/dax)"; ndctl list'
check "--raw leaves the namespace raw (queue/dax 0, no fsdax)" "status $RC" \
	eval '[ "$RC" = 0 ] && out_has raw dax=0 && ! grep -q fsdax "$W/raw.out"'

# --- two nvdimms
run_vm two --no-module --pmem "$W/a.img:256M" --pmem "$W/b.img:64M" -- \
	'for b in pmem0 pmem1; do echo "$b dax=$(cat /sys/block/$b/queue/dax) size=$(cat /sys/block/$b/size)"; done'
check "second nvdimm shows up as pmem1, both fsdax" "status $RC" \
	eval '[ "$RC" = 0 ] && out_has two "pmem0 dax=1" && out_has two "pmem1 dax=1"'

# --- splat detection
run_vm splat --no-module -- "echo 'WARNING: test splat' > /dev/kmsg"
check "kernel splat in the log fails the run (201)" "status $RC" \
	eval '[ "$RC" = 201 ] && err_has splat "WARNING: test splat"'
PMIDX_VM_SPLAT_IGNORE='test splat' run_vm splat-ignore --no-module -- \
	"echo 'WARNING: test splat' > /dev/kmsg"
check "PMIDX_VM_SPLAT_IGNORE whitelists a splat" "status $RC" [ "$RC" = 0 ]

# --- guest dies without a status
run_vm nostatus --no-module -- 'echo o > /proc/sysrq-trigger; sleep 100'
check "guest powering off without a status exits 202" "status $RC" [ "$RC" = 202 ]

# --- the guest kernel dies before insmod: booted once more, then reported
PMIDX_VM_APPEND=rdinit=/nonexistent run_vm bootcrash --no-module --log "$W/bootcrash.log" -- true
check "a guest kernel that dies before insmod boots once more, then fails (201)" \
	"status $RC" eval '[ "$RC" = 201 ] && [ -s "$W/bootcrash.log.boot1" ] &&
		[ "$(grep -c "booting again" "$W/bootcrash.err")" = 1 ]'

# --- watchdog
run_vm timeout --no-module --pmem "$W/timeout.img:256M" --timeout 12 -- 'sleep 100'
check "--timeout kills the run (203)" "status $RC after ${ELAPSED}s" \
	eval '[ "$RC" = 203 ] && [ "${ELAPSED%.*}" -lt 25 ]'
check "no QEMU process survives a timeout" "$(pgrep -af "qemu-system.*$W/")" no_qemu_left

# --- signals
"$VM" --no-module --pmem "$W/sig.img:256M" -- 'sleep 100' >/dev/null 2>"$W/sig.err" &
pid=$!
for _ in $(seq 300); do grep -q 'booted in' "$W/sig.err" && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
RC=$? LAST=
sleep 0.5
check "SIGTERM: exit 143 and QEMU killed" "status $RC, $(pgrep -af "qemu-system.*$W/")" \
	eval '[ "$RC" = 143 ] && no_qemu_left'

"$VM" --no-module --pmem "$W/kill.img:256M" -- 'sleep 100' >/dev/null 2>"$W/kill.err" &
pid=$!
for _ in $(seq 300); do grep -q 'booted in' "$W/kill.err" && break; sleep 0.1; done
kill -KILL "$pid"
wait "$pid" 2>/dev/null
for _ in $(seq 30); do no_qemu_left && break; sleep 0.1; done
check "SIGKILL of the runner: QEMU dies too (pdeathsig)" "$(pgrep -af "qemu-system.*$W/")" \
	no_qemu_left

# --- module handling, with a stock module standing in for pmidx.ko
PMIDX_KO=$W/missing.ko run_vm noko -- true
check "missing pmidx.ko fails before booting (206)" "status $RC" \
	eval '[ "$RC" = 206 ] && err_has noko missing.ko'
head -c 1000 /dev/urandom >"$W/bogus.ko"
PMIDX_KO=$W/bogus.ko run_vm badko -- true
check "insmod failure is a setup failure (205)" "status $RC" \
	eval '[ "$RC" = 205 ] && err_has badko "insmod"'
if [ -f "$STANDIN_KO" ]; then
	PMIDX_KO=$STANDIN_KO run_vm modok -- 'grep -q "^crc_itu_t " /proc/modules && echo loaded'
	check "PMIDX_KO is insmod-ed before CMD and removed after" "status $RC" \
		eval '[ "$RC" = 0 ] && out_has modok loaded'
	# omfs uses crc-itu-t: once loaded, the stand-in cannot be removed.
	PMIDX_KO=$STANDIN_KO run_vm modbusy -- 'modprobe omfs'
	check "rmmod failure after CMD exits 204" "status $RC" \
		eval '[ "$RC" = 204 ] && err_has modbusy "rmmod crc_itu_t failed"'
else
	echo "ok $((N + 1)) - rmmod tests # SKIP $STANDIN_KO missing"
	N=$((N + 1)) PASS=$((PASS + 1))
fi

# --- usage
run_vm usage --bogus-option -- true
check "usage error exits 206" "status $RC" [ "$RC" = 206 ]

echo "1..$N"
# Boot time = QEMU start to CMD start, as printed by the runner ("4.3s (tcg)").
if [ ${#BOOTS[@]} -gt 0 ]; then
	printf '%s\n' "${BOOTS[@]}" | sort -n | awk '
		{ v[NR] = $1 + 0; acc = $2 }
		END { printf "# boot to CMD %s: min %.1fs, median %.1fs, max %.1fs over %d boots\n",
			acc, v[1], v[int((NR + 1) / 2)], v[NR], NR }'
fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
