#!/usr/bin/env bats
# Leak kinds: the reachability scan at the process's end sorts every block in use into memcheck's
# definitely, indirectly, possibly lost and still reachable. Checked against valgrind memcheck on
# the same commands (tests/lib/vgleaks.sh: per kind and leaking function, and the LEAK SUMMARY):
# planted C cases for every kind and every root (a global, TLS, another thread's stack and TLS, a
# register of a running thread, an interior pointer, a lost block's interior) ended each way, the
# C++ heuristics, and real programs; then the options that use the kinds, and the cases where no
# scan can run, which must say so rather than guess.

load helpers

vg_equal() { # vg_equal COMMAND ARGS...: tprof's kinds equal valgrind's
	run "$TPROF_ROOT/tests/lib/vgleaks.sh" "$B" "$WORK" -- "$@"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "planted C leaks of every kind equal valgrind's, per kind and function, whichever way the process ends" {
	for how in exit return _exit quick_exit; do
		vg_equal "$B/progs/leak_kinds" "$how"
		# every kind is there, so the comparison compares something
		for kind in definite indirect possible reachable; do
			[[ "$output" == *"LEAK SUMMARY $kind "*[1-9]*"/"* ]]
		done
	done
}

# a handler that returned left its locals on the alternate signal stack: memory of the program's
# (a static array, a heap block, a mapping), but a dead frame all the same, which memcheck does not
# scan; a handler that exits there is a live frame
@test "alternate signal stacks: a returned handler's frame holds no block, an exiting one's does; kinds equal valgrind's" {
	for how in dead heap mmap exit; do
		vg_equal "$B/progs/leak_altstack" "$how"
		if [ "$how" = exit ]; then
			[[ "$output" == *"LEAK SUMMARY reachable "*"405/1"* ]]
		else
			[[ "$output" == *"LEAK SUMMARY definite "*"40"[137]"/1"* ]]
		fi
	done
}

# exit called by the C library itself, deep in the program's call chain: the frames above exit's
# caller are the program's (argp_parse holds the only pointer to its parser's storage)
@test "exit called from inside the C library (argp --help, --usage, a bad argument): kinds equal valgrind's" {
	for arg in --help --usage extra; do
		vg_equal "$B/progs/argp_help" "$arg"
		[[ "$output" =~ "LEAK SUMMARY reachable"\ +[1-9][0-9]*/1\ +[1-9][0-9]*/1 ]]
	done
}

# A mapping of untouched gigabytes (an AddressSanitizer shadow, a reserved arena) was read page by
# page at exit: 14 s for 4 GiB, minutes for 64. Pages neither present nor swapped out are skipped.
@test "a sparse mapping of 4 and 64 GiB: the pointer in its one touched page is found, kinds equal valgrind's, no long wait" {
	vg_equal "$B/progs/sparse_map" 4
	[[ "$output" =~ "LEAK SUMMARY reachable"\ +48/1\ +48/1 ]]
	[[ "$output" =~ "LEAK SUMMARY definite"\ +80/1\ +80/1 ]]
	# not a time limit: a guard against the scan reading 64 GiB of zeros (minutes)
	run timeout -s KILL 60 env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/sparse_map" 64
	[ "$status" -eq 0 ]
	settled t.trace
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	[ "$(jget l.json summary.reachable.bytes)" = 48 ]
	[ "$(jget l.json summary.definite.bytes)" = 80 ]
}

# The pages skipped are those neither present nor swapped out, asked of the kernel by category;
# a page write-protected through userfaultfd is present but not "written", and holds the pointer.
@test "a pointer in a page write-protected through userfaultfd keeps its block still reachable" {
	run env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/uffd_wp"
	[ "$status" -ne 2 ] || skip "userfaultfd is not available here"
	[ "$status" -eq 0 ]
	settled t.trace
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	[ "$(jget l.json summary.reachable.bytes)" -ge 48 ]
	[ "$(jget l.json summary.definite.bytes)" = 0 ]
}

@test "the roots: a global, this thread's TLS, another thread's stack and TLS, a running thread's register" {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/leak_kinds"
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	$PY - <<'PY'
import json
d = json.load(open("l.json"))
assert d["classified"], d["not_classified"]
got = {}
for r in d["leaks"]:
    fn = next((f["function"] for f in r["stack"] if (f["function"] or "").startswith("plant_")), None)
    got.setdefault((r["kind"], fn), [0, 0])
    got[(r["kind"], fn)][0] += r["bytes"]
    got[(r["kind"], fn)][1] += r["blocks"]
want = {("reachable", "plant_global"): [4096, 1], ("reachable", "plant_tls"): [72, 1],
        ("reachable", "plant_stack"): [200, 1], ("reachable", "plant_thread_tls"): [88, 1],
        ("reachable", "plant_register"): [120, 1], ("definite", "plant_definite"): [200, 2],
        ("definite", "plant_list"): [24, 1], ("indirect", "plant_list"): [72, 3],
        ("definite", "plant_lost_interior"): [32, 1], ("indirect", "plant_lost_interior"): [48, 1],
        ("possible", "plant_possible"): [104, 2]}
for k, v in want.items():
    assert got.get(k) == v, (k, got.get(k), v)
lists = [r for r in d["leaks"] if r["kind"] == "definite" and r["indirect_bytes"]]
assert sorted(r["indirect_bytes"] for r in lists) == [48, 72], lists
assert d["scan"]["threads_stopped"] == 4 and d["scan"]["threads_not_stopped"] == 0, d["scan"]
PY
}

@test "blocks handed between threads, addresses taken again: the scan's blocks in use are the replay's" {
	# the recorder's table of blocks in use learns each block of a thread from that thread's EVENTS
	# blocks, which it writes in any order between threads; a free that its thread's history pairs
	# with an allocation of its own may free another thread's block at that address (pingpong.c)
	vg_equal "$B/progs/pingpong"
	[[ "$output" =~ "LEAK SUMMARY reachable"\ +48/1\ +48/1 ]]
}

@test "C++: new[], a second base class and a length prefix are reachable through memcheck's heuristics" {
	vg_equal "$B/progs/leak_kinds_cxx"
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/leak_kinds_cxx"
	"$B/tprof" leaks --json t.trace >l.json
	$PY - <<'PY'
import json
d = json.load(open("l.json"))
h = d["reachable_via_heuristic"]
assert h == {"length64": {"bytes": 48, "blocks": 1}, "newarray": {"bytes": 48, "blocks": 1},
             "multipleinheritance": {"bytes": 40, "blocks": 1}}, h
PY
	run "$B/tprof" leaks t.trace
	[[ "$output" == *"of which reachable via heuristic:"*"newarray: 48 bytes in 1 block"* ]]
}

@test "real programs: the LEAK SUMMARY and in use at exit equal valgrind's" {
	echo hello >f.txt
	export VGLEAKS_TOTALS=1 PERL_HASH_SEED=0
	vg_equal /usr/bin/python3 -c 'import json; print(json.dumps([1]))'
	vg_equal /usr/bin/perl -e 'print(1)'
	vg_equal /usr/bin/sqlite3 :memory: 'create table t(a); insert into t values (1); select * from t;'
	vg_equal /usr/bin/curl -s "file://$WORK/f.txt"
	vg_equal /usr/bin/sort f.txt
	vg_equal /bin/ls /
	vg_equal /usr/bin/gzip -c f.txt
	vg_equal /usr/bin/make --version
	# a C++ driver with definitely lost blocks, NSS, a gconv module, a library's digest, 97 MB in use
	vg_equal /usr/bin/g++ --version
	vg_equal /usr/bin/getent passwd root
	vg_equal /usr/bin/iconv -f latin1 -t utf8 f.txt
	vg_equal /usr/bin/openssl dgst -sha256 f.txt
	vg_equal /usr/bin/xz -T1 -c f.txt
}

@test "tprof leaks lists the lost kinds by default, sums up the reachable, and --kinds picks" {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/leak_kinds"
	run "$B/tprof" leaks t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"96 (24 direct, 72 indirect) bytes in 1 block is definitely lost"* ]]
	[[ "$output" == *"still reachable: 4,576 bytes in 5 blocks (not listed: --kinds reachable)"* ]]
	[[ "$output" != *"is still reachable: record"* ]]
	# lost first: the first record is definitely lost, the last of --kinds all still reachable
	"$B/tprof" leaks --kinds all --json t.trace >all.json
	"$B/tprof" leaks --kinds possible,reachable --json t.trace >pr.json
	$PY - <<'PY'
