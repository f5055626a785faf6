/* A trivial stand-in for libtnn.so's tnn_add (same name and signature, no OpenMP, no allocation), so
 * that bench/kernels.sh times the wrapper alone: kernel_bench calls it N times, bare or preloaded. */
void tnn_add(float *out, const float *a, const float *b, long n);

void tnn_add(float *out, const float *a, const float *b, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}
