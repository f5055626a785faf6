/* kernel_bench N: calls the trivial tnn_add of libktrivial.so N times on 16 floats and prints the time
 * per call (bench/kernels.sh runs it bare and under libtprof.so). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void tnn_add(float *out, const float *a, const float *b, long n);

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	static float a[16], b[16], c[16];
	struct timespec t0, t1;
	tnn_add(c, a, b, 16);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		tnn_add(c, a, b, 16);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("%.2f ns per call\n", ns / (double)n);
	return 0;
}