import json
a = json.load(open("all.json"))
kinds = [r["kind"] for r in a["leaks"]]
order = {"definite": 0, "indirect": 1, "possible": 2, "reachable": 3}
assert kinds == sorted(kinds, key=order.get), kinds
assert set(kinds) == set(order), kinds
p = json.load(open("pr.json"))
assert {r["kind"] for r in p["leaks"]} == {"possible", "reachable"}
assert p["summary"] == a["summary"]
PY
	for k in nonsense definite, ,definite definite,,reachable; do
		run "$B/tprof" leaks --kinds "$k" t.trace
		[ "$status" -eq 1 ]
		[[ "$output" == *"--kinds takes"* ]]
	done
}

@test "--error-exitcode: the status when leaks of the chosen kinds are left, 0 when none" {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/leak_kinds"
	run "$B/tprof" leaks --error-exitcode 9 t.trace
	[ "$status" -eq 9 ]
	# nothing but reachable blocks: python3 leaks nothing
	TPROF_OUTPUT=py.trace LD_PRELOAD="$B/libtprof.so" /usr/bin/python3 -c 'print(1)' >/dev/null
	run "$B/tprof" leaks --error-exitcode 9 py.trace
	[ "$status" -eq 0 ]
	run "$B/tprof" leaks --error-exitcode 9 --kinds reachable py.trace
	[ "$status" -eq 9 ]
	# suppressed leaks do not count
	printf 'leak:plant_*\nleak_site:/ld-linux\n' >all.supp
	run "$B/tprof" leaks --error-exitcode 9 --suppressions all.supp t.trace
	echo "$output"
	[ "$status" -eq 0 ]
	run "$B/tprof" leaks --error-exitcode 0 t.trace
	[ "$status" -eq 1 ]
	# a suppressions file that cannot be read is bad input (2), with the reason
	run "$B/tprof" leaks --suppressions . t.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *": Is a directory"* ]]
	# no trace, no leak check: the program's own status, not the option's
	run env TPROF_OUTPUT=/nonexistent/dir/x "$B/tprof" record --error-exitcode 9 -- "$B/progs/leak_kinds"
	[ "$status" -eq 0 ]
	[[ "$output" == *"no leak check"* ]]
	# tprof record: the program's own status unless leaks are left
	run "$B/tprof" record -o r.trace --error-exitcode 7 "$B/progs/leak_kinds"
	[ "$status" -eq 7 ]
	[[ "$output" == *"LEAK SUMMARY: definitely lost 256 bytes in 4 blocks"* ]]
	run "$B/tprof" record -o r2.trace --error-exitcode 7 /usr/bin/python3 -c 'import sys; sys.exit(3)'
	[ "$status" -eq 3 ]
}

