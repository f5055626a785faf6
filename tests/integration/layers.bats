#!/usr/bin/env bats
# The analyzer's layers (docs/ARCHITECTURE.md) hold as the tree says: base/ below trace/ below
# analysis/ below out/ below cmd/, each including only headers of its own layer or those below; the
# layers under cmd/ never print to the terminal, exit or choose an exit status (they return errors
# and send warnings to cmd/'s sink); unit tests link the analyzer's library instead of including
# its sources.

load helpers

A="$TPROF_ROOT/analyzer"

# includes LAYER ALLOWED...: every "x/y.h" include of LAYER's files names one of the ALLOWED layers
includes() {
	local layer=$1 bad
	shift
	local allowed=" $* "
	bad=$(grep -Hn '#include "[a-z]*/' "$A/$layer"/*.[ch] | while IFS= read -r line; do
		dir=$(sed 's/.*#include "\([a-z]*\)\/.*/\1/' <<<"$line")
		[[ "$allowed" == *" $dir "* ]] || echo "$line"
	done)
	[ -z "$bad" ] || { echo "$bad"; return 1; }
}

@test "each layer includes only its own headers and those of the layers below" {
	[ -d "$A/base" ] && [ -d "$A/trace" ] && [ -d "$A/analysis" ] && [ -d "$A/out" ] && [ -d "$A/cmd" ]
	[ -z "$(ls "$A"/*.[ch] 2>/dev/null)" ] # nothing outside the layers
	includes base base
	includes trace base trace
	includes analysis base trace analysis
	includes out base trace analysis out
	includes cmd base trace analysis out cmd
}

@test "below cmd/ nothing prints to the terminal, exits or picks an exit status" {
	# base/util.c holds the sinks themselves: tprof_err (cmd/'s messages), tprof_oom, tprof_bug
	run grep -nE 'stdout|stderr|tprof_err\(|(^|[^a-z_])exit\(|isatty|TPROF_EXIT_(USAGE|INPUT|TOOL)' \
		"$A"/trace/*.[ch] "$A"/analysis/*.[ch] "$A"/out/*.[ch]
	echo "$output"
	[ "$status" -eq 1 ] # no match
	run grep -nE 'stdout|[^_]exit\(' "$A"/base/*.c
	echo "$output"
	[ "$(grep -c 'exit(' <<<"$output")" -eq 1 ] # tprof_oom's
}

@test "unit tests link the analyzer's library instead of including its sources" {
	run grep -ln '#include ".*analyzer/.*\.c"' "$TPROF_ROOT"/tests/unit/*.c "$TPROF_ROOT"/tests/fuzz/*.c
	[ "$status" -eq 1 ]
	[ -f "$B/libtprof-analyzer.a" ]
	nm "$B/libtprof-analyzer.a" | grep -q ' T tprof_trace_open$'
}

@test "an object is rebuilt when a header it includes changes (-MMD)" {
	grep -q 'analyzer/trace/reader.h' "$B/obj/analyzer/cmd/cmd_report.d"
	grep -q 'analyzer/out/table.h' "$B/obj/analyzer/cmd/cmd_report.d"
}
