/* An OpenMP kernel whose work is tasks, for tests/integration/ops.bats: tnn_linear_fwd (the op
 * table's signature) opens a parallel region in which one thread creates a task per row and does not
 * wait (single nowait), so the other threads run most tasks at the region's closing barrier, after
 * the body they were given has returned. Each task calls tnn_add of libknaive.so through the PLT: a
 * wrapped call that must count as the region's work (nested in tnn_linear_fwd), not as a top-level
 * call of the thread that ran it. Built with gcc -fopenmp, without sanitizers. */
void tnn_add(float *out, const float *a, const float *b, long n);
void tnn_linear_fwd(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC);

static void row(float *out, const float *inp, const float *weight, int C, int OC)
{
	for (int o = 0; o < OC; o++) {
		float s = 0;
		for (int c = 0; c < C; c++)
			s += inp[c] * weight[o * C + c];
		out[o] = s;
	}
	tnn_add(out, out, out, OC); /* doubles the row */
}

void tnn_linear_fwd(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC)
{
	(void)bias;
#pragma omp parallel
#pragma omp single nowait
	for (int n = 0; n < N; n++) {
#pragma omp task firstprivate(n)
		row(out + (long)n * OC, inp + (long)n * C, weight, C, OC);
	}
}
