#!/usr/bin/env bats
# tprof report against exact hand-computed numbers and against valgrind memcheck's HEAP SUMMARY,
# on test programs with known heap behaviour and on real programs nobody here wrote.

load helpers

@test "heap_known: exact totals, peak and leaks" {
	traced "$B/progs/heap_known" >/dev/null
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json allocations)" = 21 ]
	[ "$(jget r.json frees)" = 19 ]
	[ "$(jget r.json bytes_allocated)" = 1003278 ]
	[ "$(jget r.json peak_bytes)" = 1002134 ]
	[ "$(jget r.json peak_blocks)" = 8 ]
	[ "$(jget r.json leaked_bytes)" = 1200 ]
	[ "$(jget r.json leaked_blocks)" = 2 ]
	[ "$(jget r.json unmatched_frees)" = 0 ]
	[ "$(jget r.json lost_events)" = 0 ]
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json calls.malloc)" = 3 ]
	[ "$(jget r.json calls.calloc)" = 1 ]
	[ "$(jget r.json calls.realloc)" = 12 ]
	[ "$(jget r.json calls.reallocarray)" = 2 ]
	[ "$(jget r.json calls.posix_memalign)" = 1 ]
	[ "$(jget r.json calls.aligned_alloc)" = 1 ]
	[ "$(jget r.json calls.memalign)" = 1 ]
	[ "$(jget r.json calls.valloc)" = 1 ]
	[ "$(jget r.json threads)" = 1 ]
	[ "$(jget r.json program)" = heap_known ]
}

@test "a program with a 250-byte name: its default trace name keeps 200 bytes of it" {
	long=$(printf 'n%.0s' $(seq 250))
	cp "$B/progs/heap_known" "./$long"
	unset TPROF_OUTPUT
	LD_PRELOAD="$B/libtprof.so" "./$long" >/dev/null
	f=$(ls tprof.n*.trace)
	settled "$f"
	[[ "$f" =~ ^tprof\.n{200}\.[0-9]+\.trace$ ]]
	"$B/tprof" report --json "$f" >r.json
	[ "$(jget r.json allocations)" = 21 ]
}

@test "heap_known: equals valgrind memcheck" {
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- "$B/progs/heap_known"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the recorder's line counts the events report counts (a realloc is two)" {
	unset TPROF_QUIET
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" 2>err.txt >/dev/null
	settled t.trace
	n=$(sed -n 's/^tprof: heap_known (pid [0-9]*) exited with status 0: \([0-9]*\) events, trace written to t.trace$/\1/p' err.txt)
	"$B/tprof" report --json t.trace >r.json
	[ -n "$n" ]
	[ "$n" = "$(jget r.json events)" ]
	[ "$(jget r.json calls.realloc)" -gt 0 ]
}

@test "pingpong: blocks handed between threads, addresses taken again, equal valgrind's totals" {
	# one thread's malloc and free at one address, with the other thread's free and malloc of it
	# in between: a replay that took the two for one block would miss frees and see leaks
	traced "$B/progs/pingpong"
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json allocations)" = 40001 ]
	[ "$(jget r.json frees)" = 40000 ]
	[ "$(jget r.json leaked_bytes)" = 48 ]
	[ "$(jget r.json leaked_blocks)" = 1 ]
	[ "$(jget r.json unmatched_frees)" = 0 ]
	[ "$(jget r.json reused_live_addresses)" = 0 ]
	"$B/tprof" summary --json t.trace >s.json
	[ "$(jget s.json frees)" = 40000 ]
	[ "$(jget s.json in_use_blocks)" = 1 ]
	[ "$(jget s.json still_reachable_blocks)" = 1 ]
	# the peak RSS, as report gives it
	for k in peak_rss_bytes peak_rss_time_ns rss_samples peak_rss_includes_tprof; do
		[ "$(jget s.json $k)" = "$(jget r.json $k)" ]
	done
	[ "$(jget s.json peak_rss_bytes)" -gt 0 ]
	command -v valgrind >/dev/null || return 0
	# valgrind counts the same; its bytes allocated are 16 fewer: the worker thread's loader TLS
	# (docs/FORMAT.md)
	valgrind "$B/progs/pingpong" 2>vg.log
	grep -q "total heap usage: 40,001 allocs, 40,000 frees" vg.log
	grep -q "in use at exit: 48 bytes in 1 blocks" vg.log
	grep -q "still reachable: 48 bytes in 1 blocks" vg.log
	[ "$(jget r.json bytes_allocated)" = $(($(sed -n 's/.*frees, \([0-9,]*\) bytes allocated.*/\1/p' vg.log | tr -d ,) + 16)) ]
}

