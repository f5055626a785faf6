#!/usr/bin/env bash
# What tprof costs per process: 200 runs of /bin/true from a shell loop, and a fork storm of 200
# children (exiting at once, or after one malloc/free pair, which makes each register with the
# recorder and get a trace of its own; from a parent that made no heap call before, or from one
# that did, as most programs have by the time they fork), bare, under tprof record, under
# LD_PRELOAD alone (a recorder started on first use) and under heaptrack, side by side; and per
# thread: 1100 threads alive at once; then the CPU and the page faults of a fork child. Each time is
# the best of RUNS runs, the tools alternating run by run so that a noisy neighbour hits all alike.
# Ratios are to bare.
# Run it on an idle machine.
set -u
BUILD=${BUILD:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
B="$root/$BUILD"
RUNS=${PROCS_RUNS:-5}
N=200
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Microseconds by the shell's own clock: a date process on each side would put most of two execs
# in the time.
us() { local s=$EPOCHREALTIME e; "$@" >/dev/null 2>&1; e=$EPOCHREALTIME; echo $((10#${e//[!0-9]/} - 10#${s//[!0-9]/})); }
best() { sort -n | head -1; }
have_heaptrack=1
command -v heaptrack >/dev/null || have_heaptrack=0
loop="for i in \$(seq $N); do /bin/true; done"

# Each run's traces go to a new directory, all removed at the end: a file system without a journal
# (ext4 here) looks past every inode freed in the last minutes when it allocates one, so deleting a
# run's hundreds of traces just before the next would make that run's files the bench's cost.
name_n=0
# Every run starts through env (the preload run needs it to set LD_PRELOAD for the program alone):
# an exec costs about a millisecond here, 4% of a fork storm, which a bare run started directly
# would leave out of its time.
run_case() { # NAME COMMAND...: prints a row
	local name=$1
	shift
	name_n=$((name_n + 1))
	: >bare.txt; : >rec.txt; : >pre.txt; : >ht.txt
	for r in $(seq "$RUNS"); do
		us env "$@" >>bare.txt
		mkdir "tr.$name_n.$r.r" "tr.$name_n.$r.p"
		TPROF_QUIET=1 us env "$B/tprof" record -o "tr.$name_n.$r.r/%p.trace" -- "$@" >>rec.txt
		TPROF_QUIET=1 TPROF_OUTPUT="tr.$name_n.$r.p/%p.trace" us env LD_PRELOAD="$B/libtprof.so" "$@" >>pre.txt
		sleep 0.3 # the recorder started on first use finishes its last traces after the program
		if [ $have_heaptrack = 1 ] && [ "$r" -le 2 ]; then
			rm -rf ht && mkdir ht
			(cd ht && us env heaptrack "$@") >>ht.txt
		fi
	done
	local b r p h
	b=$(best <bare.txt) r=$(best <rec.txt) p=$(best <pre.txt)
	h=$([ -s ht.txt ] && best <ht.txt || echo 0)
	awk -v n="$name" -v b="$b" -v r="$r" -v p="$p" -v h="$h" 'BEGIN {
		printf "%-34s %8.1f %8.1f %7.2fx %8.1f %7.2fx %10s\n", n, b / 1000, r / 1000, r / (b ? b : 1),
		       p / 1000, p / (b ? b : 1), (h ? sprintf("%.0f %.1fx", h / 1000, h / (b ? b : 1)) : "n/a") }'
}

printf '%-34s %8s %8s %8s %8s %8s %10s\n' case bare_ms record_ms ratio preload_ms ratio heaptrack
run_case "200 x /bin/true from sh" sh -c "$loop"
run_case "fork storm, children exit at once" "$B/bench/forkstorm" "$N"
run_case "fork storm, children malloc+free" "$B/bench/forkstorm" "$N" alloc
run_case "same, parent traced: exit at once" "$B/bench/forkstorm" "$N" parent
run_case "same, parent traced: malloc+free" "$B/bench/forkstorm" "$N" alloc parent
run_case "1100 threads at once, 2000 pairs each" "$B/progs/threads_at_once" 1100 2000
echo "(a process image that makes no heap call does not register; heaptrack: its own wrapper, one run in"
echo " two, for scale only: it traces the fork children through the same process)"

# Where an allocating fork child's cost goes, per child, best of RUNS (400 children): the program's
# CPU over a bare run's (the child's hooks and registration, the parent's fork of a larger process)
# and the recorder's (taking the registration, the trace file, the writer), which runs beside the
# program: on two cores the storm's wall time follows their sum as much as either.
M=400
tck=$(getconf CLK_TCK)
bare=999999999 prog=999999999 rec=999999999
for r in $(seq "$RUNS"); do
	c=$("$B/bench/rusage" "$B/bench/forkstorm" $M alloc 2>&1 >/dev/null | awk '/^cpu_us/ {print $2}')
	[ -n "$c" ] && [ "$c" -lt "$bare" ] && bare=$c
	mkdir "tr.cpu.$r"
	c=$(TPROF_QUIET=1 TPROF_OUTPUT="tr.cpu.$r/%p.trace" LD_PRELOAD="$B/libtprof.so" "$B/bench/rusage" \
		"$B/bench/forkstorm" $M alloc 2>&1 >/dev/null | awk '/^cpu_us/ {print $2}')
	[ -n "$c" ] && [ "$c" -lt "$prog" ] && prog=$c
	sleep 0.1 # the recorder started on first use writes the last traces, then lingers 200 ms
	rpid=$(pgrep -n -x tprof-recorder)
	w=$([ -n "$rpid" ] && awk -v t="$tck" '{print int(($14 + $15) * 1000000 / t)}' "/proc/$rpid/stat" 2>/dev/null)
	[ -n "$w" ] && [ "$w" -lt "$rec" ] && rec=$w
	sleep 0.3
done
awk -v b="$bare" -v p="$prog" -v r="$rec" -v m=$M -v t="$tck" 'BEGIN {
	printf "fork child that allocates, CPU per child: bare %.0f us; program under tprof +%.0f us; recorder %s\n",
	       b / m, (p - b) / m, (r == 999999999 ? "n/a" : sprintf("%.0f us (to within %.0f us)", r / m, 1000000 / t / m)) }'

# Page faults of an average fork child of a traced parent (forkstorm counts its children's, from
# their rusage; tprof's populated pages count too): on a VM each first touch of a page costs 5 to
# 20 us, most of what a child costs.
faults() { "$@" 2>/dev/null | grep -o '"child_faults":[0-9.]*' | cut -d: -f2; }
mkdir tr.pf
line="page faults per fork child (200 children, traced parent), bare / under tprof:"
for mode in exit alloc; do
	a=$([ $mode = alloc ] && echo alloc)
	b=$(faults "$B/bench/forkstorm" 200 $a parent)
	p=$(faults env TPROF_QUIET=1 TPROF_OUTPUT="tr.pf/%p.trace" LD_PRELOAD="$B/libtprof.so" "$B/bench/forkstorm" 200 $a parent)
	line="$line $([ $mode = alloc ] && echo "allocating" || echo "exiting at once") $b / $p;"
done
echo "${line%;}"
sleep 0.3

# The phases of a fork child, as the program sees them (bench/forkphases.c, 400 children of a traced
# parent, best total of RUNS): the parent's fork() call, the child's first malloc (its registration
# and first stack walk under tprof) and its exit until reaped, bare and under tprof record, with
# children that make no heap call (quiet) and with children that make one pair. Under tprof the
# fork() and exit columns grow too, though tprof does little there: the recorder works for each
# child on the other CPU meanwhile, and on a VM whose two CPUs share a core (or a host), a busy
# second CPU slows the kernel's work on the first. The last row measures that alone: a bare storm
# while a shell loop spins on the other CPU.
phase_best() { # COMMAND...: the run with the smallest total, as "fork to_child malloc exit total"
	local r out best=""
	for r in $(seq "$RUNS"); do
		rm -rf tr.ph && mkdir tr.ph
		out=$("$@" 2>/dev/null | sed -n 's/.*"fork_us":\([0-9]*\),"to_child_us":\([0-9]*\),"malloc_us":\([0-9]*\),"exit_us":\([0-9]*\),"total_us":\([0-9]*\).*/\1 \2 \3 \4 \5/p')
		[ -n "$out" ] || continue
		if [ -z "$best" ] || [ "${out##* }" -lt "${best##* }" ]; then best=$out; fi
		sleep 0.2
	done
	echo "${best:-0 0 0 0 0}"
}
printf '%-30s %9s %12s %10s %9s %9s\n' "fork child, us per child" "fork()" "to_child" "malloc" "exit" "total"
for kind in quiet alloc; do
	for tool in bare tprof; do
		if [ $tool = bare ]; then
			set -- "$B/bench/forkphases" 400 $kind
		else
			set -- env TPROF_QUIET=1 "$B/tprof" record -o "tr.ph/%p.trace" -- "$B/bench/forkphases" 400 $kind
		fi
		read -r f c m x t <<<"$(phase_best "$@")"
		printf '%-30s %9s %12s %10s %9s %9s\n' "$kind, $tool" "$f" "$c" "$m" "$x" "$t"
	done
done
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
	taskset -c 1 bash -c 'while :; do :; done' &
	spin=$!
	read -r f c m x t <<<"$(phase_best taskset -c 0 "$B/bench/forkphases" 400 quiet)"
	kill "$spin"
	wait "$spin" 2>/dev/null
	printf '%-30s %9s %12s %10s %9s %9s\n' "quiet, bare, CPU 1 busy" "$f" "$c" "$m" "$x" "$t"
fi
rm -rf tr.ph
