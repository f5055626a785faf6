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
	# each of the 4 threads' loader TLS vector (DTV) has one more 16-byte slot: libtprof.so's
	# (docs/FORMAT.md)
	[ "$(jget r.json bytes_allocated)" = "$(($3 + 4 * 16))" ]
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

@test "threads joined just before exit, one still freeing a large file in its exit: __libc_freeres runs, nothing in use at exit, as valgrind says" {
	TPROF_OUTPUT=j.%p.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/join_exit" 8 slow >/dev/null
	valgrind --trace-children=yes "$B/progs/join_exit" 1 slow 2>vg.log >/dev/null
	# memcheck's child: the last HEAP SUMMARY with allocations
	vg=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs, \([0-9,]*\) frees.*/\1 \2/p' vg.log | tr -d , | grep -v "^0 " | tail -1)
	[ -n "$vg" ]
	n=0
	for f in j.*.trace; do
		settled "$f"
		report "$f" r.json
		[ "$(jget r.json allocations)" != 0 ] || continue # the parent: no heap call
		n=$((n + 1))
		[ "$(jget r.json allocations) $(jget r.json frees)" = "$vg" ]
		[ "$(jget r.json leaked_blocks)" = 0 ]
		[ "$(jget r.json complete)" = true ]
	done
	[ "$n" = 8 ]
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

# Deaths by signal: a bare run's trace has every event, and says the process ended without an exit
# call unless the recorder caught the signal from its zombie before the parent reaped it; under
# tprof record, the program's parent, the signal is always known.
signal_end() { # TRACE_JSON SIGNAL
	[ "$(jget "$1" end)" = vanished ] || [ "$(jget "$1" signal)" = "$2" ]
}

@test "abort(): the program still dies of SIGABRT and the trace reads" {
	run traced "$B/progs/lifecycle" abort
	[ "$status" -eq 134 ]
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	signal_end r.json 6
	[ "$(jget r.json leaked_bytes)" = 100000 ]
	run "$B/tprof" record -o rec.trace -- "$B/progs/lifecycle" abort
	[ "$status" -eq 134 ]
	report rec.trace r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json signal)" = 6 ]
	[ "$(jget r.json leaked_bytes)" = 100000 ]
}

@test "segfault: the program still dies of SIGSEGV and the trace reads" {
	run traced "$B/progs/lifecycle" segv
	[ "$status" -eq 139 ]
	report t.trace r.json
	signal_end r.json 11
	[ "$(jget r.json allocations)" = 100 ]
	run "$B/tprof" record -o rec.trace -- "$B/progs/lifecycle" segv
	[ "$status" -eq 139 ]
	report rec.trace r.json
	[ "$(jget r.json signal)" = 11 ]
	[ "$(jget r.json allocations)" = 100 ]
}

@test "SIGKILL: nothing is lost, the events are in shared memory the moment they are made" {
	run traced "$B/progs/lifecycle" kill
	[ "$status" -eq 137 ]
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	signal_end r.json 9
	[ "$(jget r.json allocations)" = 100 ]
	[ "$(jget r.json leaked_bytes)" = 100000 ]
	run "$B/tprof" record -o rec.trace -- "$B/progs/lifecycle" kill
	[ "$status" -eq 137 ]
	report rec.trace r.json
	[ "$(jget r.json signal)" = 9 ]
	[ "$(jget r.json allocations)" = 100 ]
	run "$B/tprof" report rec.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"SIGKILL"* ]]
}

@test "children killed and reaped at once by their parent: each trace says the signal" {
	# the recorder read the zombie, found it reaped meanwhile, and did not ask the pidfd again:
	# about one child in six ended "without an exit call"
	# each sleep is killed once it is sleep (a kill before its exec, on a loaded machine, ended a
	# bash image instead), and has had a moment to register
	"$B/tprof" record -o 'k.%p.trace' -- bash -c \
		'for i in $(seq 20); do sleep 30 & p=$!
		 for k in {1..500}; do read -r c </proc/$p/comm; [ "$c" = sleep ] && break; sleep 0.01; done
		 sleep 0.02; kill $p; wait $p; done' 2>err.txt || true
	n=0
	for f in k.*.trace*; do
		report "$f" r.json
		# the other sleeps (0.02 s) exit 0
		[ "$(jget r.json program)" = sleep ] && [ "$(jget r.json exit_status)" != 0 ] || continue
		n=$((n + 1))
		[ "$(jget r.json signal)" = 15 ] || { cat err.txt; false; }
	done
	[ "$n" = 20 ]
}

@test "an image with no /proc (a chroot, a mount over it) is named by its exec'd path and argv[0]; __libc_freeres still runs" {
	[ "$(id -u)" = 0 ] || skip "not root"
	unshare -m true 2>/dev/null || skip "no mount namespaces here"
	"$B/tprof" record -o np.trace -- unshare -m sh -c \
		'mount -t tmpfs none /proc && exec "$0" a b' "$B/progs/heap_known" >/dev/null 2>err.txt
	last=$(ls np.trace* | sort -V | tail -1)
	report "$last" r.json
	cat err.txt
	[ "$(jget r.json program)" = heap_known ]
	[ "$(jget r.json exe)" = "$B/progs/heap_known" ]
	[ "$(jget r.json complete)" = true ]
	# __libc_freeres runs at its exit as with /proc (the thread count it needs comes from the C
	# library then): echo's locale and stdio blocks are freed, as in a run with /proc
	"$B/tprof" record -o e1.trace -- /bin/echo hi >/dev/null
	"$B/tprof" record -o e2.trace -- unshare -m sh -c 'mount -t tmpfs none /proc && exec "$0" hi' /bin/echo >/dev/null
	report e1.trace e1.json
	report "$(ls e2.trace* | sort -V | tail -1)" e2.json
	[ "$(jget e2.json program)" = echo ]
	[ "$(jget e1.json leaked_blocks)" = 0 ]
	[ "$(jget e2.json leaked_blocks)" = 0 ]
	[ "$(jget e2.json frees)" = "$(jget e1.json frees)" ]
}

@test "exec: both images are traced" {
	TPROF_OUTPUT=e.%p.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/lifecycle" exec "$B/progs/heap_known" >/dev/null
	[ -f e.*.trace ] || ls e.*
	first=$(ls e.*.trace | head -1)
	second=$(ls e.*.trace.1)
	report "$first" a.json
	report "$second" b.json
	[ "$(jget a.json program)" = lifecycle ]
	[ "$(jget a.json end)" = exec ]
	[ "$(jget a.json leaked_bytes)" = 100000 ]
	[ "$(jget b.json program)" = heap_known ]
	[ "$(jget b.json pid)" = "$(jget a.json pid)" ]
	[ "$(jget b.json complete)" = true ]
}

@test "a new pid namespace (unshare -p -f): its first process and its children use the recorder outside, every trace ends" {
	# the namespace's first process sees no parent: without the recorder's name it would start a
	# recorder inside the namespace, which the kernel kills when that process ends
	unshare -p -f true 2>/dev/null || skip "unshare -p needs privileges here"
	for proc in "" --mount-proc; do
		rm -f n.*
		cmd='echo first $$; sh -c "echo child \$\$"; env | grep -c "^TPROF_RECORDER="; true'
		bare=$(unshare -p -f $proc sh -c "$cmd")
		out=$(TPROF_OUTPUT="$WORK/n.%p.trace" LD_PRELOAD="$B/libtprof.so" unshare -p -f $proc sh -c "$cmd")
		# the one difference: the variable naming the recorder, in the namespace's environment
		[ "$out" = "$(printf 'first 1\nchild 2\n1')" ] || { echo "$out"; false; }
		[ "$bare" = "$(printf 'first 1\nchild 2\n0')" ]
		settled n.*
		report n.1.trace r.json
		[ "$(jget r.json program)" = sh ]
		report n.2.trace r.json
		[ "$(jget r.json program)" = sh ]
		for f in n.*.trace; do # unshare, both shells, env and grep
			report "$f" r.json
			[ "$(jget r.json complete)" = true ] || { "$B/tprof" report "$f"; false; }
		done
		[ "$(ls n.*.trace | wc -l)" = 5 ]
	done
}

@test "setns into a pid namespace, then system(): the shell and its children find the recorder through the /proc outside" {
	# the shell's parent is outside the namespace (pid 0 to it) and posix_spawn passes no exec
	# hook: once, the shell was not traced and said so, and its child started a recorder inside
	# the namespace, a zombie of its init (here sleep, which reaps nothing) once it ended
	unshare -p -f --mount-proc -m true 2>/dev/null || skip "unshare -p needs privileges here"
	unshare -p -f --mount-proc -m sleep 60 </dev/null >/dev/null 2>&1 3>&- &
	holder=$!
	init=""
	for _ in $(seq 100); do
		init=$(pgrep -P "$holder" -x sleep || true)
		[ -n "$init" ] && break
		sleep 0.05
	done
	[ -n "$init" ]
	cmd='echo in $$; ls / >/dev/null; sh -c "echo child \$\$"'
	bare=$("$B/progs/setns_system" "/proc/$init/ns/pid" "$cmd" 2>&1)
	out=$(TPROF_OUTPUT="$WORK/s.%p.trace" LD_PRELOAD="$B/libtprof.so" "$B/progs/setns_system" "/proc/$init/ns/pid" "$cmd" 2>&1)
	kids=$(ps -o stat=,comm= --ppid "$init" || true)
	kill "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
	[ "${bare%% *}" = in ]
	# the same lines but for the pids, which move on from one run to the next in the namespace
	[ "$(echo "$out" | sed 's/[0-9]*$/N/')" = "$(echo "$bare" | sed 's/[0-9]*$/N/')" ] || { echo "$out"; false; }
	[ -z "$kids" ] || { echo "the namespace's init has children: $kids"; false; }
	settled s.*
	progs=""
	for f in s.*.trace; do
		report "$f" r.json
		[ "$(jget r.json complete)" = true ]
		progs="$progs $(jget r.json program)"
	done
	[[ "$progs" == *setns_system* && "$progs" == *" sh"* && "$progs" == *" ls"* ]] || { echo "$progs"; false; }
}

