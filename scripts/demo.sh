#!/usr/bin/env bash
# The main job (`make demo`): profile the bundled transformer benchmark under libtprof.so, print the
# report, and draw its four pictures (tprof plot) into the same directory. Falls back to a test program
# when the workloads are not built.
set -eu
BUILD=${BUILD:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/$BUILD/demo"
mkdir -p "$out"
trace="$out/transformer.trace"
rm -f "$trace"
if [ -x "$root/$BUILD/transformer_bench" ]; then
	prog=("$root/$BUILD/transformer_bench" ${DEMO_ARGS:-})
else
	prog=("$root/$BUILD/progs/heap_known")
fi
echo "== tprof record -o $trace -- ${prog[*]}"
"$root/$BUILD/tprof" record -o "$trace" -- "${prog[@]}"
echo
"$root/$BUILD/tprof" report "$trace"
echo
echo "== tprof plot -o $out $trace"
"$root/$BUILD/tprof" plot -o "$out" "$trace"