@test "heap_pvalloc: pvalloc counted with its requested size" {
	traced "$B/progs/heap_pvalloc"
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json allocations)" = 2 ]
	[ "$(jget r.json bytes_allocated)" = 5010 ]
	[ "$(jget r.json leaked_bytes)" = 5000 ]
	[ "$(jget r.json calls.pvalloc)" = 2 ]
}

@test "text report names the program and the totals" {
	traced "$B/progs/heap_known" >/dev/null
	run "$B/tprof" report t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"heap_known"* ]]
	[[ "$output" == *"21 allocs, 19 frees, 1,003,278 bytes allocated"* ]]
	[[ "$output" == *"in use at exit 1,200 bytes in 2 blocks"* ]]
}

@test "_exit, _Exit, quick_exit: equal valgrind told not to run __libc_freeres, which _exit skips" {
	# memcheck runs __libc_freeres at any end, which also writes stdio buffers _exit leaves
	for how in _ E q; do
		VG_OPTS=--run-libc-freeres=no run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- \
			"$B/progs/freeres_exit" "$how"
		echo "$how: $output"
		[ "$status" -eq 0 ]
		[ "$(jget "$WORK/.vg/t.json" leaked_blocks)" -gt 100 ] # the C library's state kept, as bare
		! grep -q "never written" "$WORK/.vg/tp.out"
	done
}

