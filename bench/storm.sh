#!/usr/bin/env bash
# Overhead benchmark: a malloc/free storm (tests/progs/storm.c) on 1 and 2 threads, bare, under
# tprof and under heaptrack, measured side by side in one run. Prints the median storm wall time of
# each, the extra time per malloc/free pair, the ratio tprof/heaptrack, the trace sizes, and the
# time to analyze each trace (tprof report vs heaptrack_print). Runs alternate between the three so
# that a noisy neighbour hits all alike; each figure is the best of its runs. Run it on an idle machine.
set -u
BUILD=${BUILD:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
B="$root/$BUILD"
PAIRS=${STORM_PAIRS:-2000000}
STORM="$B/bench/storm_nofp" # -O2, no frame pointers: unwinding must use DWARF CFI, as in Debian's packages
RUNS=${STORM_RUNS:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

wall() { grep -o '"wall_ns":[0-9]*' | cut -d: -f2; }
best() { sort -n | head -1; }

have_heaptrack=1
command -v heaptrack >/dev/null || have_heaptrack=0

printf '%-8s %12s %12s %12s %14s %14s %10s\n' threads bare_ms tprof_ms heaptrack_ms tprof_ns/pair heaptr_ns/pair ratio
for threads in 1 2; do
	per=$((PAIRS / threads))
	: >bare.txt; : >tp.txt; : >ht.txt
	for r in $(seq "$RUNS"); do
		"$STORM" "$threads" "$per" | wall >>bare.txt
		rm -f t.trace
		TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$STORM" "$threads" "$per" | wall >>tp.txt
		if [ $have_heaptrack = 1 ] && [ "$r" -le 3 ]; then
			rm -f hprof.*
			heaptrack -o hprof "$STORM" "$threads" "$per" 2>/dev/null | wall >>ht.txt
		fi
	done
	b=$(best <bare.txt) t=$(best <tp.txt)
	h=$([ -s ht.txt ] && best <ht.txt || echo 0)
	awk -v th="$threads" -v b="$b" -v t="$t" -v h="$h" -v n="$PAIRS" 'BEGIN {
		tx = (t - b) / n; hx = (h - b) / n;
		printf "%-8s %12.1f %12.1f %12.1f %14.1f %14.1f %10s\n", th, b / 1e6, t / 1e6, h / 1e6, tx, hx,
		       (h > 0 ? sprintf("1/%.1f", hx / (tx > 0 ? tx : 0.001)) : "n/a") }'
done

echo
tsize=$(stat -c %s t.trace)
echo "trace size for the last 2-thread run ($((PAIRS * 2)) events): tprof $tsize bytes ($(awk -v s="$tsize" -v n="$PAIRS" 'BEGIN{printf "%.2f", s/(2*n)}') B/event)"
if [ $have_heaptrack = 1 ]; then
	hfile=$(ls hprof.* | head -1)
	hsize=$(stat -c %s "$hfile")
	echo "                                               heaptrack $hsize bytes ($(awk -v s="$hsize" -v n="$PAIRS" 'BEGIN{printf "%.2f", s/(2*n)}') B/event)"
	s=$(date +%s%N); "$B/tprof" report t.trace >/dev/null; e=$(date +%s%N)
	s2=$(date +%s%N); heaptrack_print "$hfile" >/dev/null 2>&1; e2=$(date +%s%N)
	echo "analysis time: tprof report $(((e - s) / 1000000)) ms, heaptrack_print $(((e2 - s2) / 1000000)) ms"
fi