@test "no scan, no guess: a killed process and TPROF_LEAKSCAN=0 are said to be unclassified" {
	# (under tprof record, which keeps the zombie until its recorder has read how it died)
	run "$B/tprof" record -o k.trace /usr/bin/python3 -c 'import os, signal; x = [1] * 100; os.kill(os.getpid(), signal.SIGKILL)'
	[ "$status" -eq 137 ]
	"$B/tprof" leaks --json k.trace >k.json
	$PY -c '
import json; d = json.load(open("k.json"))
assert d["classified"] is False and "killed by a signal" in d["not_classified"], d["not_classified"]
assert all(r["kind"] == "unclassified" for r in d["leaks"]) and d["leaks"]'
	run "$B/tprof" leaks k.trace
	[[ "$output" == *"Not classified: the process was killed by a signal"* ]]
	run "$B/tprof" report k.trace
	[[ "$output" == *"not classified: the process was killed by a signal"* ]]
	# --error-exitcode counts every block in use when there is no scan to trust
	run "$B/tprof" leaks --error-exitcode 5 k.trace
	[ "$status" -eq 5 ]
	TPROF_LEAKSCAN=0 TPROF_OUTPUT=n.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/leak_kinds"
	"$B/tprof" report --json n.trace >n.json
	[ "$(jget n.json leaks_classified)" = false ]
	[[ "$(jget n.json not_classified)" == *"TPROF_LEAKSCAN=0"* ]]
}

