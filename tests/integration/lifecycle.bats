#!/usr/bin/env bats
# The recorder inside programs that use threads, fork, exec, and every way out of a process: the
# program behaves as without tprof, and its trace reads with the right totals.

load helpers

report() { "$B/tprof" report --json "$1" >"$2"; }

@test "storm: 4 threads, 2 M events, totals equal valgrind's" {
	traced "$B/progs/storm" 4 250000 >storm.json
	report t.trace r.json
	[ "$(jget r.json lost_events)" = 0 ]
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json leaked_blocks)" = 0 ]
	[ "$(jget r.json unmatched_frees)" = 0 ]
	[ "$(jget r.json reused_live_addresses)" = 0 ]
	[ "$(jget r.json threads)" = 5 ]
	[ "$(jget r.json events)" -ge 2000000 ]
	valgrind "$B/progs/storm" 4 250000 2>vg.log >/dev/null
	allocs=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs, \([0-9,]*\) frees, \([0-9,]*\) bytes.*/\1 \2 \3/p' vg.log | tr -d ,)
	set -- $allocs
	[ "$(jget r.json allocations)" = "$1" ]
	[ "$(jget r.json frees)" = "$2" ]
	# each of the 4 threads' loader TLS vector (DTV) has two more 16-byte slots: libtprof.so's
	# and libunwind's (docs/FORMAT.md)
	[ "$(jget r.json bytes_allocated)" = "$(($3 + 4 * 32))" ]
	# and the storm's own mallocs are all there
	[ "$(jget r.json calls.malloc)" -ge 1000000 ]
}

@test "storm with a tiny ring stays lossless by default" {
	TPROF_RING_ENTRIES=64 traced "$B/progs/storm" 2 100000 >/dev/null
	report t.trace r.json
	[ "$(jget r.json lost_events)" = 0 ]
	[ "$(jget r.json leaked_blocks)" = 0 ]
	[ "$(jget r.json unmatched_frees)" = 0 ]
	[ "$(jget r.json calls.malloc)" -ge 200000 ]
}

@test "TPROF_LOSSY=1 drops instead of waiting and the report counts every drop" {
	TPROF_LOSSY=1 TPROF_RING_ENTRIES=64 traced "$B/progs/storm" 2 200000 >/dev/null
	report t.trace r.json
	[ "$(jget r.json lossy)" = true ]
	lost=$(jget r.json lost_events)
	events=$(jget r.json events)
	[ "$lost" -gt 0 ]
	# every malloc/free call was either recorded or counted as lost (realloc-free program)
	[ $((events + lost)) -ge 800000 ]
	run "$B/tprof" report t.trace
	[[ "$output" == *"lost"* ]]
}

@test "fork: the child writes its own trace, the parent's is untouched" {
	TPROF_OUTPUT=f.%p.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/lifecycle" fork >pid.txt
	child=$(cat pid.txt)
	parent=$(ls f.*.trace | grep -v "f.$child.trace" | sed 's/f\.\(.*\)\.trace/\1/')
	report "f.$child.trace" c.json
	report "f.$parent.trace" p.json
	[ "$(jget c.json pid)" = "$child" ]
	[ "$(jget c.json ppid)" = "$parent" ]
	[ "$(jget c.json allocations)" = 10 ]
	[ "$(jget c.json leaked_bytes)" = 770 ]
	[ "$(jget p.json leaked_blocks)" -ge 100 ]
	[ "$(jget p.json complete)" = true ]
	[ "$(jget c.json complete)" = true ]
}

@test "a thread that exits early keeps its events" {
	traced "$B/progs/lifecycle" thread
	report t.trace r.json
	[ "$(jget r.json threads)" = 2 ]
	[ "$(jget r.json leaked_blocks)" -ge 150 ]
	[ "$(jget r.json leaked_bytes)" -ge $((100 * 1000 + 50 * 333)) ]
	[ "$(jget r.json complete)" = true ]
}

@test "_exit: trace complete" {
	run traced "$B/progs/lifecycle" _exit
	[ "$status" -eq 7 ]
	report t.trace r.json
	[ "$(jget r.json end)" = _exit ]
	[ "$(jget r.json leaked_bytes)" = 100000 ]
}