@test "a sandbox whose first process forks the program (bwrap --unshare-pid, with its own /proc): no recorder inside, every trace outside" {
	# bwrap's first process in the namespace does not exec: its fork child does, whose parent is
	# in the namespace. Once, that image found no traced parent to walk to and started a recorder
	# inside the sandbox, which ps listed and whose traces landed in the sandbox's directory
	command -v bwrap >/dev/null || skip "no bwrap"
	bwrap --dev-bind / / --unshare-pid --proc /proc true 2>/dev/null || skip "bwrap cannot make a pid namespace here"
	mkdir in
	cmd='cd "$1"; sh -c "ps -e -o pid=,comm="; ls'
	bare=$(bwrap --dev-bind / / --unshare-pid --proc /proc sh -c "$cmd" sh "$WORK/in")
	[ "$bare" = "$(printf '      1 bwrap\n      2 sh\n      3 sh\n      4 ps')" ] || { echo "$bare"; false; }
	out=$(TPROF_OUTPUT="$WORK/b.%p.trace" LD_PRELOAD="$B/libtprof.so" \
		bwrap --dev-bind / / --unshare-pid --proc /proc sh -c "$cmd" sh "$WORK/in")
	[ "$out" = "$bare" ] || { echo "$out"; false; }
	settled b.*
	[ -z "$(ls in)" ]
	n=0
	for f in b.*.trace; do # bwrap outside, its first process, sh, sh -c (then ps), ls
		report "$f" r.json
		[ "$(jget r.json complete)" = true ] || { "$B/tprof" report "$f"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "a new network namespace (unshare -n, with and without -p -f): the processes inside reach the recorder outside at its path" {
	# an abstract socket name belongs to a network namespace: inside a new one, the recorder is
	# reached at its path (/dev/shm/.tprof-UID/NAME). Without it, a new pid namespace would get a
	# recorder of its own (its pids would not be those of a bare run) that the kernel kills when
	# the namespace's first process ends (the traces would have no end)
	unshare -n -p -f true 2>/dev/null || skip "unshare -n -p needs privileges here"
	cmd='echo first $$; sh -c "echo child \$\$"; true'
	bare=$(unshare -n -p -f sh -c "$cmd")
	[ "$bare" = "$(printf 'first 1\nchild 2')" ]
	for flags in "-n -p -f" "-n -p -f --mount-proc" "-n"; do
		rm -f n.*
		out=$(TPROF_OUTPUT="$WORK/n.%p.trace" LD_PRELOAD="$B/libtprof.so" unshare $flags sh -c "$cmd")
		if [ "$flags" = -n ]; then
			[ "$(echo "$out" | wc -l)" = 2 ]
		else
			[ "$out" = "$bare" ] || { echo "$flags: $out"; false; }
		fi
		settled n.*
		upid=
		for f in n.*.trace*; do # unshare and both shells
			report "$f" r.json
			[ "$(jget r.json complete)" = true ] || { "$B/tprof" report "$f"; false; }
			[ "$(jget r.json program)" != unshare ] || upid=$(jget r.json pid)
		done
		[ "$(ls n.*.trace* | wc -l)" = 3 ]
		# the recorder unshare started (outside) took its socket file away when it ended
		[ -n "$upid" ]
		sleep 0.5 # the recorder lingers a moment for late processes
		! ls /dev/shm/.tprof-"$(id -u)"/tprof."$(id -u)"."$upid".* 2>/dev/null
	done
}

@test "a thread renamed after its first events carries its last name: gone before the end, or not" {
	traced "$B/progs/lifecycle" rename
	report t.trace r.json
	# the worker named itself "first-name", allocated, took a hostile name and ended long before
	# the trace did; main took its name at the very end. Names are bytes: the JSON shows the
	# byte that is not UTF-8 as U+FFFD, and the newline that ends the worker's name is its own.
	$PY - <<'PY'
import json
names = sorted(t["name"] for t in json.load(open("r.json"))["thread_list"])
print(names)
assert names == ["main-renamed", 'w\n"\ufffd`x`\\\n'], names
PY
	run "$B/tprof" report t.trace
	[[ "$output" == *"main-renamed"* ]]
	[[ "$output" != *"first-name"* ]]
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
	# a name ending in / is a directory's: the default names, in it
	mkdir od
	TPROF_OUTPUT="$WORK/od/" LD_PRELOAD="$B/libtprof.so" sh -c '"$0" >/dev/null' "$B/progs/heap_known"
	"$B/tprof" record -o od/ -- "$B/progs/heap_known" >/dev/null
	# and -o naming an existing directory without its /: in it too, not od.1 beside it
	"$B/tprof" record -o od -- "$B/progs/heap_known" >/dev/null
	ls od
	[ ! -e od.1 ]
	for t in od/*; do settled "$t"; done
	[ "$(ls od/tprof.heap_known.*.trace | wc -l)" = 3 ]
	for t in od/*; do report "$t" r.json; [ "$(jget r.json complete)" = true ]; done
}

@test "every trace goes to the recorder's directory, wherever its process runs: /proc, a removed directory, another user's" {
	unset TPROF_QUIET
	run "$B/tprof" record -- sh -c 'cd /proc && exec "$0"' "$B/progs/heap_known"
	[ "$status" -eq 0 ]
	[[ "$output" == *"heap_known (pid "*"trace written to tprof.heap_known."*".trace"* ]]
	t=$(ls tprof.heap_known.*.trace)
	report "$t" r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json allocations)" -gt 0 ]
	# a working tree is left as it was: git sees no file of tprof's
	run "$B/tprof" record -o 'g.%p.trace' -- sh -c 'mkdir w && cd w && git init -q && echo x >f &&
		git add f && git -c user.name=a -c user.email=a@b commit -qm c && git status --porcelain'
	[ "$status" -eq 0 ]
	[ -z "$(grep -v '^tprof: ' <<<"$output")" ]
	[ "$(ls g.*.trace | wc -l)" -ge 3 ]
	# with LD_PRELOAD alone: the recorder's directory is the one the first traced process started it in
	mkdir gone
	run env LD_PRELOAD="$B/libtprof.so" TPROF_OUTPUT=d.trace sh -c 'cd gone && LD_PRELOAD= rmdir ../gone && exec "$0"' "$B/progs/heap_known"
	[ "$status" -eq 0 ]
	[[ "$output" == *"heap_known (pid "*"trace written to d.trace.1"* ]] # d.trace: sh's
	report d.trace.1 r.json
	[ "$(jget r.json complete)" = true ]
	# the user's own umask
	run env LD_PRELOAD="$B/libtprof.so" TPROF_OUTPUT=u.trace sh -c 'umask 077 && exec "$0"' "$B/progs/heap_known"
	[ "$(stat -c %a u.trace.1)" = 600 ]
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
		mkdir -p kit/progs nb
		cp "$B/libtprof.so" "$B/tprof-recorder" "$B/tprof" kit/
		cp "$B/progs/heap_known" kit/progs/
		chmod -R a+rX kit
		chmod 777 "$WORK" nb
		# a user who may not write the working directory: the trace is beside the recorder
		run setpriv --reuid=nobody --regid=nogroup --clear-groups "$WORK/kit/tprof" record -o n.trace -- sh -c 'cd / && exec "$0"' "$WORK/kit/progs/heap_known"
		[ "$status" -eq 0 ]
		[[ "$output" == *"trace written to n.trace"* ]]
		[ "$(stat -c %U n.trace)" = nobody ]
		# a process that drops to another user under a root recorder creates its own, as that user
		# (the kit's tprof preloads the kit's library, which that user can read: the build tree
		# may be under a private directory)
		run "$WORK/kit/tprof" record -o p.trace -- setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c 'cd "$0" && exec "$1"' "$WORK/nb" "$WORK/kit/progs/heap_known"
		[ "$status" -eq 0 ]
		[ "$(stat -c %U p.trace)" = root ] # setpriv's, before it dropped
		[ "$(stat -c %U nb/p.trace)" = nobody ]
		report nb/p.trace r.json
		[ "$(jget r.json complete)" = true ]
	fi
}

@test "one line on stderr says where the trace went; TPROF_QUIET silences it" {
	unset TPROF_QUIET
	run env TPROF_OUTPUT=x.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known"
	[[ "$output" == *"trace written to x.trace"* ]]
	run env TPROF_QUIET=1 TPROF_OUTPUT=y.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known"
	[ "$output" = done ]
	# a child whose writer finishes after its parent's (2 M events against a few hundred) still
	# says where its trace went: the recorder let go of stderr too early one run in four
	for i in 1 2 3 4 5 6; do
		rm -f s.*.trace*
		run env TPROF_OUTPUT='s.%p.trace' LD_PRELOAD="$B/libtprof.so" sh -c '"$0" 2 1000000 >/dev/null; exit 0' "$B/progs/storm"
		[ "$(grep -c 'trace written' <<<"$output")" -eq 2 ]
	done
}

@test "fork storms of allocating children: the recorder outlives them all, every child is traced" {
	# each child registers, allocates, frees and ends at once: the recorder's server and writers
	# race with processes that are gone a few hundred microseconds after they registered
	for r in $(seq 16); do
		mkdir "s$r"
		TPROF_OUTPUT="s$r/%p.trace" LD_PRELOAD="$B/libtprof.so" "$B/bench/forkstorm" 100 alloc >/dev/null 2>err.txt
		[ ! -s err.txt ] || { cat err.txt; false; }
	done
	for r in $(seq 16); do
		settled s"$r"/*.trace
		[ "$(ls "s$r" | wc -l)" = 101 ]
	done
	for t in $(ls s1/*.trace | sed -n '1p;$p') $(ls s16/*.trace | sed -n '1p;$p'); do
		report "$t" r.json
		[ "$(jget r.json complete)" = true ]
		[ "$(jget r.json allocations)" -ge 1 ]
	done
}

@test "fork children that end before the recorder reads their registration: each trace says how (SIGKILL, raw exit, _exit)" {
	# a fork child sends its registration and goes on without waiting for the answer; the recorder
	# may read it once the child is gone and reaped, and learns its end through the socket's pidfd
	mkdir k
	TPROF_QUIET=1 TPROF_OUTPUT=k/%p.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/fork_ends" 30 >out.txt 2>err.txt
	[ "$(cat out.txt)" = "30 of 30 as expected" ]
	[ ! -s err.txt ] || { cat err.txt; false; }
	# the parent made no heap call (no trace); the files of the children it made exist once it has ended
	[ "$(ls k | wc -l)" = 30 ]
	settled k/*.trace
	for t in k/*.trace; do
		report "$t" r.json
		[ "$(jget r.json complete)" = true ]
		[ "$(jget r.json allocations)" = 1 ]
		i=$(($(jget r.json bytes_allocated) - 100))
		case $((i % 3)) in
		0) [ "$(jget r.json end)" = "fatal signal" ] && [ "$(jget r.json signal)" = 9 ] ;;
		1) [ "$(jget r.json end)" = _exit ] && [ "$(jget r.json exit_status)" = 7 ] ;;
		2) [ "$(jget r.json end)" = _exit ] && [ "$(jget r.json exit_status)" = 3 ] ;;
		esac
	done
}

@test "a recorder out of descriptors refuses fork children that did not wait: they run on, drop their events, and it says so" {
	# the recorder inherits a hard limit of 24 descriptors (three per traced process): of 12
	# children alive at once some cannot be taken; their registration had no answer to wait for,
	# so the recorder marks their memory and each drops its events instead of waiting for it
	mkdir h
	prlimit --nofile=24:24 env TPROF_QUIET=1 TPROF_OUTPUT=h/%p.trace LD_PRELOAD="$B/libtprof.so" \
		"$B/progs/fork_hold" 12 100000 >out.txt 2>err.txt
	[ "$(cat out.txt)" = "12 of 12 ended well" ]
	refused=$(grep -c "the recorder could not take pid .* (too few descriptors left" err.txt)
	[ "$refused" -ge 1 ]
	[ "$(grep -vc "the recorder could not take pid" err.txt)" = 0 ]
	settled h/*.trace
	# the parent's trace and those of the children it took, all complete
	[ "$(ls h | wc -l)" = $((13 - refused)) ]
	for t in h/*.trace; do
		report "$t" r.json
		[ "$(jget r.json complete)" = true ]
	done
}

@test "a fork storm whose children all name one file: each gets its own suffix, past a thousand too" {
	# TPROF_OUTPUT without %p: the parent's trace takes the name, child k the suffix .k; the
	# recorder looks for a free suffix after the last it gave, not from .1 each time
	mkdir one
	TPROF_QUIET=1 TPROF_OUTPUT=one/s.trace LD_PRELOAD="$B/libtprof.so" "$B/bench/forkstorm" 1100 alloc >/dev/null 2>err.txt
	[ ! -s err.txt ] || { cat err.txt; false; }
	settled one/*
	[ "$(ls one | wc -l)" = 1101 ]
	[ -f one/s.trace ] && [ -f one/s.trace.1 ] && [ -f one/s.trace.1100 ]
	report one/s.trace.1100 r.json
	[ "$(jget r.json complete)" = true ]
}

@test "tprof record: runs the program, returns its status, says where the trace is" {
	unset TPROF_QUIET
	run "$B/tprof" record -o r.trace -- sh -c 'exit 3'
	[ "$status" -eq 3 ]
	[[ "$output" == *"status 3"*"trace written to r.trace"* ]]
	[ -f r.trace ]
	# -o and TPROF_OUTPUT treat an existing file alike: never clobbered, a suffix instead
	run "$B/tprof" record -o r.trace -- sh -c 'exit 0'
	[ "$status" -eq 0 ]
	[[ "$output" == *"trace written to r.trace.1"* ]]
	[ -f r.trace.1 ]
	run env TPROF_QUIET=1 LD_PRELOAD=/nonexistent-but-kept.so "$B/tprof" record -o p.trace -- sh -c 'echo "$LD_PRELOAD"'
	[[ "$output" == *"libtprof.so:/nonexistent-but-kept.so"* ]]
	run env TPROF_QUIET=1 "$B/tprof" record -- "$B/progs/heap_known"
	[ "$status" -eq 0 ]
	ls tprof.heap_known.*.trace
	# every process of the tree gets its trace, and each is named
	run "$B/tprof" record -o 'tree.%p.trace' -- sh -c '"$0" >/dev/null; "$0" >/dev/null; /bin/true' "$B/progs/heap_known"
	[ "$status" -eq 0 ]
	[ "$(grep -c 'heap_known (pid' <<<"$output")" -eq 2 ]
	[ "$(grep -c 'sh (pid' <<<"$output")" -eq 1 ]
	[ "$(ls tree.*.trace | wc -l)" -eq 3 ] # true makes no heap call: no trace
	# a program that leaves no trace is named, with the likely reasons
	printf 'int main(void) { return 4; }\n' >s.c
	if cc -static -o static_prog s.c 2>/dev/null; then
		run "$B/tprof" record -o s.trace -- ./static_prog
		[ "$status" -eq 4 ]
		[[ "$output" == *"no trace of ./static_prog"*"statically linked"* ]]
		[ ! -e s.trace ]
	fi
	# a program that cannot be run: the status env and the shells give (127 not found, 126 not
	# runnable), and only the reason
	local rc=0
	"$B/tprof" record -o n.trace -- ./no-such-program 2>err.txt || rc=$?
	[ "$rc" -eq 127 ]
	[ "$(cat err.txt)" = "tprof: record: cannot run ./no-such-program: No such file or directory" ]
	rc=0
	"$B/tprof" record -o n.trace -- ./s.c 2>err.txt || rc=$?
	[ "$rc" -eq 126 ]
	[ "$(cat err.txt)" = "tprof: record: cannot run ./s.c: Permission denied" ]
	rc=0 # the leak check's status is for a program that ran
	"$B/tprof" record --error-exitcode 9 -o n.trace -- ./no-such-program 2>err.txt || rc=$?
	[ "$rc" -eq 127 ]
	[ "$(cat err.txt)" = "tprof: record: cannot run ./no-such-program: No such file or directory" ]
}

@test "tprof record -o where no trace can be made: said, exit 2, and the program is not run untraced" {
	local long
	long=$(printf 'a%.0s' $(seq 1100))
	for o in nodir/x.trace nodir/ "$long" /etc/passwd/x.trace 'y%%/x.trace' 'a%b/x.trace'; do
		run "$B/tprof" record -o "$o" -- sh -c 'echo ran'
		echo "$o: $status $output"
		[ "$status" -eq 2 ]
		[[ "$output" == "tprof: record: -o: "* ]]
		[[ "$output" != *ran* ]]
	done
	# a directory per process (%p in it) is each process's to say; a file in . is fine, and so is a
	# directory named with %% once it exists (as '%'), and a long directory whose traces' names fit
	run "$B/tprof" record -o ok.trace -- sh -c 'echo ran'
	[ "$status" -eq 0 ]
	[[ "$output" == *ran* ]]
	mkdir 'y%'
	run "$B/tprof" record -o 'y%%/x.trace' -- sh -c 'echo ran'
	[ "$status" -eq 0 ]
	[ -e 'y%/x.trace' ]
	local d
	d=$(printf 'd%.0s' $(seq 200))
	mkdir -p "$d/$d/$d/$d"
	run "$B/tprof" record -o "$d/$d/$d/$d/" -- sh -c 'echo ran'
	echo "$output"
	[ "$status" -eq 0 ]
	ls "$d/$d/$d/$d"/tprof.sh.*.trace
	# another user, where it can run tprof here (a clone in a 0700 directory it cannot reach)
	if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 &&
		su nobody -s /bin/sh -c "cd '$PWD' && '$B/tprof' --version" >/dev/null 2>&1; then
		mkdir ro && chmod 555 ro
		run su nobody -s /bin/sh -c "'$B/tprof' record -o ro/x.trace -- sh -c 'echo ran'"
		echo "$output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"cannot make traces in ro/: Permission denied"* ]]
	fi
}

@test "tprof record started with stdin, stdout or stderr closed: the program runs as bare, the trace is written, record ends" {
	for how in '<&-' '>&-' '2>&-'; do
		rm -f c.trace
		st=0
		eval "timeout -s KILL 20 \"\$B/tprof\" record -o c.trace -- \"\$B/progs/heap_known\" $how" || st=$?
		echo "$how: status $st"
		[ "$st" -eq 0 ]
		report c.trace r.json
		[ "$(jget r.json complete)" = true ]
		[ "$(jget r.json allocations)" = 21 ]
	done
}

@test "a full file system: nothing of a trace can be written, no empty file is left, and the line says so" {
	[ "$(id -u)" = 0 ] || skip "not root"
	mkdir full
	mount -t tmpfs -o size=64k tmpfs full 2>/dev/null || skip "cannot mount a tmpfs here"
	dd if=/dev/zero of=full/fill bs=4k count=100 2>/dev/null || true
	run env TPROF_QUIET=0 TPROF_OUTPUT="$PWD/full/" LD_PRELOAD="$B/libtprof.so" sh -c 'ls / >/dev/null; echo ran'
	ls -la full
	left=$(ls full | grep -vc '^fill$' || true)
	for i in $(seq 50); do # the recorder keeps the directory a moment longer (README)
		umount full 2>/dev/null && break
		sleep 0.1
	done
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *ran* ]]
	[[ "$output" == *"no space left on device"* || "$output" == *"No space left on device"* ]]
	[[ "$output" == *"no trace: nothing of it could be written to"* ]]
	[ "$left" = 0 ]
}

@test "duration ends where the process ended, not where its writer finished draining it" {
	# the writer drains rings for a while after a busy program has ended, and wrote a clock pair
	# every second meanwhile, the last of which made the duration: 3.9 s for a program of 1.7 s
	s=$EPOCHREALTIME
	TPROF_OUTPUT=d.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/realloc_churn"
	e=$EPOCHREALTIME
	wall=$(( (10#${e//[!0-9]/} - 10#${s//[!0-9]/}) * 1000 ))
	report d.trace r.json
	d=$(jget r.json duration_ns)
	echo "wall $wall ns, duration $d ns"
	[ "$(jget r.json complete)" = true ]
	[ "$d" -le $((wall + 300000000)) ] # the end is seen a moment after it (it was 2 s after)
	[ "$d" -ge $((wall / 2)) ]
}

@test "tprof record passes on SIGTERM sent to it, and ends as the program ended" {
	"$B/tprof" record -o s.trace -- sleep 30 &
	rec=$!
	sleep 0.5
	kill -TERM "$rec"
	wait "$rec" && st=0 || st=$?
	[ "$st" -eq 143 ]
	report s.trace r.json
	[ "$(jget r.json signal)" = 15 ]
}

@test "tprof record killed (SIGKILL, which it cannot pass on): the program is killed too, as bare, and its trace says so" {
	for T in "" "$B/tprof record -o k.trace --"; do
		rm -f done.txt started
		TPROF_QUIET=1 $T sh -c 'echo >started; sleep 1; echo ran > done.txt' &
		p=$!
		for k in $(seq 100); do [ -e started ] && break; sleep 0.05; done # the program runs
		kill -KILL "$p"
		wait "$p" && st=0 || st=$?
		[ "$st" -eq 137 ]
		sleep 1.3
		[ ! -e done.txt ]
	done
	report k.trace r.json
	[ "$(jget r.json signal)" = 9 ]
	[ "$(jget r.json complete)" = true ]
}

@test "tprof record passes on SIGWINCH and SIGURG sent to it, and the program's SIGCONT, SIGWINCH and SIGURG to its parent" {
	for T in "" "$B/tprof record -o w.trace --"; do
		rm -f ready
		out=$(TPROF_QUIET=1 bash -c "$T"' sh -c "for s in WINCH URG USR1; do trap \"echo got \$s\" \$s; done; echo >ready; sleep 1.2" & p=$!
			for k in $(seq 100); do [ -e ready ] && break; sleep 0.05; done # its traps are set
			for s in WINCH URG USR1; do kill -$s $p; sleep 0.15; done; wait $p')
		echo "${T:-bare}: $out"
		[ "$(echo "$out" | sort | tr '\n' ' ')" = "got URG got USR1 got WINCH " ]
		out=$(TPROF_QUIET=1 bash -c 'for s in USR1 CONT WINCH URG; do trap "echo parent got $s" $s; done
			'"$T"' sh -c "for s in USR1 CONT WINCH URG; do kill -\$s \$PPID; sleep 0.1; done"; sleep 0.2')
		echo "${T:-bare}: $out"
		[ "$(echo "$out" | sort | tr '\n' ' ')" = "parent got CONT parent got URG parent got USR1 parent got WINCH " ]
	done
}

@test "tprof record as a shell's job: a program stopping itself twice is followed twice; signals sent to tprof record reach it" {
	# a shell's fg continues the whole group; the program may stop again before tprof record
	# looks, which took it for still stopped and continued it
	cat >job.py <<'PY'
import os, signal, sys, time
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.execvp(sys.argv[1], sys.argv[1:])
try:
    os.setpgid(pid, pid)
except OSError:
    pass
while True:
    p, st = os.waitpid(pid, os.WUNTRACED)
    if os.WIFSTOPPED(st):
        print("stopped", os.WSTOPSIG(st), flush=True)
        time.sleep(0.1)
        os.killpg(pid, signal.SIGCONT)
        continue
    print("status", os.waitstatus_to_exitcode(st), flush=True)
    break
PY
	for sig in 19 20; do
		bare=$(timeout 20 $PY job.py "$B/progs/self_stop" 2 $sig)
		traced=$(TPROF_QUIET=1 timeout 20 $PY job.py "$B/tprof" record -o s$sig.trace -- "$B/progs/self_stop" 2 $sig)
		echo "$bare"
		echo "$traced"
		[ "$(echo "$bare" | grep -c stopped)" -eq 2 ]
		[ "$traced" = "$bare" ]
	done
	# the program stopped and continued by someone else while tprof record stopped with it: tprof
	# record goes on too (it stayed stopped for good, its parent waiting)
	run timeout 20 sh -c 'TPROF_QUIET=1 "$0/tprof" record -o sc.trace -- sleep 1 & p=$!; sleep .3
		c=$(pgrep -P $p -x sleep); kill -STOP $c; sleep .3; kill -CONT $c; wait $p; echo rc=$?' "$B"
	[ "$status" -eq 0 ]
	[ "$output" = rc=0 ]
	# SIGUSR1 sent to tprof record goes to the program (it ended tprof record, the program ran on)
	cat >usr1.py <<'PY'
import os, signal, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:])
time.sleep(0.5)
p.send_signal(signal.SIGUSR1)
print("status", p.wait(), flush=True)
time.sleep(0.3)
PY
	run env TPROF_QUIET=1 $PY usr1.py "$B/tprof" record -o u.trace -- sh -c 'sleep 2; echo still here'
	echo "$output"
	[ "$output" = "status -10" ]
	# started with SIGCHLD ignored (auto-reaped: the program's status was lost) and SIGTERM
	# blocked (a TERM to tprof record stayed pending): as bare, the program gets both as they were
	cat >inherit.py <<'PY'
import os, signal, subprocess, sys, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
signal.signal(signal.SIGCHLD, signal.SIG_DFL)
time.sleep(0.5)
os.kill(pid, signal.SIGTERM)
print("status", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
PY
	bare=$($PY inherit.py sh -c 'trap - TERM; sleep 2; exit 3')
	traced=$(TPROF_QUIET=1 $PY inherit.py "$B/tprof" record -o i.trace -- sh -c 'trap - TERM; sleep 2; exit 3')
	echo "bare $bare traced $traced"
	[ "$traced" = "$bare" ]
}

@test "a crash's core dump is the program's: tprof record dumps none, and tprof's memory is not in it" {
	[ "$(cat /proc/sys/kernel/core_pattern)" = core ] || skip "core_pattern is not 'core'"
	if ldd "$B/tprof" | grep -q libasan; then
		skip "an ASan-built tprof (SAN=1) turns core dumps off for itself and its children"
	fi
	mkdir b t
	(cd b && ulimit -c unlimited && "$B/progs/dtor_crash" >/dev/null 2>&1) || true
	[ -s b/core ] || skip "no core dump here"
	(cd t && ulimit -c unlimited && TPROF_QUIET=1 "$B/tprof" record -o ../c.trace -- "$B/progs/dtor_crash" >/dev/null 2>&1) || true
	run file t/core
	echo "$output"
	[[ "$output" == *"from '$B/progs/dtor_crash"* ]]
	bare=$(stat -c %s b/core)
	traced=$(stat -c %s t/core)
	echo "bare $bare traced $traced"
	# the shared memory (a ring of 2 MiB and more) is left out, and so is tprof's zero-initialized
	# data (most of a MiB): what is left is a few pages of its own (40 KiB here)
	[ "$traced" -lt $((bare + 256 * 1024)) ]
}

@test "tprof record stops when its program stops itself: a parent waiting with WUNTRACED sees the stop, continues it, gets its status" {
	# the parent's view, bare and under tprof record: the same lines
	cat >parent.py <<'PY'
import os, signal, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
while True:
    p, st = os.waitpid(pid, os.WUNTRACED)
    if os.WIFSTOPPED(st):
        print("stopped", os.WSTOPSIG(st), flush=True)
        os.kill(pid, signal.SIGCONT)
        continue
    print("status", os.waitstatus_to_exitcode(st), flush=True)
    break
PY
	bare=$(timeout 20 $PY parent.py "$B/progs/self_stop")
	traced=$(timeout 20 $PY parent.py "$B/tprof" record -o s.trace -- "$B/progs/self_stop")
	[ "$bare" = "stopped 19
done
status 4" ]
	[ "$traced" = "$bare" ]
	report s.trace r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json frees)" -ge 1 ]
}

@test "tprof record ends with its program; a process the program left running is traced to its end" {
	t0=$(date +%s%N)
	run "$B/tprof" record -o 'bg.%p.trace' -- sh -c '(sleep 3; exec "$0") >/dev/null 2>&1 & exit 4' "$B/progs/heap_known"
	[ "$status" -eq 4 ]
	[ $(($(date +%s%N) - t0)) -lt 2000000000 ] # did not wait for the background job
	sleep 4
	settled bg.*
	found=0
	for f in bg.*; do # an image exec'd by a traced process: its trace is bg.PID.trace.1
		report "$f" r.json
		[ "$(jget r.json complete)" = true ]
		if [ "$(jget r.json program)" = heap_known ]; then
			[ "$(jget r.json end)" = exit ]
			[ "$(jget r.json exit_status)" = 0 ]
			found=1
		fi
	done
	[ "$found" = 1 ]
}

@test "5000 threads one after another, more than there are slots: none of their events is lost" {
	traced "$B/progs/thread_churn" 5000
	report t.trace r.json
	[ "$(jget r.json lost_events)" = 0 ]
	[ "$(jget r.json complete)" = true ]
	"$B/tprof" ops --by range --json t.trace >o.json
	$PY -c 'import json, sys; r = {x["name"]: x for x in json.load(open(sys.argv[1]))["ops"]}; assert r["work"]["calls"] == 5000, r["work"]' o.json
}

@test "threads one after another: each its own thread in the trace, and the process's memory follows the live ones" {
	# a slot is freed soon after its thread is gone, and its ring's pages given back: 3000 threads of
	# 640 heap calls each took 150 MB more resident memory than bare, every slot's ring filling up
	cat >churn.c <<'C'
#include <pthread.h>
#include <stdlib.h>
static void *w(void *a)
{
	void *p[64];
	for (int r = 0; r < 5; r++) {
		for (int i = 0; i < 64; i++)
			p[i] = malloc(16 + i);
		for (int i = 0; i < 64; i++)
			free(p[i]);
	}
	return a;
}
int main(int argc, char **argv)
{
	for (int i = 0; i < atoi(argv[1]); i++) {
		pthread_t t;
		pthread_create(&t, 0, w, 0);
		pthread_join(t, 0);
	}
	return 0;
}
C
	cc -O1 -o churn churn.c -lpthread
	bare=$( { /usr/bin/time -f %M ./churn 3000; } 2>&1 | tail -1)
	traced=$( { TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" /usr/bin/time -f %M ./churn 3000; } 2>&1 | tail -1)
	echo "max resident KiB: bare $bare, traced $traced"
	[ "$traced" -lt $((bare + 65536)) ]
	settled t.trace
	report t.trace r.json
	[ "$(jget r.json lost_events)" = 0 ]
	$PY - r.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
tl = d["thread_list"]
# every thread apart: 3000 workers and main, the workers' events alike (640 heap calls and the
# thread library's own), none counted under another's id
assert len(tl) == 3001 and len({t["tid"] for t in tl}) == 3001, len(tl)
ev = sorted(t["events"] for t in tl)[:-1]  # the main thread has the most
assert ev[0] == ev[-1] and 640 <= ev[0] < 700, (ev[0], ev[-1])
PY
}

@test "more threads alive at once than there are slots: their events are counted lost, once each" {
	# every heap call is either recorded or counted lost: recorded + lost grows with the number of
	# threads as it does while all of them have a slot (3900 and 4000 threads, and the main one)
	for n in 3900 4000 4200; do
		rm -f t.trace
		TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/threads_at_once" "$n" 20
		settled t.trace
		report t.trace "r$n.json"
	done
	[ "$(jget r3900.json lost_events)" = 0 ] && [ "$(jget r4000.json lost_events)" = 0 ]
	$PY - <<'PY'
import json
r = {n: json.load(open("r%d.json" % n)) for n in (3900, 4000, 4200)}
total = {n: r[n]["events"] + r[n]["lost_events"] for n in r}
per_thread = (total[4000] - total[3900]) // 100
assert total[4000] - total[3900] == 100 * per_thread, total
assert total[4200] == total[4000] + 200 * per_thread, (total, per_thread)
# the threads beyond the slots (4201 - 4096) lost theirs: their 20 pairs and glibc's own calls
assert 105 * 40 <= r[4200]["lost_events"] <= 200 * per_thread, (r[4200]["lost_events"], per_thread)
assert r[4200]["complete"], r[4200]
PY
}

@test "a program that closes every descriptor and reuses the numbers: its files hold only its data" {
	run env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/fd_closer" mine.txt
	[ "$status" -eq 0 ]
	[ "$(cat mine.txt)" = mine ]
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
}

@test "timestamps: events 20 ms apart are 20 ms apart in the trace; times never go back" {
	traced "$B/progs/timed"
	marks_apart t.trace 5
}

# A program whose main thread calls pthread_exit ends when its last thread exits (glibc then calls
# exit(0)); the writer must never be what keeps it alive. SIGKILL, because the writer blocks the
# other signals: a regression fails here instead of hanging the suite.
bounded() { timeout -s KILL 30 env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$@"; }

# leaks_of FILE.json FUNCTION -> "bytes blocks" of the leak record allocated in FUNCTION
leaks_of() {
	$PY -c 'import json,sys
for r in json.load(open(sys.argv[1]))["leaks"]:
    if r["stack"] and r["stack"][0]["function"] == sys.argv[2]:
        print(r["bytes"], r["blocks"])' "$1" "$2"
}

@test "main calls pthread_exit: the process ends on its own, its exit handlers run and are traced" {
	run bounded "$B/progs/main_exit" return 300 1 100
	[ "$status" -eq 0 ]
	[ "$output" = atexit ]
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json end)" = exit ]
	[ "$(jget r.json lost_events)" = 0 ]
	[ "$(jget r.json unmatched_frees)" = 0 ]
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	[ "$(leaks_of l.json worker)" = "4321 1" ]
	[ "$(leaks_of l.json main)" = "777 1" ] # and not the 555 bytes the atexit handler freed
	# the worker's 3000 pairs and the handler's 100, which ran on the last thread: valgrind's count
	valgrind "$B/progs/main_exit" return 300 1 100 2>vg.log >/dev/null
	allocs=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' vg.log | tr -d ,)
	[ "$(jget r.json allocations)" = "$allocs" ]
}

@test "main calls pthread_exit; workers that pthread_exit, detached ones, or none at all" {
	for spec in "pthread_exit 3" "detached 3" "return 0"; do
		set -- $spec
		rm -f t.trace
		run bounded "$B/progs/main_exit" "$1" 100 "$2"
		[ "$status" -eq 0 ]
		[ "$output" = atexit ]
		report t.trace r.json
		[ "$(jget r.json complete)" = true ]
		[ "$(jget r.json end)" = exit ]
		"$B/tprof" leaks --kinds all --json t.trace >l.json
		[ "$(leaks_of l.json main)" = "777 1" ]
		[ "$2" = 0 ] || [ "$(leaks_of l.json worker)" = "$(($2 * 4321)) $2" ]
	done
}

@test "after main's pthread_exit the workers go on, traced and sampled, until the last one ends" {
	run bounded "$B/progs/main_exit" return 1000 2
	[ "$status" -eq 0 ]
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json end)" = exit ]
	[ "$(jget r.json lost_events)" = 0 ]
	[ "$(jget r.json calls.malloc)" -ge 20000 ]
	[ "$(jget r.json duration_ns)" -ge 1000000000 ]
	# one RSS sample every 10 ms while only the workers run (a zombie main thread reads as 0 bytes)
	[ "$(jget r.json rss_samples)" -ge 80 ]
	"$B/tprof" dump t.trace >d.txt
	awk '$4 == "malloc" && $5 == 48 {print $3}' d.txt | sort | uniq -c >w.txt
	cat w.txt
	[ "$(wc -l <w.txt)" -eq 2 ] # both workers, all of their pairs
	awk '{ if ($1 != 10000) exit 1 }' w.txt
}

@test "exit handlers on the last thread fill its ring: drained there, nothing lost" {
	TPROF_RING_ENTRIES=64 run bounded "$B/progs/main_exit" return 20 1 20000
	[ "$status" -eq 0 ]
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json lost_events)" = 0 ]
	[ "$(jget r.json calls.malloc)" -ge 20200 ]
}

@test "a program that defines malloc itself: its trace says no heap call was intercepted, and why" {
	run traced "$B/progs/own_malloc"
	[ "$status" -eq 0 ]
	[ "$output" = "own allocator" ]
	report t.trace r.json
	[ "$(jget r.json events)" = 0 ]
	[ "$(jget r.json malloc_owner)" = "$B/progs/own_malloc" ]
	run "$B/tprof" report t.trace
	[[ "$output" == *"no heap call was intercepted"*"own_malloc"* ]]
}

# ./asan, built with AddressSanitizer: it prints "kept" and keeps its block in a global, or with an
# argument leaks it, which LeakSanitizer reports, ending the program with 1. Skips without ASan.
asan_program() {
	cat >asan.c <<'SRC'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char *keep;
int main(int argc, char **argv)
{
	char *p = malloc(64);
	strcpy(p, "kept");
	printf("%s\n", p);
	if (argc == 1)
		keep = p; /* else a leak LeakSanitizer reports, ending the program with 1 */
	return 0;
}
SRC
	gcc -fsanitize=address -g -O0 asan.c -o asan 2>/dev/null || skip "no AddressSanitizer runtime"
}

# AddressSanitizer ends a program at start unless its runtime is the first library loaded: tprof
# record puts it ahead of libtprof.so, and the program runs as it does bare (LeakSanitizer's report
# and exit status included), its heap calls unrecorded and the trace saying whose malloc it called.
@test "tprof record of a program built with AddressSanitizer: it runs as bare, and the trace says its malloc is ASan's" {
	asan_program
	for leak in "" leak; do
		run ./asan $leak
		local bare_status=$status bare_out=$output
		rm -f t.trace
		run "$B/tprof" record -o t.trace -- ./asan $leak
		echo "$output"
		[ "$status" -eq "$bare_status" ]
		[[ "$output" == *"is built with AddressSanitizer, whose runtime (libasan.so"* ]]
		[[ "$output" != *"ASan runtime does not come first"* ]]
		# the program's own output, LeakSanitizer's report included, less tprof's lines and pids
		[ "$(echo "$output" | grep -v '^tprof' | sed 's/==[0-9]*==//; s/0x[0-9a-f]*//g')" = \
		  "$(echo "$bare_out" | sed 's/==[0-9]*==//; s/0x[0-9a-f]*//g')" ]
		report t.trace r.json
		[ "$(jget r.json events)" = 0 ]
		[[ "$(jget r.json malloc_owner)" == *libasan.so* ]]
	done
}

# Under LD_PRELOAD alone (or run by a traced process) libtprof.so comes first: tprof turns ASan's
# link-order check off (__asan_default_options) and serves ASan's start-up from its bootstrap pool;
# the program runs and its heap calls are recorded, ASan's allocator behind tprof's hooks. ASan's
# reports then show tprof's malloc between ASan's and the program's frames; the rest is as bare.
@test "a program built with AddressSanitizer under LD_PRELOAD: it runs, its heap calls are recorded, LeakSanitizer still reports" {
	asan_program
	# the report without pids, addresses, frame numbers and tprof's frames
	strip() { grep -v -e '^tprof' -e 'libtprof.so' -e 'preload/' | sed 's/==[0-9]*==//; s/0x[0-9a-f]*//g; s/#[0-9]* //'; }
	for leak in "" leak; do
		run ./asan $leak
		local bare_status=$status bare_out
		bare_out=$(echo "$output" | strip)
		rm -f t.trace
		run env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" ./asan $leak
		echo "$output"
		[ "$status" -eq "$bare_status" ]
		[ "$(echo "$output" | strip)" = "$bare_out" ]
		settled t.trace
		report t.trace r.json
		[ "$(jget r.json malloc_owner)" = "" ]
		[ "$(jget r.json calls.malloc)" -ge 2 ] # the program's block and stdout's buffer
		if [ -n "$leak" ]; then
			[[ "$output" == *"LeakSanitizer: detected memory leaks"* ]]
			[ "$(jget r.json definitely_lost_bytes)" = 64 ]
		else
			[ "$(jget r.json still_reachable_bytes)" -ge 64 ]
			[ "$(jget r.json definitely_lost_bytes)" = 0 ]
		fi
	done
	# run by a traced shell
	rm -f t.trace
	run env TPROF_OUTPUT=t%p.trace LD_PRELOAD="$B/libtprof.so" sh -c './asan; echo done'
	[ "$status" -eq 0 ]
	[[ "$output" == *"kept"*"done"* ]]
}

# An executable that defines __asan_default_options shadows tprof's, which turns ASan's link-order
# check off: tprof leaves itself out of dl_iterate_phdr's list while the runtime starts instead.
@test "a program built with AddressSanitizer that sets its own default options, under LD_PRELOAD: it runs as bare, recorded" {
	cat >asanopt.c <<'SRC'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
const char *__asan_default_options(void) { return "detect_leaks=1:verify_asan_link_order=1"; }
int main(void)
{
	char *p = malloc(32);
	strcpy(p, "own options");
	printf("%s\n", p);
	free(p);
	return 0;
}
SRC
	gcc -fsanitize=address -g -O0 asanopt.c -o asanopt 2>/dev/null || skip "no AddressSanitizer runtime"
	run ./asanopt
	[ "$status" -eq 0 ]
	[ "$output" = "own options" ]
	rm -f t.trace
	run env TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" ./asanopt
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "own options" ]
	settled t.trace
	report t.trace r.json
	[ "$(jget r.json calls.malloc)" -ge 2 ] # the program's block and stdout's buffer
	[ "$(jget r.json calls.free)" -ge 1 ]
}