# The C library's daemon() ends the parent by the exit system call from inside itself, where no
# hook sees it: tprof's daemon ends it through the _exit hook, so that the parent has its scan, with
# memcheck's kinds (memcheck sees the system call and scans too); the child is left as the C
# library's daemon leaves it
@test "the parent of daemon(): ended by _exit, its leak kinds equal memcheck's; the child as bare" {
	traced "$B/progs/daemon_parent"
	# the daemon child returns from main at once: its trace is the next one
	for _ in $(seq 100); do [ -e t.trace.1 ] && break; sleep 0.1; done
	settled t.trace.1
	"$B/tprof" report --json t.trace >p.json
	[ "$(jget p.json end)" = _exit ]
	[ "$(jget p.json exit_status)" = 0 ]
	[ "$(jget p.json leaks_classified)" = true ]
	# memcheck on the parent alone (the child's log is silenced)
	valgrind --leak-check=full --child-silent-after-fork=yes --log-file=vg.log "$B/progs/daemon_parent"
	grep -q "still reachable: 50 bytes in 1 blocks" vg.log
	grep -q "definitely lost: 0 bytes in 0 blocks" vg.log
	[ "$(jget p.json still_reachable_bytes)" = 50 ]
	[ "$(jget p.json still_reachable_blocks)" = 1 ]
	[ "$(jget p.json definitely_lost_bytes)" = 0 ]
	# what the child is left with: its session, working directory and descriptors, as bare
	for args in "0 0" "1 0" "0 1"; do
		rm -f bare.txt traced.txt t.trace*
		"$B/progs/daemon_parent" $args "$PWD/bare.txt" </dev/zero >out.txt 2>err.txt
		for _ in $(seq 100); do [ -s bare.txt ] && break; sleep 0.1; done
		TPROF_QUIET=1 TPROF_OUTPUT="$PWD/t.trace" LD_PRELOAD="$B/libtprof.so" \
			"$B/progs/daemon_parent" $args "$PWD/traced.txt" </dev/zero >out.txt 2>err.txt
		for _ in $(seq 100); do [ -s traced.txt ] && break; sleep 0.1; done
		sleep 0.2
		cat bare.txt
		diff bare.txt traced.txt
		grep -q "^daemon 0" bare.txt
	done
}

@test "the report and its CSV carry the totals of each kind" {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/leak_kinds"
	run "$B/tprof" report t.trace
	[[ "$output" == *"definitely lost 256 bytes in 4 blocks"* ]]
	[[ "$output" == *"still reachable 4,576 bytes in 5 blocks"* ]]
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json definitely_lost_bytes)" = 256 ]
	[ "$(jget r.json indirectly_lost_blocks)" = 4 ]
	[ "$(jget r.json leaks_classified)" = true ]
}

@test "the scan changes nothing the program sees: output, status, and a program that blocks every signal" {
	# a thread that blocks every signal the C library lets it block still stops for the scan
	run "$B/progs/leak_kinds"
	bare_status=$status bare_out=$output
	run env TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/leak_kinds"
	[ "$status" -eq "$bare_status" ]
	[ "$output" = "$bare_out" ]
	run env TPROF_QUIET=1 TPROF_OUTPUT=b.trace LD_PRELOAD="$B/libtprof.so" /usr/bin/python3 -c '
import signal, threading, time
def worker():
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    time.sleep(30)
threading.Thread(target=worker, daemon=True).start()
time.sleep(0.2)
print("done")'
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	"$B/tprof" leaks --json b.trace >b.json
	$PY -c '
import json; d = json.load(open("b.json"))
assert d["classified"], d["not_classified"]
assert d["scan"]["threads_stopped"] == 2 and d["scan"]["threads_not_stopped"] == 0, d["scan"]'
}

@test "LEAKS blocks: used only when they agree with the replay; malformed ones are corrupt at their offset" {
	MK="$TPROF_ROOT/tests/integration/mktrace.py"
	# five calls leave one block of 80 bytes at 0x10400
	$PY "$MK" ok.trace --version 5 --events 5 --leaks 0x10400:80:3:0:16 --leaks-summary 0,0,1,80 >/dev/null
	"$B/tprof" leaks --json ok.trace >ok.json
	[ "$(jget ok.json classified)" = true ]
	[ "$(jget ok.json summary.definite.bytes)" = 80 ]
	$PY -c 'import json; d = json.load(open("ok.json")); assert d["leaks"][0]["indirect_bytes"] == 16, d'
	# a scan that saw another heap, or names a block the replay does not end with: not classified
	$PY "$MK" n1.trace --version 5 --events 5 --leaks-summary 0,0,2,96 >/dev/null
	run "$B/tprof" leaks n1.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"Not classified: the scan saw 2 blocks (96 bytes) in use, the trace replays to 1 (80 bytes)"* ]]
	$PY "$MK" n2.trace --version 5 --events 5 --leaks 0x10000:80:3 --leaks-summary 0,0,1,80 >/dev/null
	run "$B/tprof" leaks n2.trace
	[[ "$output" == *"Not classified: the scan names a block at 0x10000 of 80 bytes that the trace does not replay to"* ]]
	$PY "$MK" n3.trace --version 5 --events 5 --leaks-summary 1,1,0,0 >/dev/null
	run "$B/tprof" leaks n3.trace
	[[ "$output" == *"Not classified: the recorder may not read the process's memory (Operation not permitted)"* ]]
	# corrupt
	check() { # WHAT ARGS...: the trace made with ARGS is corrupt with WHAT in the message
		local what=$1
		shift
		$PY "$MK" bad.trace --version 5 --events 5 "$@" >/dev/null
		run "$B/tprof" leaks bad.trace
		echo "$output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"bad.trace: byte "*": corrupt: $what"* ]]
	}
	check "LEAKS entries not in increasing address order" --leaks 0x10400:80:3,0x10000:16:3
	check "LEAKS entry for a block reachable without a heuristic" --leaks 0x10400:80:0
	check "LEAKS entry with an unknown heuristic" --leaks 0x10400:80:0:7
	check "LEAKS summary whose count differs" --leaks 0x10400:80:3 --leaks-summary 0,0,1,80,2
	check "LEAKS summary with an unknown status" --leaks-summary 9,0,1,80
	check "LEAKS block after the scan's summary" --leaks-summary 0,0,1,80 --leaks-raw 000100
	check "LEAKS block of an unknown part" --leaks-raw 07
	check "LEAKS block with a bad entry count" --leaks-raw 0001
	check "malformed block of type 15" --leaks-raw 00010102
}