@test "abort(): the program still dies of SIGABRT and the trace reads" {
	run traced "$B/progs/lifecycle" abort
	[ "$status" -eq 134 ]
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json signal)" = 6 ]
	[ "$(jget r.json leaked_bytes)" = 100000 ]
}

@test "segfault: the program still dies of SIGSEGV and the trace reads" {
	run traced "$B/progs/lifecycle" segv
	[ "$status" -eq 139 ]
	report t.trace r.json
	[ "$(jget r.json signal)" = 11 ]
	[ "$(jget r.json allocations)" = 100 ]
}

@test "SIGKILL: the trace reads up to its last block and says incomplete" {
	run traced "$B/progs/lifecycle" kill
	[ "$status" -eq 137 ]
	report t.trace r.json
	[ "$(jget r.json complete)" = false ]
	[ "$(jget r.json allocations)" = 100 ]
	run "$B/tprof" report t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"incomplete"* ]]
}

@test "exec: both images are traced" {
	TPROF_OUTPUT=e.%p.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/lifecycle" exec true
	[ -f e.*.trace ] || ls e.*
	first=$(ls e.*.trace | head -1)
	second=$(ls e.*.trace.1)
	report "$first" a.json
	report "$second" b.json
	[ "$(jget a.json program)" = lifecycle ]
	[ "$(jget a.json end)" = exec ]
	[ "$(jget a.json leaked_bytes)" = 100000 ]
	[ "$(jget b.json program)" = true ]
	[ "$(jget b.json pid)" = "$(jget a.json pid)" ]
	[ "$(jget b.json complete)" = true ]
}

@test "errno is preserved by every hook" {
	run traced "$B/progs/lifecycle" errno
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "output: default name, %p, never clobbers, never follows a symlink" {
	LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	ls tprof.heap_known.*.trace
	echo keep >existing.trace
	TPROF_OUTPUT=existing.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	[ "$(cat existing.trace)" = keep ]
	[ -f existing.trace.1 ]
	ln -s "$WORK/target" link.trace
	TPROF_OUTPUT=link.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	[ ! -e target ]
	[ -f link.trace.1 ]
}

@test "one line on stderr says where the trace went; TPROF_QUIET silences it" {
	unset TPROF_QUIET
	run env TPROF_OUTPUT=x.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known"
	[[ "$output" == *"trace written to x.trace"* ]]
	run env TPROF_QUIET=1 TPROF_OUTPUT=y.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known"
	[ "$output" = done ]
}

@test "tprof record: runs the program, returns its status, says where the trace is" {
	run "$B/tprof" record -o r.trace -- sh -c 'exit 3'
	[ "$status" -eq 3 ]
	[[ "$output" == *"r.trace"* ]]
	[ -f r.trace ]
	run "$B/tprof" record -o r.trace -- true
	[ "$status" -eq 1 ]
	[[ "$output" == *"exists"* ]]
	run env LD_PRELOAD=/nonexistent-but-kept.so "$B/tprof" record -o p.trace -- sh -c 'echo "$LD_PRELOAD"'
	[[ "$output" == *"libtprof.so:/nonexistent-but-kept.so"* ]]
	run "$B/tprof" record -- "$B/progs/heap_known"
	[ "$status" -eq 0 ]
	ls tprof.heap_known.*.trace
}

@test "a program that closes the trace's descriptor and reuses the number is never written into" {
	run env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/fd_closer" mine.txt
	[ "$status" -eq 0 ]
	[ "$(cat mine.txt)" = mine ]
	run "$B/tprof" report --json t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *'"complete":false'* ]]
}

@test "timestamps: events 20 ms apart are 20 ms apart in the trace; times never go back" {
	traced "$B/progs/timed"
	"$B/tprof" dump t.trace >d.txt
	awk '$5 == 77777 && $4 == "malloc" {print $2}' d.txt >marks.txt
	[ "$(wc -l <marks.txt)" -eq 5 ]
	$PY - <<'PY'
t = [int(x) for x in open("marks.txt")]
gaps = [b - a for a, b in zip(t, t[1:])]
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
