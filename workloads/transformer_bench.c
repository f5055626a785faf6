/* transformer_bench: a GPT-2-style decoder (learned position embeddings, pre-LayerNorm blocks, GELU MLP,
 * tied input/output embeddings, GPT-2's biases) trained with AdamW on a synthetic, learnable token stream
 * (a random sequence repeated), then used for greedy generation with a KV cache. All compute goes through
 * libtnn. Parameters, gradients and optimizer state are allocated once; forward activations once, on the
 * first step; backward scratch is allocated and freed every step. --config gpt2-small selects GPT-2 small
 * (124,439,808 parameters). */
#include "bench_flops.h"
#include "tprof.h"
#include "bench_util.h"

// ----------------------------------------------------------------------------
// configuration

struct config {
	int V, maxT, L, NH, C; /* vocab, context (position table), layers, heads, d_model */
};

// ----------------------------------------------------------------------------
// parameters: one allocation, carved into tensors

#define NPARAM 16
struct params {
	float *wte;      // (V, C), also the output projection
	float *wpe;      // (maxT, C)
	float *ln1w;     // (L, C)
	float *ln1b;     // (L, C)
	float *qkvw;     // (L, 3C, C)
	float *qkvb;     // (L, 3C)
	float *attprojw; // (L, C, C)
	float *attprojb; // (L, C)
	float *ln2w;     // (L, C)
	float *ln2b;     // (L, C)
	float *fcw;      // (L, 4C, C)
	float *fcb;      // (L, 4C)
	float *fcprojw;  // (L, C, 4C)
	float *fcprojb;  // (L, C)
	float *lnfw;     // (C)
	float *lnfb;     // (C)
};

static void param_sizes(const struct config *c, size_t *s)
{
	size_t V = c->V, T = c->maxT, L = c->L, C = c->C;
	size_t sz[NPARAM] = {V * C, T * C,     L * C,	  L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C,
			     L * C, L * C,     L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C, C, C};
	memcpy(s, sz, sizeof sz);
}

/* Points the tensors of p into mem (at least total floats); returns the total. */
static size_t param_layout(const struct config *c, struct params *p, float *mem)
{
	size_t s[NPARAM], total = 0;
	param_sizes(c, s);
	float **t = (float **)p;
	for (int i = 0; i < NPARAM; i++) {
		if (mem)
			t[i] = mem + total;
		total += s[i];
	}
	return total;
}

// ----------------------------------------------------------------------------
// forward activations, kept for the backward pass

#define NACT 22
struct acts {
	float *encoded;   // (B, T, C)
	float *ln1;       // (L, B, T, C)
	float *ln1_mean;  // (L, B, T)
	float *ln1_rstd;  // (L, B, T)
	float *qkv;       // (L, B, T, 3C)
	float *atty;      // (L, B, T, C)
	float *att;       // (L, B, NH, T, T)
	float *attproj;   // (L, B, T, C)
	float *residual2; // (L, B, T, C)
	float *ln2;       // (L, B, T, C)
	float *ln2_mean;  // (L, B, T)
	float *ln2_rstd;  // (L, B, T)
	float *fch;       // (L, B, T, 4C)
	float *fch_gelu;  // (L, B, T, 4C)
	float *fcproj;    // (L, B, T, C)
	float *residual3; // (L, B, T, C)
	float *lnf;       // (B, T, C)
	float *lnf_mean;  // (B, T)
	float *lnf_rstd;  // (B, T)
	float *logits;    // (B, T, V)
	float *probs;     // (B, T, V)
	float *losses;    // (B, T)
};