@test "a process its recorder may not read (made non-dumpable, as nobody) is not classified, and says why" {
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	[ "$(id -u)" = 0 ] || skip "needs root to become nobody"
	chmod 777 "$WORK"
	# the build directory may sit under one that is closed to others: nobody runs copies
	mkdir -m 755 bin && cp "$B/tprof" "$B/libtprof.so" "$B/tprof-recorder" bin/
	as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME="$WORK" "$@"; }
	run as_nobody "$WORK/bin/tprof" record -o nd.trace /usr/bin/python3 -c 'import ctypes; x = [1] * 10; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); print("ok")'
	[ "$status" -eq 0 ]
	run "$B/tprof" leaks nd.trace
	[[ "$output" == *"Not classified: the recorder may not read the process's memory (Permission denied)"* ]]
	# the same program left dumpable is classified
	run as_nobody "$WORK/bin/tprof" record -o d.trace /usr/bin/python3 -c 'x = [1] * 10; print("ok")'
	[ "$status" -eq 0 ]
	"$B/tprof" leaks --json d.trace >d.json
	[ "$(jget d.json classified)" = true ]
}

@test "a main thread that called pthread_exit: the scan reads the process through the thread that exits" {
	# the zombie main thread has no memory: reading through the process's pid would find none
	TPROF_OUTPUT=m.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/main_exit" pthread_exit 100 1
	"$B/tprof" leaks --kinds all --json --no-default-suppressions m.trace >m.json
	$PY - <<'PY'
import json
d = json.load(open("m.json"))
assert d["classified"], d["not_classified"]
kinds = {}
for r in d["leaks"]:
    site = next((f["function"] for f in r["stack"] if f["module"] == "main_exit"), None)
    if site in ("main", "worker") and r["bytes"] in (777, 4321):
        kinds[site] = (r["kind"], r["bytes"])
assert kinds == {"main": ("definite", 777), "worker": ("reachable", 4321)}, kinds
PY
}

@test "threads that go on allocating after the scan: what they free is left out, what they allocate has no kind" {
	# a daemon thread allocates and frees all the time: after the scan it goes on until the process ends
	for i in 1 2 3; do
		rm -f b.trace
		TPROF_QUIET=1 TPROF_OUTPUT=b.trace LD_PRELOAD="$B/libtprof.so" /usr/bin/python3 -c '
import threading, time
def churn():
    keep = []
    while True:
        keep.append(bytearray(64)); keep = keep[-50:]
threading.Thread(target=churn, daemon=True).start()
time.sleep(0.2)'
		"$B/tprof" leaks --kinds all --json b.trace >b.json
		$PY - b.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["classified"], d["not_classified"] # the scan and the replay agree on the blocks at the end
late = [r for r in d["leaks"] if r["kind"] == "unclassified"]
assert sum(r["blocks"] for r in late) == d["summary"]["unclassified"]["blocks"], d["summary"]
PY
	done
}

@test "a thread that blocks every signal does not stop the scan: its stack is scanned whole, the program ends as bare" {
	run "$B/progs/scan_blocked"
	[ "$status" -eq 3 ] && [ "$output" = done ]
	run env TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/scan_blocked"
	[ "$status" -eq 3 ] && [ "$output" = done ]
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	$PY - <<'PY'
import json
d = json.load(open("l.json"))
assert d["classified"], d["not_classified"]
assert d["scan"]["threads_not_stopped"] == 1, d["scan"]
held = [r for r in d["leaks"] if r["bytes"] == 300]
assert held and held[0]["kind"] == "reachable", held # from its stack, scanned whole
PY
	run "$B/tprof" leaks t.trace
	[[ "$output" == *"1 thread did not stop for the scan: its whole stack counted as roots"* ]]
}