# An allocator preloaded after libtprof.so (as tprof record puts it) that defines C++'s operator new
# serves new without malloc, and a library loaded with RTLD_DEEPBIND calls the C library's malloc:
# neither reaches a hook. What the trace cannot have is said: on stderr (not with TPROF_QUIET=1) and
# in the trace, whose report warns.
@test "heap calls that cannot reach a hook are said: C++ new served by a preloaded allocator's, a library loaded with RTLD_DEEPBIND" {
	command -v g++ >/dev/null || skip "no g++"
	# an allocator: malloc and free of its own (the C library's under them), and C++'s new and
	# delete from an arena, never through malloc
	cat >ownnew.cpp <<'SRC'
#include <cstddef>
#include <new>
extern "C" void *__libc_malloc(std::size_t);
extern "C" void __libc_free(void *);
extern "C" void *malloc(std::size_t n) { return __libc_malloc(n); }
extern "C" void free(void *p) { __libc_free(p); }
alignas(16) static char arena[1 << 20];
static std::size_t used;
void *operator new(std::size_t n) { void *p = arena + used; used += (n + 15) & ~std::size_t(15); return p; }
void *operator new[](std::size_t n) { return operator new(n); }
void operator delete(void *) noexcept {}
void operator delete[](void *) noexcept {}
void operator delete(void *, std::size_t) noexcept {}
void operator delete[](void *, std::size_t) noexcept {}
SRC
	cat >newloop.cpp <<'SRC'
#include <cstdio>
int main() { for (int i = 0; i < 100; i++) { int *p = new int[i + 1]; p[0] = i; delete[] p; } std::puts("ok"); }
SRC
	g++ -shared -fPIC -o libownnew.so ownnew.cpp
	g++ -o newloop newloop.cpp
	rm -f t.trace
	run env TPROF_QUIET=0 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so:$WORK/libownnew.so" ./newloop
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"tprof: newloop (pid "*"): C++ operator new and delete are $WORK/libownnew.so's, which serves them without malloc: new and delete are not in the trace"* ]]
	# TPROF_QUIET=1: stderr as bare; the trace says it
	settled t.trace
	rm -f t.trace
	run env TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so:$WORK/libownnew.so" ./newloop
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
	settled t.trace
	report t.trace r.json
	[ "$(jget r.json new_unhooked)" = true ]
	[ "$(jget r.json deepbind)" = false ]
	run "$B/tprof" report t.trace
	[[ "$output" == *"C++ new and delete were an allocator's that serves them without malloc"*"TOTALS BELOW UNDERCOUNT"* ]]
	# the C++ library's own operator new calls malloc: nothing to say
	rm -f t.trace
	run env TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" ./newloop
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
	settled t.trace
	report t.trace r.json
	[ "$(jget r.json calls.malloc)" -ge 100 ]

	cat >libplain.c <<'SRC'
