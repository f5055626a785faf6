#!/usr/bin/env bash
# The leak scan's cost at exit: a heap of MIB MiB of small linked blocks (bench/bigheap.c: half still
# reachable, half lost) scanned by tprof's recorder (the time it prints with TPROF_DEBUG=1) and by
# valgrind memcheck (--leak-check=full minus --leak-check=no on the same program: the rest of a
# valgrind run is the same in both), and the wall time the scan adds to the traced run (leak scan
# on minus off). Best of RUNS runs each. Run it on an idle machine.
set -u
BUILD=${BUILD:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
B="$root/$BUILD"
RUNS=${LEAKSCAN_RUNS:-3}
MIB=${LEAKSCAN_MIB:-1024}
BYTES=${LEAKSCAN_BYTES:-256}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
best() { sort -n | head -1; }
prog=("$B/bench/bigheap" "$MIB" "$BYTES")
: >scan.txt; : >on.txt; : >off.txt; : >vfull.txt; : >vno.txt
for r in $(seq "$RUNS"); do
	rm -f t.trace*
	TPROF_DEBUG=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "${prog[@]}" 2>err.txt >/dev/null
	sed -n 's/.*leak scan of pid [0-9]*: .* in \([0-9.]*\) ms.*/\1/p' err.txt >>scan.txt
	rm -f t.trace*
	ms env TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "${prog[@]}" >>on.txt
	rm -f t.trace*
	ms env TPROF_LEAKSCAN=0 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "${prog[@]}" >>off.txt
	if command -v valgrind >/dev/null; then
		ms valgrind --leak-check=full --show-leak-kinds=all "${prog[@]}" >>vfull.txt
		ms valgrind --leak-check=no "${prog[@]}" >>vno.txt
	fi
done
scan=$(sort -n scan.txt | head -1)
on=$(best <on.txt) off=$(best <off.txt)
echo "heap: $MIB MiB in blocks of $BYTES bytes, best of $RUNS"
printf '  %-44s %10s ms\n' "tprof's scan (recorder, TPROF_DEBUG)" "$scan"
printf '  %-44s %10s ms\n' "traced run, scan on minus off (wall)" "$((on - off))"
if [ -s vfull.txt ]; then
	vf=$(best <vfull.txt) vn=$(best <vno.txt)
	printf '  %-44s %10s ms\n' "valgrind: --leak-check=full minus =no" "$((vf - vn))"
	awk -v t="$scan" -v v="$((vf - vn))" 'BEGIN { if (v > 0) printf "  tprof scan / valgrind scan: %.2f\n", t / v }'
fi
