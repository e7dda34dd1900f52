#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The debug tier's VM suites in one guest (tools/run-suites debug): on the
# debug kernel a boot costs ~25 s and the kmemleak scans after rmmod ~30 s,
# more than most suites themselves, so they share one boot and one leak
# check (which then covers all of them). Runs in the guest, with the test
# module (pool_admin drives its allocator exercise) and two devices: the
# big one (/dev/pmem0) for every suite, the small one for pool_admin.
# The 6.12 section (tools/run-suites 6.12) shares a guest the same way, on
# Debian's 6.12 kernel, for the suites it names.
#
#   selftests/vm/debug_tier.sh [SUITE...]  only these (default: all five,
#                                          in the order below)
#   DEBUG_TIER_ONLY="data_path races"      the same (development)
#
# Each suite prints its own totals; tools/run-suites sums them. The exit
# status is non-zero when one of them failed.
cd "$(dirname "$0")/../.." || exit 1
CTL=build/bin/pmidxctl
BIN=build/bin/selftests
SUITES="pool_admin data_path async_api kapi_client races"
only=${*:-${DEBUG_TIER_ONLY:-}}
rc=0

# A misspelt name would run nothing and pass.
for s in $only; do
	case " $SUITES " in
	*" $s "*) ;;
	*) echo "debug_tier: unknown suite '$s' (known: $SUITES)"
	   echo "0 passed, 1 failed"
	   exit 1 ;;
	esac
done

# The suites but pool_admin use /dev/pmem0: it must be the big device
# (QEMU's last --pmem).
if [ "$(cat /sys/block/pmem0/size)" -lt "$(cat /sys/block/pmem1/size)" ]; then
	echo "debug_tier: /dev/pmem0 is the small device; pass the big one last"
	echo "0 passed, 1 failed"
	exit 1
fi

# Leave no pool attached and no client loaded for the next suite.
reset_state() {
	lsmod | grep -q '^pmidx_dentry ' && rmmod pmidx_dentry
	for p in $($CTL list 2>/dev/null | awk '$1 ~ /^pmidx[0-9]+$/ { print $1 }'); do
		$CTL detach "$p" >/dev/null 2>&1
	done
}

run() { # name cmd...
	name=$1
	shift
	if [ -n "$only" ]; then
		case " $only " in *" $name "*) ;; *) return 0 ;; esac
	fi
	reset_state
	echo "# ---- $name: $*"
	start=$(date +%s)
	"$@" || rc=1
	echo "# ---- $name: $(($(date +%s) - start))s"
}

run pool_admin $BIN/pool_admin
run data_path $BIN/data_path
run async_api $BIN/async_api
run kapi_client selftests/vm/kapi_client.sh
run races $BIN/races
reset_state
exit $rc