#include <stdlib.h>
int lib_work(void) { char *p = malloc(123); free(p); return 7; }
SRC
	cat >dl.c <<'SRC'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW | (argc > 2 ? RTLD_DEEPBIND : 0));
	int (*w)(void) = h ? (int (*)(void))dlsym(h, "lib_work") : NULL;
	printf("%d\n", w ? w() : -1);
	return 0;
}
SRC
	gcc -shared -fPIC -o libplain.so libplain.c
	gcc -o dl dl.c -ldl
	rm -f t.trace
	run env TPROF_QUIET=0 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" ./dl "$WORK/libplain.so" deep
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"tprof: dl (pid "*"): $WORK/libplain.so is loaded with RTLD_DEEPBIND: its heap calls go straight to the C library's and are not in the trace"* ]]
	settled t.trace
	rm -f t.trace
	run env TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" ./dl "$WORK/libplain.so" deep
	[ "$status" -eq 0 ]
	[ "$output" = 7 ]
	settled t.trace
	report t.trace r.json
	[ "$(jget r.json deepbind)" = true ]
	[ "$(jget r.json new_unhooked)" = false ]
	rm -f t.trace
	run env TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" ./dl "$WORK/libplain.so"
	[ "$status" -eq 0 ]
	[ "$output" = 7 ]
	settled t.trace
	report t.trace r.json
	[ "$(jget r.json deepbind)" = false ]
}

