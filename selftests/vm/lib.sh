# SPDX-License-Identifier: GPL-2.0
#
# Shared by the host-side scenario scripts in selftests/vm: KTAP result
# lines, the final "N passed, N failed" summary, JSON assertions and the
# engines a guest's pmidx.ko serves. Source it after cd-ing to the
# repository root.

pass=0 fail=0 n=0 skipped=0

# The engines the suites cover, each when the module serves it (a module
# that does not has its tests skipped, named in the summary).
ENGINES="ccl utree b3 lodge pfart"

# ok STATUS NAME: record one test result; true when it passed
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		pass=$((pass + 1)); echo "ok $n - $2"
	else
		fail=$((fail + 1)); echo "not ok $n - $2"
	fi
	[ "$1" = 0 ]
}

# skip NAME WHY: a test not run (KTAP SKIP directive; tools/run-suites
# lists the reasons)
skip() {
	n=$((n + 1)) skipped=$((skipped + 1))
	echo "ok $n - $1 # SKIP $2"
}

# create_index NAME ENGINE [PMIDXCTL ARGS...] (in a guest, a pool attached):
# 0 when created, 4 when the module does not build ENGINE (refused,
# nothing persisted), 1 on any other failure (pmidxctl's message on stderr).
create_index() {
	local out
	out=$(${CTL:-build/bin/pmidxctl} create-index "$1" --engine "$2" "${@:3}" 2>&1) && return 0
	case $out in
	*"engine not built into this module"*) return 4 ;;
	esac
	echo "$out" >&2
	return 1
}

# json FILE PYTHON-EXPR: true when EXPR holds with j = the parsed FILE
json() {
	python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

# summary: the line tools/run-suites counts; fails when a test failed
summary() {
	[ "$skipped" = 0 ] || echo "# $skipped skipped"
	echo "$pass passed, $fail failed"
	[ "$fail" = 0 ]
}