static size_t act_layout(const struct config *c, int B, int T, struct acts *a, float *mem)
{
	size_t BT = (size_t)B * T, C = c->C, L = c->L, V = c->V;
	size_t s[NACT] = {BT * C,     L * BT * C,  L * BT,     L * BT, L * BT * 3 * C, L * BT * C,
			  L * B * c->NH * (size_t)T * T, L * BT * C, L * BT * C, L * BT * C, L * BT, L * BT,
			  L * BT * 4 * C, L * BT * 4 * C, L * BT * C, L * BT * C, BT * C, BT, BT, BT * V, BT * V, BT};
	size_t total = 0;
	float **t = (float **)a;
	for (int i = 0; i < NACT; i++) {
		if (mem)
			t[i] = mem + total;
		total += s[i];
	}
	return total;
}

// ----------------------------------------------------------------------------
// model

struct model {
	struct config c;
	struct params p, g;    /* parameters and their gradients */
	float *pmem, *gmem;    // (nparams) each
	float *m, *v;          // (nparams) each: AdamW moments
	size_t nparams;
	struct acts a;
	float *amem;           /* forward activations, allocated on the first step */
	int B, T;
	size_t act_floats, scratch_floats;
};

static void model_init(struct model *md, struct config c, uint64_t *rng)
{
	md->c = c;
	md->nparams = param_layout(&c, &md->p, NULL);
	md->pmem = xmalloc(md->nparams * sizeof(float));
	md->gmem = xcalloc(md->nparams, sizeof(float));
	md->m = xcalloc(md->nparams, sizeof(float));
	md->v = xcalloc(md->nparams, sizeof(float));
	param_layout(&c, &md->p, md->pmem);
	param_layout(&c, &md->g, md->gmem);
	/* GPT-2 init: N(0, 0.02), residual projections scaled by 1/sqrt(2L), LayerNorm (1, 0), biases 0 */
	struct params *p = &md->p;
	size_t C = c.C, L = c.L;
	fill_normal(p->wte, (size_t)c.V * C, 0.02f, rng);
	fill_normal(p->wpe, (size_t)c.maxT * C, 0.01f, rng);
	fill_normal(p->qkvw, L * 3 * C * C, 0.02f, rng);
	fill_normal(p->attprojw, L * C * C, 0.02f / sqrtf(2.0f * L), rng);
	fill_normal(p->fcw, L * 4 * C * C, 0.02f, rng);
	fill_normal(p->fcprojw, L * 4 * C * C, 0.02f / sqrtf(2.0f * L), rng);
	for (size_t i = 0; i < L * C; i++)
		p->ln1w[i] = p->ln2w[i] = 1.0f, p->ln1b[i] = p->ln2b[i] = 0.0f, p->attprojb[i] = p->fcprojb[i] = 0.0f;
	for (size_t i = 0; i < C; i++)
		p->lnfw[i] = 1.0f, p->lnfb[i] = 0.0f;
	memset(p->qkvb, 0, L * 3 * C * sizeof(float));
	memset(p->fcb, 0, L * 4 * C * sizeof(float));
}

