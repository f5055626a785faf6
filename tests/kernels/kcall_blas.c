/* The BLAS half of kernel_calls: linked against the system BLAS and opened RTLD_LOCAL, so its calls
 * reach libtprof.so's wrappers while the real functions are in no global scope. Returns a checksum
 * of the results, which must be the same with and without the preload. */
#include <stdlib.h>

void cblas_sgemm(int order, int transa, int transb, int M, int N, int K, float alpha, const float *A, int lda,
		 const float *B, int ldb, float beta, float *C, int ldc);
void cblas_dgemm(int order, int transa, int transb, int M, int N, int K, double alpha, const double *A, int lda,
		 const double *B, int ldb, double beta, double *C, int ldc);
void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const float *alpha,
	    const float *a, const int *lda, const float *b, const int *ldb, const float *beta, float *c,
	    const int *ldc);
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const double *alpha,
	    const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
	    const int *ldc);
double kcall_blas(void);

double kcall_blas(void)
{
	float *fa = malloc(4096 * sizeof(float)), *fb = malloc(4096 * sizeof(float)), *fc = malloc(4096 * sizeof(float));
	double *da = malloc(4096 * sizeof(double)), *db = malloc(4096 * sizeof(double)), *dc = malloc(4096 * sizeof(double));
	for (int i = 0; i < 4096; i++) {
		fa[i] = (float)(i % 7) - 3, fb[i] = (float)(i % 5) - 2, fc[i] = 1;
		da[i] = (i % 7) - 3, db[i] = (i % 5) - 2, dc[i] = 1;
	}
	/* row major (101), no transpose (111), transpose (112) */
	cblas_sgemm(101, 111, 111, 12, 10, 8, 1.0f, fa, 8, fb, 10, 0.0f, fc, 10);
	cblas_dgemm(101, 112, 111, 9, 11, 13, 1.0, da, 9, db, 11, 0.5, dc, 11);
	int m = 14, n = 6, k = 5, lda = 14, ldb = 5, ldc = 14;
	float one = 1, zero = 0;
	double done = 1, dhalf = 0.5;
	sgemm_("N", "N", &m, &n, &k, &one, fa, &lda, fb, &ldb, &zero, fc + 200, &ldc);
	int m2 = 7, n2 = 9, k2 = 4, lda2 = 4, ldb2 = 4, ldc2 = 7;
	dgemm_("T", "N", &m2, &n2, &k2, &done, da, &lda2, db, &ldb2, &dhalf, dc + 200, &ldc2);
	double sum = 0;
	for (int i = 0; i < 400; i++)
		sum += fc[i] + dc[i];
	return sum;
}
