#!/usr/bin/env bash
# Runs every test of `make test`: the unit-test binaries in $BUILD/tests and the bats integration suites
# in tests/integration. Each speaks TAP; this script echoes it and ends with "N passed, N failed, N skipped".
set -u
BUILD=${BUILD:-build}
export BUILD
export TPROF_ROOT=$(cd "$(dirname "$0")/.." && pwd)
pass=0 fail=0 skip=0
failed_names=()

count() { # reads TAP on stdin, echoes it, updates the counters through a temp file
	local name=$1 line
	while IFS= read -r line; do
		printf '%s\n' "$line"
		case $line in
		"not ok "*) echo F >>"$tally"; failed_names+=("$name: ${line#not ok }") ;;
		"ok "*"# skip"* | "ok "*"# SKIP"*) echo S >>"$tally" ;;
		"ok "*) echo P >>"$tally" ;;
		esac
	done
}

tally=$(mktemp)
trap 'rm -f "$tally"' EXIT

for t in "$BUILD"/tests/*; do
	[ -x "$t" ] && [ -f "$t" ] || continue
	echo "# --- $(basename "$t")"
	out=$(mktemp)
	timeout 600 "$t" >"$out" 2>&1
	rc=$?
	count "$(basename "$t")" <"$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok ' "$out"; then
		echo "not ok - $(basename "$t") exited with status $rc"
		echo F >>"$tally"
	fi
	rm -f "$out"
done

for b in tests/integration/*.bats; do
	[ -f "$b" ] || continue
	echo "# --- $(basename "$b")"
	out=$(mktemp)
	timeout 1800 bats --tap "$b" >"$out" 2>&1
	count "$(basename "$b")" <"$out"
	rm -f "$out"
done

pass=$(grep -c P "$tally")
fail=$(grep -c F "$tally")
skip=$(grep -c S "$tally")
echo
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
