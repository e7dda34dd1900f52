#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# ABI check of the shared library: soname, versioned exports only, the
# export list equal to the version script's, and each symbol carrying
# the version of the node that lists it.
#
#   libpmidx/tests/abi.sh LIBDIR SRCDIR
set -u
lib=$1/libpmidx.so.1
map=$2/libpmidx.map
pass=0 fail=0
t() {
	if eval "$2"; then pass=$((pass + 1)); echo "ok - $1";
	else fail=$((fail + 1)); echo "not ok - $1"; fi
}
t "soname is libpmidx.so.1" \
	"readelf -d '$lib' | grep -q 'SONAME.*\[libpmidx.so.1\]'"
exports=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort)
wanted=$(sed -n 's/^[[:space:]]*\(pmidx_[a-z0-9_]*\);$/\1/p' "$map" | sort)
# "symbol@@NODE" for every symbol of the version script
versioned=$(awk '/^PMIDX_[0-9.]* *{/ { node = $1 }
	/^[[:space:]]*pmidx_[a-z0-9_]*;$/ { sub(/;/, ""); print $1 "@@" node }' \
	"$map" | sort)
t "exports = the version script's symbols" \
	"[ \"\$(echo \"\$exports\" | sed 's/@.*//')\" = \"\$wanted\" ]"
t "every export carries the version of its node (PMIDX_1.0, PMIDX_1.1)" \
	"[ \"\$exports\" = \"\$versioned\" ]"
t "no undefined symbols beyond libc and liburing" \
	"! nm -D --undefined-only '$lib' | grep -v '@GLIBC_\|@LIBURING_' | grep -q ' U '"
echo "libpmidx abi: $pass passed, $fail failed"
[ $fail = 0 ]
