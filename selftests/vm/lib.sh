# SPDX-License-Identifier: GPL-2.0
#
# Shared by the host-side scenario scripts in selftests/vm: KTAP result
# lines, the final "N passed, N failed" summary, and JSON assertions.
# Source it after cd-ing to the repository root.

pass=0 fail=0 n=0

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
	echo "$pass passed, $fail failed"
	[ "$fail" = 0 ]
}
