# Shared set-up for the bats suites: paths to the build, a scratch directory per test, and a JSON
# field reader (python3 from Debian, always installed by scripts/deps.sh).
B="${TPROF_ROOT}/${BUILD:-build}"
PY=/usr/bin/python3

setup() {
	WORK=$(mktemp -d)
	cd "$WORK"
	export TPROF_QUIET=1
}

teardown() {
	cd /
	rm -rf "$WORK"
}

# jget FILE.json KEY -> the value (python repr for non-strings: True/False)
jget() {
	$PY -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v=v[k]
print(str(v).lower() if isinstance(v,bool) else v)' "$1" "$2"
}

# traced PROGRAM ARGS... : runs it under libtprof.so writing t.trace
traced() {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$@"
}
