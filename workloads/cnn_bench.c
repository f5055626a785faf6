/* cnn_bench: a convolutional classifier (stacks of conv2d + ReLU + 2×2 max-pool, then a linear head and
 * softmax cross-entropy) trained with SGD (momentum) or AdamW on synthetic images: each class has a fixed
 * random template and a sample is its template plus uniform noise, so the task is learnable. Parameters,
 * optimizer state and activations are allocated once, before the first step. */
#include "bench_flops.h"
#include "bench_util.h"
#include "tprof.h"

#define MAX_CONV 8

int main(int argc, char **argv)
{
	int Cin = 3, HW = 32, K = 3, S = 1, P = 1, pool = 2, ncls = 10, B = 64, steps = 100, log_every = 10, seed = 7;
	const char *chan_s = "32,64", *optim = "sgd";
	float lr = 0.01f, momentum = 0.9f, wd = 0.0f, noise = 4.0f;
	struct opt opts[] = {
		{"in-channels", OPT_INT, &Cin, "input image channels"},
		{"image", OPT_INT, &HW, "input image height and width"},
		{"channels", OPT_STR, &chan_s, "output channels of each conv layer, comma-separated"},
		{"kernel", OPT_INT, &K, "conv kernel size (square)"},
		{"stride", OPT_INT, &S, "conv stride"},
		{"padding", OPT_INT, &P, "conv zero padding"},
		{"pool", OPT_INT, &pool, "max-pool window and stride after each conv (1: none)"},
		{"classes", OPT_INT, &ncls, "output classes"},
		{"batch", OPT_INT, &B, "images per step"},
		{"steps", OPT_INT, &steps, "training steps"},
		{"optim", OPT_STR, &optim, "optimizer: sgd (with momentum) or adamw"},
		{"lr", OPT_FLOAT, &lr, "learning rate"},
		{"momentum", OPT_FLOAT, &momentum, "SGD momentum"},
		{"wd", OPT_FLOAT, &wd, "weight decay"},
		{"noise", OPT_FLOAT, &noise, "noise amplitude added to the class templates"},
		{"log-every", OPT_INT, &log_every, "print the loss every N steps (and the first and last)"},
		{"seed", OPT_INT, &seed, "random seed"},
	};
	opt_parse(argc, argv, "Conv net (conv/relu/pool stacks + linear head) trained on synthetic class templates.",
		  opts, sizeof opts / sizeof opts[0]);
	int ch[MAX_CONV + 1], NC = parse_int_list(chan_s, ch + 1, MAX_CONV);
	int adamw = strcmp(optim, "adamw") == 0;
	if (!adamw && strcmp(optim, "sgd") != 0) {
		fprintf(stderr, "unknown --optim '%s' (sgd, adamw)\n", optim);
		return 2;
	}
	if (NC < 1 || Cin < 1 || HW < 1 || K < 1 || S < 1 || P < 0 || pool < 1 || ncls < 2 || B < 1 || steps < 0 ||
	    log_every < 1) {
		fprintf(stderr, "bad dimensions: --channels needs one or more positive widths, the others positive "
				"values (--padding 0 or more; try --help)\n");
		return 2;
	}
	if ((long)HW + 2L * P > 65536 || K > 65536) { /* sizes are ints: keep the products far from overflow */
		fprintf(stderr, "bad dimensions: --image + 2 x --padding and --kernel at most 65536\n");
		return 2;
	}
	ch[0] = Cin;
	/* spatial sizes: conv i maps hw[i] -> co[i], pooling maps co[i] -> hw[i+1] */
	int hw[MAX_CONV + 1], co[MAX_CONV];
	hw[0] = HW;
	for (int i = 0; i < NC; i++) {
		co[i] = TNN_CONV_OUT(hw[i], K, S, P);
		hw[i + 1] = pool > 1 ? TNN_CONV_OUT(co[i], pool, pool, 0) : co[i];
		if (co[i] < 1 || hw[i + 1] < 1) {
			fprintf(stderr, "layer %d: the image shrinks to nothing\n", i + 1);
			return 2;
		}
		long long act = (long long)B * ch[i + 1] * co[i] * co[i], col = (long long)ch[i] * K * K * co[i] * co[i];
		if (act > (1LL << 31) || col > (1LL << 31) || (long long)ch[i + 1] * ch[i] * K * K > (1LL << 31)) {
			fprintf(stderr, "layer %d: too large (its activations, columns or weights pass 2^31 floats)\n", i + 1);
			return 2;
		}
	}
	if ((long long)ncls * ch[NC] * hw[NC] * hw[NC] > (1LL << 31) || (long long)B * ncls > (1LL << 31)) {
		fprintf(stderr, "the head is too large (classes x features passes 2^31)\n");
		return 2;
	}
	int F = ch[NC] * hw[NC] * hw[NC]; /* flattened features into the head */

	// --- parameters: conv i weight (ch[i+1], ch[i], K, K) and bias (ch[i+1]); head (ncls, F) and (ncls)
	uint64_t rng = 0xC0FFEEULL ^ ((uint64_t)seed << 20);
	size_t off[MAX_CONV + 1], nparams = 0;
	for (int i = 0; i < NC; i++) {
		off[i] = nparams;
		nparams += (size_t)ch[i + 1] * ch[i] * K * K + ch[i + 1];
	}
	off[NC] = nparams;
	nparams += (size_t)ncls * F + ncls;
	float *params = xcalloc(nparams, sizeof(float)); // (nparams)
	float *grads = xcalloc(nparams, sizeof(float));  // (nparams)
	float *m = xcalloc(nparams, sizeof(float));      // (nparams): momentum or AdamW first moment
	float *v = adamw ? xcalloc(nparams, sizeof(float)) : NULL; // (nparams): AdamW second moment
	for (int i = 0; i < NC; i++)
		fill_normal(params + off[i], (size_t)ch[i + 1] * ch[i] * K * K, sqrtf(2.0f / (ch[i] * K * K)), &rng);
	fill_normal(params + off[NC], (size_t)ncls * F, sqrtf(1.0f / F), &rng);

	// --- data: class templates (ncls, Cin, HW, HW), a batch (B, Cin, HW, HW) and labels (B)
	size_t img = (size_t)Cin * HW * HW;
	float *templates = xmalloc(ncls * img * sizeof(float));
	fill_normal(templates, ncls * img, 1.0f, &rng);
	float *x = xmalloc(B * img * sizeof(float));
	int *labels = xmalloc(B * sizeof(int));

	// --- activations, allocated once: per conv layer the ReLU'd conv output and the pooled output
	float *conv[MAX_CONV], *pooled[MAX_CONV + 1], *dconv[MAX_CONV], *dpooled[MAX_CONV + 1];
	int *argmax[MAX_CONV];
	size_t act_floats = 0, max_nc = 0;
	pooled[0] = x;
	for (int i = 0; i < NC; i++) {
		size_t nc = (size_t)B * ch[i + 1] * co[i] * co[i], np = (size_t)B * ch[i + 1] * hw[i + 1] * hw[i + 1];
		conv[i] = xmalloc(nc * sizeof(float));         // (B, ch[i+1], co[i], co[i])
		dconv[i] = xmalloc(nc * sizeof(float));        // (B, ch[i+1], co[i], co[i])
		argmax[i] = xmalloc(np * sizeof(int));         // (B, ch[i+1], hw[i+1], hw[i+1])
		pooled[i + 1] = pool > 1 ? xmalloc(np * sizeof(float)) : conv[i]; // (B, ch[i+1], hw[i+1], hw[i+1])
		dpooled[i + 1] = xmalloc(np * sizeof(float));  // (B, ch[i+1], hw[i+1], hw[i+1])
		act_floats += 2 * nc + np + (pool > 1 ? 2 * np : 0);
		max_nc = nc > max_nc ? nc : max_nc;
	}
	float *dtmp = xmalloc(max_nc * sizeof(float)); /* gradient of a ReLU output, before the mask */
	act_floats += max_nc;
	float *logits = xmalloc((size_t)B * ncls * sizeof(float)); // (B, ncls)
	float *probs = xmalloc((size_t)B * ncls * sizeof(float));  // (B, ncls)
	float *dlogits = xmalloc((size_t)B * ncls * sizeof(float)); // (B, ncls)
	float *losses = xmalloc(B * sizeof(float));                 // (B)
	act_floats += 3 * (size_t)B * ncls + B;

	printf("cnn_bench: in-channels %d image %d channels %s kernel %d stride %d padding %d pool %d classes %d "
	       "batch %d steps %d optim %s seed %d backend %s\n",
	       Cin, HW, chan_s, K, S, P, pool, ncls, B, steps, optim, seed, tnn_backend());
	printf("params %zu\n", nparams);
	tprof_param("params", (int64_t)nparams);

	double step_flops = 0;
	float loss = 0;
	struct step_log slog = {.steps = steps, .log_every = log_every, .batch = B};
	for (int s = 1; s <= steps; s++) {
		tprof_step(); /* a step is a whole iteration, batch preparation included */
		for (int b = 0; b < B; b++) { /* not timed */
			labels[b] = (int)(rng_u32(&rng) % (uint32_t)ncls);
			const float *t = templates + labels[b] * img;
			for (size_t i = 0; i < img; i++)
				x[b * img + i] = t[i] + noise * (2.0f * rng_uniform(&rng) - 1.0f);
		}
		double t0 = now_ms(), f0 = bench_flops;
		tprof_range_push("forward");
		// --- forward (ReLU in place: relu(z) > 0 exactly where z > 0, which is all relu_bwd needs)
		for (int i = 0; i < NC; i++) {
			k_conv2d_fwd(conv[i], pooled[i], params + off[i], params + off[i] + (size_t)ch[i + 1] * ch[i] * K * K,
				     B, ch[i], hw[i], hw[i], ch[i + 1], K, S, P);
			k_relu_fwd(conv[i], conv[i], (long)B * ch[i + 1] * co[i] * co[i]);
			if (pool > 1)
				k_maxpool2d_fwd(pooled[i + 1], argmax[i], conv[i], B, ch[i + 1], co[i], co[i], pool, pool);
		}
		k_linear_fwd(logits, pooled[NC], params + off[NC], params + off[NC] + (size_t)ncls * F, B, F, ncls);
		loss = k_crossentropy_fwd(losses, probs, logits, labels, B, ncls);
		tprof_range_pop();
		// --- backward
		tprof_range_push("backward");
		memset(grads, 0, nparams * sizeof(float));
		memset(dlogits, 0, (size_t)B * ncls * sizeof(float));
		k_crossentropy_bwd(dlogits, probs, labels, B, ncls, 1.0f / B);
		memset(dpooled[NC], 0, (size_t)B * F * sizeof(float));
		k_linear_bwd(dpooled[NC], grads + off[NC], grads + off[NC] + (size_t)ncls * F, dlogits, pooled[NC],
			     params + off[NC], B, F, ncls);
		for (int i = NC - 1; i >= 0; i--) {
			long nc = (long)B * ch[i + 1] * co[i] * co[i];
			const float *drelu = dpooled[i + 1]; /* gradient of the ReLU output */
			if (pool > 1) {
				memset(dtmp, 0, nc * sizeof(float));
				k_maxpool2d_bwd(dtmp, dpooled[i + 1], argmax[i], B, ch[i + 1], co[i], co[i], pool, pool);
				drelu = dtmp;
			}
			memset(dconv[i], 0, nc * sizeof(float));
			k_relu_bwd(dconv[i], drelu, conv[i], nc);
			float *dinp = i > 0 ? dpooled[i] : NULL;
			if (dinp)
				memset(dinp, 0, (size_t)B * ch[i] * hw[i] * hw[i] * sizeof(float));
			float *gw = grads + off[i];
			k_conv2d_bwd(dinp, gw, gw + (size_t)ch[i + 1] * ch[i] * K * K, dconv[i], pooled[i], params + off[i], B,
				     ch[i], hw[i], hw[i], ch[i + 1], K, S, P);
		}
		tprof_range_pop();
		tprof_range_push("optimizer");
		if (adamw)
			k_adamw(params, grads, m, v, (long)nparams, s, lr, 0.9f, 0.999f, 1e-8f, wd);
		else
			k_sgd(params, grads, m, (long)nparams, lr, momentum, wd);
		tprof_range_pop();
		if (s == steps)
			tprof_step(); /* the end of the last step */
		double ms = now_ms() - t0;
		step_flops = bench_flops - f0;
		int correct = 0;
		for (int b = 0; b < B; b++) {
			int best = 0;
			for (int k = 1; k < ncls; k++)
				if (probs[b * ncls + k] > probs[b * ncls + best])
					best = k;
			correct += best == labels[b];
		}
		step_log_step(&slog, s, loss, correct, ms, step_flops);
	}
	step_log_summary(&slog);
	print_mem("parameters", nparams * sizeof(float));
	print_mem("gradients", nparams * sizeof(float));
	print_mem("optimizer", (adamw ? 2 : 1) * nparams * sizeof(float));
	print_mem("activations", act_floats * sizeof(float) + B * img * sizeof(float));
	for (int i = 0; i < NC; i++) {
		if (pool > 1)
			free(pooled[i + 1]);
		free(dpooled[i + 1]), free(conv[i]), free(dconv[i]), free(argmax[i]);
	}
	free(dtmp), free(logits), free(probs), free(dlogits), free(losses), free(params), free(grads), free(m), free(v);
	free(templates), free(x), free(labels);
	return 0;
}