static float forward(struct model *md, const int *in, const int *tgt, int B, int T)
{
	struct config c = md->c;
	int C = c.C, L = c.L, V = c.V, NH = c.NH, BT = B * T;
	if (!md->amem) {
		md->B = B, md->T = T;
		md->act_floats = act_layout(&c, B, T, &md->a, NULL);
		md->amem = xmalloc(md->act_floats * sizeof(float));
		act_layout(&c, B, T, &md->a, md->amem);
	}
	struct params *p = &md->p;
	struct acts *a = &md->a;
	size_t btc = (size_t)BT * C;

	k_embedding_fwd(a->encoded, in, p->wte, BT, V, C);
	for (int b = 0; b < B; b++)
		k_add(a->encoded + (size_t)b * T * C, a->encoded + (size_t)b * T * C, p->wpe, (long)T * C);
	const float *res = a->encoded; // (B, T, C)
	for (int l = 0; l < L; l++) {
		char lname[24];
		snprintf(lname, sizeof lname, "layer%d", l);
		tprof_range_push(lname);
		float *ln1 = a->ln1 + l * btc, *qkv = a->qkv + l * 3 * btc, *atty = a->atty + l * btc;
		float *att = a->att + (size_t)l * B * NH * T * T, *attproj = a->attproj + l * btc;
		float *res2 = a->residual2 + l * btc, *ln2 = a->ln2 + l * btc, *fch = a->fch + l * 4 * btc;
		float *fchg = a->fch_gelu + l * 4 * btc, *fcproj = a->fcproj + l * btc, *res3 = a->residual3 + l * btc;
		tprof_range_push("attention"); /* the block's two halves: tprof ops --by range compares them */
		k_layernorm_fwd(ln1, a->ln1_mean + l * BT, a->ln1_rstd + l * BT, res, p->ln1w + l * C, p->ln1b + l * C,
				BT, C);
		k_linear_fwd(qkv, ln1, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + l * 3 * C, BT, C, 3 * C);
		k_attention_fwd(atty, att, qkv, B, T, C, NH);
		k_linear_fwd(attproj, atty, p->attprojw + (size_t)l * C * C, p->attprojb + l * C, BT, C, C);
		k_add(res2, res, attproj, btc);
		tprof_range_pop();
		tprof_range_push("mlp");
		k_layernorm_fwd(ln2, a->ln2_mean + l * BT, a->ln2_rstd + l * BT, res2, p->ln2w + l * C, p->ln2b + l * C,
				BT, C);
		k_linear_fwd(fch, ln2, p->fcw + (size_t)l * 4 * C * C, p->fcb + l * 4 * C, BT, C, 4 * C);
		k_gelu_fwd(fchg, fch, 4 * btc);
		k_linear_fwd(fcproj, fchg, p->fcprojw + (size_t)l * 4 * C * C, p->fcprojb + l * C, BT, 4 * C, C);
		k_add(res3, res2, fcproj, btc);
		tprof_range_pop();
		res = res3;
		tprof_range_pop();
	}
	k_layernorm_fwd(a->lnf, a->lnf_mean, a->lnf_rstd, res, p->lnfw, p->lnfb, BT, C);
	k_linear_fwd(a->logits, a->lnf, p->wte, NULL, BT, C, V);
	return k_crossentropy_fwd(a->losses, a->probs, a->logits, tgt, BT, V);
}

