#!/usr/bin/env bats
# The bundled workloads at tiny sizes: training lowers the loss, output is identical run to run apart from
# timings, options are listed by --help and checked, binaries run from any directory, and gpt2-small has
# GPT-2 small's parameter count.

setup() {
	ROOT=${TPROF_ROOT:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
	B=${BUILD:-build}
	case $B in /*) ;; *) B=$ROOT/$B ;; esac
	MLP="$B/mlp_bench --input 32 --hidden 64,32 --classes 4 --batch 64 --steps 60 --lr 3e-3"
	CNN="$B/cnn_bench --image 12 --channels 8,8 --classes 4 --batch 16 --steps 40 --noise 1"
	GPT="$B/transformer_bench --vocab 64 --ctx 32 --layers 2 --heads 2 --dmodel 32 --batch 2 --steps 40 --lr 3e-3 --period 12 --gen 8"
}


# drops everything that depends on timing
untimed() { grep -v '^timing' | sed -E 's/ ms [0-9.]+.*$//'; }

lowers_loss() {
	run bash -c "$1 | awk '\$1 == \"step\" { if (!n++) f = \$4; l = \$4 } END { print f, l; exit !(n >= 2 && l < $2 * f) }'"
	echo "losses first, last: $output"
	[ "$status" -eq 0 ]
}

@test "mlp_bench lowers the loss" {
	lowers_loss "$MLP" 0.7
}

@test "cnn_bench lowers the loss (sgd and adamw)" {
	lowers_loss "$CNN" 0.7
	lowers_loss "$CNN --optim adamw --lr 1e-3" 0.7
}

@test "transformer_bench lowers the loss" {
	lowers_loss "$GPT" 0.5
}

@test "benchmark output is identical run to run apart from timings" {
	for cmd in "$MLP" "$CNN" "$GPT"; do
		a=$($cmd | untimed)
		b=$($cmd | untimed)
		[ -n "$a" ]
		[ "$a" = "$b" ] || { diff <(echo "$a") <(echo "$b"); false; }
	done
}

@test "benchmarks report params, FLOPs, timings and memory by kind" {
	for cmd in "$MLP" "$CNN" "$GPT"; do
		out=$($cmd)
		for key in '^params [0-9]+$' '^flops_per_step ' '^timing ms_per_step ' '^memory parameters' '^memory gradients' \
			'^memory optimizer' '^memory activations'; do
			echo "$out" | grep -Eq "$key" || { echo "$cmd: no $key"; false; }
		done
	done
}

@test "benchmarks run from another directory and check their options" {
	cd "$BATS_TEST_TMPDIR"
	for b in mlp_bench cnn_bench transformer_bench; do
		run "$B/$b" --help
		[ "$status" -eq 0 ]
		[[ "$output" == *"--batch"* ]]
		run "$B/$b" --no-such-option
		[ "$status" -eq 2 ]
	done
	run "$B/transformer_bench" --heads 3 --dmodel 32
	[ "$status" -eq 2 ]
	# values out of range, not numbers or not finite, sizes whose products pass int, empty lists and
	# images that shrink to nothing: a message naming the problem and status 2, never a crash
	for args in "mlp_bench --batch 4294967297" "mlp_bench --lr nan" "mlp_bench --hidden 8," "mlp_bench --batch" \
		"cnn_bench --channels ''" "cnn_bench --pool 2147483647 --steps 1" "cnn_bench --padding 2147483647" \
		"cnn_bench --image 3 --channels 2 --kernel 3 --padding 0 --pool 2 --steps 1" \
		"transformer_bench --seq -5" "transformer_bench --vocab 16 --ctx 16 --layers 1 --heads 1 --dmodel 8 --batch 268435457"; do
		run bash -c "'$B/'$args"
		echo "$args: $status $output"
		[ "$status" -eq 2 ]
		[ -n "$output" ]
	done
	run "$B/mlp_bench" --batch
	[[ "$output" == *"--batch needs a value"* ]]
	run "$B/mlp_bench" --lr inf
	[[ "$output" == *"--lr: bad value 'inf'"* ]]
}

@test "a diverging training shows NaN losses on the vector path as on the scalar one" {
	for simd in 1 0; do
		run env TNN_SIMD=$simd "$B/mlp_bench" --input 8 --hidden 8 --classes 3 --batch 4 --steps 3 --lr 1e30 --log-every 1
		echo "$output"
		[[ "$output" == *"step 3 loss nan"* || "$output" == *"step 3 loss -nan"* ]]
	done
}

# valgrind cannot run what AddressSanitizer instrumented (SAN=1)
no_valgrind_san() {
	command -v valgrind >/dev/null || skip "valgrind is not installed"
	! ldd "$B/libtnn.so" | grep -q libasan || skip "libtnn.so is ASan-instrumented (SAN=1): no valgrind"
}

@test "transformer_bench generation with a period shorter than the prompt reads only the pattern (valgrind)" {
	no_valgrind_san
	run valgrind -q --error-exitcode=9 "$B/transformer_bench" --vocab 17 --ctx 8 --layers 2 --heads 2 --dmodel 6 \
		--batch 2 --steps 2 --gen 3 --period 4
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"generation matches"* ]]
}

@test "threads that call the kernels and exit leave no scratch buffer behind (valgrind: nothing lost)" {
	no_valgrind_san
	cd "$BATS_TEST_TMPDIR"
	cat >scr.c <<'C'
#include <pthread.h>
#include "tnn.h"
static float a[64 * 64], b[64 * 64], c[64 * 64];
static void *run(void *x)
{
	(void)x;
	tnn_matmul(c, a, b, NULL, 64, 64, 64, 0);
	tnn_layernorm_bwd(c, NULL, NULL, a, b, a, b, a, 4, 16);
	return NULL;
}
int main(void)
{
	for (int i = 0; i < 8; i++) {
		pthread_t t;
		pthread_create(&t, NULL, run, NULL);
		pthread_join(t, NULL);
	}
	return 0;
}
C
	cc -I"$ROOT/include" -o scr scr.c -L"$B" -ltnn -Wl,-rpath,"$B" -lpthread
	run env OMP_NUM_THREADS=1 valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 ./scr
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"definitely lost: 0 bytes"* || "$output" == *"All heap blocks were freed"* ]]
}

@test "transformer_bench --config gpt2-small has 124,439,808 parameters" {
	run "$B/transformer_bench" --config gpt2-small --steps 0 --gen 0
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\nparams 124439808\n'* ]]
}
