#!/usr/bin/env bats
# tprof summary: in one pass, the figures of report, allocs, peak and leaks on the same trace, exactly
# (summary_check.py compares every total and every site), on programs with leaks of every kind, a
# peak that later frees, threads and a two-thread storm; its text; bad input.

load helpers

CHECK="$TPROF_ROOT/tests/integration/summary_check.py"

# compare: summary --top 0 --json against the four commands that each answer a part of it
compare() {
	"$B/tprof" summary --top 0 --json t.trace >summary.json
	"$B/tprof" report --json t.trace >report.json
	"$B/tprof" allocs --top 0 --json t.trace >allocs.json
	"$B/tprof" peak --top 0 --json t.trace >peak.json
	"$B/tprof" leaks --kinds all --no-default-suppressions --top 0 --json t.trace >leaks.json
	run $PY "$CHECK" .
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "summary equals report, allocs, peak and leaks: leaks of every kind" {
	traced "$B/progs/leak_kinds"
	compare
	[ "$(jget summary.json leaks_classified)" = true ]
	[ "$(jget summary.json definitely_lost_bytes)" -gt 0 ]
}

@test "summary equals them on a peak that is freed later, a stack-leak program and thread churn" {
	for p in stacks_peak stacks_leak thread_churn; do
		rm -f t.trace
		traced "$B/progs/$p" >/dev/null
		compare
	done
	[ "$(jget peak.json peak_bytes)" -gt 0 ]
}

@test "summary equals them with blocks of 0 bytes and failed calls: every block and every call is a site's" {
	traced "$B/progs/zero_failed"
	compare
	[ "$(jget report.json failed_allocations)" = 4 ]
	[ "$(jget summary.json in_use_blocks)" = 2 ]
	[ "$(jget summary.json calls)" = 8 ]
}

@test "summary equals them on a two-thread storm with temporary allocations" {
	traced "$B/progs/storm" 2 30000 >/dev/null
	compare
	[ "$(jget summary.json temporary)" -gt 0 ]
	[ "$(jget summary.json allocations)" -ge 60000 ]
}

@test "summary text: totals, the four tables with their stacks, --top" {
	traced "$B/progs/stacks_leak"
	run "$B/tprof" summary --top 2 t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"calls to allocation functions"*"temporary allocations"*"peak heap:"*"in use at exit:"*"definitely lost"* ]]
	[[ "$output" == *"most calls to allocation functions (the top 2 of"* ]]
	[[ "$output" == *"largest consumers at the peak"*"most temporary allocations"*"in use at exit (the top 2 of"* ]]
	[[ "$output" == *"at not_leaking (stacks_leak.c:"* ]]
}

@test "summary: bad input exits 2 with a message, bad options 1" {
	printf 'not a trace' >bad.trace
	run "$B/tprof" summary bad.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad.trace"* ]]
	run "$B/tprof" summary --top x bad.trace
	[ "$status" -eq 1 ]
	run "$B/tprof" summary --csv=nothing bad.trace
	[ "$status" -eq 1 ]
}

@test "symbol cache: cold, warm and off give the same answers; a damaged one or no directory changes nothing" {
	traced "$B/progs/storm" 2 3000 >/dev/null
	export TPROF_SYMBOL_CACHE="$WORK/cache"
	"$B/tprof" summary t.trace >cold_summary.txt
	cp cold_summary.txt cold.txt
	"$B/tprof" leaks --kinds all t.trace >>cold.txt
	n=$(ls cache | grep -c '\.sym$')
	[ "$n" -ge 2 ] # the program and the C library at least
	"$B/tprof" summary t.trace >warm.txt
	"$B/tprof" leaks --kinds all t.trace >>warm.txt
	diff cold.txt warm.txt
	TPROF_SYMBOL_CACHE=off "$B/tprof" summary t.trace >off.txt
	TPROF_SYMBOL_CACHE=off "$B/tprof" leaks --kinds all t.trace >>off.txt
	diff cold.txt off.txt
	grep -q "storm.c:" cold.txt
	# every cache file damaged in its middle, or cut: the same answers, and the files written anew
	for f in cache/*.sym; do
		s=$(stat -c %s "$f")
		printf '\377' | dd of="$f" bs=1 seek=$((s / 2)) conv=notrunc 2>/dev/null
	done
	f=$(ls cache/*.sym | head -1)
	truncate -s 30 "$f"
	"$B/tprof" summary t.trace >bad.txt
	"$B/tprof" leaks --kinds all t.trace >>bad.txt
	diff cold.txt bad.txt
	[ "$(stat -c %s "$f")" -gt 30 ]
	# an unwritable cache directory: the same answers
	TPROF_SYMBOL_CACHE=/proc/nonexistent/cache "$B/tprof" summary t.trace >nodir.txt
	diff cold_summary.txt nodir.txt
	# another program's trace: the C library's file is known from the cache, but not the addresses
	# this one calls it from, which libdw is then opened for: the same names as without a cache,
	# the first time and the next, and no file is taken for one without symbols
	TPROF_OUTPUT=o.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/stacks_leak" >/dev/null
	settled o.trace
	TPROF_SYMBOL_CACHE=off "$B/tprof" leaks --kinds all o.trace >o_off.txt
	for _ in 1 2; do
		"$B/tprof" leaks --kinds all o.trace >o_cached.txt 2>o_err.txt
		diff o_off.txt o_cached.txt
		! grep -q "neither symbols nor debug information" o_err.txt
	done
	grep -q "__libc_start_call_main" o_off.txt
}