@test "real program: ls -la /usr/bin equals valgrind" {
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- ls -la /usr/bin
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "real program: sort of a large file equals valgrind" {
	seq 1 200000 | sort -R --random-source=/dev/zero >in.txt
	# one sort thread: a thread costs 16 more bytes of loader TLS under tprof (docs/FORMAT.md)
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- sort --parallel=1 in.txt
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "real program: gzip -c equals valgrind" {
	seq 1 100000 >in.txt
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- gzip -c in.txt
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "real program: sqlite3 equals valgrind" {
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- sqlite3 :memory: \
		"create table t(a,b); insert into t select value, value*2 from generate_series(1,2000); select count(*), sum(b) from t;"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "real program: python3 equals valgrind" {
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- /usr/bin/python3 -c \
		"import json, os; print(len(json.dumps(sorted(os.listdir('/usr/bin')))), sum(i*i for i in range(100000)))"
	echo "$output"
	[ "$status" -eq 0 ]
}

# Programs whose shared libraries free memory in their destructors: the recorder drains the rings
# after the process is gone, so those frees (and __libc_freeres, run after every destructor) count.
@test "real programs whose libraries free in their destructors equal valgrind: curl, cmake" {
	seq 1 20000 >in.txt
	if command -v curl >/dev/null; then
		run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- curl -s "file://$WORK/in.txt"
		echo "$output"
		[ "$status" -eq 0 ]
	fi
	if command -v cmake >/dev/null; then
		run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- cmake -E sha256sum in.txt
		echo "$output"
		[ "$status" -eq 0 ]
	fi
}

# Both runs start from one environment of the same length (tests/lib/vgenv.sh): these programs
# copy theirs into blocks (perl's %ENV, zsh's parameters), so a longer LD_PRELOAD alone would
# show as bytes allocated.
@test "real programs that copy their environment equal valgrind: perl, zsh" {
	export PERL_HASH_SEED=0
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- /usr/bin/perl -e 'my %h = %ENV; print scalar(keys %h), "\n"'
	echo "$output"
	[ "$status" -eq 0 ]
	if command -v zsh >/dev/null; then
		run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- "$(command -v zsh)" -f -c 'typeset -A a; a=(x 1 y 2); echo ${#a}'
		echo "$output"
		[ "$status" -eq 0 ]
	fi
}

# bash sizes a table by the number of the descriptors it opens: the comparison must give the
# program the same descriptors in both runs (valgrind's --log-file would hold descriptor 3)
@test "real program: bash opening and closing descriptors equals valgrind" {
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- /bin/bash -c 'echo x </dev/null; exec 3>&-; exec 4</dev/null; echo y >&4'
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "C++ new/delete are seen through malloc/free and equal valgrind" {
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- "$B/progs/cxx_new"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"'leaked_bytes': 40, 'leaked_blocks': 1"* ]]
}

@test "the decode thread gives the same analyses as none (TPROF_DECODE_THREAD=0), and the same errors" {
	traced "$B/progs/storm" 3 100000 >/dev/null
	for cmd in "report --json" "leaks --json" "peak --json" "allocs --json" "summary --json" dump; do
		TPROF_DECODE_THREAD=0 "$B/tprof" $cmd t.trace >one.json
		"$B/tprof" $cmd t.trace >two.json # the pipeline when the CPUs are near each other
		cmp one.json two.json
		TPROF_DECODE_PIPE=1 "$B/tprof" $cmd t.trace >two.json # the pipeline: it decodes the records too
		cmp one.json two.json
		TPROF_DECODE_PIPE=0 "$B/tprof" $cmd t.trace >two.json # it only decompresses
		cmp one.json two.json
		# both threads on one CPU: each side waits for the other, and the merge gives up on
		# blocks the decode thread is on
		for pipe in 0 1; do
			TPROF_DECODE_PIPE=$pipe TPROF_DECODE_THREAD=1 taskset -c 0 "$B/tprof" $cmd t.trace >three.json
			cmp one.json three.json
		done
	done
	# the pipeline only between CPUs near each other: one CPU for both threads is as far as it gets
	TPROF_DEBUG=1 "$B/tprof" report t.trace 2>err.txt >/dev/null
	grep -Eq "^tprof: a cache line's round trip to the decode thread's CPU: ([0-9]+ ns|no answer in time); it (decodes the events too|only decompresses blocks)$" err.txt
	TPROF_DEBUG=1 TPROF_DECODE_THREAD=1 taskset -c 0 "$B/tprof" report t.trace 2>err.txt >/dev/null
	grep -q "; it only decompresses blocks$" err.txt
	TPROF_DEBUG=1 TPROF_DECODE_PIPE=1 "$B/tprof" report t.trace 2>err.txt >/dev/null
	! grep -q "round trip" err.txt # not asked
	size=$(stat -c %s t.trace)
	head -c $((size * 2 / 3)) t.trace >cut.trace
	TPROF_DECODE_THREAD=0 run "$B/tprof" report cut.trace
	a=$output
	run "$B/tprof" report cut.trace
	[ "$output" = "$a" ]
	TPROF_DECODE_PIPE=0 run "$B/tprof" report cut.trace
	[ "$output" = "$a" ]
	# a compressed block that does not decompress, with a good checksum: the same message, with
	# the merge decoding the block itself or the decode thread failing on it
	PYTHONPATH="$TPROF_ROOT/tests/integration" $PY - t.trace bad.trace <<'PY'
import struct, sys
from rss_blocks import blocks, block
d = open(sys.argv[1], "rb").read()
z = [(off, p) for off, t, p in blocks(d) if t == 11]
assert len(z) >= 4, len(z)
off, p = z[len(z) // 2]
p = bytearray(p)
m = p.index(b"\x28\xb5\x2f\xfd")  # the zstd frame's magic number
p[m] ^= 0xFF
n = struct.unpack_from("<I", d, off + 1)[0]
open(sys.argv[2], "wb").write(d[:off] + block(11, bytes(p)) + d[off + 9 + n:])
PY
	TPROF_DECODE_THREAD=0 run "$B/tprof" report bad.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"does not decompress"* ]]
	a=$output
	for pipe in 0 1; do
		TPROF_DECODE_PIPE=$pipe run "$B/tprof" report bad.trace
		[ "$status" -eq 2 ]
		[ "$output" = "$a" ]
	done
}

@test "the decode thread and none give the same events and the same error on 40 traces corrupted inside their compressed blocks" {
	command -v zstd >/dev/null || skip "no zstd"
	traced "$B/progs/storm" 3 60000 >/dev/null
	errors=0
	for seed in $(seq 40); do
		PYTHONPATH="$TPROF_ROOT/tests/integration" $PY "$TPROF_ROOT/tests/integration/zflip.py" t.trace c.trace "$seed"
		for cmd in dump summary; do
			rc=0
			TPROF_DECODE_THREAD=0 "$B/tprof" $cmd c.trace >one.txt 2>&1 || rc=$?
			for pipe in 1 0; do
				rc2=0
				TPROF_DECODE_PIPE=$pipe TPROF_DECODE_THREAD=1 "$B/tprof" $cmd c.trace >two.txt 2>&1 || rc2=$?
				[ "$rc2" = "$rc" ] || { echo "seed $seed $cmd pipe $pipe: status $rc2, $rc on one thread"; false; }
				cmp one.txt two.txt || { echo "seed $seed $cmd pipe $pipe"; false; }
			done
		done
		[ "$rc" = 0 ] || errors=$((errors + 1))
	done
	# most flips make a record the decoder rejects; some only change a size or an address
	[ "$errors" -ge 10 ]
}

@test "the reader's memory does not follow the length of the trace: pages read are given back though a thread's next block is the file's last" {
	# storm's main thread makes its last heap calls after the worker's pairs: the merge begins that
	# block (at the end of the file) long before the others, and the pages behind the merge must
	# still go as it passes them. The same program 10 times longer: the same memory, give or take
	# a few MiB (the payloads decompressed ahead are bounded, and the walk that opens the file
	# gives back its pages every few MiB too)
	ldd "$B/tprof" | grep -q libasan && skip "ASan's quarantine keeps what is freed"
	for pairs in 2000000 20000000; do
		rm -f t.trace
		traced "$B/progs/storm" 1 $pairs >/dev/null
		size=$(stat -c %s t.trace)
		for cmd in report summary; do
			/usr/bin/time -o m.txt -f %M "$B/tprof" $cmd t.trace >/dev/null
			echo "$cmd: $(tail -1 m.txt) KiB for a $size-byte trace"
			echo "$cmd $(tail -1 m.txt)" >>"rss.$pairs"
		done
	done
	[ "$size" -gt $((32 << 20)) ] # 10 times the first: the test means something
	while read -r cmd small; do
		big=$(awk -v c="$cmd" '$1 == c {print $2}' rss.20000000)
		[ "$big" -lt $((small + 8192)) ]
	done <rss.2000000
}

@test "the reader's memory with a thousand threads alive at once: each holds a small chunk of events" {
	# every thread's block is being decoded while the merge takes the others' events: 2048-event
	# chunks for each were 142 MB here
	ldd "$B/tprof" | grep -q libasan && skip "ASan's quarantine keeps what is freed"
	traced "$B/progs/threads_at_once" 1000 2000 >/dev/null
	for cmd in report summary; do
		/usr/bin/time -o m.txt -f %M "$B/tprof" $cmd t.trace >/dev/null
		echo "$cmd: $(tail -1 m.txt) KiB"
		[ "$(tail -1 m.txt)" -lt $((96 << 10)) ]
	done
}

@test "the heap replay over runs of events agrees with the one event at a time (peak, its time, leaks)" {
	# report replays runs of one thread at a time (tprof_trace_next_run); peak replays event by
	# event. Interleaved threads make short runs; more than 16 threads take the merge's heap.
	for args in "3 100000" "20 5000"; do
		rm -f t.trace
		traced "$B/progs/storm" $args >/dev/null
		"$B/tprof" report --json t.trace >r.json
		"$B/tprof" peak --json t.trace >p.json
		$PY - r.json p.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))
for k in ("peak_bytes", "peak_blocks", "peak_time_ns"):
    assert r[k] == p[k], (k, r[k], p[k])
assert r["allocations"] == r["frees"] and r["leaked_bytes"] == 0, r
assert r["threads"] >= 4, r["threads"]
PY
	done
	rm -f t.trace
	traced "$B/progs/heap_known" >/dev/null
	"$B/tprof" report --json t.trace >r.json
	"$B/tprof" peak --json t.trace >p.json
	"$B/tprof" leaks --kinds all --json --no-default-suppressions t.trace >l.json
	$PY - r.json p.json l.json <<'PY'
import json, sys
r, p, l = (json.load(open(f)) for f in sys.argv[1:4])
for k in ("peak_bytes", "peak_blocks", "peak_time_ns"):
    assert r[k] == p[k], (k, r[k], p[k])
assert r["calls"]["realloc"] > 0, r["calls"]
assert (r["leaked_bytes"], r["leaked_blocks"]) == (l["leaked_bytes"], l["leaked_blocks"]), (r, l)
PY
}

