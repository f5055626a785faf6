/* The BLAS and LAPACK half of kernel_calls: linked against the system BLAS and LAPACK and opened
 * RTLD_LOCAL, so its calls reach libtprof.so's wrappers while the real functions are in no global
 * scope. It calls every wrapped routine, in both precisions and through both entry points (CBLAS and
 * Fortran), with small shapes of its own, and LAPACK's workspace queries as NumPy makes them. Returns
 * a checksum of every result (outputs and return values), which must be the same with and without
 * the preload. The prototypes are written here: CBLAS headers differ between BLAS packages. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long flen; /* gfortran's hidden string length */

enum { ROW = 101, COL = 102, NT = 111, TR = 112, UP = 121, LO = 122, NU = 131, LEFT = 141, RIGHT = 142 };

#define PROTOS(P, T)                                                                                           \
	T cblas_##P##asum(int, const T *, int);                                                                \
	T P##asum_(const int *, const T *, const int *);                                                       \
	void cblas_##P##axpy(int, T, const T *, int, T *, int);                                                \
	void P##axpy_(const int *, const T *, const T *, const int *, T *, const int *);                       \
	void cblas_##P##copy(int, const T *, int, T *, int);                                                   \
	void P##copy_(const int *, const T *, const int *, T *, const int *);                                  \
	T cblas_##P##dot(int, const T *, int, const T *, int);                                                 \
	T P##dot_(const int *, const T *, const int *, const T *, const int *);                                \
	T cblas_##P##nrm2(int, const T *, int);                                                                \
	T P##nrm2_(const int *, const T *, const int *);                                                       \
	void cblas_##P##rot(int, T *, int, T *, int, T, T);                                                    \
	void P##rot_(const int *, T *, const int *, T *, const int *, const T *, const T *);                   \
	void cblas_##P##scal(int, T, T *, int);                                                                \
	void P##scal_(const int *, const T *, T *, const int *);                                               \
	void cblas_##P##swap(int, T *, int, T *, int);                                                         \
	void P##swap_(const int *, T *, const int *, T *, const int *);                                        \
	size_t cblas_i##P##amax(int, const T *, int);                                                          \
	int i##P##amax_(const int *, const T *, const int *);                                                  \
	void cblas_##P##gemv(int, int, int, int, T, const T *, int, const T *, int, T, T *, int);              \
	void P##gemv_(const char *, const int *, const int *, const T *, const T *, const int *, const T *,     \
		      const int *, const T *, T *, const int *, flen);                                         \
	void cblas_##P##symv(int, int, int, T, const T *, int, const T *, int, T, T *, int);                   \
	void P##symv_(const char *, const int *, const T *, const T *, const int *, const T *, const int *,    \
		      const T *, T *, const int *, flen);                                                      \
	void cblas_##P##ger(int, int, int, T, const T *, int, const T *, int, T *, int);                       \
	void P##ger_(const int *, const int *, const T *, const T *, const int *, const T *, const int *, T *, \
		     const int *);                                                                             \
	void cblas_##P##syr(int, int, int, T, const T *, int, T *, int);                                       \
	void P##syr_(const char *, const int *, const T *, const T *, const int *, T *, const int *, flen);    \
	void cblas_##P##syr2(int, int, int, T, const T *, int, const T *, int, T *, int);                      \
	void P##syr2_(const char *, const int *, const T *, const T *, const int *, const T *, const int *,    \
		      T *, const int *, flen);                                                                 \
	void cblas_##P##trmv(int, int, int, int, int, const T *, int, T *, int);                               \
	void P##trmv_(const char *, const char *, const char *, const int *, const T *, const int *, T *,      \
		      const int *, flen, flen, flen);                                                          \
	void cblas_##P##trsv(int, int, int, int, int, const T *, int, T *, int);                               \
	void P##trsv_(const char *, const char *, const char *, const int *, const T *, const int *, T *,      \
		      const int *, flen, flen, flen);                                                          \
	void cblas_##P##gemm(int, int, int, int, int, int, T, const T *, int, const T *, int, T, T *, int);    \
	void P##gemm_(const char *, const char *, const int *, const int *, const int *, const T *, const T *, \
		      const int *, const T *, const int *, const T *, T *, const int *, flen, flen);           \
	void cblas_##P##symm(int, int, int, int, int, T, const T *, int, const T *, int, T, T *, int);         \
	void P##symm_(const char *, const char *, const int *, const int *, const T *, const T *, const int *, \
		      const T *, const int *, const T *, T *, const int *, flen, flen);                        \
	void cblas_##P##syrk(int, int, int, int, int, T, const T *, int, T, T *, int);                         \
	void P##syrk_(const char *, const char *, const int *, const int *, const T *, const T *, const int *, \
		      const T *, T *, const int *, flen, flen);                                                \
	void cblas_##P##syr2k(int, int, int, int, int, T, const T *, int, const T *, int, T, T *, int);        \
	void P##syr2k_(const char *, const char *, const int *, const int *, const T *, const T *,             \
		       const int *, const T *, const int *, const T *, T *, const int *, flen, flen);          \
	void cblas_##P##trmm(int, int, int, int, int, int, int, T, const T *, int, T *, int);                  \
	void P##trmm_(const char *, const char *, const char *, const char *, const int *, const int *,         \
		      const T *, const T *, const int *, T *, const int *, flen, flen, flen, flen);            \
	void cblas_##P##trsm(int, int, int, int, int, int, int, T, const T *, int, T *, int);                  \
	void P##trsm_(const char *, const char *, const char *, const char *, const int *, const int *,         \
		      const T *, const T *, const int *, T *, const int *, flen, flen, flen, flen);            \
	void P##getrf_(const int *, const int *, T *, const int *, int *, int *);                              \
	void P##getrs_(const char *, const int *, const int *, const T *, const int *, const int *, T *,       \
		       const int *, int *, flen);                                                              \
	void P##gesv_(const int *, const int *, T *, const int *, int *, T *, const int *, int *);             \
	void P##potrf_(const char *, const int *, T *, const int *, int *, flen);                              \
	void P##geqrf_(const int *, const int *, T *, const int *, T *, T *, const int *, int *);              \
	void P##syevd_(const char *, const char *, const int *, T *, const int *, T *, T *, const int *,       \
		       int *, const int *, int *, flen, flen);                                                 \
	void P##gesdd_(const char *, const int *, const int *, T *, const int *, T *, T *, const int *, T *,   \
		       const int *, T *, const int *, int *, int *, flen);                                     \
	void P##gelsd_(const int *, const int *, const int *, T *, const int *, T *, const int *, T *,         \
		       const T *, int *, T *, const int *, int *, int *);

