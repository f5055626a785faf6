#!/usr/bin/env bash
# Traces with many distinct call stacks: tests/progs/many_stacks makes N allocations from up to
# 2^DEPTH different paths of DEPTH calls that share their callers (as a recursive program's or an
# interpreter's stacks do). Prints, side by side, the trace sizes of tprof and heaptrack, and the
# time (best of RUNS) and peak memory of tprof summary against heaptrack_print's on them.
# Run it on an idle machine.
set -u
BUILD=${BUILD:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
B="$root/$BUILD"
N=${STACKS_N:-2000000}
DEPTH=${STACKS_DEPTH:-19}
RUNS=${STACKS_RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export TPROF_SYMBOL_CACHE="$work/symbols"

TPROF_QUIET=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/many_stacks" "$N" "$DEPTH"
flock -s t.trace true
stacks=$("$B/tprof" summary --json t.trace | sed -n 's/.*"sites":\([0-9]*\).*/\1/p')
tsize=$(stat -c %s t.trace)
line="many stacks ($N allocations, $stacks stacks $DEPTH calls deep and more): tprof trace $tsize bytes"
if ! command -v heaptrack >/dev/null; then
	echo "$line (no heaptrack)"
	exit 0
fi
heaptrack -o h "$B/progs/many_stacks" "$N" "$DEPTH" >/dev/null 2>&1
hfile=$(ls h.* | head -1)
hsize=$(stat -c %s "$hfile")
echo "$line, heaptrack $hsize bytes: tprof/heaptrack $(awk -v a="$tsize" -v b="$hsize" 'BEGIN{printf "%.2f", a/b}')"

# best wall time and the peak RSS of that run, over RUNS runs alternating the two analyzers (the
# symbol cache filled first, as heaptrack resolved its names while recording)
"$B/tprof" summary t.trace >/dev/null
ts=999999 tm=0 hs=999999 hm=0
for r in $(seq "$RUNS"); do
	/usr/bin/time -f '%e %M' -o m.txt "$B/tprof" summary t.trace >/dev/null 2>&1
	read -r s m <m.txt
	ms=$(awk -v s="$s" 'BEGIN{printf "%d", s * 1000}')
	[ "$ms" -lt "$ts" ] && ts=$ms tm=$m
	/usr/bin/time -f '%e %M' -o m.txt heaptrack_print "$hfile" >/dev/null 2>&1
	read -r s m <m.txt
	ms=$(awk -v s="$s" 'BEGIN{printf "%d", s * 1000}')
	[ "$ms" -lt "$hs" ] && hs=$ms hm=$m
done
echo "many stacks: tprof summary $ts ms ($tm KiB), heaptrack_print $hs ms ($hm KiB): summary $(awk -v a="$ts" -v b="$hs" 'BEGIN{printf "%.1f", b/(a>0?a:1)}')x faster"
