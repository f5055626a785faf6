/* Naive reference kernels (tnn_ref_*) that the tests compare libtnn against: direct loops straight from
 * the definitions in include/tnn.h, sums in double, no blocking, no SIMD, no threads. Convolution is direct
 * (not im2col) and attention is computed per query position, so they check the composites independently. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tnn_ref.h"

static float at_a(const float *A, int M, int K, int ta, int i, int k)
{
	return ta ? A[(size_t)k * M + i] : A[(size_t)i * K + k];
}

void tnn_ref_matmul(float *C, const float *A, const float *B, const float *bias, int M, int N, int K, int flags)
{
	int ta = flags & TNN_TRANS_A, tb = flags & TNN_TRANS_B;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double s = bias ? bias[j] : 0.0;
			for (int k = 0; k < K; k++)
				s += (double)at_a(A, M, K, ta, i, k) * (tb ? B[(size_t)j * K + k] : B[(size_t)k * N + j]);
			C[(size_t)i * N + j] = (float)((flags & TNN_ACCUMULATE ? C[(size_t)i * N + j] : 0.0) + s);
		}
}

void tnn_ref_matmul_bwd(float *dA, float *dB, float *dbias, const float *dC, const float *A, const float *B, int M,
			int N, int K)
{
	for (int i = 0; dA && i < M; i++)
		for (int k = 0; k < K; k++) {
			double s = 0;
			for (int j = 0; j < N; j++)
				s += (double)dC[(size_t)i * N + j] * B[(size_t)k * N + j];
			dA[(size_t)i * K + k] += (float)s;
		}
	for (int k = 0; dB && k < K; k++)
		for (int j = 0; j < N; j++) {
			double s = 0;
			for (int i = 0; i < M; i++)
				s += (double)A[(size_t)i * K + k] * dC[(size_t)i * N + j];
			dB[(size_t)k * N + j] += (float)s;
		}
	for (int j = 0; dbias && j < N; j++) {
		double s = 0;
		for (int i = 0; i < M; i++)
			s += dC[(size_t)i * N + j];
		dbias[j] += (float)s;
	}
}

void tnn_ref_linear_fwd(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC)
{
	for (int n = 0; n < N; n++)
		for (int o = 0; o < OC; o++) {
			double s = bias ? bias[o] : 0.0;
			for (int c = 0; c < C; c++)
				s += (double)inp[(size_t)n * C + c] * weight[(size_t)o * C + c];
			out[(size_t)n * OC + o] = (float)s;
		}
}

void tnn_ref_linear_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
			const float *weight, int N, int C, int OC)
{
	for (int n = 0; dinp && n < N; n++)
		for (int c = 0; c < C; c++) {
			double s = 0;
			for (int o = 0; o < OC; o++)
				s += (double)dout[(size_t)n * OC + o] * weight[(size_t)o * C + c];
			dinp[(size_t)n * C + c] += (float)s;
		}
	for (int o = 0; dweight && o < OC; o++)
		for (int c = 0; c < C; c++) {
			double s = 0;
			for (int n = 0; n < N; n++)
				s += (double)dout[(size_t)n * OC + o] * inp[(size_t)n * C + c];
			dweight[(size_t)o * C + c] += (float)s;
		}
	for (int o = 0; dbias && o < OC; o++) {
		double s = 0;
		for (int n = 0; n < N; n++)
			s += dout[(size_t)n * OC + o];
		dbias[o] += (float)s;
	}
}

void tnn_ref_im2col(float *col, const float *img, int C, int H, int W, int KH, int KW, int stride, int pad)
{
	int HO = TNN_CONV_OUT(H, KH, stride, pad), WO = TNN_CONV_OUT(W, KW, stride, pad);
	for (int c = 0; c < C; c++)
		for (int kh = 0; kh < KH; kh++)
			for (int kw = 0; kw < KW; kw++)
				for (int oh = 0; oh < HO; oh++)
					for (int ow = 0; ow < WO; ow++) {
						int h = oh * stride - pad + kh, w = ow * stride - pad + kw;
						size_t r = ((size_t)c * KH + kh) * KW + kw;
						col[(r * HO + oh) * WO + ow] =
							h >= 0 && h < H && w >= 0 && w < W ? img[((size_t)c * H + h) * W + w] : 0;
					}
}

void tnn_ref_col2im(float *img, const float *col, int C, int H, int W, int KH, int KW, int stride, int pad)
{
	int HO = TNN_CONV_OUT(H, KH, stride, pad), WO = TNN_CONV_OUT(W, KW, stride, pad);
	for (int c = 0; c < C; c++)
		for (int kh = 0; kh < KH; kh++)
			for (int kw = 0; kw < KW; kw++)
				for (int oh = 0; oh < HO; oh++)
					for (int ow = 0; ow < WO; ow++) {
						int h = oh * stride - pad + kh, w = ow * stride - pad + kw;
						size_t r = ((size_t)c * KH + kh) * KW + kw;
						if (h >= 0 && h < H && w >= 0 && w < W)
							img[((size_t)c * H + h) * W + w] += col[(r * HO + oh) * WO + ow];
					}
}

void tnn_ref_conv2d_fwd(float *out, const float *inp, const float *weight, const float *bias, int B, int C, int H,
			int W, int OC, int KH, int KW, int stride, int pad)
{
	int HO = TNN_CONV_OUT(H, KH, stride, pad), WO = TNN_CONV_OUT(W, KW, stride, pad);
	for (int b = 0; b < B; b++)
		for (int o = 0; o < OC; o++)
			for (int oh = 0; oh < HO; oh++)
				for (int ow = 0; ow < WO; ow++) {
					double s = bias ? bias[o] : 0.0;
					for (int c = 0; c < C; c++)
						for (int kh = 0; kh < KH; kh++)
							for (int kw = 0; kw < KW; kw++) {
								int h = oh * stride - pad + kh, w = ow * stride - pad + kw;
								if (h < 0 || h >= H || w < 0 || w >= W)
									continue;
								s += (double)inp[(((size_t)b * C + c) * H + h) * W + w] *
								     weight[(((size_t)o * C + c) * KH + kh) * KW + kw];
							}
					out[(((size_t)b * OC + o) * HO + oh) * WO + ow] = (float)s;
				}
}

void tnn_ref_conv2d_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
			const float *weight, int B, int C, int H, int W, int OC, int KH, int KW, int stride, int pad)
{
	int HO = TNN_CONV_OUT(H, KH, stride, pad), WO = TNN_CONV_OUT(W, KW, stride, pad);
	for (int b = 0; b < B; b++)
		for (int o = 0; o < OC; o++)
			for (int oh = 0; oh < HO; oh++)
				for (int ow = 0; ow < WO; ow++) {
					float g = dout[(((size_t)b * OC + o) * HO + oh) * WO + ow];
					if (dbias)
						dbias[o] += g;
					for (int c = 0; c < C; c++)
						for (int kh = 0; kh < KH; kh++)
							for (int kw = 0; kw < KW; kw++) {
								int h = oh * stride - pad + kh, w = ow * stride - pad + kw;
								if (h < 0 || h >= H || w < 0 || w >= W)
									continue;
								size_t ii = (((size_t)b * C + c) * H + h) * W + w;
								size_t wi = (((size_t)o * C + c) * KH + kh) * KW + kw;
								if (dinp)
									dinp[ii] += g * weight[wi];
								if (dweight)
									dweight[wi] += g * inp[ii];
							}
				}
}

void tnn_ref_maxpool2d_fwd(float *out, int *argmax, const float *inp, int B, int C, int H, int W, int K, int stride)
{
	int HO = TNN_CONV_OUT(H, K, stride, 0), WO = TNN_CONV_OUT(W, K, stride, 0);
	for (int p = 0; p < B * C; p++)
		for (int oh = 0; oh < HO; oh++)
			for (int ow = 0; ow < WO; ow++) {
				int best = -1;
				for (int kh = 0; kh < K; kh++)
					for (int kw = 0; kw < K; kw++) {
						int idx = (oh * stride + kh) * W + ow * stride + kw;
						if (best < 0 || inp[(size_t)p * H * W + idx] > inp[(size_t)p * H * W + best])
							best = idx;
					}
				out[((size_t)p * HO + oh) * WO + ow] = inp[(size_t)p * H * W + best];
				argmax[((size_t)p * HO + oh) * WO + ow] = best;
			}
}

void tnn_ref_maxpool2d_bwd(float *dinp, const float *dout, const int *argmax, int B, int C, int H, int W, int K,
			   int stride)
{
	int HO = TNN_CONV_OUT(H, K, stride, 0), WO = TNN_CONV_OUT(W, K, stride, 0);
	for (int p = 0; p < B * C; p++)
		for (int i = 0; i < HO * WO; i++)
			dinp[(size_t)p * H * W + argmax[(size_t)p * HO * WO + i]] += dout[(size_t)p * HO * WO + i];
}

void tnn_ref_relu_fwd(float *out, const float *inp, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = inp[i] > 0 ? inp[i] : 0;
}

void tnn_ref_relu_bwd(float *dinp, const float *dout, const float *inp, long n)
{
	for (long i = 0; i < n; i++)
		if (inp[i] > 0)
			dinp[i] += dout[i];
}

static double gelu_d(double x)
{
	return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

void tnn_ref_gelu_fwd(float *out, const float *inp, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = (float)gelu_d(inp[i]);
}

void tnn_ref_gelu_bwd(float *dinp, const float *dout, const float *inp, long n)
{
	for (long i = 0; i < n; i++) {
		double x = inp[i], s = sqrt(2 / M_PI), t = tanh(s * (x + 0.044715 * x * x * x));
		double g = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * s * (1 + 3 * 0.044715 * x * x);
		dinp[i] += (float)(g * dout[i]);
	}
}

static void softmax_d(float *out, const float *x, int n, double scale)
{
	double mx = -INFINITY, s = 0;
	for (int i = 0; i < n; i++)
		mx = fmax(mx, scale * x[i]);
	for (int i = 0; i < n; i++)
		s += exp(scale * x[i] - mx);
	for (int i = 0; i < n; i++)
		out[i] = (float)(exp(scale * x[i] - mx) / s);
}

void tnn_ref_softmax_fwd(float *out, const float *inp, int N, int C)
{
	for (int r = 0; r < N; r++)
		softmax_d(out + (size_t)r * C, inp + (size_t)r * C, C, 1.0);
}

void tnn_ref_causal_softmax_fwd(float *att, const float *preatt, int BH, int T, float scale)
{
	for (long r = 0; r < (long)BH * T; r++) {
		int i = (int)(r % T);
		softmax_d(att + r * T, preatt + r * T, i + 1, scale);
		for (int j = i + 1; j < T; j++)
			att[r * T + j] = 0;
	}
}

void tnn_ref_causal_softmax_bwd(float *dpreatt, const float *datt, const float *att, int BH, int T, float scale)
{
	for (long r = 0; r < (long)BH * T; r++) {
		int i = (int)(r % T);
		const float *a = att + r * T, *da = datt + r * T;
		for (int j = 0; j <= i; j++) {
			double s = 0;
			for (int k = 0; k <= i; k++)
				s += (double)a[k] * ((j == k) - a[j]) * da[k];
			dpreatt[r * T + j] += (float)(scale * s);
		}
	}
}

void tnn_ref_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *weight,
			   const float *bias, int N, int C)
{
	for (int r = 0; r < N; r++) {
		const float *x = inp + (size_t)r * C;
		double m = 0, v = 0;
		for (int i = 0; i < C; i++)
			m += x[i];
		m /= C;
		for (int i = 0; i < C; i++)
			v += (x[i] - m) * (x[i] - m);
		double s = 1 / sqrt(v / C + 1e-5);
		for (int i = 0; i < C; i++)
			out[(size_t)r * C + i] = (float)((x[i] - m) * s * weight[i] + bias[i]);
		mean[r] = (float)m;
		rstd[r] = (float)s;
	}
}

void tnn_ref_layernorm_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
			   const float *weight, const float *mean, const float *rstd, int N, int C)
{
	for (int r = 0; r < N; r++) {
		const float *x = inp + (size_t)r * C, *dy = dout + (size_t)r * C;
		double dm = 0, dnm = 0;
		for (int i = 0; i < C; i++) {
			double nrm = (x[i] - mean[r]) * (double)rstd[r];
			dm += weight[i] * dy[i];
			dnm += weight[i] * dy[i] * nrm;
			if (dweight)
				dweight[i] += (float)(dy[i] * nrm);
			if (dbias)
				dbias[i] += dy[i];
		}
		dm /= C;
		dnm /= C;
		for (int i = 0; dinp && i < C; i++) {
			double nrm = (x[i] - mean[r]) * (double)rstd[r];
			dinp[(size_t)r * C + i] += (float)((weight[i] * dy[i] - dm - nrm * dnm) * rstd[r]);
		}
	}
}

void tnn_ref_attention_fwd(float *out, float *att, const float *qkv, int B, int T, int C, int NH)
{
	int HS = C / NH;
	double scale = 1 / sqrt(HS);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int t = 0; t < T; t++) {
				const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * HS;
				float *a = att + (((size_t)b * NH + h) * T + t) * T;
				double mx = -INFINITY, s = 0;
				double *sc = malloc(sizeof(double) * (t + 1));
				for (int t2 = 0; t2 <= t; t2++) {
					const float *k = qkv + ((size_t)b * T + t2) * 3 * C + C + h * HS;
					double d = 0;
					for (int i = 0; i < HS; i++)
						d += (double)q[i] * k[i];
					sc[t2] = d * scale;
					mx = fmax(mx, sc[t2]);
				}
				for (int t2 = 0; t2 <= t; t2++)
					s += exp(sc[t2] - mx);
				for (int t2 = 0; t2 < T; t2++)
					a[t2] = t2 <= t ? (float)(exp(sc[t2] - mx) / s) : 0.0f;
				free(sc);
				for (int i = 0; i < HS; i++) {
					double o = 0;
					for (int t2 = 0; t2 <= t; t2++)
						o += a[t2] * (double)qkv[((size_t)b * T + t2) * 3 * C + 2 * C + h * HS + i];
					out[((size_t)b * T + t) * C + h * HS + i] = (float)o;
				}
			}
}

void tnn_ref_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *att, int B, int T, int C,
			   int NH)
{
	int HS = C / NH;
	double scale = 1 / sqrt(HS);
	double *datt = malloc(sizeof(double) * T), *dpre = malloc(sizeof(double) * T);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int t = 0; t < T; t++) {
				const float *a = att + (((size_t)b * NH + h) * T + t) * T;
				const float *dy = dout + ((size_t)b * T + t) * C + h * HS;
				size_t qo = ((size_t)b * T + t) * 3 * C + h * HS;
				for (int t2 = 0; t2 <= t; t2++) {
					size_t vo = ((size_t)b * T + t2) * 3 * C + 2 * C + h * HS;
					double d = 0;
					for (int i = 0; i < HS; i++) {
						d += (double)dy[i] * qkv[vo + i];
						dqkv[vo + i] += (float)(a[t2] * (double)dy[i]);
					}
					datt[t2] = d;
				}
				double dot = 0;
				for (int t2 = 0; t2 <= t; t2++)
					dot += a[t2] * datt[t2];
				for (int t2 = 0; t2 <= t; t2++)
					dpre[t2] = a[t2] * (datt[t2] - dot) * scale;
				for (int t2 = 0; t2 <= t; t2++) {
					size_t ko = ((size_t)b * T + t2) * 3 * C + C + h * HS;
					for (int i = 0; i < HS; i++) {
						dqkv[qo + i] += (float)(dpre[t2] * qkv[ko + i]);
						dqkv[ko + i] += (float)(dpre[t2] * qkv[qo + i]);
					}
				}
			}
	free(datt);
	free(dpre);
}

void tnn_ref_attention_decode(float *out, const float *q, const float *kcache, const float *vcache, int B, int NH,
			      int HS, int TCAP, int n)
{
	double *s = malloc(sizeof(double) * n);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++) {
			const float *qh = q + ((size_t)b * NH + h) * HS;
			const float *kc = kcache + ((size_t)b * NH + h) * TCAP * HS;
			const float *vc = vcache + ((size_t)b * NH + h) * TCAP * HS;
			double mx = -INFINITY, sum = 0;
			for (int t = 0; t < n; t++) {
				double d = 0;
				for (int i = 0; i < HS; i++)
					d += (double)qh[i] * kc[(size_t)t * HS + i];
				s[t] = d / sqrt(HS);
				mx = fmax(mx, s[t]);
			}
			for (int t = 0; t < n; t++)
				sum += (s[t] = exp(s[t] - mx));
			for (int i = 0; i < HS; i++) {
				double o = 0;
				for (int t = 0; t < n; t++)
					o += s[t] / sum * vc[(size_t)t * HS + i];
				out[((size_t)b * NH + h) * HS + i] = (float)o;
			}
		}
	free(s);
}

void tnn_ref_embedding_fwd(float *out, const int *ids, const float *table, int N, int V, int C)
{
	(void)V;
	for (int i = 0; i < N; i++)
		for (int c = 0; c < C; c++)
			out[(size_t)i * C + c] = table[(size_t)ids[i] * C + c];
}

void tnn_ref_embedding_bwd(float *dtable, const float *dout, const int *ids, int N, int V, int C)
{
	(void)V;
	for (int i = 0; i < N; i++)
		for (int c = 0; c < C; c++)
			dtable[(size_t)ids[i] * C + c] += dout[(size_t)i * C + c];
}

void tnn_ref_add(float *out, const float *a, const float *b, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

float tnn_ref_crossentropy_fwd(float *losses, float *probs, const float *logits, const int *targets, int N, int V)
{
	double sum = 0;
	tnn_ref_softmax_fwd(probs, logits, N, V);
	for (int i = 0; i < N; i++) {
		const float *l = logits + (size_t)i * V;
		double mx = -INFINITY, s = 0;
		for (int j = 0; j < V; j++)
			mx = fmax(mx, l[j]);
		for (int j = 0; j < V; j++)
			s += exp(l[j] - mx);
		losses[i] = (float)(log(s) + mx - l[targets[i]]);
		sum += losses[i];
	}
	return (float)(sum / N);
}

void tnn_ref_crossentropy_bwd(float *dlogits, const float *probs, const int *targets, int N, int V, float dloss)
{
	for (int i = 0; i < N; i++)
		for (int j = 0; j < V; j++)
			dlogits[(size_t)i * V + j] += dloss * (probs[(size_t)i * V + j] - (j == targets[i]));
}

void tnn_ref_adamw(float *param, const float *grad, float *m, float *v, long n, int t, float lr, float beta1,
		   float beta2, float eps, float weight_decay)
{
	for (long i = 0; i < n; i++) {
		double g = grad[i];
		m[i] = (float)(beta1 * m[i] + (1 - beta1) * g);
		v[i] = (float)(beta2 * v[i] + (1 - beta2) * g * g);
		double mh = m[i] / (1 - pow(beta1, t)), vh = v[i] / (1 - pow(beta2, t));
		param[i] = (float)(param[i] - lr * weight_decay * param[i] - lr * mh / (sqrt(vh) + eps));
	}
}

void tnn_ref_sgd(float *param, const float *grad, float *mom, long n, float lr, float momentum, float weight_decay)
{
	for (long i = 0; i < n; i++) {
		double g = grad[i] + (double)weight_decay * param[i];
		if (mom) {
			mom[i] = (float)(momentum * mom[i] + g);
			g = mom[i];
		}
		param[i] = (float)(param[i] - lr * g);
	}
}