# sig_exit_run MODE STATUS IN_USE: runs tests/progs/sig_exit MODE under libtprof.so: the status, a
# complete trace, nothing lost, and in use at exit IN_USE bytes, or 64 more (the block of a malloc
# the signal interrupted, which never returned)
sig_exit_run() {
	rm -f t.trace
	run env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/sig_exit" "$1"
	echo "$1: status $status $output"
	[ "$status" -eq "$2" ]
	settled t.trace
	report t.trace r.json
	echo "complete $(jget r.json complete) lost $(jget r.json lost_events) in use $(jget r.json leaked_bytes)"
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json lost_events)" = 0 ]
	local in_use
	in_use=$(jget r.json leaked_bytes)
	[ "$in_use" -eq "$3" ] || [ "$in_use" -eq $(($3 + 64)) ]
}

# A signal handler that ends the process mostly interrupts one of tprof's hooks in a busy loop: the
# heap calls on the way out (the exit handler's frees) were deferred behind the interrupted call,
# which never goes on, so they were lost and the trace incomplete. Now they are recorded: the trace is
# complete, and in use at exit is the program's list for _exit and nothing (but perhaps the block of
# the malloc the signal interrupted, which never returned) for exit and quick_exit.
@test "a signal handler's exit, quick_exit or _exit inside a busy heap loop: complete, nothing lost, the exit handlers' frees recorded" {
	for run in 1 2 3; do
		sig_exit_run exit 3 0
		[ "$(jget r.json leaks_classified)" = true ]
		sig_exit_run quick_exit 6 0
		[ "$(jget r.json leaks_classified)" = true ]
		sig_exit_run _exit 5 111200 # the list: 100 blocks of 1,112 bytes
	done
}

# A handler that leaves a hook by siglongjmp while the hook held its stack walk or ring write: every
# later heap call of the thread was deferred behind a call that never went on, and lost: the trace
# said nothing was in use at exit. The next hook sees the hook's frame word written over (or its
# frame below the caller's) and ends what it held.
@test "a signal handler's siglongjmp out of a busy heap loop: the heap calls after it are recorded, in use at exit exact" {
	for run in 1 2 3; do
		sig_exit_run longjmp 0 11120 # 10 blocks of 1,112 bytes, as memcheck says
	done
}

# A library's constructor runs before tprof's (the preloaded library is initialized after the
# program's own libraries): an exit there, after a heap call, was taken for an _exit, since tprof's
# destructor, which notes exit's status after the exit handlers, never runs then.
@test "exit in a library constructor, before tprof's constructor: the trace says exit and its status" {
	cat >ctorexit.c <<'SRC'
#include <stdlib.h>
__attribute__((constructor)) static void early(void)
{
	void *volatile p = malloc(100);
	(void)p;
	exit(7);
}
void ctorexit_linked(void) {}
SRC
	cat >ctorexitmain.c <<'SRC'
#include <stdio.h>
void ctorexit_linked(void);
int main(void) { ctorexit_linked(); puts("main"); return 0; }
SRC
	gcc -g -O0 -fPIC -shared ctorexit.c -o libctorexit.so
	gcc -g -O0 ctorexitmain.c -o ctorexitmain -L. -lctorexit -Wl,-rpath,"$PWD"
	rm -f t.trace
	run env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" ./ctorexitmain
	[ "$status" -eq 7 ]
	[[ "$output" != *main* ]]
	settled t.trace
	report t.trace r.json
	[ "$(jget r.json end)" = exit ]
	[ "$(jget r.json exit_status)" = 7 ]
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json calls.malloc)" = 1 ]
}