PROTOS(s, float)
PROTOS(d, double)
double kcall_blas(void);

/* A diagonally dominant symmetric matrix (nonsingular and positive definite), column-major n x n. */
#define SPD(T, a, n)                                                                                           \
	for (int j_ = 0; j_ < (n); j_++)                                                                       \
		for (int i_ = 0; i_ < (n); i_++)                                                               \
			(a)[i_ + j_ * (n)] = i_ == j_ ? (T)(2 * (n) + i_) : (T)(1.0 / (1 + i_ + j_));

#define SUM(acc, x, n)                                                                                         \
	for (int i_ = 0; i_ < (n); i_++)                                                                       \
		acc += (double)(x)[i_];

/* One precision: every routine once per entry point, with shapes offset by o (0 for s, 1 for d). */
#define KCALL(P, T)                                                                                            \
	static double kcall_##P(int o)                                                                         \
	{                                                                                                      \
		enum { SZ = 4096 };                                                                            \
		T *x = malloc(SZ * sizeof(T)), *y = malloc(SZ * sizeof(T)), *a = malloc(SZ * sizeof(T));       \
		T *b = malloc(SZ * sizeof(T)), *c = malloc(SZ * sizeof(T)), *w = malloc(SZ * sizeof(T));       \
		int *ip = malloc(SZ * sizeof(int)), info = 0;                                                  \
		for (int i = 0; i < SZ; i++)                                                                   \
			x[i] = (T)(i % 7) - 3, y[i] = (T)(i % 5) - 2, a[i] = (T)(i % 11) / 4,                   \
			b[i] = (T)(i % 3), c[i] = 1;                                                           \
		double r = 0;                                                                                  \
		int n = 17 + o, i1 = 1, i2 = 2, m = 9 + o, k = 5 + o, nr = 3;                                  \
		T al = (T)0.5, be = 1, zero = 0, cs = (T)0.6, sn = (T)0.8;                                     \
		/* Level 1 */                                                                                  \
		r += cblas_##P##asum(n, x, 1) + P##asum_(&n, x, &i2);                                          \
		cblas_##P##axpy(n, al, x, 1, y, 1);                                                            \
		P##axpy_(&m, &al, x, &i2, y, &i1);                                                             \
		cblas_##P##copy(n, x, 1, c, 1);                                                                \
		P##copy_(&m, y, &i1, c + 100, &i1);                                                            \
		r += cblas_##P##dot(n, x, 1, y, 1) + P##dot_(&m, x, &i1, y, &i2);                              \
		r += cblas_##P##nrm2(n, x, 1) + P##nrm2_(&m, y, &i1);                                          \
		cblas_##P##rot(n, x, 1, y, 1, cs, sn);                                                         \
		P##rot_(&m, x, &i1, y, &i1, &cs, &sn);                                                         \
		cblas_##P##scal(n, al, c, 1);                                                                  \
		P##scal_(&m, &al, c, &i1);                                                                     \
		cblas_##P##swap(n, c, 1, c + 200, 1);                                                          \
		P##swap_(&m, c, &i1, c + 300, &i1);                                                            \
		r += (double)cblas_i##P##amax(n, x, 1) + P##amax_i(&m, y, &i1);                               \
		/* Level 2 */                                                                                  \
		cblas_##P##gemv(ROW, NT, m, n, al, a, n, x, 1, be, y, 1);                                      \
		P##gemv_("T", &n, &m, &al, a, &n, x, &i1, &zero, y, &i1, 1);                                   \
		cblas_##P##symv(COL, UP, n, al, a, n, x, 1, zero, y, 1);                                       \
		P##symv_("L", &m, &al, a, &m, x, &i1, &be, y, &i1, 1);                                         \
		cblas_##P##ger(COL, m, n, al, x, 1, y, 1, c, m);                                               \
		P##ger_(&n, &m, &al, x, &i1, y, &i1, c, &n);                                                   \
		cblas_##P##syr(COL, UP, n, al, x, 1, c, n);                                                    \
		P##syr_("U", &m, &al, x, &i1, c, &m, 1);                                                       \
		cblas_##P##syr2(ROW, LO, n, al, x, 1, y, 1, c, n);                                             \
		P##syr2_("L", &m, &al, x, &i1, y, &i1, c, &m, 1);                                              \
		cblas_##P##trmv(COL, UP, NT, NU, n, a, n, x, 1);                                               \
		P##trmv_("L", "T", "U", &m, a, &m, x, &i1, 1, 1, 1);                                           \
		SPD(T, b, n);                                                                                  \
		cblas_##P##trsv(COL, LO, NT, NU, n, b, n, x, 1);                                               \
		P##trsv_("U", "N", "N", &n, b, &n, y, &i1, 1, 1, 1);                                           \
		/* Level 3 */                                                                                  \
		cblas_##P##gemm(COL, NT, TR, m, n, k, al, a, m, a, n, be, c, m);                               \
		P##gemm_("N", "N", &n, &m, &k, &al, a, &n, a, &k, &zero, c, &n, 1, 1);                         \
		cblas_##P##symm(COL, LEFT, UP, m, n, al, a, m, a, m, be, c, m);                                \
		P##symm_("R", "L", &m, &n, &al, a, &n, a, &m, &zero, c, &m, 1, 1);                             \
		cblas_##P##syrk(COL, UP, NT, n, k, al, a, n, be, c, n);                                        \
		P##syrk_("L", "T", &m, &k, &al, a, &k, &zero, c, &m, 1, 1);                                    \
		cblas_##P##syr2k(ROW, UP, NT, n, k, al, a, k, a, k, be, c, n);                                 \
		P##syr2k_("U", "N", &m, &k, &al, a, &m, a, &m, &zero, c, &m, 1, 1);                            \
		cblas_##P##trmm(COL, LEFT, UP, NT, NU, m, n, al, a, m, c, m);                                  \
		P##trmm_("R", "L", "T", "U", &m, &k, &al, a, &k, c, &m, 1, 1, 1, 1);                           \
		cblas_##P##trsm(COL, RIGHT, LO, NT, NU, m, n, al, b, n, c, m);                                 \
		P##trsm_("L", "U", "N", "N", &n, &k, &al, b, &n, c, &n, 1, 1, 1, 1);                           \
		SUM(r, x, n) SUM(r, y, n) SUM(r, c, 400)                                                       \
		/* LAPACK: LU, solve, Cholesky, QR, eigen, SVD, least squares (with workspace queries) */      \
		int lw = SZ, liw = SZ, q = -1, nn = n;                                                         \
		SPD(T, a, n);                                                                                  \
		P##getrf_(&m, &n, a, &m, ip, &info);                                                           \
		r += info;                                                                                     \
		SPD(T, a, n);                                                                                  \
		P##getrf_(&n, &nn, a, &n, ip, &info);                                                          \
		P##getrs_("N", &n, &nr, a, &n, ip, x, &n, &info, 1);                                           \
		SPD(T, a, n);                                                                                  \
		memcpy(y, x, (size_t)n * nr * sizeof(T));                                                      \
		P##gesv_(&n, &nr, a, &n, ip, y, &n, &info);                                                    \
		SUM(r, y, n * nr)                                                                              \
		SPD(T, a, n);                                                                                  \
		P##potrf_("L", &n, a, &n, &info, 1);                                                           \
		r += info;                                                                                     \
		SUM(r, a, n)                                                                                   \
		SPD(T, a, n);                                                                                  \
		P##geqrf_(&n, &m, a, &n, w, c, &q, &info);                                                     \
		P##geqrf_(&n, &m, a, &n, w, c, &lw, &info);                                                    \
		SUM(r, a, n) SPD(T, a, n);                                                                     \
		P##syevd_("V", "U", &n, a, &n, w, c, &q, ip, &q, &info, 1, 1);                                 \
		P##syevd_("V", "U", &n, a, &n, w, c, &lw, ip, &liw, &info, 1, 1);                              \
		SUM(r, w, n) SPD(T, a, n);                                                                     \
		P##syevd_("N", "L", &m, a, &m, w, c, &lw, ip, &liw, &info, 1, 1);                              \
		SUM(r, w, m) SPD(T, a, n);                                                                     \
		P##gesdd_("N", &n, &m, a, &n, w, b, &n, b, &n, c, &q, ip, &info, 1);                           \
		P##gesdd_("N", &n, &m, a, &n, w, b, &n, b, &n, c, &lw, ip, &info, 1);                          \
		SUM(r, w, m) SPD(T, a, n);                                                                     \
		P##gesdd_("S", &m, &n, a, &m, w, b, &m, b + 1000, &m, c, &lw, ip, &info, 1);                   \
		SUM(r, w, m) SPD(T, a, n);                                                                     \
		P##gesdd_("A", &k, &m, a, &k, w, b, &k, b + 1000, &m, c, &lw, ip, &info, 1);                   \
		SUM(r, w, k) SPD(T, a, n);                                                                     \
		T rcond = -1;                                                                                  \
		int rank = 0;                                                                                  \
		for (int i = 0; i < SZ; i++)                                                                   \
			y[i] = (T)(i % 5) - 2;                                                                 \
		P##gelsd_(&n, &m, &nr, a, &n, y, &n, w, &rcond, &rank, c, &q, ip, &info);                     \
		P##gelsd_(&n, &m, &nr, a, &n, y, &n, w, &rcond, &rank, c, &lw, ip, &info);                \
		SUM(r, y, m) SUM(r, w, m) r += rank;                                                           \
		free(x), free(y), free(a), free(b), free(c), free(w), free(ip);                                \
		return r;                                                                                      \
	}

#define samax_i isamax_
#define damax_i idamax_
KCALL(s, float)
KCALL(d, double)

double kcall_blas(void)
{
	return kcall_s(0) + kcall_d(1);
}