/* Accumulates parameter gradients (md->g, zeroed by the caller) of the mean loss of the last forward. */
static void backward(struct model *md, const int *in, const int *tgt)
{
	struct config c = md->c;
	int C = c.C, L = c.L, V = c.V, NH = c.NH, B = md->B, T = md->T, BT = B * T;
	size_t btc = (size_t)BT * C;
	struct params *p = &md->p, *g = &md->g;
	struct acts *a = &md->a;

	/* per-step scratch; one layer's worth, reused layer after layer */
	size_t n_scratch = (size_t)BT * V + btc * (1 + 1 + 4 + 4 + 1 + 1 + 3 + 1);
	md->scratch_floats = n_scratch;
	float *dlogits = xmalloc((size_t)BT * V * sizeof(float)); // (B, T, V)
	float *dres = xmalloc(btc * sizeof(float));               // (B, T, C): gradient of the residual stream
	float *dln = xmalloc(btc * sizeof(float));                // (B, T, C): gradient of a layernorm output
	float *dfch = xmalloc(4 * btc * sizeof(float));           // (B, T, 4C)
	float *dfchg = xmalloc(4 * btc * sizeof(float));          // (B, T, 4C)
	float *datty = xmalloc(btc * sizeof(float));              // (B, T, C)
	float *dqkv = xmalloc(3 * btc * sizeof(float));           // (B, T, 3C)
	float *dlnf = xmalloc(btc * sizeof(float));               // (B, T, C)

	memset(dlogits, 0, (size_t)BT * V * sizeof(float));
	k_crossentropy_bwd(dlogits, a->probs, tgt, BT, V, 1.0f / BT);
	memset(dlnf, 0, btc * sizeof(float));
	k_linear_bwd(dlnf, g->wte, NULL, dlogits, a->lnf, p->wte, BT, C, V);
	memset(dres, 0, btc * sizeof(float));
	const float *res_last = L > 0 ? a->residual3 + (L - 1) * btc : a->encoded;
	k_layernorm_bwd(dres, g->lnfw, g->lnfb, dlnf, res_last, p->lnfw, a->lnf_mean, a->lnf_rstd, BT, C);
	for (int l = L - 1; l >= 0; l--) {
		char lname[24];
		snprintf(lname, sizeof lname, "layer%d", l);
		tprof_range_push(lname);
		const float *res_in = l > 0 ? a->residual3 + (l - 1) * btc : a->encoded;
		float *ln1 = a->ln1 + l * btc, *qkv = a->qkv + l * 3 * btc, *atty = a->atty + l * btc;
		float *att = a->att + (size_t)l * B * NH * T * T, *res2 = a->residual2 + l * btc;
		float *ln2 = a->ln2 + l * btc, *fch = a->fch + l * 4 * btc, *fchg = a->fch_gelu + l * 4 * btc;
		/* residual3 = residual2 + fcproj: dres flows to both */
		tprof_range_push("mlp");
		memset(dfchg, 0, 4 * btc * sizeof(float));
		k_linear_bwd(dfchg, g->fcprojw + (size_t)l * 4 * C * C, g->fcprojb + l * C, dres, fchg,
			     p->fcprojw + (size_t)l * 4 * C * C, BT, 4 * C, C);
		memset(dfch, 0, 4 * btc * sizeof(float));
		k_gelu_bwd(dfch, dfchg, fch, 4 * btc);
		memset(dln, 0, btc * sizeof(float));
		k_linear_bwd(dln, g->fcw + (size_t)l * 4 * C * C, g->fcb + l * 4 * C, dfch, ln2,
			     p->fcw + (size_t)l * 4 * C * C, BT, C, 4 * C);
		k_layernorm_bwd(dres, g->ln2w + l * C, g->ln2b + l * C, dln, res2, p->ln2w + l * C, a->ln2_mean + l * BT,
				a->ln2_rstd + l * BT, BT, C);
		tprof_range_pop();
		/* residual2 = res_in + attproj */
		tprof_range_push("attention");
		memset(datty, 0, btc * sizeof(float));
		k_linear_bwd(datty, g->attprojw + (size_t)l * C * C, g->attprojb + l * C, dres, atty,
			     p->attprojw + (size_t)l * C * C, BT, C, C);
		memset(dqkv, 0, 3 * btc * sizeof(float));
		k_attention_bwd(dqkv, datty, qkv, att, B, T, C, NH);
		memset(dln, 0, btc * sizeof(float));
		k_linear_bwd(dln, g->qkvw + (size_t)l * 3 * C * C, g->qkvb + l * 3 * C, dqkv, ln1,
			     p->qkvw + (size_t)l * 3 * C * C, BT, C, 3 * C);
		k_layernorm_bwd(dres, g->ln1w + l * C, g->ln1b + l * C, dln, res_in, p->ln1w + l * C, a->ln1_mean + l * BT,
				a->ln1_rstd + l * BT, BT, C);
		tprof_range_pop();
		tprof_range_pop();
	}
	k_embedding_bwd(g->wte, dres, in, BT, V, C);
	for (int b = 0; b < B; b++)
		k_add(g->wpe, g->wpe, dres + (size_t)b * T * C, (long)T * C);
	free(dlnf);
	free(dqkv);
	free(datty);
	free(dfchg);
	free(dfch);
	free(dln);
	free(dres);
	free(dlogits);
}

// ----------------------------------------------------------------------------
// generation with a KV cache (batch 1, greedy)