# In a process with ASan, the heap calls before tprof's constructor (those of the libraries whose
# constructors run first) come from tprof's bootstrap pool, unrecorded: a constructor that took more
# than the pool's 256 KiB got NULL and crashed; and a block the program keeps only through such a
# block was reported lost, since the pool lies in tprof's own data, which the leak scan skips.
@test "ASan under LD_PRELOAD: a library constructor's 300 KiB before tprof's constructor, and a block kept only through it" {
	cat >ctorlib.c <<'SRC'
#include <stdlib.h>
#include <string.h>
void **table;
__attribute__((constructor)) static void init(void)
{
	table = malloc(64 * sizeof(void *));
	table[0] = malloc(300 * 1024);
	memset(table[0], 1, 300 * 1024);
}
void keep(void *p) { table[1] = p; }
SRC
	cat >ctormain.c <<'SRC'
#include <stdio.h>
#include <stdlib.h>
void keep(void *p);
int main(int argc, char **argv)
{
	void *p = malloc(1000);
	if (argc == 1)
		keep(p); /* reachable through the library's table alone */
	else
		p = NULL; /* lost: LeakSanitizer reports it and ends the program with 1 */
	puts("ok");
	return 0;
}
SRC
	gcc -fsanitize=address -g -O0 -fPIC -shared ctorlib.c -o libctor.so 2>/dev/null || skip "no AddressSanitizer runtime"
	gcc -fsanitize=address -g -O0 ctormain.c -o ctormain -L. -lctor -Wl,-rpath,"$PWD"
	for leak in "" leak; do
		# (with a leak LeakSanitizer ends the program at once: stdout, a pipe, is not flushed)
		local says=ok
		[ -z "$leak" ] || says="LeakSanitizer: detected memory leaks"
		run ./ctormain $leak
		local bare_status=$status
		[[ "$output" == *"$says"* ]]
		rm -f t.trace
		run env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" ./ctormain $leak
		echo "$output"
		[ "$status" -eq "$bare_status" ]
		[[ "$output" == *"$says"* ]]
		settled t.trace
		report t.trace r.json
		if [ -n "$leak" ]; then
			[ "$(jget r.json definitely_lost_bytes)" = 1000 ]
		else
			[ "$(jget r.json definitely_lost_bytes)" = 0 ]
			[ "$(jget r.json still_reachable_bytes)" -ge 1000 ]
		fi
	done
}

# ThreadSanitizer intercepts the C library too, and crashed in tprof's first hook while it
# initialized; then it took tprof's lock-free stack table for a race (tprof's atomics are not
# instrumented; its memcmp and memcpy were intercepted) and ended the program with status 66.
@test "a threaded program built with ThreadSanitizer under LD_PRELOAD: it runs as bare, no race reported, its heap calls recorded" {
	cat >tsan.c <<'SRC'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static void *work(void *a)
{
	for (int i = 0; i < 2000; i++) {
		void *volatile p = malloc(i % 200 + 1);
		free(p);
	}
	return a;
}
int main(void)
{
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, work, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	puts("done");
	return 0;
}
SRC
	gcc -fsanitize=thread -g -O1 -pthread tsan.c -o tsan 2>/dev/null || skip "no ThreadSanitizer runtime"
	run ./tsan
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	for k in 1 2 3; do
		rm -f t.trace
		run env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" ./tsan
		echo "$output"
		[ "$status" -eq 0 ]
		[ "$(echo "$output" | grep -v '^tprof')" = done ]
		settled t.trace
		report t.trace r.json
		[ "$(jget r.json calls.malloc)" -ge 6000 ]
		[ "$(jget r.json complete)" = true ]
	done
}

# The first heap call of these is glibc's, inside atexit or at_quick_exit with the handlers' lock
# held (tprof registered its own handlers then, and waited for that lock for good); or the program
# leaves a dlopen's error message pending, which tprof's lookups at exit freed unseen (two blocks
# "definitely lost" where memcheck has none in use).
@test "32 atexit or 33 at_quick_exit handlers before any heap call, a dlerror() message left pending: no hang, totals equal valgrind's" {
	for mode in atexit quick dlerror; do
		rm -f t.trace
		run timeout -s KILL 20 env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/exit_tables" "$mode"
		[ "$status" -eq 0 ]
		settled t.trace
		report t.trace r.json
		echo "$mode: $(cat r.json)"
		[ "$(jget r.json complete)" = true ]
		[ "$(jget r.json end)" = exit ]
		[ "$(jget r.json unmatched_frees)" = 0 ]
		[ "$(jget r.json definitely_lost_blocks)" = 0 ]
		run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- "$B/progs/exit_tables" "$mode"
		echo "$mode: $output"
		[ "$status" -eq 0 ]
	done
}

# The status is noted once every destructor has run, before __libc_freeres and the scan: registered
# in tprof's constructor, the handler ran after the scan (the C library registers the handler that
# runs the destructors after the libraries' constructors), and at the first heap call, before them
@test "at exit: the program's destructors, then tprof notes the status, then freeres and the scan" {
	command -v gdb >/dev/null || skip "gdb is not installed"
	printf '%s\n' 'set breakpoint pending on' "set environment LD_PRELOAD=$B/libtprof.so" \
		"set environment TPROF_OUTPUT=$WORK/t.trace" 'set environment TPROF_QUIET=1' \
		'break exit_order_dtor_seen' 'break on_exit_status' 'break last_exit_handler' \
		run continue continue continue >cmds
	run timeout 120 gdb -q -batch -x cmds "$B/progs/exit_order"
	echo "$output"
	# (the constructor's copy of the handler, for threads that exit at once, comes after: a no-op)
	order=$(echo "$output" | sed -n 's/^Breakpoint [0-9]*, \(0x[0-9a-f]* in \)\{0,1\}\([a-z_]*\) .*/\2/p' | head -3 | tr '\n' ' ')
	echo "order: $order"
	[ "$order" = "exit_order_dtor_seen on_exit_status last_exit_handler " ]
}

@test "main calls pthread_exit and the last thread's return ends the process: __libc_freeres runs, totals equal valgrind's" {
	# the exited main thread stays a zombie until the process ends: the thread that exits is the
	# only one left that can use the C library
	# (under tprof the thread's DTV is 16 bytes larger: docs/FORMAT.md; before, freeres did not run
	# here and stdout's buffer, the locale's and the rest were in use at exit, 8 blocks against 2)
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- "$B/progs/freeres_pthread_exit"
	echo "$output"
	python3 - "$output" <<'PY'
import ast, re, sys
vg = ast.literal_eval(re.search(r"valgrind: (\{.*?\})", sys.argv[1])[1])
tp = ast.literal_eval(re.search(r"tprof: +(\{.*?\})", sys.argv[1])[1])
for k in ("allocations", "frees", "leaked_blocks"):
    assert tp[k] == vg[k], k
for k in ("bytes_allocated", "leaked_bytes"):
    assert tp[k] == vg[k] + 16, k
PY
}

@test "a program whose own malloc forwards to __libc_malloc, __libc_free, ...: totals equal valgrind's" {
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- "$B/progs/libc_alias"
	echo "$output"
	[ "$status" -eq 0 ]
	rm -f t.trace
	run traced "$B/progs/libc_alias" pvalloc
	[ "$output" = done ]
	report t.trace r.json
	[ "$(jget r.json allocations)" = 6 ]
	[ "$(jget r.json bytes_allocated)" = 6828 ]
	[ "$(jget r.json leaked_bytes)" = 400 ]
}

@test "the allocator looked up by dlsym in the C library's handle (ctypes), the program's, or by dlvsym with RTLD_NEXT: totals and leaks equal valgrind's" {
	run "$TPROF_ROOT/tests/lib/vgcompare.sh" "$B" "$WORK" -- "$B/progs/dlsym_heap"
	echo "$output"
	[ "$status" -eq 0 ]
	run "$TPROF_ROOT/tests/lib/vgleaks.sh" "$B" "$WORK" -- "$B/progs/dlsym_heap"
	echo "$output"
	[ "$status" -eq 0 ]
	# each call is recorded as the function it is (the C library's memalign is aligned_alloc too)
	rm -f t.trace
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/dlsym_heap" >/dev/null
	settled t.trace
	"$B/tprof" dump t.trace >dump.txt
	[ "$(awk '$4 == "memalign"' dump.txt | wc -l)" -eq 3 ]
	[ "$(awk '$4 == "aligned_alloc"' dump.txt | wc -l)" -eq 3 ]
	# a dlsym preloaded after libtprof.so still gets the program's look-ups, as bare
	LD_PRELOAD="$B/progs/libdlsym_spy.so" "$B/progs/dlsym_heap" >/dev/null 2>bare.err
	TPROF_QUIET=1 TPROF_OUTPUT=t2.trace LD_PRELOAD="$B/libtprof.so:$B/progs/libdlsym_spy.so" "$B/progs/dlsym_heap" \
		>/dev/null 2>traced.err
	[ "$(grep -c '^spy: strlen$' bare.err)" -eq 2 ]
	[ "$(grep -c '^spy: strlen$' traced.err)" -eq 2 ]
	[ "$(grep -c '^spy: malloc$' traced.err)" -ge "$(grep -c '^spy: malloc$' bare.err)" ]
}

@test "an executable that defines dlsym itself: runs as bare (tprof's own look-ups do not go through it)" {
	run "$B/progs/own_dlsym"
	[ "$status" -eq 0 ]
	bare=$output
	rm -f t.trace
	run timeout 60 env TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/own_dlsym"
	[ "$status" -eq 0 ]
	[ "$output" = "$bare" ]
	settled t.trace
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json allocations)" -ge 2 ]
}

