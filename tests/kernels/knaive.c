/* Naive stand-ins for four libtnn.so kernels (same names and signatures), built without sanitizers,
 * so that programs calling them (diff_run, hostile_names_naive) run under libtprof.so in every build,
 * SAN=1 included, where libtnn.so itself is ASan-instrumented and cannot be preloaded into. The
 * wrappers count FLOPs from the arguments, so these need only be correct enough to be real calls:
 * matmul ignores bias and flags, GELU is replaced by x/2. No allocation, no OpenMP. */
void tnn_matmul(float *C, const float *A, const float *B, const float *bias, int M, int N, int K, int flags);
void tnn_add(float *out, const float *a, const float *b, long n);
void tnn_relu_fwd(float *out, const float *inp, long n);
void tnn_gelu_fwd(float *out, const float *inp, long n);

void tnn_matmul(float *C, const float *A, const float *B, const float *bias, int M, int N, int K, int flags)
{
	(void)bias, (void)flags;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			float s = 0;
			for (int k = 0; k < K; k++)
				s += A[i * K + k] * B[k * N + j];
			C[i * N + j] = s;
		}
}

void tnn_add(float *out, const float *a, const float *b, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

void tnn_relu_fwd(float *out, const float *inp, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = inp[i] > 0 ? inp[i] : 0;
}

void tnn_gelu_fwd(float *out, const float *inp, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = inp[i] / 2;
}