/* Feeds prompt[0..np) then generates ngen tokens into out; returns the FLOPs spent. */
static double generate(struct model *md, const int *prompt, int np, int ngen, int *out, size_t *cache_bytes)
{
	struct config c = md->c;
	int C = c.C, L = c.L, V = c.V, NH = c.NH, HS = C / NH, TCAP = np + ngen;
	struct params *p = &md->p;
	size_t layer_cache = (size_t)NH * TCAP * HS;
	float *kcache = xcalloc((size_t)L * layer_cache, sizeof(float)); // (L, 1, NH, TCAP, HS)
	float *vcache = xcalloc((size_t)L * layer_cache, sizeof(float)); // (L, 1, NH, TCAP, HS)
	float *x = xmalloc(C * sizeof(float));                          // (1, C)
	float *ln = xmalloc(C * sizeof(float));                         // (1, C)
	float *qkv = xmalloc(3 * C * sizeof(float));                    // (1, 3C)
	float *y = xmalloc(C * sizeof(float));                          // (1, C)
	float *h = xmalloc(4 * C * sizeof(float));                      // (1, 4C)
	float *logits = xmalloc(V * sizeof(float));                     // (1, V)
	float mean, rstd;
	*cache_bytes = 2 * (size_t)L * layer_cache * sizeof(float);
	double f0 = bench_flops;
	int tok = prompt[0];
	for (int pos = 0; pos < TCAP - 1; pos++) {
		k_embedding_fwd(x, &tok, p->wte, 1, V, C);
		k_add(x, x, p->wpe + (size_t)pos * C, C);
		for (int l = 0; l < L; l++) {
			float *kc = kcache + l * layer_cache, *vc = vcache + l * layer_cache;
			k_layernorm_fwd(ln, &mean, &rstd, x, p->ln1w + l * C, p->ln1b + l * C, 1, C);
			k_linear_fwd(qkv, ln, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + l * 3 * C, 1, C, 3 * C);
			for (int hd = 0; hd < NH; hd++) {
				memcpy(kc + ((size_t)hd * TCAP + pos) * HS, qkv + C + hd * HS, HS * sizeof(float));
				memcpy(vc + ((size_t)hd * TCAP + pos) * HS, qkv + 2 * C + hd * HS, HS * sizeof(float));
			}
			k_attention_decode(y, qkv, kc, vc, 1, NH, HS, TCAP, pos + 1);
			k_linear_fwd(ln, y, p->attprojw + (size_t)l * C * C, p->attprojb + l * C, 1, C, C);
			k_add(x, x, ln, C);
			k_layernorm_fwd(ln, &mean, &rstd, x, p->ln2w + l * C, p->ln2b + l * C, 1, C);
			k_linear_fwd(h, ln, p->fcw + (size_t)l * 4 * C * C, p->fcb + l * 4 * C, 1, C, 4 * C);
			k_gelu_fwd(h, h, 4 * C);
			k_linear_fwd(ln, h, p->fcprojw + (size_t)l * 4 * C * C, p->fcprojb + l * C, 1, 4 * C, C);
			k_add(x, x, ln, C);
		}
		if (pos + 1 < np) { /* still reading the prompt: no need for logits */
			tok = prompt[pos + 1];
			continue;
		}
		k_layernorm_fwd(ln, &mean, &rstd, x, p->lnfw, p->lnfb, 1, C);
		k_linear_fwd(logits, ln, p->wte, NULL, 1, C, V);
		int best = 0;
		for (int v = 1; v < V; v++)
			if (logits[v] > logits[best])
				best = v;
		out[pos + 1 - np] = tok = best;
	}
	free(logits), free(h), free(y), free(qkv), free(ln), free(x), free(vcache), free(kcache);
	return bench_flops - f0;
}

// ----------------------------------------------------------------------------
// synthetic data: one random sequence of `period` tokens, repeated; batch rows start at random offsets

