#!/usr/bin/env bats
# The commands' help and what they accept cannot drift apart: options_check.py tries every option
# any help names or the analyzer's sources spell on every command, and compares with its help (the
# man page and the completion are made from the same help, scripts/mkman.sh and the completion); and
# libtprof.so's TPROF_ variables take what the README's table allows, saying what they refuse.

load helpers

@test "every option a command accepts is in its help, and every one its help names is accepted" {
	run $PY "$TPROF_ROOT/tests/integration/options_check.py" "$B/tprof" "$TPROF_ROOT/analyzer"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"0 mismatches"* ]]
}

@test "the check sees a gap: an option the help leaves out is named" {
	# the same check against a tprof whose plot help would not name --format
	mkdir fake
	cat >fake/tprof <<SH
#!/bin/sh
if [ "\$1" = help ] && [ "\$2" = plot ]; then "$B/tprof" help plot | sed 's/--format//g'; exit 0; fi
exec "$B/tprof" "\$@"
SH
	chmod +x fake/tprof
	run $PY "$TPROF_ROOT/tests/integration/options_check.py" fake/tprof "$TPROF_ROOT/analyzer"
	[ "$status" -eq 1 ]
	[[ "$output" == *"plot: accepted but not in its help: ['--format']"* ]]
}

@test "a TPROF_ variable with a value the README does not allow is said, and its default kept; off is off" {
	for v in TPROF_DEPTH=abc TPROF_DEPTH=300 TPROF_RING_ENTRIES=100 TPROF_CLOCK=realtime TPROF_RSS_INTERVAL_MS=5x \
		TPROF_TIMESTAMPS=every TPROF_LOSSY=maybe; do
		rm -f t.trace
		run env "$v" TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known"
		echo "$v: $output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"tprof: $v: not "*"; the default is kept"* ]]
		[[ "$output" == *done* ]]
		settled t.trace
		"$B/tprof" report --json t.trace >r.json
		[ "$(jget r.json allocations)" = 21 ]
		[ "$(jget r.json lossy)" = false ]
	done
	# the analyzer's TPROF_WAIT_MS too, when a trace is still being written
	TPROF_QUIET=1 TPROF_OUTPUT=w.trace LD_PRELOAD="$B/libtprof.so" /usr/bin/python3 -c 'import time; time.sleep(1.5)' &
	sleep 0.7
	run env TPROF_WAIT_MS=5x "$B/tprof" report w.trace
	wait
	[ "$status" -eq 0 ]
	[[ "$output" == *"TPROF_WAIT_MS=5x: not a number of milliseconds from 0 to 86400000; the default (10000) is kept"* ]]
	# a switch turned off by a word: lossless, and no line at exit
	rm -f t.trace
	run env TPROF_LOSSY=off TPROF_QUIET=on TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known"
	[ "$output" = done ]
	settled t.trace
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json lossy)" = false ]
}

@test "--name=value works as --name value; a value given to an option that takes none, or missing, is said" {
	"$B/progs/heap_known" >/dev/null
	TPROF_QUIET=1 "$B/tprof" record -o t.trace -- "$B/progs/heap_known" >/dev/null
	settled t.trace
	"$B/tprof" summary --top 2 t.trace >a.txt
	"$B/tprof" summary --top=2 t.trace >b.txt
	cmp a.txt b.txt
	"$B/tprof" leaks --error-exitcode=7 --kinds=all t.trace >/dev/null && rc=0 || rc=$?
	"$B/tprof" leaks --error-exitcode 7 --kinds all t.trace >/dev/null && rc2=0 || rc2=$?
	[ "$rc" -eq "$rc2" ]
	run "$B/tprof" summary --json=1 t.trace
	[ "$status" -eq 1 ]
	[[ "$output" == *"--json takes no value ('--json=1')"* ]]
	run "$B/tprof" summary --top= t.trace
	[ "$status" -eq 1 ]
	[[ "$output" == *"--top needs a number"* ]]
	run "$B/tprof" record -o
	[ "$status" -eq 1 ]
	[[ "$output" == *"record: -o needs a file name"* ]]
	run env TPROF_QUIET=1 "$B/tprof" record --error-exitcode=9 --kinds=definite -o r.trace -- "$B/progs/heap_known"
	echo "$output"
	[ -s r.trace ]
	run "$B/tprof" record --error-exitcode=0 -- true
	[ "$status" -eq 1 ]
	[[ "$output" == *"--error-exitcode takes a status from 1 to 255"* ]]
}

@test "the analyzer's switches take libtprof.so's words; another value is said once and the default kept" {
	TPROF_QUIET=1 "$B/tprof" record -o t.trace -- "$B/progs/heap_known" >/dev/null
	settled t.trace
	"$B/tprof" report t.trace >want.txt
	for v in off no 0 FALSE on 1 yes; do
		TPROF_DECODE_THREAD=$v "$B/tprof" report t.trace >got.txt 2>err.txt
		cmp want.txt got.txt
		[ ! -s err.txt ]
	done
	TPROF_DECODE_THREAD=banana TPROF_PROGRESS=7 "$B/tprof" diff t.trace t.trace >/dev/null 2>err.txt
	cat err.txt
	[ "$(grep -c 'TPROF_DECODE_THREAD=banana: not 1 or 0' err.txt)" -eq 1 ]
	[ "$(grep -c 'TPROF_PROGRESS=7: not 1 or 0' err.txt)" -eq 1 ]
	grep -q 'the default is kept' err.txt
}

@test "help and version: output that cannot be written is exit 2, as every command's" {
	[ -w /dev/full ] || skip "no /dev/full"
	for args in help --help version --version "help report" "help record"; do
		run bash -c "'$B/tprof' $args >/dev/full"
		echo "$args: $status $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"cannot write the output"* ]]
	done
}

@test "a surplus argument is a usage error (1): version, help COMMAND, leaks --print-default-suppressions" {
	for args in "version x" "--version x" "help report x" "leaks --print-default-suppressions x"; do
		run "$B/tprof" $args
		echo "$args: $status $output"
		[ "$status" -eq 1 ]
	done
}

@test "help --help and version --help print their help (0), as every command's --help" {
	for args in "help --help" "version --help" "version -h" "help -h"; do
		run "$B/tprof" $args
		echo "$args: $status $output"
		[ "$status" -eq 0 ]
		[[ "$output" == "usage: tprof "* ]]
	done
}

@test "a command given no trace prints its usage on lines of its own, not with escaped line breaks" {
	for cmd in report summary leaks ops peak allocs export plot dump; do
		run "$B/tprof" $cmd
		echo "$cmd: $status $output"
		[ "$status" -eq 1 ]
		[[ "$output" == "tprof: usage: tprof $cmd"* ]]
		[[ "$output" != *'\n'* ]]
	done
	run "$B/tprof" diff x.trace
	echo "diff: $status $output"
	[ "$status" -eq 1 ]
	[[ "$output" == "tprof: usage: tprof diff"* ]]
	[[ "$output" != *'\n'* ]]
}

@test "record --kinds without --error-exitcode is a usage error (it would change nothing); ops on a heap-only trace says it has no kernel calls" {
	run "$B/tprof" record --kinds definite -o r.trace -- /bin/true
	[ "$status" -eq 1 ]
	[[ "$output" == *"--kinds is for --error-exitcode"* ]]
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	settled t.trace
	run "$B/tprof" ops t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"the trace has no kernel calls"* ]]
	[[ "$output" != *"name "*"calls"*"self"* ]]
}
