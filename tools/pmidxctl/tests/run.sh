#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# pmidxctl self-checks that need no pmidx module: builds the tool and the
# unit checks (JSON escaper/writer, reply decoding, netlink plumbing
# against "nlctrl"), then checks the command line (exit status 2 for
# usage errors) and, when the module is not loaded, the message for it.
#
#   tools/pmidxctl/tests/run.sh [BUILD_DIR]      (from the repository root)
set -u

cd "$(dirname "$0")/../../.." || exit 1
out=${1:-}
if [ -z "$out" ]; then
	out=$(mktemp -d) || exit 1
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

CFLAGS="-O2 -g -Wall -Wextra -Werror -I uapi"
NL_CFLAGS=$(pkg-config --cflags libnl-genl-3.0)
NL_LIBS=$(pkg-config --libs libnl-genl-3.0)
T=tools/pmidxctl
# data.c's subcommands use libpmidx: its sources are built in (its rings
# need liburing)
LIB="-I libpmidx/include libpmidx/src/*.c"
NL_LIBS="$NL_LIBS -luring"
pass=0
fail=0

ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

build() {
	# shellcheck disable=SC2086
	gcc $CFLAGS "$@" || { echo "FAIL: build $*"; exit 1; }
}

build $NL_CFLAGS $T/*.c $LIB -o "$out/pmidxctl" $NL_LIBS
build $T/tests/json_test.c $T/print.c -o "$out/json_test"
build -Dmain=pmidxctl_main $NL_CFLAGS $T/tests/admin_test.c $T/main.c \
	$T/genl.c $T/print.c $T/data.c $LIB -o "$out/admin_test" $NL_LIBS
build -Dmain=pmidxctl_main $NL_CFLAGS $T/tests/data_test.c $T/main.c \
	$T/genl.c $T/print.c $T/admin.c $LIB -o "$out/data_test" $NL_LIBS
build $NL_CFLAGS $T/tests/genl_test.c -o "$out/genl_test" $NL_LIBS

for t in json_test admin_test data_test genl_test; do
	"$out/$t" >"$out/$t.log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then ok; elif [ $rc = 77 ]; then echo "SKIP: $t";
	else bad "$t"; cat "$out/$t.log"; fi
done

# expect STATUS ARGS...: exit status of pmidxctl ARGS
expect() {
	want=$1
	shift
	"$out/pmidxctl" "$@" >"$out/stdout" 2>"$out/stderr"
	rc=$?
	if [ $rc = "$want" ]; then ok; else bad "pmidxctl $* -> $rc, want $want"; fi
}

expect 0 --help
expect 0 help
expect 0 help create-index
expect 0 --version
expect 0 list --help
expect 0 alloc-test -h
expect 2
expect 2 help nosuch
expect 2 nosuch
expect 2 -x
expect 2 list --bogus
expect 2 list extra
expect 2 list --json=yes
expect 2 format
expect 2 format /dev/pmem0 /dev/pmem1
expect 2 attach
expect 2 detach
expect 2 detach notapool
expect 2 create-index
expect 2 create-index x --engine nosuch
expect 2 create-index x --engine
expect 2 create-index x --pool
expect 2 drop-index
expect 2 stats a b
expect 2 alloc-test --mode nosuch
expect 2 alloc-test --threads -1
expect 2 alloc-test --ops 4294967296
expect 2 alloc-test --seed x
expect 2 alloc-test extra
expect 0 help scan
expect 0 put --help
expect 2 put
expect 2 put x k
expect 2 put x k v extra
expect 2 put x k v --bogus
expect 2 put x 0g v --hex
expect 2 put x abc v --hex
expect 2 put x k 123 --u64
expect 2 put x k v --pool notapool
expect 2 get x
expect 2 get x k v
expect 2 get x -1 --u64
expect 2 del x
expect 2 scan
expect 2 scan x a b c
expect 2 scan x --limit 0
expect 2 scan x --limit -1
expect 2 scan x --limit
expect 2 scan x zz --hex
expect 2 check
expect 2 check x y

msg='pmidxctl: pmidx module not loaded (generic netlink family "pmidx" not found)'
"$out/pmidxctl" list >"$out/stdout" 2>"$out/stderr"
rc=$?
if [ $rc = 0 ]; then
	echo "SKIP: module-not-loaded check (the pmidx family is registered)"
elif [ $rc = 1 ] && [ "$(cat "$out/stderr")" = "$msg" ] &&
     [ ! -s "$out/stdout" ]; then
	ok
	# options are parsed before the socket is opened: the same for all
	expect 1 create-index x --pool /dev/pmem0
	expect 1 stats --json
	expect 1 get x k
	expect 1 scan x --pool /dev/pmem0
	# a pool named directly needs no netlink: the char device is missing
	expect 1 get x k --pool pmidx0
	expect 1 put x k v --pool 0
else
	bad "pmidxctl list -> $rc: $(cat "$out/stderr")"
fi

echo "pmidxctl: $pass passed, $fail failed"
[ $fail = 0 ]