static void make_batch(const int *pattern, int period, int B, int T, int *in, int *tgt, uint64_t *rng)
{
	for (int b = 0; b < B; b++) {
		int off = (int)(rng_u32(rng) % (uint32_t)period);
		for (int t = 0; t < T; t++) {
			in[b * T + t] = pattern[(off + t) % period];
			tgt[b * T + t] = pattern[(off + t + 1) % period];
		}
	}
}

int main(int argc, char **argv)
{
	const char *cfgname = "default";
	int V = 2048, maxT = 128, L = 4, NH = 4, C = 256, B = 4, T = 0, steps = 20, period = 96, gen = 32, seed = 1337;
	float lr = 1e-3f, wd = 0.0f;
	/* the preset first, so that explicit options override it: the last --config given, in either form */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			cfgname = argv[++i];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			cfgname = argv[i] + 9;
	if (strcmp(cfgname, "gpt2-small") == 0) {
		V = 50257, maxT = 1024, L = 12, NH = 12, C = 768, B = 1, T = 256, steps = 2, gen = 8;
	} else if (strcmp(cfgname, "default") != 0) {
		fprintf(stderr, "unknown --config '%s' (default, gpt2-small)\n", cfgname);
		return 2;
	}
	struct opt opts[] = {
		{"config", OPT_STR, &cfgname, "preset: default or gpt2-small (vocab 50257, ctx 1024, 12 layers, 12 heads, d 768)"},
		{"vocab", OPT_INT, &V, "vocabulary size"},
		{"ctx", OPT_INT, &maxT, "context length (position-embedding rows)"},
		{"seq", OPT_INT, &T, "training sequence length, <= ctx (0: ctx)"},
		{"layers", OPT_INT, &L, "transformer blocks"},
		{"heads", OPT_INT, &NH, "attention heads (must divide d_model)"},
		{"dmodel", OPT_INT, &C, "model width d_model"},
		{"batch", OPT_INT, &B, "sequences per step"},
		{"steps", OPT_INT, &steps, "training steps"},
		{"lr", OPT_FLOAT, &lr, "AdamW learning rate"},
		{"wd", OPT_FLOAT, &wd, "AdamW weight decay"},
		{"period", OPT_INT, &period, "length of the repeated random token sequence"},
		{"gen", OPT_INT, &gen, "tokens to generate after training (0: none)"},
		{"seed", OPT_INT, &seed, "random seed"},
	};
	opt_parse(argc, argv, "GPT-2-style decoder: AdamW training on a repeated random sequence, then KV-cache generation.",
		  opts, sizeof opts / sizeof opts[0]);
	if (T < 0) {
		fprintf(stderr, "--seq: a length of 0 (ctx) or more\n");
		return 2;
	}
	if (T == 0)
		T = maxT;
	if (V < 2 || maxT < 1 || L < 0 || NH < 1 || C < NH || C % NH || B < 1 || T > maxT || steps < 0 || period < 2 ||
	    gen < 0 || gen + 1 > maxT) {
		fprintf(stderr, "inconsistent dimensions (need heads | dmodel, seq <= ctx, gen < ctx)\n");
		return 2;
	}
	if ((long long)B * T > (1 << 24) || (long long)V * C > (1LL << 31) || (long long)maxT * C > (1LL << 31) ||
	    (long long)C * C * 4 > (1LL << 31)) { /* int products of them index the arrays */
		fprintf(stderr, "dimensions too large (batch x seq at most 2^24; vocab, ctx and 4 x dmodel times "
				"dmodel at most 2^31)\n");
		return 2;
	}
	uint64_t rng = 0x9E3779B97F4A7C15ULL ^ (uint64_t)seed;
	struct config cfg = {V, maxT, L, NH, C};
	struct model md = {0};
	model_init(&md, cfg, &rng);

	int BT = B * T;
	int *pattern = xmalloc(period * sizeof(int)), *in = xmalloc(BT * sizeof(int)), *tgt = xmalloc(BT * sizeof(int));
	for (int i = 0; i < period; i++)
		pattern[i] = (int)(rng_u32(&rng) % (uint32_t)V);

	printf("transformer_bench: config %s vocab %d ctx %d seq %d layers %d heads %d dmodel %d batch %d steps %d "
	       "seed %d backend %s\n",
	       cfgname, V, maxT, T, L, NH, C, B, steps, seed, tnn_backend());
	printf("params %zu\n", md.nparams);
	tprof_param("params", (int64_t)md.nparams);

	double total_ms = 0, step_flops = 0, ms_first = 0;
	float first_loss = 0, loss = 0;
	tprof_step();
	for (int s = 1; s <= steps; s++) {
		make_batch(pattern, period, B, T, in, tgt, &rng);
		double t0 = now_ms(), f0 = bench_flops;
		memset(md.gmem, 0, md.nparams * sizeof(float));
		tprof_range_push("forward");
		loss = forward(&md, in, tgt, B, T);
		tprof_range_pop();
		tprof_range_push("backward");
		backward(&md, in, tgt);
		tprof_range_pop();
		tprof_range_push("optimizer");
		k_adamw(md.pmem, md.gmem, md.m, md.v, (long)md.nparams, s, lr, 0.9f, 0.95f, 1e-8f, wd);
		tprof_range_pop();
		double ms = now_ms() - t0;
		tprof_step();
		step_flops = bench_flops - f0;
		if (s == 1) {
			first_loss = loss, ms_first = ms;
			printf("flops_per_step %.0f\n", step_flops); /* exact: a sum of integers below 2^53 */
		} else {
			total_ms += ms;
		}
		printf("step %d loss %.6f ms %.1f tok/s %.0f GFLOP/s %.1f\n", s, loss, ms, BT / (ms / 1e3),
		       step_flops / (ms * 1e6));
		fflush(stdout);
	}
	if (steps > 0) {
		double avg = steps > 1 ? total_ms / (steps - 1) : ms_first;
		printf("summary loss %.6f -> %.6f\n", first_loss, loss);
		char span[48] = "first step only";
		if (steps > 1)
			snprintf(span, sizeof span, "mean over steps 2..%d", steps);
		printf("timing ms_per_step %.1f tok_per_s %.0f GFLOP/s %.1f (%s)\n", avg, BT / (avg / 1e3),
		       step_flops / (avg * 1e6), span);
	}

	size_t cache_bytes = 0;
	if (gen > 0) {
		int np = 8 < maxT - gen ? 8 : maxT - gen; /* prompt: the start of the pattern (repeated) */
		int *out = xmalloc(gen * sizeof(int)), match = 0, prompt[8];
		for (int i = 0; i < np; i++)
			prompt[i] = pattern[i % period]; /* a period shorter than the prompt repeats */
		double t0 = now_ms();
		double gflops = generate(&md, prompt, np, gen, out, &cache_bytes);
		double ms = now_ms() - t0;
		printf("generated");
		for (int i = 0; i < gen; i++) {
			printf(" %d", out[i]);
			match += out[i] == pattern[(np + i) % period];
		}
		printf("\ngeneration matches %d/%d of the continuation\n", match, gen);
		printf("generation flops %.4g\n", gflops);
		printf("timing generation %d tokens ms %.1f tok/s %.0f\n", np + gen - 1, ms, (np + gen - 1) / (ms / 1e3));
		free(out);
	}
	size_t pb = md.nparams * sizeof(float);
	print_mem("parameters", pb);
	print_mem("gradients", pb);
	print_mem("optimizer", 2 * pb);
	print_mem("activations", (md.act_floats + md.scratch_floats) * sizeof(float) + cache_bytes);
	free(md.amem), free(md.pmem), free(md.gmem), free(md.m), free(md.v);
	free(pattern), free(in), free(tgt);
	return 0;
}
