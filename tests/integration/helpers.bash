# Shared set-up for the bats suites: paths to the build, a scratch directory per test, and a JSON
# field reader (python3 from Debian, always installed by scripts/deps.sh).
B="${TPROF_ROOT}/${BUILD:-build}"
PY=/usr/bin/python3

setup() {
	WORK=$(mktemp -d)
	cd "$WORK"
	export TPROF_QUIET=1
	# the symbolizer's cache: one per suite file (its tests share it, so later ones read what earlier
	# ones wrote), never the home directory's
	export TPROF_SYMBOL_CACHE="$BATS_FILE_TMPDIR/symbols"
}

teardown() {
	cd /
	rm -rf "$WORK"
}

# jget FILE.json KEY -> the value (python repr for non-strings: True/False)
# format_version: the trace format version this tree writes (TPROF_VERSION)
format_version() {
	awk '$1 == "#define" && $2 == "TPROF_VERSION" {print $3}' "$TPROF_ROOT/include/tprof_trace.h"
}

jget() {
	$PY -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v=v[k]
print(str(v).lower() if isinstance(v,bool) else v)' "$1" "$2"
}

# settled TRACE...: waits until the recorder has finished each trace (it holds a lock on the file
# until its END is written, a moment after the process ends); tprof's commands wait by themselves,
# other tools reading the file must wait first
settled() {
	local f
	for f in "$@"; do
		[ -e "$f" ] && flock -s "$f" true
	done
	return 0
}

# traced PROGRAM ARGS... : runs it under libtprof.so writing t.trace, and waits for the trace
traced() {
	local rc=0
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$@" || rc=$?
	settled t.trace
	return $rc
}

# bad_zblocks TYPE COMMAND: t.trace's first compressed TYPE block (STACKS or KERNELS) with a broken
# zstd frame, then with a length past the ratio readers accept (tests/integration/zblocks.py): the
# command exits 2, naming the block's offset and what is wrong
bad_zblocks() {
	local z="$TPROF_ROOT/tests/integration/zblocks.py" off
	off=$(PYTHONPATH="$TPROF_ROOT/tests/integration" $PY "$z" corrupt t.trace c.trace "$1")
	run "$B/tprof" "$2" c.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"c.trace: byte $off: corrupt: compressed $1 block does not decompress to its "*" bytes"* ]]
	off=$(PYTHONPATH="$TPROF_ROOT/tests/integration" $PY "$z" ratio t.trace r.trace "$1")
	run "$B/tprof" "$2" r.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"r.trace: byte $off: corrupt: malformed compressed $1 block"* ]]
}

# record_name PID: the abstract socket name of the recorder that `tprof record` (pid PID) serves
# (/proc/net/unix), once it listens (2.5 s at most); nothing when it does not
record_name() {
	local n=
	for _ in $(seq 50); do
		n=$(grep -ao "@tprof\.[0-9]*\.record\.$1\.[0-9]*" /proc/net/unix | head -1 | tr -d @)
		[ -n "$n" ] && break
		sleep 0.05
	done
	echo "$n"
}

# marks_apart TRACE N [SKIP]: TRACE holds N malloc(77777) calls, those after the first SKIP (default
# 0) 20 ms apart (19 to 26 ms: the programs sleep 20 ms between them), and no thread's times go back
marks_apart() {
	"$B/tprof" dump "$1" >d.txt
	awk '$5 == 77777 && $4 == "malloc" {print $2}' d.txt >marks.txt
	[ "$(wc -l <marks.txt)" -eq "$2" ] || {
		echo "# $(wc -l <marks.txt) marks, expected $2"
		return 1
	}
	$PY - "${3:-0}" <<'PY'
import sys
skip = int(sys.argv[1])
t = [int(x) for x in open("marks.txt")]
gaps = [b - a for a, b in zip(t[skip:], t[skip + 1:])]
print(gaps)
assert all(19_000_000 <= g <= 26_000_000 for g in gaps), gaps
last = {}
for line in open("d.txt"):
    if line.startswith("#"):
        continue
    f = line.split()
    ns, tid = int(f[1]), f[2]
    assert ns >= last.get(tid, 0), line
    last[tid] = ns
PY
}
