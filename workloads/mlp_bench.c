/* mlp_bench: a multilayer perceptron classifier (linear + ReLU hidden layers, linear head, softmax
 * cross-entropy) trained with AdamW on synthetic data: inputs uniform in [-1, 1), labels given by a fixed
 * random linear teacher, so the task is learnable. Parameters and optimizer state are allocated once;
 * activations and their gradients are allocated and freed every step, as many training loops do. */
#include "bench_flops.h"
#include "bench_util.h"
#include "tprof.h"

#define MAX_LAYERS 16

int main(int argc, char **argv)
{
	int D = 784, K = 10, B = 256, steps = 200, log_every = 10, seed = 1;
	const char *hidden_s = "1024,1024";
	float lr = 1e-3f, wd = 0.0f;
	struct opt opts[] = {
		{"input", OPT_INT, &D, "input features"},
		{"hidden", OPT_STR, &hidden_s, "hidden layer widths, comma-separated (depth = count)"},
		{"classes", OPT_INT, &K, "output classes"},
		{"batch", OPT_INT, &B, "samples per step"},
		{"steps", OPT_INT, &steps, "training steps"},
		{"lr", OPT_FLOAT, &lr, "AdamW learning rate"},
		{"wd", OPT_FLOAT, &wd, "AdamW weight decay"},
		{"log-every", OPT_INT, &log_every, "print the loss every N steps (and the first and last)"},
		{"seed", OPT_INT, &seed, "random seed"},
	};
	opt_parse(argc, argv, "MLP classifier trained with AdamW on a synthetic teacher-labelled task.", opts,
		  sizeof opts / sizeof opts[0]);
	int width[MAX_LAYERS + 2], nh = parse_int_list(hidden_s, width + 1, MAX_LAYERS);
	if (nh < 0 || D < 1 || K < 2 || B < 1 || steps < 0 || log_every < 1) {
		fprintf(stderr, "bad dimensions (try --help)\n");
		return 2;
	}
	int NL = nh + 1; /* linear layers */
	width[0] = D, width[NL] = K;
	for (int l = 0; l <= NL; l++)
		if ((long long)B * width[l] > (1LL << 31) || (l < NL && (long long)width[l] * width[l + 1] > (1LL << 31))) {
			fprintf(stderr, "dimensions too large (batch x width and width x width at most 2^31)\n");
			return 2;
		}

	// --- parameters, gradients, AdamW state: allocated once
	uint64_t rng = 0x51ED2701ULL ^ ((uint64_t)seed << 32);
	size_t nparams = 0, off[MAX_LAYERS + 2];
	for (int l = 0; l < NL; l++) {
		off[l] = nparams;
		nparams += (size_t)width[l + 1] * width[l] + width[l + 1];
	}
	float *params = xmalloc(nparams * sizeof(float)); // per layer: W (out, in) then b (out)
	float *grads = xcalloc(nparams, sizeof(float));   // (nparams)
	float *m = xcalloc(nparams, sizeof(float));       // (nparams)
	float *v = xcalloc(nparams, sizeof(float));       // (nparams)
	for (int l = 0; l < NL; l++) {
		size_t nw = (size_t)width[l + 1] * width[l];
		fill_normal(params + off[l], nw, sqrtf(2.0f / width[l]), &rng); /* He init */
		memset(params + off[l] + nw, 0, width[l + 1] * sizeof(float));
	}
	float *teacher = xmalloc((size_t)K * D * sizeof(float)); // (K, D)
	fill_normal(teacher, (size_t)K * D, 1.0f, &rng);
	float *x = xmalloc((size_t)B * D * sizeof(float));      // (B, D)
	float *tlogits = xmalloc((size_t)B * K * sizeof(float)); // (B, K)
	int *labels = xmalloc(B * sizeof(int));                 // (B)

	printf("mlp_bench: input %d hidden %s classes %d batch %d steps %d seed %d backend %s\n", D, hidden_s, K, B,
	       steps, seed, tnn_backend());
	printf("params %zu\n", nparams);
	tprof_param("params", (int64_t)nparams);

	size_t act_floats = 0;
	double step_flops = 0;
	float loss = 0;
	struct step_log slog = {.steps = steps, .log_every = log_every, .batch = B};
	for (int s = 1; s <= steps; s++) {
		tprof_step(); /* a step is a whole iteration, batch preparation included */
		// --- synthetic batch (not timed, not counted)
		for (size_t i = 0; i < (size_t)B * D; i++)
			x[i] = 2.0f * rng_uniform(&rng) - 1.0f;
		/* the teacher's logits by a plain loop, not a kernel of libtnn: tprof ops would count
		 * its FLOPs in the step, which flops_per_step (the training's) leaves out */
		for (int b = 0; b < B; b++)
			for (int k = 0; k < K; k++) {
				float acc = 0;
				for (int d = 0; d < D; d++)
					acc += x[(size_t)b * D + d] * teacher[(size_t)k * D + d];
				tlogits[b * K + k] = acc;
			}
		for (int b = 0; b < B; b++) {
			int best = 0;
			for (int k = 1; k < K; k++)
				if (tlogits[b * K + k] > tlogits[b * K + best])
					best = k;
			labels[b] = best;
		}

		double t0 = now_ms(), f0 = bench_flops;
		tprof_range_push("forward");
		// --- per-step activations: h[l] (B, width[l]) is the input of linear layer l (h[0] = x)
		float *h[MAX_LAYERS + 2], *dh[MAX_LAYERS + 2];
		act_floats = 0;
		h[0] = x;
		for (int l = 1; l <= NL; l++) {
			h[l] = xmalloc((size_t)B * width[l] * sizeof(float));  // (B, width[l])
			dh[l] = xcalloc((size_t)B * width[l], sizeof(float)); // (B, width[l])
			act_floats += 2 * (size_t)B * width[l];
		}
		float *probs = xmalloc((size_t)B * K * sizeof(float)); // (B, K)
		float *losses = xmalloc(B * sizeof(float));          // (B)
		act_floats += (size_t)B * K + B;

		// --- forward: hidden layers apply ReLU in place (relu(z) > 0 exactly where z > 0)
		for (int l = 0; l < NL; l++) {
			const float *W = params + off[l], *bias = W + (size_t)width[l + 1] * width[l];
			k_linear_fwd(h[l + 1], h[l], W, bias, B, width[l], width[l + 1]);
			if (l + 1 < NL)
				k_relu_fwd(h[l + 1], h[l + 1], (long)B * width[l + 1]);
		}
		loss = k_crossentropy_fwd(losses, probs, h[NL], labels, B, K);

		tprof_range_pop();
		// --- backward
		tprof_range_push("backward");
		memset(grads, 0, nparams * sizeof(float));
		k_crossentropy_bwd(dh[NL], probs, labels, B, K, 1.0f / B);
		for (int l = NL - 1; l >= 0; l--) {
			const float *W = params + off[l];
			float *gW = grads + off[l], *gb = gW + (size_t)width[l + 1] * width[l];
			if (l + 1 < NL) { /* through the in-place ReLU: dz = dh where h > 0 */
				float *dz = xcalloc((size_t)B * width[l + 1], sizeof(float)); // (B, width[l+1])
				k_relu_bwd(dz, dh[l + 1], h[l + 1], (long)B * width[l + 1]);
				memcpy(dh[l + 1], dz, (size_t)B * width[l + 1] * sizeof(float));
				free(dz);
			}
			k_linear_bwd(l > 0 ? dh[l] : NULL, gW, gb, dh[l + 1], h[l], W, B, width[l], width[l + 1]);
		}
		tprof_range_pop();
		tprof_range_push("optimizer");
		k_adamw(params, grads, m, v, (long)nparams, s, lr, 0.9f, 0.999f, 1e-8f, wd);
		tprof_range_pop();
		if (s == steps)
			tprof_step(); /* the end of the last step */

		int correct = 0;
		for (int b = 0; b < B; b++) {
			int best = 0;
			for (int k = 1; k < K; k++)
				if (probs[b * K + k] > probs[b * K + best])
					best = k;
			correct += best == labels[b];
		}
		for (int l = 1; l <= NL; l++)
			free(h[l]), free(dh[l]);
		free(probs), free(losses);
		double ms = now_ms() - t0;
		step_flops = bench_flops - f0;
		step_log_step(&slog, s, loss, correct, ms, step_flops);
	}
	step_log_summary(&slog);
	print_mem("parameters", nparams * sizeof(float));
	print_mem("gradients", nparams * sizeof(float));
	print_mem("optimizer", 2 * nparams * sizeof(float));
	print_mem("activations", act_floats * sizeof(float));
	free(params), free(grads), free(m), free(v), free(teacher), free(x), free(tlogits), free(labels);
	return 0;
}
