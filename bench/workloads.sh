#!/usr/bin/env bash
# Workload benchmarks, called by bench/run.sh (BUILD in the environment, default build): the machine's FP32
# FMA peak (one core, all cores), n³ GEMM throughput of tnn_matmul and of OpenBLAS's cblas_sgemm measured
# side by side, each as a share of the all-core peak, then transformer_bench's training step at its default
# shapes (vocab 2048, ctx 128, d_model 256, 4 layers, 4 heads, batch 4; PyTorch reference 114 ms/step).
# Every figure is a best of several runs: the machine may be shared. Knobs: GEMM_SIZE (1024), RUNS (3).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
N=${GEMM_SIZE:-1024}
RUNS=${RUNS:-3}
for b in bench_gemm transformer_bench; do
	[ -x "$BUILD/$b" ] || { echo "workloads: $BUILD/$b is missing (make $BUILD/$b)" >&2; exit 1; }
done

get() { awk -v k="$1" '$1 == k { print $2 }'; }
best() { sort -g | tail -1; }  # largest of the numbers on stdin
least() { sort -g | head -1; }

echo "== workloads: GEMM ${N}^3 vs FP32 FMA peak (best of $RUNS runs)"
outs=()
for _ in $(seq "$RUNS"); do outs+=("$("$BUILD/bench_gemm" --size "$N")"); done
all() { for o in "${outs[@]}"; do printf '%s\n' "$o" | get "$1"; done; }
p1=$(all peak_gflops_1core | best)
pn=$(all peak_gflops_all | best)
ours=$(all tnn_gflops | best)
blas=$(all openblas_gflops | grep -v n/a | best || true)
threads=$(all threads | head -1)
backend=$(all backend | head -1)
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", 100 * a / b }'; }
printf '%-34s %8.1f GFLOP/s\n' "FMA peak, 1 core" "$p1"
printf '%-34s %8.1f GFLOP/s\n' "FMA peak, $threads threads" "$pn"
printf '%-34s %8.1f GFLOP/s  %3s%% of peak\n' "tnn_matmul ($backend)" "$ours" "$(pct "$ours" "$pn")"
if [ -n "$blas" ]; then
	printf '%-34s %8.1f GFLOP/s  %3s%% of peak\n' "OpenBLAS cblas_sgemm" "$blas" "$(pct "$blas" "$pn")"
else
	printf '%-34s %8s\n' "OpenBLAS cblas_sgemm" "n/a"
fi

echo "== workloads: transformer_bench training step, default shapes (best of $RUNS runs of 15 steps)"
ms=()
for _ in $(seq "$RUNS"); do
	ms+=("$("$BUILD/transformer_bench" --steps 15 --gen 0 | awk '$1 == "timing" && $2 == "ms_per_step" { print $3 }')")
done
t=$(printf '%s\n' "${ms[@]}" | least)
printf '%-34s %8.1f ms/step (runs: %s; PyTorch reference 114 ms/step)\n' "transformer_bench" "$t" "${ms[*]}"
