#!/usr/bin/env bash
# Cost of kernel interposition: the extra time per wrapped kernel call (kernel_bench: a trivial tnn_add
# on 16 floats from libktrivial.so, no OpenMP, no allocation, N calls, bare vs under libtprof.so; target
# <= 25 ns), and transformer_bench under tprof vs
# bare (target within 1 %). Best of several runs each, to shed the noise of a shared machine.
set -u
here=$(cd "$(dirname "$0")" && pwd)
B=${BUILD:-build}
case $B in /*) ;; *) B=$here/../$B ;; esac
N=${KERNEL_CALLS:-5000000}
RUNS=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

best() { sort -g | head -1; }
per_call() { # bare|traced -> best ns per call
	for _ in $(seq "$RUNS"); do
		if [ "$1" = traced ]; then
			TPROF_QUIET=1 TPROF_OUTPUT="$tmp/k.%p.trace" LD_PRELOAD="$B/libtprof.so" "$B/progs/kernel_bench" "$N"
		else
			"$B/progs/kernel_bench" "$N"
		fi | awk '{print $1}'
	done | best
}
bare=$(per_call bare)
traced=$(per_call traced)
extra=$(awk -v a="$bare" -v b="$traced" 'BEGIN { printf "%.1f", b - a }')
echo "kernel call (trivial tnn_add, 16 floats, $N calls, best of $RUNS): bare $bare ns, traced $traced ns: +$extra ns per wrapped call (target <= 25 ns)"

GPT="$B/transformer_bench --steps ${GPT_STEPS:-8} --gen 0"
wall() { # bare|traced -> best wall seconds of transformer_bench
	for _ in $(seq "$RUNS"); do
		s=$(date +%s.%N)
		if [ "$1" = traced ]; then
			TPROF_QUIET=1 TPROF_OUTPUT="$tmp/t.%p.trace" LD_PRELOAD="$B/libtprof.so" $GPT >/dev/null
		else
			$GPT >/dev/null
		fi
		e=$(date +%s.%N)
		rm -f "$tmp"/t.*.trace
		awk -v s="$s" -v e="$e" 'BEGIN { printf "%.4f\n", e - s }'
	done | best
}
tb=$(wall bare)
tt=$(wall traced)
awk -v a="$tb" -v b="$tt" 'BEGIN { printf "transformer_bench (default config, 8 steps, best of runs): bare %.3f s, traced %.3f s: %+.2f %% (target within 1 %%)\n", a, b, 100 * (b - a) / a }'
