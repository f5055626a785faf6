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
}

@test "transformer_bench --config gpt2-small has 124,439,808 parameters" {
	run "$B/transformer_bench" --config gpt2-small --steps 0 --gen 0
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\nparams 124439808\n'* ]]
}