@test "an audit module (LD_AUDIT): the program ends as bare (no __libc_freeres, which would free the loader's early blocks); tprof's variables hold" {
	run env LD_AUDIT="$B/progs/libaudit_bind.so" "$B/progs/heap_known"
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	rm -f t.trace
	# the first heap call comes before the C library has set environ: TPROF_QUIET and TPROF_OUTPUT
	# are read all the same
	run env LD_AUDIT="$B/progs/libaudit_bind.so" TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" \
		"$B/progs/heap_known"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	settled t.trace
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json end)" = exit ]
	# without TPROF_OUTPUT: the default name, after the program
	mkdir -p d
	(cd d && LD_AUDIT="$B/progs/libaudit_bind.so" TPROF_QUIET=1 LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null)
	settled d/*.trace
	ls d/tprof.heap_known.*.trace
}

@test "tprof record under a library that fakes the time (faketime): the recorder's clocks are the real ones, the trace reads" {
	if ldd "$B/tprof" | grep -q libasan; then
		skip "an ASan-built tprof (SAN=1) cannot run with another library preloaded"
	fi
	rm -f t.trace
	run env LD_PRELOAD="$B/progs/libfake_clock.so" TPROF_QUIET=1 "$B/tprof" record -o t.trace -- "$B/progs/heap_known"
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	# the duration is the program's, not a year or 1000 s
	[ "$(jget r.json duration_ns)" -lt 10000000000 ]
}

# heap_known_after LIB TRACE: progs/heap_known with LIB preloaded ahead of libtprof.so, its trace
# into TRACE (settled): the program runs as bare
heap_known_after() {
	run env TPROF_OUTPUT="$2" LD_PRELOAD="$1 $B/libtprof.so" "$B/progs/heap_known"
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	settled "$2"
}

@test "glibc's libc_malloc_debug preloaded ahead: the program runs as bare, its calls through __libc_* are traced" {
	dbg=$(ls /lib/*/libc_malloc_debug.so.0 /usr/lib/*/libc_malloc_debug.so.0 2>/dev/null | head -1)
	[ -n "$dbg" ] || skip "no libc_malloc_debug.so.0"
	# reallocarray, which libc_malloc_debug does not define, must reach its realloc, not the C
	# library's: its free aborted on the block ("free(): invalid pointer")
	heap_known_after "$dbg" t.trace
	report t.trace r.json
	[ "$(jget r.json malloc_owner)" = "$dbg" ]
	[ "$(jget r.json bytes_allocated)" = 1003278 ] # as valgrind counts heap_known (report.bats)
	[ "$(jget r.json leaked_bytes)" = 1200 ]
	[ "$(jget r.json leaked_blocks)" = 2 ]
	# with its checks on, it allocates inside itself: nothing intercepted, and the report says so
	MALLOC_CHECK_=3 heap_known_after "$dbg" c.trace
	run "$B/tprof" report c.trace
	[[ "$output" == *"no heap call was intercepted"*"libc_malloc_debug"* ]]
}

@test "glibc's libc_malloc_debug preloaded after libtprof.so (tprof record's order): its checks and answers as bare, totals exact" {
	dbg=$(ls /lib/*/libc_malloc_debug.so.0 /usr/lib/*/libc_malloc_debug.so.0 2>/dev/null | head -1)
	[ -n "$dbg" ] || skip "no libc_malloc_debug.so.0"
	if ldd "$B/tprof" | grep -q libasan; then
		skip "an ASan-built tprof (SAN=1) cannot run with another library preloaded"
	fi
	# its malloc@GLIBC_2.2.5 (not a default version, which dlsym does not see) is the real one, and
	# its calls of the C library's __libc_ names inside it are not calls of their own
	run env MALLOC_CHECK_=3 LD_PRELOAD="$dbg" MALLOC_TRACE=bare.mt "$B/progs/mdebug"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "usable 10" ]
	bare_out=$output
	run env MALLOC_CHECK_=3 MALLOC_TRACE=traced.mt LD_PRELOAD="$dbg" TPROF_QUIET=1 "$B/tprof" record -o t.trace -- \
		"$B/progs/mdebug"
	[ "$status" -eq 0 ]
	[ "$output" = "$bare_out" ]
	# mtrace's lines: two mallocs, a calloc, a realloc (two lines) and two frees
	[ "$(grep -c '^@' bare.mt)" -eq 6 ]
	[ "$(grep -c '^@' traced.mt)" -eq 6 ]
	settled t.trace
	report t.trace r.json
	[ "$(jget r.json calls.calloc)" = 1 ]
	[ "$(jget r.json calls.realloc)" = 1 ]
	# an overflow its checks find aborts, as bare
	run env MALLOC_CHECK_=3 LD_PRELOAD="$dbg" "$B/progs/mdebug" overflow
	[ "$status" -eq 134 ]
	[[ "$output" != *survived* ]]
	run env MALLOC_CHECK_=3 LD_PRELOAD="$dbg" TPROF_QUIET=1 "$B/tprof" record -o o.trace -- "$B/progs/mdebug" overflow
	[ "$status" -eq 134 ]
	[[ "$output" != *survived* ]]
	# heap_known's totals as valgrind counts them (report.bats), not a call more
	run env TPROF_OUTPUT=k.trace LD_PRELOAD="$B/libtprof.so $dbg" "$B/progs/heap_known"
	[ "$output" = done ]
	settled k.trace
	report k.trace r.json
	[ "$(jget r.json bytes_allocated)" = 1003278 ]
	[ "$(jget r.json leaked_bytes)" = 1200 ]
	[ "$(jget r.json leaked_blocks)" = 2 ]
}

@test "the C library itself preloaded ahead: the program runs as bare (no abort), and its trace says why it is empty" {
	# nothing after libtprof.so defines malloc then: the real functions are the first definitions
	libc=$(ldd /bin/true | grep -o '/[^ ]*libc.so.6')
	heap_known_after "$libc" t.trace
	report t.trace r.json
	[ "$(jget r.json malloc_owner)" = "$libc" ]
	[ "$(jget r.json events)" = 0 ]
	run "$B/tprof" report t.trace
	[[ "$output" == *"no heap call was intercepted"*"libc.so.6"* ]]
}

@test "an executable that is not position-independent and takes malloc's address: intercepted, no owner, reallocarray counted as itself" {
	# its PLT entry is then malloc's address for the whole process, which dlsym returns: it is not
	# a malloc of the executable's own (Debian's python3 is built so)
	run env TPROF_QUIET=1 TPROF_OUTPUT=c.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/canon_plt" calls
	[ "$status" -eq 0 ]
	[ "$output" = "ok 1" ]
	report c.trace r.json
	[ "$(jget r.json malloc_owner)" = "" ]
	[ "$(jget r.json calls.reallocarray)" = 100 ]
	[ "$(jget r.json calls.realloc)" = 1 ]
	[ "$(jget r.json leaked_bytes)" = 100 ]
	run "$B/tprof" report c.trace
	[[ "$output" != *"intercepted"* ]]
	# the addresses taken, no heap call: no registration, no trace, as for any such program
	run env TPROF_QUIET=1 TPROF_OUTPUT=n.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/canon_plt" none
	[ "$status" -eq 0 ]
	[ "$output" = "no heap call" ]
	sleep 0.3
	[ ! -e n.trace ]
	if [ "$(od -An -tx1 -j16 -N1 /usr/bin/python3.11 2>/dev/null | tr -d ' ')" = 02 ]; then
		TPROF_QUIET=1 TPROF_OUTPUT=p.trace LD_PRELOAD="$B/libtprof.so" /usr/bin/python3.11 -c 'print(1)'
		report p.trace p.json
		[ "$(jget p.json malloc_owner)" = "" ]
	fi
}

@test "ulimit -v: address space is taken as used, so a program under a 64 MB limit runs and is traced exactly" {
	if ldd "$B/tprof-recorder" | grep -q libasan; then
		skip "an ASan-built recorder (SAN=1) reserves its shadow memory: it cannot run under ulimit -v"
	fi
	run bash -c 'ulimit -v 65536; exec env TPROF_OUTPUT=t.trace LD_PRELOAD="$0/libtprof.so" "$0/progs/heap_known"' "$B"
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json allocations)" = 21 ]
	[ "$(jget r.json bytes_allocated)" = 1003278 ]
}

# keeps_most OPTION: 1 MiB blocks until one fails under `ulimit OPTION 204800` (200 MB), bare and
# traced: tprof's shared memory, stack table and library take less than 16 MiB of it
keeps_most() {
	if ldd "$B/tprof-recorder" | grep -q libasan; then
		skip "an ASan-built recorder (SAN=1) maps its shadow memory: it cannot run under ulimit $1"
	fi
	bare=$(bash -c 'ulimit $1 204800; exec "$0/progs/as_fill"' "$B" "$1")
	traced=$(bash -c 'ulimit $1 204800; exec env TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$0/libtprof.so" "$0/progs/as_fill"' "$B" "$1")
	echo "bare $bare traced $traced"
	[ "$bare" -gt 150 ]
	[ "$traced" -ge $((bare - 16)) ]
	report t.trace r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json allocations)" -ge "$traced" ]
}

@test "ulimit -v: tprof takes a small share of the limit, not all it can map: the program keeps most of it" {
	# they took 74 MiB when the stack table was all it could map
	keeps_most -v
	# and under a large limit, 100 threads' rings all fit in the memory's pieces (a piece per
	# ring ran out of pieces): nothing lost
	rm -f t.trace
	bash -c 'ulimit -v 8388608; exec env TPROF_DEPTH=0 TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$0/libtprof.so" "$0/progs/storm" 100 100' "$B" >/dev/null
	report t.trace r.json
	[ "$(jget r.json lost_events)" = 0 ]
	[ "$(jget r.json reserve_failed)" = false ]
}

@test "ulimit -d: the data limit counts tprof's private mappings (the stack table): the program keeps most of it" {
	# the stack table reserved 62 MiB whatever the data limit
	keeps_most -d
}

@test "fork children list their modules as the loader has them, copied from the parent's or scanned" {
	# a: forked before the parent loads the plugin, b: after, c: loads libm before its first heap
	# call, d: after the parent unloaded the plugin. Each child prints the loader's list; its
	# trace must hold the same modules at the same addresses, each with the build id the parent's
	# own scan (or, for libm, none in the parent) found
	TPROF_QUIET=1 TPROF_OUTPUT=t.%p.trace LD_PRELOAD="$B/libtprof.so" \
		"$B/progs/fork_modules" "$B/progs/libstacks_plugin.so" >out.txt
	local parent pid name f n=0
	parent=$(ls t.*.trace | sort -t. -k2 -n | head -1)
	"$B/tprof" dump "$parent" | awk '/^# module/ {print $6, $10}' | sort >parent_ids.txt
	while read -r _ name pid; do
		f=t.$pid.trace
		settled "$f"
		awk -v c="$name" '$1 == "child" {on = ($2 == c)} on && $1 == "module" {print $2, $3}' out.txt |
			sort >want.txt
		"$B/tprof" dump "$f" | awk '/^# module/ {print $6, ($NF == "program)" ? "" : $NF)}' | sort >got.txt
		diff want.txt got.txt
		# build ids: those of the parent's modules at the same address, and one for libm
		"$B/tprof" dump "$f" | awk '/^# module/ {print $6, $10}' | sort >child_ids.txt
		join parent_ids.txt child_ids.txt | awk '$2 != $3 {bad = 1} END {exit bad}'
		[ "$(awk '/^# module/ && /libm/ && $9 == "build-id" && length($10) == 40' <("$B/tprof" dump "$f") | wc -l)" -eq \
			"$(grep -c 'libm' want.txt || true)" ]
		n=$((n + 1))
	done < <(grep '^child ' out.txt)
	[ "$n" -eq 4 ]
	# b's allocation through the plugin is named there
	pid=$(awk '$1 == "child" && $2 == "b" {print $3}' out.txt)
	"$B/tprof" leaks "t.$pid.trace" | grep -q plugin_leak
}

@test "a traced parent's fork child maps its own memory where the parent's tprof memory lay: untouched, and traced" {
	run env TPROF_OUTPUT=t.%p.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/fork_holes"
	[ "$status" -eq 0 ]
	[ "$output" = intact ]
	local f n=0
	for f in t.*.trace; do
		settled "$f"
		report "$f" r.json
		[ "$(jget r.json complete)" = true ]
		[ "$(jget r.json lost_events)" = 0 ]
		[ "$(jget r.json allocations)" -ge 1000 ] && n=$((n + 1))
	done
	[ "$n" -eq 1 ]
}

@test "exit while another thread is inside free, after its event: in the trace; inside malloc, before it: never returned, not in it; complete both" {
	# an allocator preloaded after libtprof.so, whose free or malloc of a marked block blocks for
	# good: the thread is inside the hook when main calls exit, after (free) or before (malloc)
	# tprof put the call's event in the ring. The malloc never returned to the program: the trace
	# holds every call that did, and says that one was cut short.
	cat >sfree.c <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>
volatile int slow_waiting;
void free(void *p)
{
	static void (*next)(void *);
	if (p && memcmp(p, "STOPHERE", 8) == 0) {
		slow_waiting = 1;
		for (;;)
			pause();
	}
	if (!next)
		next = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	next(p);
}
EOF
	cat >smalloc.c <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>
volatile int slow_waiting;
void *malloc(size_t n)
{
	static void *(*next)(size_t);
	if (n == 12345) {
		slow_waiting = 1;
		for (;;)
			pause();
	}
	if (!next)
		next = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	return next(n);
}
EOF
	cat >prog.c <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int in_malloc;
static void *run(void *a)
{
	(void)a;
	char *p = malloc(in_malloc ? 12345 : 64);
	memcpy(p, "STOPHERE", 8);
	free(p);
	return NULL;
}
int main(int argc, char **argv)
{
	in_malloc = argc > 1 && strcmp(argv[1], "malloc") == 0;
	volatile int *w = dlsym(RTLD_DEFAULT, "slow_waiting");
	pthread_t t;
	pthread_create(&t, NULL, run, NULL);
	while (!*w)
		usleep(1000);
	usleep(20000);
	exit(0);
}
EOF
	cc -shared -fPIC -o libsfree.so sfree.c -ldl
	cc -shared -fPIC -o libsmalloc.so smalloc.c -ldl
	cc -o prog prog.c -lpthread -ldl
	timeout 60 env TPROF_QUIET=1 TPROF_OUTPUT=f.trace LD_PRELOAD="$B/libtprof.so $WORK/libsfree.so" ./prog free
	timeout 60 env TPROF_QUIET=1 TPROF_OUTPUT=m.trace LD_PRELOAD="$B/libtprof.so $WORK/libsmalloc.so" ./prog malloc
	"$B/tprof" report --json f.trace >f.json
	[ "$(jget f.json end)" = exit ]
	[ "$(jget f.json frees)" -ge 1 ]
	[ "$(jget f.json complete)" = true ]
	[ "$(jget f.json unfinished_call)" = false ]
	"$B/tprof" report --json m.trace >m.json
	[ "$(jget m.json end)" = exit ]
	[ "$(jget m.json complete)" = true ]
	[ "$(jget m.json unfinished_call)" = true ]
	# the blocked malloc(12345) is not there: its thread's allocations are the loader's only
	"$B/tprof" dump m.trace >m.txt
	[ "$(grep -c " malloc 12345 " m.txt)" = 0 ]
	run "$B/tprof" report m.trace
	[[ "$output" == *"unfinished     a thread was inside a heap call when the process ended: the call never returned"* ]]
	[[ "$output" != *"incomplete"* ]]
}

@test "a signal handler's heap call held while tprof wrote the call it interrupted, then _exit: _exit publishes it, the trace is complete" {
	# a clock_gettime preloaded after libtprof.so (TPROF_CLOCK=monotonic: the hook reads the clock
	# through it, inside its ring write) raises SIGUSR1 once armed; the handler allocates (a call
	# that returns to it, its event held for the interrupted hook, which never goes on) or not, then
	# calls _exit, whose hook publishes what was held (it was lost, the trace incomplete)
	cat >shim.c <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <time.h>
volatile int shim_armed;
int clock_gettime(clockid_t c, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);
	if (!real)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	if (shim_armed == 1) {
		shim_armed = 2;
		raise(SIGUSR1);
	}
	return real(c, ts);
}
EOF
	cat >prog.c <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int handler_allocates;
static void on_usr1(int s)
{
	(void)s;
	if (handler_allocates) {
		char *volatile p = malloc(777);
		p[0] = 1;
	}
	_exit(0);
}
int main(int argc, char **argv)
{
	handler_allocates = argc > 1 && strcmp(argv[1], "alloc") == 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	free(malloc(10)); /* registered: the next clock read is inside a hook */
	volatile int *armed = dlsym(RTLD_DEFAULT, "shim_armed");
	if (!armed)
		return 3;
	*armed = 1;
	char *volatile q = malloc(100);
	q[0] = 2;
	return 4; /* not reached: the handler ends the process */
}
EOF
	cc -shared -fPIC -o libshim.so shim.c -ldl
	cc -o prog prog.c -ldl
	for m in alloc none; do
		TPROF_CLOCK=monotonic TPROF_QUIET=1 TPROF_OUTPUT=$m.trace LD_PRELOAD="$B/libtprof.so $WORK/libshim.so" ./prog $m
		"$B/tprof" report --json $m.trace >$m.json
		[ "$(jget $m.json end)" = _exit ]
		[ "$(jget $m.json complete)" = true ]
		[ "$(jget $m.json lost_events)" = 0 ]
		[ "$(jget $m.json unfinished_call)" = true ] # malloc(100) never returned
	done
	[ "$(jget none.json allocations)" = 1 ] # malloc(10)
	[ "$(jget alloc.json allocations)" = 2 ] # and the handler's malloc(777)
	[ "$(jget alloc.json leaked_bytes)" = 777 ]
	run "$B/tprof" report alloc.trace
	[[ "$output" != *"incomplete"* ]]
}