@test "a progress line on a terminal for a large trace (TPROF_PROGRESS=1: any), erased before the output; none in a pipe, with --json or --csv" {
	traced "$B/progs/storm" 1 20000 >/dev/null
	run script -qec "TPROF_PROGRESS=1 '$B/tprof' report t.trace" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\rtprof: reading t.trace: '*' MB ('*'%), '*$'\r\033[K''tprof report: t.trace'* ]]
	# erased: nothing of it after the output starts
	[[ "${output#*tprof report: }" != *"tprof: reading"* ]]
	# below 100 MB by default, and never with --json or --csv, in a pipe, or with TPROF_PROGRESS=0
	run script -qec "'$B/tprof' report t.trace" /dev/null
	[[ "$output" != *"tprof: reading"* ]]
	run script -qec "TPROF_PROGRESS=1 '$B/tprof' report --json t.trace" /dev/null
	[[ "$output" != *"tprof: reading"* ]]
	run script -qec "TPROF_PROGRESS=1 '$B/tprof' allocs --csv t.trace" /dev/null
	[[ "$output" != *"tprof: reading"* ]]
	run script -qec "TPROF_PROGRESS=0 '$B/tprof' report t.trace" /dev/null
	[[ "$output" != *"tprof: reading"* ]]
	TPROF_PROGRESS=1 "$B/tprof" report t.trace 2>err.txt >/dev/null
	[ ! -s err.txt ]
}

@test "a program named with a terminal escape and a line break: tprof's lines show them escaped" {
	n=$(printf 'm\033]0;OWNED\007\033[2J\nfake')
	cp "$B/progs/heap_known" "./$n"
	unset TPROF_QUIET TPROF_OUTPUT
	LD_PRELOAD="$B/libtprof.so" "./$n" 2>err.txt >/dev/null
	f=$(ls tprof.m*.trace)
	settled "$f"
	cat -v err.txt
	[ "$(wc -l <err.txt)" -eq 1 ]
	! grep -q "$(printf '\033')" err.txt
	grep -qF 'tprof: m\x1b]0;OWNED\x07\x1b[2J\nfake (pid ' err.txt
	rm "./$n" # the analyzer's warning names the module it cannot open
	"$B/tprof" leaks "$f" 2>err2.txt >/dev/null
	cat -v err2.txt
	grep -qF 'm\x1b]0;OWNED\x07\x1b[2J\nfake cannot be opened' err2.txt
	! grep -q "$(printf '\033')" err2.txt
}
