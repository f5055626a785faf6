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
kcall() { # bare|traced -> ns per call of one kernel_bench run
	if [ "$1" = traced ]; then
		TPROF_QUIET=1 TPROF_OUTPUT="$tmp/k.%p.trace" LD_PRELOAD="$B/libtprof.so" "$B/progs/kernel_bench" "$N"
		rm -f "$tmp"/k.*.trace
	else
		"$B/progs/kernel_bench" "$N"
	fi | awk '{print $1}'
}
: >"$tmp/kb" ; : >"$tmp/kt"
for _ in $(seq "$RUNS"); do
	kcall bare >>"$tmp/kb"
	kcall traced >>"$tmp/kt"
done
bare=$(best <"$tmp/kb")
traced=$(best <"$tmp/kt")
extra=$(awk -v a="$bare" -v b="$traced" 'BEGIN { printf "%.1f", b - a }')
echo "kernel call (trivial tnn_add, 16 floats, $N calls in batches of 10000, median batch, best of $RUNS runs): bare $bare ns, traced $traced ns: +$extra ns per wrapped call (target <= 25 ns)"

GPT="$B/transformer_bench --steps ${GPT_STEPS:-8} --gen 0"
run_once() { # bare|traced|nostack -> wall seconds of one transformer_bench run
	local s e
	s=$(date +%s.%N)
	case $1 in
	traced) TPROF_QUIET=1 TPROF_OUTPUT="$tmp/t.%p.trace" LD_PRELOAD="$B/libtprof.so" $GPT >"$tmp/out" ;;
	nostack) TPROF_DEPTH=0 TPROF_QUIET=1 TPROF_OUTPUT="$tmp/t.%p.trace" LD_PRELOAD="$B/libtprof.so" $GPT >"$tmp/out" ;;
	*) $GPT >"$tmp/out" ;;
	esac
	e=$(date +%s.%N)
	awk '/ms_per_step/ { print $3 }' "$tmp/out" >>"$tmp/$1.step"
	rm -f "$tmp"/t.*.trace
	awk -v s="$s" -v e="$e" 'BEGIN { printf "%.4f\n", e - s }'
}
# Runs alternate, so that a drifting machine (a neighbour, the clock) weighs on all three alike.
: >"$tmp/bare" ; : >"$tmp/traced" ; : >"$tmp/nostack" ; : >"$tmp/bare.step" ; : >"$tmp/traced.step" ; : >"$tmp/nostack.step"
for _ in $(seq "$RUNS"); do
	for m in bare traced nostack; do
		run_once $m >>"$tmp/$m"
	done
done
tb=$(best <"$tmp/bare")
tt=$(best <"$tmp/traced")
tn=$(best <"$tmp/nostack")
awk -v a="$tb" -v b="$tt" -v c="$tn" 'BEGIN { printf "transformer_bench (default config, 8 steps, best of runs): bare %.3f s, traced %.3f s: %+.2f %% (target within 1 %%); traced without stacks %.3f s: %+.2f %%\n", a, b, 100 * (b - a) / a, c, 100 * (c - a) / a }'
sb=$(best <"$tmp/bare.step")
st=$(best <"$tmp/traced.step")
awk -v a="$sb" -v b="$st" 'BEGIN { printf "transformer_bench steady state (its own ms per step, steps 2..8, best of runs): bare %.1f ms, traced %.1f ms: %+.2f %%\n", a, b, 100 * (b - a) / a }'