@test "the trace's file system can be unmounted as soon as tprof record is done" {
	mkdir mnt
	mount -t tmpfs -o size=64m none mnt 2>/dev/null || skip "cannot mount a tmpfs here"
	run "$B/tprof" record -o "$PWD/mnt/x.trace" -- "$B/progs/heap_known"
	[ "$status" -eq 0 ]
	# the recorder lingers for a moment, but keeps no file open there (its next file made ahead)
	run umount mnt
	echo "$output"
	[ "$status" -eq 0 ] || { umount -l mnt; false; }
}

@test "TPROF_OUTPUT longer than 1022 bytes: said, not traced, never cut into another file's name" {
	d=$PWD/$(printf 'd%.0s' $(seq 200))
	long=$d/$(printf 'e%.0s' $(seq 200))/$(printf 'f%.0s' $(seq 200))/$(printf 'g%.0s' $(seq 200))/$(printf 'h%.0s' $(seq 200))/trace.out
	mkdir -p "$(dirname "$long")"
	[ "${#long}" -gt 1022 ]
	unset TPROF_QUIET
	TPROF_OUTPUT=$long LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >out.txt 2>err.txt
	cat err.txt
	grep -q "the trace's name (TPROF_OUTPUT) is longer than 1022 bytes; not tracing" err.txt
	[ "$(find "$d" -type f | wc -l)" -eq 0 ]
	cmp out.txt <("$B/progs/heap_known")
}

@test "a vfork child's heap call that is its process's first: the parent's trace is the parent's, whole" {
	run traced "$B/progs/vfork_first"
	[ "$status" -eq 3 ]
	[ "$output" = "child status 0" ]
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json complete)" = true ]
	[ "$(jget r.json end)" = exit ]
	[ "$(jget r.json exit_status)" = 3 ]
	"$B/tprof" dump t.trace >d.txt
	[ "$(grep -c ' 7001 ' d.txt)" -eq 20 ] # the parent's pairs, none of them lost
}

@test "the exit line writes a program's name as the analyzer's messages do: controls, C1, a backslash and bad UTF-8 escaped" {
	name=$'ho st\n\xc3ile\\x\xc2\x9b\xc3\xa9\xe4\xb8\xad'
	cp "$B/progs/heap_known" "./$name"
	unset TPROF_QUIET
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "./$name" >/dev/null 2>err.txt
	settled t.trace # the recorder writes the line once the process is gone
	for _ in $(seq 50); do [ -s err.txt ] && break; sleep 0.1; done
	cat -A err.txt
	[ "$(wc -l <err.txt)" -eq 1 ]
	grep -qF 'tprof: ho st\n\xc3ile\\x\xc2\x9bé中 (pid ' err.txt
	# the analyzer names the file alike
	"$B/tprof" report "./$name" 2>&1 | grep -qF 'ho st\n\xc3ile\\x\xc2\x9bé中: byte 0: not a tprof trace'
}

@test "a process that cuts its memory file short under the recorder: refused, or sealed against it; the recorder lives on" {
	# tprof record serves a program that allocates 1.5 s on; meanwhile a process registers a memory
	# file of its own and cuts it to nothing (SIGBUS in the recorder, had it mapped that file)
	"$B/tprof" record -o r.trace -- sh -c "sleep 1.5; exec '$B/progs/heap_known'" >/dev/null 2>rec.err &
	rp=$!
	name=$(record_name "$rp")
	[ -n "$name" ]
	run "$B/progs/rogue_memfd" "$name" rogue1.trace plain
	echo "$output"
	[ "$output" = $'answer 0\ntruncate ok' ] # a memory file the recorder cannot seal is refused
	run "$B/progs/rogue_memfd" "$name" rogue2.trace sealable
	echo "$output"
	[[ "$output" == *"truncate refused" ]] # sealed before it was mapped
	[[ "$output" != "answer 0"* ]]
	wait "$rp"
	cat rec.err
	progs=
	for f in r.trace*; do
		"$B/tprof" report --json "$f" >r.json
		[ "$(jget r.json complete)" = true ]
		progs="$progs $(jget r.json program)"
	done
	[[ "$progs" == *heap_known* ]] # the program's last image, traced to its end
}

@test "the leak scan reads the process that registered, whatever its shared memory names as the thread to read through" {
	# rogue_scan names a zombie child of its own: read through it, nothing could be read
	run traced "$B/progs/rogue_scan"
	echo "$output"
	[ "$status" -eq 137 ]
	[ "$output" = "scan done" ]
	"$B/tprof" leaks --json t.trace >l.json
	cat l.json
	[ "$(jget l.json classified)" = true ]
	$PY - l.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
assert s["reachable"]["bytes"] == 100 and s["reachable"]["blocks"] == 1, s
PY
}

# ptyrun ARGS...: tests/integration/ptyrun.py (a command leading a session on a pseudo-terminal)
ptyrun() { $PY "$TPROF_ROOT/tests/integration/ptyrun.py" "$@"; }

@test "record in a terminal: ^C reaches a program that took a process group of its own (timeout), as bare" {
	bare=$(ptyrun --send '1:\x03' -- timeout 4 sleep 10 | tail -2)
	traced=$(ptyrun --send '1:\x03' -- "$B/tprof" record -- timeout 4 sleep 10 | tail -2)
	echo "bare: $bare / traced: $traced"
	[ "$bare" = $'status -2\nafter 0.0' ]
	[ "$traced" = "$bare" ]
}

@test "record leading a terminal's session: the terminal's hangup reaches the program, as bare" {
	bare=$(ptyrun --hangup 1 -- sleep 5 | tail -2)
	traced=$(ptyrun --hangup 1 -- "$B/tprof" record -o t.trace -- sleep 5 | tail -2)
	echo "bare: $bare / traced: $traced"
	[ "$bare" = $'status -1\nafter 0.0' ]
	[ "$traced" = "$bare" ]
}

@test "record as a job of an interactive shell: ^Z stops it, fg goes on, a terminal read and a timeout inside it work as bare" {
	for c in "sleep 2" "$B/tprof record -- sleep 2"; do
		ptyrun --send "0.5:PS1='$ '; $c; echo st=\$?\r" --send '1:\x1a' --send '0.5:jobs; fg\r' --send '3:exit\r' \
			--timeout 15 -- bash --norc --noprofile -i >out.txt 2>&1
		cat out.txt
		grep -q "Stopped  *${c}" out.txt
		grep -q '^st=148' out.txt # the shell's view of the stopped job
		tail -2 out.txt | grep -qx 'status 0'
	done
	for c in "timeout 3 cat" "$B/tprof record -- timeout 3 cat"; do
		ptyrun --send "0.5:PS1='$ '; $c; echo st=\$?\r" --send '0.5:hello\r' --send '0.3:\x04' --send '0.5:exit\r' \
			--timeout 15 -- bash --norc --noprofile -i >out.txt 2>&1
		cat out.txt
		[ "$(grep -c 'hello$' out.txt)" -eq 2 ] # typed, and written back by cat
		grep -q '^st=0' out.txt
	done
}

@test "record passes on a sigqueue with its value and sender" {
	cat >sq.py <<'PY'
import signal
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
open("ready", "w").close()
i = signal.sigtimedwait([signal.SIGUSR2], 10)
print(i.si_code, i.si_pid, i.si_status)  # si_status: the value's int, in the same union
PY
	cat >send.py <<'PY'
import ctypes, os, signal, sys
class V(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
libc = ctypes.CDLL(None, use_errno=True)
libc.sigqueue.argtypes = [ctypes.c_int, ctypes.c_int, V]
assert libc.sigqueue(int(sys.argv[1]), signal.SIGUSR2, V(i=42)) == 0
print(os.getpid())
PY
	for traced in 0 1; do
		rm -f ready
		if [ $traced = 1 ]; then
			"$B/tprof" record -- $PY sq.py >out.txt &
		else
			$PY sq.py >out.txt &
		fi
		p=$!
		for _ in $(seq 100); do [ -e ready ] && break; sleep 0.05; done
		sender=$($PY send.py "$p")
		wait "$p"
		echo "traced=$traced sender=$sender: $(cat out.txt)"
		[ "$(cat out.txt)" = "-1 $sender 42" ] # SI_QUEUE, from the sender, with its value
	done
}

@test "record in a terminal, the program in a group of its own: a process stopped on purpose stays stopped" {
	for r in "" "$B/tprof record --"; do
		ptyrun --send "0.5:$r timeout 30 sh -c 'sleep 20 & p=\$!; sleep 0.5; kill -STOP \$p; sleep 0.5; ps -o stat= -p \$p; kill -CONT \$p; kill \$p'; echo st=\$?\r" \
			--send '3:exit\r' --timeout 15 -- bash --norc --noprofile -i >out.txt 2>&1
		cat out.txt
		grep -q 'T+$' out.txt # ps saw it stopped
		grep -q '^st=0' out.txt
	done
}
