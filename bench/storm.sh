#!/usr/bin/env bash
# Overhead benchmark: a malloc/free storm (tests/progs/storm.c built -O2 without frame pointers, as
# Debian builds its packages) on 1 and 2 threads, bare, under tprof (call stacks on, default depth)
# and under heaptrack, side by side in one run. Prints the extra time per malloc/free pair of each,
# the ratio tprof/heaptrack, the trace sizes, the time to analyze each trace (tprof report vs
# heaptrack_print, and tprof summary, heaptrack_print's default answers in one pass, vs the four
# commands that give them one by one) and the analyzer's peak memory on a trace 10x longer. Runs alternate
# between the tools so that a noisy neighbour hits all alike; each time is the best of its runs.
# Run it on an idle machine.
set -u
BUILD=${BUILD:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
B="$root/$BUILD"
PAIRS=${STORM_PAIRS:-2000000}
RUNS=${STORM_RUNS:-7}
STORM="$B/bench/storm_nofp"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

wall() { grep -o '"wall_ns":[0-9]*' | cut -d: -f2; }
best() { sort -n | head -1; }
# Milliseconds by the shell's own clock: a date process after the command would put most of an exec
# (3 to 6 ms on a VM) in every time, the tools' alike.
ms_of() { local s=$EPOCHREALTIME e; "$@" >/dev/null 2>&1; e=$EPOCHREALTIME; echo $(((10#${e//[!0-9]/} - 10#${s//[!0-9]/}) / 1000)); }

have_heaptrack=1
command -v heaptrack >/dev/null || have_heaptrack=0

printf '%-8s %9s %9s %11s %11s %14s %14s %14s %9s\n' threads bare_ms tprof_ms tprof0_ms heaptrack_ms \
	tprof_ns/pair nostack_ns/pair heaptr_ns/pair ratio
for threads in 1 2; do
	per=$((PAIRS / threads))
	: >bare.txt; : >tp.txt; : >t0.txt; : >ht.txt
	for r in $(seq "$RUNS"); do
		"$STORM" "$threads" "$per" | wall >>bare.txt
		rm -f "t$threads.trace"
		TPROF_QUIET=1 TPROF_OUTPUT="t$threads.trace" LD_PRELOAD="$B/libtprof.so" "$STORM" "$threads" "$per" | wall >>tp.txt
		rm -f n.trace
		TPROF_DEPTH=0 TPROF_QUIET=1 TPROF_OUTPUT=n.trace LD_PRELOAD="$B/libtprof.so" "$STORM" "$threads" "$per" | wall >>t0.txt
		if [ $have_heaptrack = 1 ] && [ "$r" -le 3 ]; then
			rm -f "h$threads".*
			heaptrack -o "h$threads" "$STORM" "$threads" "$per" 2>/dev/null | wall >>ht.txt
		fi
	done
	b=$(best <bare.txt) t=$(best <tp.txt) t0=$(best <t0.txt)
	h=$([ -s ht.txt ] && best <ht.txt || echo 0)
	awk -v th="$threads" -v b="$b" -v t="$t" -v t0="$t0" -v h="$h" -v n="$PAIRS" 'BEGIN {
		tx = (t - b) / n; t0x = (t0 - b) / n; hx = (h - b) / n;
		printf "%-8s %9.1f %9.1f %11.1f %11.1f %14.1f %14.1f %14.1f %9s\n", th, b / 1e6, t / 1e6, t0 / 1e6,
		       h / 1e6, tx, t0x, hx, (h > 0 ? sprintf("1/%.1f", hx / (tx > 0 ? tx : 0.001)) : "n/a") }'
done
echo "(tprof: stacks at the default depth of 64; nostack: TPROF_DEPTH=0; ratio: heaptrack's extra time / tprof's)"

# Where tprof's time goes: the program's own CPU (its hooks) and the recorder's writer, each per
# pair, best of 3. The hooks wait when the writer falls a ring behind, and on a machine with few
# CPUs the program's threads and the writer take turns: the storm's wall time is at least the
# largest of each program thread's CPU, the writer's, and all of it over the CPUs (wall_bound).
# wall_bound PROGRAM_US RECORDER_US THREADS WHAT: the least wall time per pair those CPU times allow,
# and which one sets it
wall_bound() {
	awk -v p="$1" -v r="$2" -v t="$3" -v w="$4" -v c="$(nproc)" -v n="$PAIRS" 'BEGIN {
		if (r == 999999999 || p == 999999999)
			exit
		a = p / t; s = (p + r) / c; m = a > r ? a : r; m = m > s ? m : s
		printf "  %d thread(s), %s: %.1f ns per pair, set by %s", t, w, m * 1000 / n,
		       m == a ? "the program" : m == r ? "the recorder" : "both over " c " CPUs" }'
}
bounds=
echo
for threads in 1 2; do
	per=$((PAIRS / threads))
	line="CPU per pair, $threads thread(s):"
	bare=999999999
	for r in 1 2 3; do
		c=$("$B/bench/rusage" "$STORM" "$threads" "$per" 2>&1 >/dev/null | awk '/^cpu_us/ {print $2}')
		[ "$c" -lt "$bare" ] && bare=$c
	done
	for depth in 64 0; do
		prog=999999999 rec=999999999
		for r in 1 2 3; do
			rm -f c.trace
			out=$(TPROF_DEBUG=1 TPROF_DEPTH=$depth TPROF_OUTPUT=c.trace LD_PRELOAD="$B/libtprof.so" \
				"$B/bench/rusage" "$STORM" "$threads" "$per" 2>&1 >/dev/null)
			flock -s c.trace true
			c=$(echo "$out" | awk '/^cpu_us/ {print $2}')
			# the writer's CPU for the trace, less the leak scan's at the end (after the storm's timing)
			w=$(echo "$out" | sed -n 's/^tprof: recorder CPU for pid [0-9]*: \([0-9]*\) us, of which the leak scan \([0-9]*\) us$/\1 \2/p' |
				awk '{print $1 - $2}' | sort -n | tail -1)
			[ -n "$c" ] && [ "$c" -lt "$prog" ] && prog=$c
			[ -n "$w" ] && [ "$w" -lt "$rec" ] && rec=$w
		done
		what=$([ "$depth" = 0 ] && echo "stacks off" || echo "stacks on")
		line="$line $what: program +$(awk -v a="$prog" -v b="$bare" -v n="$PAIRS" 'BEGIN{printf "%.1f", (a-b)*1000/n}') ns,"
		line="$line recorder $(awk -v a="$rec" -v n="$PAIRS" 'BEGIN{ if (a == 999999999) printf "n/a (no CPU line)"; else printf "%.1f ns", a*1000/n}');"
		bounds="$bounds$(wall_bound "$prog" "$rec" "$threads" "$what")"$'\n'
	done
	echo "${line%;}"
done
echo "(program: its CPU time over a bare run's; recorder: its writer thread's CPU time, less the leak scan's"
echo " at the end)"
echo "The storm's wall time cannot go below the largest of: the program's CPU per thread, the recorder's,"
echo "and both together spread over the machine's $(nproc) CPUs:"
printf '%s' "$bounds"

echo
for threads in 1 2; do
	flock -s "t$threads.trace" true # the recorder finishes a trace a moment after its process
	tsize=$(stat -c %s "t$threads.trace")
	line="trace size, $threads thread(s), $((PAIRS * 2)) events: tprof $tsize bytes ($(awk -v s="$tsize" -v n="$PAIRS" 'BEGIN{printf "%.2f", s/(2*n)}') B/event)"
	if [ $have_heaptrack = 1 ]; then
		hfile=$(ls "h$threads".* | head -1)
		hsize=$(stat -c %s "$hfile")
		line="$line, heaptrack $hsize bytes ($(awk -v s="$hsize" -v n="$PAIRS" 'BEGIN{printf "%.2f", s/(2*n)}') B/event), tprof/heaptrack $(awk -v a="$tsize" -v b="$hsize" 'BEGIN{printf "%.2f", a/b}')"
	fi
	echo "$line"
done

# Analysis: wall time (best of 9) of tprof report (its decode thread on, as by default, and off:
# TPROF_DECODE_THREAD=0) and of heaptrack_print, and the CPU time (user + system) of each of those
# best runs, since the decode thread works on a second CPU.
# tprof's symbol cache (README: TPROF_SYMBOL_CACHE) starts empty: the first summary of each trace
# loads the debug information (cold), the best of the others reads the cache, as heaptrack_print
# reads the names heaptrack resolved while recording.
echo
cpu_ms() { awk '{printf "%d", ($1 + $2) * 1000}' "$1"; }
export TPROF_SYMBOL_CACHE="$work/symbols"
for threads in 1 2; do
	tr=999999 t1=999999 hr=999999 ts=999999 t4=999999 trc=0 t1c=0 hrc=0
	rm -rf "$TPROF_SYMBOL_CACHE"
	cold=$(ms_of "$B/tprof" summary "t$threads.trace")
	for r in $(seq 9); do
		x=$(ms_of "$B/tprof" summary "t$threads.trace")
		[ "$x" -lt "$ts" ] && ts=$x
		x=$(ms_of sh -c "for c in report allocs peak leaks; do \"$B/tprof\" \$c t$threads.trace; done")
		[ "$x" -lt "$t4" ] && t4=$x
		x=$(ms_of /usr/bin/time -f '%U %S' -o cpu.txt "$B/tprof" report "t$threads.trace")
		[ "$x" -lt "$tr" ] && tr=$x && trc=$(cpu_ms cpu.txt)
		x=$(ms_of env TPROF_DECODE_THREAD=0 /usr/bin/time -f '%U %S' -o cpu.txt "$B/tprof" report "t$threads.trace")
		[ "$x" -lt "$t1" ] && t1=$x && t1c=$(cpu_ms cpu.txt)
		if [ $have_heaptrack = 1 ]; then
			x=$(ms_of /usr/bin/time -f '%U %S' -o cpu.txt heaptrack_print "$(ls "h$threads".* | head -1)")
			[ "$x" -lt "$hr" ] && hr=$x && hrc=$(cpu_ms cpu.txt)
		fi
	done
	line="analysis, $threads thread(s): tprof report $tr ms (cpu $trc ms; one thread: $t1 ms, cpu $t1c ms)"
	if [ $have_heaptrack = 1 ]; then
		echo "$line, heaptrack_print $hr ms (cpu $hrc ms): tprof $(awk -v a="$tr" -v b="$hr" 'BEGIN{printf "%.1f", b/(a>0?a:1)}')x faster ($(awk -v a="$t1" -v b="$hr" 'BEGIN{printf "%.1f", b/(a>0?a:1)}')x on one thread)"
	else
		echo "$line"
	fi
	# heaptrack_print's default output (peak consumers, most calls, most temporary, leaks) is what
	# tprof summary prints in one pass, and report, allocs, peak and leaks in four
	line="summary, $threads thread(s): tprof summary $ts ms (cold symbol cache: $cold ms; report + allocs + peak + leaks: $t4 ms)"
	if [ $have_heaptrack = 1 ]; then
		echo "$line, heaptrack_print $hr ms: summary $(awk -v a="$ts" -v b="$hr" 'BEGIN{printf "%.1f", b/(a>0?a:1)}')x faster"
	else
		echo "$line"
	fi
done

# The analyzer's memory follows live blocks and distinct stacks, not the number of events: the same
# program, 10x longer, must not need 10x the memory.
echo
small=$((PAIRS / 10))
for n in "$small" "$PAIRS"; do
	rm -f m.trace
	TPROF_QUIET=1 TPROF_OUTPUT=m.trace LD_PRELOAD="$B/libtprof.so" "$STORM" 1 "$n" >/dev/null
	rss=$(/usr/bin/time -f %M "$B/tprof" report m.trace 2>&1 >/dev/null | tail -1)
	echo "analyzer peak RSS, storm of $n pairs ($(stat -c %s m.trace) byte trace): $rss KiB"
done

# Optional (STORM_BIG_PAIRS=N, e.g. 215000000 for a trace of about 1 GB): the same storm on 2 threads
# of N pairs each, traced by tprof and by heaptrack, and tprof summary against heaptrack_print on
# those traces (time, CPU and peak memory, best of 2). It takes minutes and a few GB of disk.
if [ -n "${STORM_BIG_PAIRS:-}" ]; then
	echo
	rm -f big.trace hbig.*
	TPROF_QUIET=1 TPROF_OUTPUT=big.trace LD_PRELOAD="$B/libtprof.so" "$STORM" 2 "$STORM_BIG_PAIRS" >/dev/null
	flock -s big.trace true
	line="large trace: storm of 2 x $STORM_BIG_PAIRS pairs, tprof $(stat -c %s big.trace) bytes"
	if [ $have_heaptrack = 1 ]; then
		heaptrack -o hbig "$STORM" 2 "$STORM_BIG_PAIRS" >/dev/null 2>&1
		line="$line, heaptrack $(stat -c %s "$(ls hbig.* | head -1)") bytes"
	fi
	echo "$line"
	"$B/tprof" summary big.trace >/dev/null # the symbol cache, as above
	big() { # NAME COMMAND...: the best wall time of 2 runs, with that run's CPU time and peak RSS
		local name=$1 best=999999 cpu=0 rss=0 r w u s m
		shift
		for r in 1 2; do
			/usr/bin/time -f '%e %U %S %M' -o big.txt "$@" >/dev/null 2>&1
			read -r w u s m <big.txt
			if awk -v a="$w" -v b="$best" 'BEGIN{exit !(a < b)}'; then
				best=$w cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.1f", u + s}') rss=$m
			fi
		done
		echo "  $name: $best s (cpu $cpu s, peak RSS $rss KiB)"
		big_s=$best
	}
	big "tprof summary" "$B/tprof" summary big.trace
	ts=$big_s
	if [ $have_heaptrack = 1 ]; then
		big heaptrack_print heaptrack_print "$(ls hbig.* | head -1)"
		echo "  summary $(awk -v a="$ts" -v b="$big_s" 'BEGIN{printf "%.1f", b / (a > 0 ? a : 0.01)}')x faster"
	fi
	rm -f big.trace hbig.*
fi
