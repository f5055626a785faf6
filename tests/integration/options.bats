#!/usr/bin/env bats
# The commands' help and what they accept cannot drift apart: options_check.py tries every option
# any help names or the analyzer's sources spell on every command, and compares with its help (the
# man page and the completion are made from the same help, scripts/mkman.sh and the completion).

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
