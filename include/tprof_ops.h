/* The op table: every kernel libtprof.so wraps, defined once. For each kernel the table gives its
 * signature, the shape values a wrapper records (integers taken from the arguments; a pointer argument
 * that may be NULL contributes 0 or 1), and its FLOP, MAC and byte formulas as functions of those shape
 * values. The preload generates its wrappers from it (preload/kernels.c), the analyzer names ops and
 * their shape arguments with it, and the tests check every formula against an independent one.
 * Conventions (docs/OPS.md): an FMA is 2 FLOPs and 1 MAC; exp, tanh, sqrt, division and comparisons
 * count 1 FLOP; bias adds are counted separately (+M·N); GEMM's alpha and beta scalings are not
 * counted (2·M·N·K, as BLAS benchmarks count); causal attention counts only the unmasked pairs
 * P(T) = T·(T+1)/2. Bytes are the minimum traffic: every input read once, every output written once,
 * an accumulated output read and written; element size 4 (float32) or 8 (float64). Op ids are in
 * traces (NAMES blocks name them), so a trace stays readable when the table grows. Header-only. */
#ifndef TPROF_OPS_H
#define TPROF_OPS_H

#include <stddef.h>
#include <stdint.h>

/* X(RK, RET, NAME, PARAMS, ARGS, SHAPE_NAMES, SHAPE_VALUES, FLOPS, BYTES, MACS)
 * RK is V for void kernels, R for kernels that return a value of type RET. PARAMS and ARGS are the
 * parameter list and the forwarding argument list; SHAPE_VALUES (in terms of the parameters) are
 * recorded under SHAPE_NAMES, in terms of which FLOPS, BYTES and MACS are written. Helpers usable in
 * formulas: TP_P(T) causal pairs, TP_OUT(in, k, stride, pad) output extent, TP_NZ(p) pointer given. */
#define TP_P(T) ((T) * ((T) + 1) / 2)
#define TP_OUT(in, k, stride, pad)                                                                      \
	((stride) > 0 && (in) + 2 * (pad) - (k) >= 0 ? ((in) + 2 * (pad) - (k)) / (stride) + 1 : 0)
#define TP_NZ(p) ((p) != 0)
/* Sum over o in [0, out) of max(0, c - o*stride): the clipped part of an arithmetic run. */
static inline __int128 tprof_taps_clip(__int128 c, __int128 out, __int128 stride)
{
	if (c <= 0 || out <= 0)
		return 0;
	__int128 t = (c + stride - 1) / stride; /* the terms above 0 */
	t = t < out ? t : out;
	return t * c - stride * t * (t - 1) / 2;
}
/* The taps of a strided window that fall inside the input, over every output position: the pairs
 * (o, j), o < TP_OUT(in, k, stride, pad), j < k, with 0 <= o*stride - pad + j < in. col2im adds
 * only those (a padded position has no pixel). Closed form: out*k less the taps before the start
 * and after the end, each at most k per position. */
static inline __int128 tprof_taps(__int128 in, __int128 k, __int128 stride, __int128 pad)
{
	if (stride <= 0 || k <= 0 || in <= 0 || in + 2 * pad - k < 0)
		return 0;
	__int128 out = (in + 2 * pad - k) / stride + 1, end = (out - 1) * stride - pad + k - in;
	if (out <= 0)
		return 0;
	return out * k - (tprof_taps_clip(pad, out, stride) - tprof_taps_clip(pad - k, out, stride)) -
	       (tprof_taps_clip(end, out, stride) - tprof_taps_clip(end - k, out, stride));
}
#define TP_TAPS(in, k, stride, pad) tprof_taps(in, k, stride, pad)
#define TP_NOTRANS(c) ((c) == 'N' || (c) == 'n')

/* The BLAS and LAPACK families, generated per precision P (s or d) with element type T and size E, each
 * through its CBLAS entry point (column- or row-major: FLOPs and bytes do not depend on the order) and
 * its Fortran one (every argument by reference; gfortran's hidden string lengths are forwarded).
 * Counts follow LAPACK Working Note 41 as the ICL BLAS++/LAPACK++ headers state it (fmuls + fadds;
 * docs/OPS.md): Level 1 dot and nrm2 2n-1, asum and iamax n-1 (a compare is an add), axpy 2n, scal n,
 * rot 6n, copy and swap 0; gemv, ger 2mn; symv 2n^2; trmv, trsv n^2; syr n(n+1), syr2 2n(n+1) (the
 * triangle, as reference BLAS computes it); gemm 2mnk; symm 2m^2n (left) or 2mn^2; syrk kn(n+1);
 * syr2k 2kn^2+n; trmm, trsm m^2n (left) or mn^2. MACs are the additions that follow a product. A
 * workspace query (lwork = -1) computes nothing: 0 FLOPs. */
#define TP_TRI(n) ((n) * ((n) + 1) / 2)
#define TP_NZF(x) _Generic((x), float: tprof_f32_nonzero, double: tprof_f64_nonzero)(x)
#define TP_CH(c, u) ((c) == (u) || (c) == (u) + 32) /* a Fortran flag character, either case */
#define TP_FLEFT(c) TP_CH(c, 'L')
#define TP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TP_MAX(a, b) ((a) > (b) ? (a) : (b))
typedef unsigned long tprof_flen; /* a Fortran hidden string length */

#define TP_ASUM(X, P, T, E)                                                                                    \
	X(R, T, cblas_##P##asum, (int n, const T *x, int incx), (n, x, incx), (n), (n), n - 1, E * n, 0)        \
	X(R, T, P##asum_, (const int *n, const T *x, const int *incx), (n, x, incx), (n), (*n), n - 1, E * n, 0)
#define TP_AXPY(X, P, T, E)                                                                                    \
	X(V, void, cblas_##P##axpy, (int n, T alpha, const T *x, int incx, T *y, int incy),                   \
	  (n, alpha, x, incx, y, incy), (n), (n), 2 * n, E * 3 * n, n)                                         \
	X(V, void, P##axpy_, (const int *n, const T *alpha, const T *x, const int *incx, T *y, const int *incy), \
	  (n, alpha, x, incx, y, incy), (n), (*n), 2 * n, E * 3 * n, n)
#define TP_COPY(X, P, T, E)                                                                                    \
	X(V, void, cblas_##P##copy, (int n, const T *x, int incx, T *y, int incy), (n, x, incx, y, incy), (n),  \
	  (n), 0, E * 2 * n, 0)                                                                                \
	X(V, void, P##copy_, (const int *n, const T *x, const int *incx, T *y, const int *incy),              \
	  (n, x, incx, y, incy), (n), (*n), 0, E * 2 * n, 0)
#define TP_DOT(X, P, T, E)                                                                                     \
	X(R, T, cblas_##P##dot, (int n, const T *x, int incx, const T *y, int incy), (n, x, incx, y, incy), (n), \
	  (n), 2 * n - 1, E * 2 * n, n - 1)                                                                    \
	X(R, T, P##dot_, (const int *n, const T *x, const int *incx, const T *y, const int *incy),             \
	  (n, x, incx, y, incy), (n), (*n), 2 * n - 1, E * 2 * n, n - 1)
#define TP_NRM2(X, P, T, E)                                                                                    \
	X(R, T, cblas_##P##nrm2, (int n, const T *x, int incx), (n, x, incx), (n), (n), 2 * n - 1, E * n, n - 1) \
	X(R, T, P##nrm2_, (const int *n, const T *x, const int *incx), (n, x, incx), (n), (*n), 2 * n - 1,      \
	  E * n, n - 1)
#define TP_ROT(X, P, T, E)                                                                                     \
	X(V, void, cblas_##P##rot, (int n, T *x, int incx, T *y, int incy, T c, T s), (n, x, incx, y, incy, c, s), \
	  (n), (n), 6 * n, E * 4 * n, 2 * n)                                                                   \
	X(V, void, P##rot_, (const int *n, T *x, const int *incx, T *y, const int *incy, const T *c, const T *s), \
	  (n, x, incx, y, incy, c, s), (n), (*n), 6 * n, E * 4 * n, 2 * n)
#define TP_SCAL(X, P, T, E)                                                                                    \
	X(V, void, cblas_##P##scal, (int n, T alpha, T *x, int incx), (n, alpha, x, incx), (n), (n), n,          \
	  E * 2 * n, 0)                                                                                        \
	X(V, void, P##scal_, (const int *n, const T *alpha, T *x, const int *incx), (n, alpha, x, incx), (n),   \
	  (*n), n, E * 2 * n, 0)
#define TP_SWAP(X, P, T, E)                                                                                    \
	X(V, void, cblas_##P##swap, (int n, T *x, int incx, T *y, int incy), (n, x, incx, y, incy), (n), (n), 0, \
	  E * 4 * n, 0)                                                                                        \
	X(V, void, P##swap_, (const int *n, T *x, const int *incx, T *y, const int *incy),                    \
	  (n, x, incx, y, incy), (n), (*n), 0, E * 4 * n, 0)
#define TP_IAMAX(X, P, T, E)                                                                                   \
	X(R, size_t, cblas_i##P##amax, (int n, const T *x, int incx), (n, x, incx), (n), (n), n - 1, E * n, 0)  \
	X(R, int, i##P##amax_, (const int *n, const T *x, const int *incx), (n, x, incx), (n), (*n), n - 1,     \
	  E * n, 0)

#define TP_GEMV(X, P, T, E)                                                                                    \
	X(V, void, cblas_##P##gemv,                                                                            \
	  (int order, int trans, int m, int n, T alpha, const T *a, int lda, const T *x, int incx, T beta, T *y, \
	   int incy),                                                                                          \
	  (order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy), (M, N, t, beta),                        \
	  (m, n, trans != 111, TP_NZF(beta)), 2 * M * N,                                                       \
	  E * (M * N + M + N + beta * (t ? N : M)), M * N)                                      \
	X(V, void, P##gemv_,                                                                                   \
	  (const char *trans, const int *m, const int *n, const T *alpha, const T *a, const int *lda,         \
	   const T *x, const int *incx, const T *beta, T *y, const int *incy, tprof_flen ltrans),             \
	  (trans, m, n, alpha, a, lda, x, incx, beta, y, incy, ltrans), (M, N, t, beta),                       \
	  (*m, *n, !TP_NOTRANS(*trans), TP_NZF(*beta)), 2 * M * N,                                             \
	  E * (M * N + M + N + beta * (t ? N : M)), M * N)
#define TP_SYMV(X, P, T, E)                                                                                    \
	X(V, void, cblas_##P##symv,                                                                            \
	  (int order, int uplo, int n, T alpha, const T *a, int lda, const T *x, int incx, T beta, T *y,       \
	   int incy),                                                                                          \
	  (order, uplo, n, alpha, a, lda, x, incx, beta, y, incy), (N, beta), (n, TP_NZF(beta)), 2 * N * N,    \
	  E * (TP_TRI(N) + 2 * N + beta * N), N * N)                                                           \
	X(V, void, P##symv_,                                                                                   \
	  (const char *uplo, const int *n, const T *alpha, const T *a, const int *lda, const T *x,            \
	   const int *incx, const T *beta, T *y, const int *incy, tprof_flen luplo),                          \
	  (uplo, n, alpha, a, lda, x, incx, beta, y, incy, luplo), (N, beta), (*n, TP_NZF(*beta)), 2 * N * N, \
	  E * (TP_TRI(N) + 2 * N + beta * N), N * N)
#define TP_GER(X, P, T, E)                                                                                     \
	X(V, void, cblas_##P##ger,                                                                             \
	  (int order, int m, int n, T alpha, const T *x, int incx, const T *y, int incy, T *a, int lda),      \
	  (order, m, n, alpha, x, incx, y, incy, a, lda), (M, N), (m, n), 2 * M * N, E * (M + N + 2 * M * N),  \
	  M * N)                                                                                               \
	X(V, void, P##ger_,                                                                                    \
	  (const int *m, const int *n, const T *alpha, const T *x, const int *incx, const T *y,               \
	   const int *incy, T *a, const int *lda),                                                             \
	  (m, n, alpha, x, incx, y, incy, a, lda), (M, N), (*m, *n), 2 * M * N, E * (M + N + 2 * M * N), M * N)
#define TP_SYR(X, P, T, E)                                                                                     \
	X(V, void, cblas_##P##syr, (int order, int uplo, int n, T alpha, const T *x, int incx, T *a, int lda),  \
	  (order, uplo, n, alpha, x, incx, a, lda), (N), (n), 2 * TP_TRI(N), E * (N + 2 * TP_TRI(N)),          \
	  TP_TRI(N))                                                                                           \
	X(V, void, P##syr_,                                                                                    \
	  (const char *uplo, const int *n, const T *alpha, const T *x, const int *incx, T *a, const int *lda, \
	   tprof_flen luplo),                                                                                  \
	  (uplo, n, alpha, x, incx, a, lda, luplo), (N), (*n), 2 * TP_TRI(N), E * (N + 2 * TP_TRI(N)),         \
	  TP_TRI(N))
#define TP_SYR2(X, P, T, E)                                                                                    \
	X(V, void, cblas_##P##syr2,                                                                            \
	  (int order, int uplo, int n, T alpha, const T *x, int incx, const T *y, int incy, T *a, int lda),   \
	  (order, uplo, n, alpha, x, incx, y, incy, a, lda), (N), (n), 4 * TP_TRI(N),                          \
	  E * (2 * N + 2 * TP_TRI(N)), 2 * TP_TRI(N))                                                          \
	X(V, void, P##syr2_,                                                                                   \
	  (const char *uplo, const int *n, const T *alpha, const T *x, const int *incx, const T *y,           \
	   const int *incy, T *a, const int *lda, tprof_flen luplo),                                          \
	  (uplo, n, alpha, x, incx, y, incy, a, lda, luplo), (N), (*n), 4 * TP_TRI(N),                         \
	  E * (2 * N + 2 * TP_TRI(N)), 2 * TP_TRI(N))
/* trmv and trsv share their signature and counts */
#define TP_TRXV(X, P, T, E, OP)                                                                                \
	X(V, void, cblas_##P##OP,                                                                              \
	  (int order, int uplo, int trans, int diag, int n, const T *a, int lda, T *x, int incx),             \
	  (order, uplo, trans, diag, n, a, lda, x, incx), (N), (n), N * N, E * (TP_TRI(N) + 2 * N),            \
	  N * (N - 1) / 2)                                                                                     \
	X(V, void, P##OP##_,                                                                                   \
	  (const char *uplo, const char *trans, const char *diag, const int *n, const T *a, const int *lda,   \
	   T *x, const int *incx, tprof_flen luplo, tprof_flen ltrans, tprof_flen ldiag),                     \
	  (uplo, trans, diag, n, a, lda, x, incx, luplo, ltrans, ldiag), (N), (*n), N * N,                     \
	  E * (TP_TRI(N) + 2 * N), N * (N - 1) / 2)

#define TP_SYMM(X, P, T, E)                                                                                    \
	X(V, void, cblas_##P##symm,                                                                            \
	  (int order, int side, int uplo, int m, int n, T alpha, const T *a, int lda, const T *b, int ldb,    \
	   T beta, T *c, int ldc),                                                                             \
	  (order, side, uplo, m, n, alpha, a, lda, b, ldb, beta, c, ldc), (M, N, left, beta),                  \
	  (m, n, side == 141, TP_NZF(beta)), 2 * M * N * (left ? M : N),                                       \
	  E * (TP_TRI(left ? M : N) + 2 * M * N + beta * M * N), M * N * (left ? M : N))                       \
	X(V, void, P##symm_,                                                                                   \
	  (const char *side, const char *uplo, const int *m, const int *n, const T *alpha, const T *a,        \
	   const int *lda, const T *b, const int *ldb, const T *beta, T *c, const int *ldc, tprof_flen lside, \
	   tprof_flen luplo),                                                                                  \
	  (side, uplo, m, n, alpha, a, lda, b, ldb, beta, c, ldc, lside, luplo), (M, N, left, beta),           \
	  (*m, *n, TP_FLEFT(*side), TP_NZF(*beta)), 2 * M * N * (left ? M : N),                                \
	  E * (TP_TRI(left ? M : N) + 2 * M * N + beta * M * N), M * N * (left ? M : N))
#define TP_SYRK(X, P, T, E)                                                                                    \
	X(V, void, cblas_##P##syrk,                                                                            \
	  (int order, int uplo, int trans, int n, int k, T alpha, const T *a, int lda, T beta, T *c, int ldc), \
	  (order, uplo, trans, n, k, alpha, a, lda, beta, c, ldc), (N, K, beta), (n, k, TP_NZF(beta)),         \
	  2 * K * TP_TRI(N), E * (N * K + (1 + beta) * TP_TRI(N)), K * TP_TRI(N))                              \
	X(V, void, P##syrk_,                                                                                   \
	  (const char *uplo, const char *trans, const int *n, const int *k, const T *alpha, const T *a,       \
	   const int *lda, const T *beta, T *c, const int *ldc, tprof_flen luplo, tprof_flen ltrans),         \
	  (uplo, trans, n, k, alpha, a, lda, beta, c, ldc, luplo, ltrans), (N, K, beta),                       \
	  (*n, *k, TP_NZF(*beta)), 2 * K * TP_TRI(N), E * (N * K + (1 + beta) * TP_TRI(N)), K * TP_TRI(N))
#define TP_SYR2K(X, P, T, E)                                                                                   \
	X(V, void, cblas_##P##syr2k,                                                                           \
	  (int order, int uplo, int trans, int n, int k, T alpha, const T *a, int lda, const T *b, int ldb,   \
	   T beta, T *c, int ldc),                                                                             \
	  (order, uplo, trans, n, k, alpha, a, lda, b, ldb, beta, c, ldc), (N, K, beta),                       \
	  (n, k, TP_NZF(beta)), K ? 2 * K * N * N + N : 0, E * (2 * N * K + (1 + beta) * TP_TRI(N)), K * N * N) \
	X(V, void, P##syr2k_,                                                                                  \
	  (const char *uplo, const char *trans, const int *n, const int *k, const T *alpha, const T *a,       \
	   const int *lda, const T *b, const int *ldb, const T *beta, T *c, const int *ldc, tprof_flen luplo, \
	   tprof_flen ltrans),                                                                                 \
	  (uplo, trans, n, k, alpha, a, lda, b, ldb, beta, c, ldc, luplo, ltrans), (N, K, beta),               \
	  (*n, *k, TP_NZF(*beta)), K ? 2 * K * N * N + N : 0, E * (2 * N * K + (1 + beta) * TP_TRI(N)),        \
	  K * N * N)
/* trmm and trsm share their signature and counts */
#define TP_TRXM(X, P, T, E, OP)                                                                                \
	X(V, void, cblas_##P##OP,                                                                              \
	  (int order, int side, int uplo, int transa, int diag, int m, int n, T alpha, const T *a, int lda,   \
	   T *b, int ldb),                                                                                     \
	  (order, side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb), (M, N, left), (m, n, side == 141),   \
	  M * N * (left ? M : N), E * (TP_TRI(left ? M : N) + 2 * M * N), M * N * ((left ? M : N) - 1) / 2)   \
	X(V, void, P##OP##_,                                                                                   \
	  (const char *side, const char *uplo, const char *transa, const char *diag, const int *m,            \
	   const int *n, const T *alpha, const T *a, const int *lda, T *b, const int *ldb, tprof_flen lside,  \
	   tprof_flen luplo, tprof_flen ltransa, tprof_flen ldiag),                                            \
	  (side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb, lside, luplo, ltransa, ldiag), (M, N, left), \
	  (*m, *n, TP_FLEFT(*side)), M * N * (left ? M : N), E * (TP_TRI(left ? M : N) + 2 * M * N),           \
	  M * N * ((left ? M : N) - 1) / 2)

/* LAPACK (Fortran entry points). getrf, getrs, gesv, potrf and geqrf: LAWN 41's exact counts of the
 * algorithm (fmuls + fadds, in integers: each is a whole number). syevd, gesdd and gelsd iterate until
 * convergence, so no count is exact: tprof gives Golub and Van Loan's nominal ones (Matrix
 * Computations, 3rd ed.: the SVD and least-squares counts of chapter 5, the symmetric QR algorithm's
 * of chapter 8; the cheaper of the Golub-Reinsch and R-SVD counts), marked nominal in the op table (tprof_op_nominal). */
#define TP_GETRF_F(mx, mn) ((6 * (mx) * (mn) * (mn) - 2 * (mn) * (mn) * (mn) - 3 * (mn) * (mn) + 5 * (mn)) / 6)
#define TP_GETRS_F(n, nrhs) ((nrhs) * (2 * (n) * (n) - (n)))
#define TP_GEQRF_F(m, n)                                                                                       \
	((m) > (n) ? (12 * (m) * (n) * (n) - 4 * (n) * (n) * (n) + 6 * (n) * (n) + 6 * (m) * (n) + 28 * (n)) / 6 \
		   : (12 * (n) * (m) * (m) - 4 * (m) * (m) * (m) + 18 * (n) * (m) - 6 * (m) * (m) + 28 * (m)) / 6)
#define TP_LAPACK(X, P, T, E)                                                                                  \
	X(V, void, P##getrf_, (const int *m, const int *n, T *a, const int *lda, int *ipiv, int *info),       \
	  (m, n, a, lda, ipiv, info), (M, N), (*m, *n), TP_GETRF_F(TP_MAX(M, N), TP_MIN(M, N)), E * 2 * M * N, 0) \
	X(V, void, P##getrs_,                                                                                  \
	  (const char *trans, const int *n, const int *nrhs, const T *a, const int *lda, const int *ipiv,     \
	   T *b, const int *ldb, int *info, tprof_flen ltrans),                                                \
	  (trans, n, nrhs, a, lda, ipiv, b, ldb, info, ltrans), (N, NRHS), (*n, *nrhs), TP_GETRS_F(N, NRHS),   \
	  E * (N * N + 2 * N * NRHS), 0)                                                                       \
	X(V, void, P##gesv_,                                                                                   \
	  (const int *n, const int *nrhs, T *a, const int *lda, int *ipiv, T *b, const int *ldb, int *info),  \
	  (n, nrhs, a, lda, ipiv, b, ldb, info), (N, NRHS), (*n, *nrhs),                                       \
	  TP_GETRF_F(N, N) + TP_GETRS_F(N, NRHS), E * (2 * N * N + 2 * N * NRHS), 0)                           \
	X(V, void, P##potrf_, (const char *uplo, const int *n, T *a, const int *lda, int *info, tprof_flen luplo), \
	  (uplo, n, a, lda, info, luplo), (N), (*n), N * (N + 1) * (2 * N + 1) / 6, E * 2 * TP_TRI(N), 0)     \
	X(V, void, P##geqrf_,                                                                                  \
	  (const int *m, const int *n, T *a, const int *lda, T *tau, T *work, const int *lwork, int *info),   \
	  (m, n, a, lda, tau, work, lwork, info), (M, N, query), (*m, *n, *lwork == -1),                       \
	  query ? 0 : TP_GEQRF_F(M, N), query ? 0 : E * (2 * M * N + TP_MIN(M, N)), 0)                        \
	X(V, void, P##syevd_,                                                                                  \
	  (const char *jobz, const char *uplo, const int *n, T *a, const int *lda, T *w, T *work,             \
	   const int *lwork, int *iwork, const int *liwork, int *info, tprof_flen ljobz, tprof_flen luplo),   \
	  (jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info, ljobz, luplo), (N, vectors, query),     \
	  (*n, TP_CH(*jobz, 'V'), *lwork == -1 || *liwork == -1),                                             \
	  query ? 0 : vectors ? 9 * N * N * N : 4 * N * N * N / 3,                                             \
	  query ? 0 : E * (TP_TRI(N) + N + vectors * N * N), 0)                                                \
	X(V, void, P##gesdd_,                                                                                  \
	  (const char *jobz, const int *m, const int *n, T *a, const int *lda, T *s, T *u, const int *ldu,    \
	   T *vt, const int *ldvt, T *work, const int *lwork, int *iwork, int *info, tprof_flen ljobz),       \
	  (jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork, info, ljobz), (M, N, vectors, query),  \
	  (*m, *n, TP_CH(*jobz, 'N') ? 0 : TP_CH(*jobz, 'A') ? 2 : 1, *lwork == -1),              \
	  query ? 0 : TP_SVD_F(TP_MAX(M, N), TP_MIN(M, N), vectors),                                           \
	  query ? 0 : E * (M * N + TP_MIN(M, N) + (vectors == 2 ? M * M + N * N : vectors * 2 * M * N)), 0)    \
	X(V, void, P##gelsd_,                                                                                  \
	  (const int *m, const int *n, const int *nrhs, T *a, const int *lda, T *b, const int *ldb, T *s,     \
	   const T *rcond, int *rank, T *work, const int *lwork, int *iwork, int *info),                      \
	  (m, n, nrhs, a, lda, b, ldb, s, rcond, rank, work, lwork, iwork, info), (M, N, NRHS, query),         \
	  (*m, *n, *nrhs, *lwork == -1),                                                                       \
	  query ? 0 : TP_MIN(4 * TP_MAX(M, N) * TP_MIN(M, N) * TP_MIN(M, N) + 8 * TP_MIN(M, N) * TP_MIN(M, N) * TP_MIN(M, N), \
			     2 * TP_MAX(M, N) * TP_MIN(M, N) * TP_MIN(M, N) + 11 * TP_MIN(M, N) * TP_MIN(M, N) * TP_MIN(M, N)), \
	  query ? 0 : E * (M * N + 2 * TP_MAX(M, N) * NRHS + TP_MIN(M, N)), 0)
/* SVD of an mx x mn matrix (mx >= mn): values only, values with thin U and V, with full U and V */
#define TP_SVD_F(mx, mn, vec)                                                                                  \
	((vec) == 0 ? TP_MIN(4 * (mx) * (mn) * (mn) - 4 * (mn) * (mn) * (mn) / 3, 2 * (mx) * (mn) * (mn) + 2 * (mn) * (mn) * (mn)) \
	 : (vec) == 1 ? TP_MIN(14 * (mx) * (mn) * (mn) + 8 * (mn) * (mn) * (mn), 6 * (mx) * (mn) * (mn) + 20 * (mn) * (mn) * (mn)) \
		      : TP_MIN(4 * (mx) * (mx) * (mn) + 8 * (mx) * (mn) * (mn) + 9 * (mn) * (mn) * (mn),                     \
			       4 * (mx) * (mx) * (mn) + 22 * (mn) * (mn) * (mn)))

#define TP_BLAS(X, P, T, E)                                                                                    \
	TP_ASUM(X, P, T, E) TP_AXPY(X, P, T, E) TP_COPY(X, P, T, E) TP_DOT(X, P, T, E) TP_NRM2(X, P, T, E)       \
	TP_ROT(X, P, T, E) TP_SCAL(X, P, T, E) TP_SWAP(X, P, T, E) TP_IAMAX(X, P, T, E) TP_GEMV(X, P, T, E)      \
	TP_SYMV(X, P, T, E) TP_GER(X, P, T, E) TP_SYR(X, P, T, E) TP_SYR2(X, P, T, E) TP_TRXV(X, P, T, E, trmv) \
	TP_TRXV(X, P, T, E, trsv) TP_SYMM(X, P, T, E) TP_SYRK(X, P, T, E) TP_SYR2K(X, P, T, E)                   \
	TP_TRXM(X, P, T, E, trmm) TP_TRXM(X, P, T, E, trsm) TP_LAPACK(X, P, T, E)


#define TPROF_OPS(X)                                                                                           \
	X(V, void, tnn_matmul,                                                                                 \
	  (float *C, const float *A, const float *B, const float *bias, int M, int N, int K, int flags),      \
	  (C, A, B, bias, M, N, K, flags), (M, N, K, flags, bias), (M, N, K, flags, TP_NZ(bias)),              \
	  2 * M * N * K + bias * M * N,                                                                        \
	  (M && N) * 4 * (M * K + K * N + M * N + bias * N + ((flags & 4) != 0) * M * N),                      \
	  M * N * K)                                                                                           \
	X(V, void, tnn_matmul_bwd,                                                                             \
	  (float *dA, float *dB, float *dbias, const float *dC, const float *A, const float *B, int M, int N,  \
	   int K),                                                                                             \
	  (dA, dB, dbias, dC, A, B, M, N, K), (M, N, K, dA, dB, dbias),                                        \
	  (M, N, K, TP_NZ(dA), TP_NZ(dB), TP_NZ(dbias)), 2 * M * N * K * (dA + dB) + dbias * M * N,            \
	  (dA || dB || dbias) * 4 * (M * N + dA * (K * N + 2 * M * K) + dB * (M * K + 2 * K * N) + dbias * 2 * N), \
	  M * N * K * (dA + dB))                                                                               \
	X(V, void, tnn_linear_fwd,                                                                             \
	  (float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC),       \
	  (out, inp, weight, bias, N, C, OC), (N, C, OC, bias), (N, C, OC, TP_NZ(bias)),                       \
	  2 * N * C * OC + bias * N * OC, 4 * (N * C + OC * C + N * OC + bias * OC), N * C * OC)               \
	X(V, void, tnn_linear_bwd,                                                                             \
	  (float *dinp, float *dweight, float *dbias, const float *dout, const float *inp, const float *weight, \
	   int N, int C, int OC),                                                                              \
	  (dinp, dweight, dbias, dout, inp, weight, N, C, OC), (N, C, OC, dinp, dweight, dbias),               \
	  (N, C, OC, TP_NZ(dinp), TP_NZ(dweight), TP_NZ(dbias)),                                               \
	  2 * N * C * OC * (dinp + dweight) + dbias * N * OC,                                                  \
	  4 * (N * OC + dinp * (OC * C + 2 * N * C) + dweight * (N * C + 2 * OC * C) + dbias * 2 * OC),       \
	  N * C * OC * (dinp + dweight))                                                                       \
	X(V, void, tnn_im2col,                                                                                 \
	  (float *col, const float *img, int C, int H, int W, int KH, int KW, int stride, int pad),           \
	  (col, img, C, H, W, KH, KW, stride, pad), (C, H, W, KH, KW, stride, pad),                            \
	  (C, H, W, KH, KW, stride, pad), 0,                                                                   \
	  4 * (C * H * W + C * KH * KW * TP_OUT(H, KH, stride, pad) * TP_OUT(W, KW, stride, pad)), 0)          \
	X(V, void, tnn_col2im,                                                                                 \
	  (float *img, const float *col, int C, int H, int W, int KH, int KW, int stride, int pad),           \
	  (img, col, C, H, W, KH, KW, stride, pad), (C, H, W, KH, KW, stride, pad),                            \
	  (C, H, W, KH, KW, stride, pad), C * TP_TAPS(H, KH, stride, pad) * TP_TAPS(W, KW, stride, pad),        \
	  4 * (2 * C * H * W + C * KH * KW * TP_OUT(H, KH, stride, pad) * TP_OUT(W, KW, stride, pad)), 0)      \
	X(V, void, tnn_conv2d_fwd,                                                                             \
	  (float *out, const float *inp, const float *weight, const float *bias, int B, int C, int H, int W,  \
	   int OC, int KH, int KW, int stride, int pad),                                                       \
	  (out, inp, weight, bias, B, C, H, W, OC, KH, KW, stride, pad),                                       \
	  (B, C, H, W, OC, KH, KW, stride, pad, bias), (B, C, H, W, OC, KH, KW, stride, pad, TP_NZ(bias)),     \
	  2 * B * TP_OUT(H, KH, stride, pad) * TP_OUT(W, KW, stride, pad) * KH * KW * C * OC +                 \
		  bias * B * OC * TP_OUT(H, KH, stride, pad) * TP_OUT(W, KW, stride, pad),                     \
	  4 * (B * C * H * W + OC * C * KH * KW +                                                              \
	       B * OC * TP_OUT(H, KH, stride, pad) * TP_OUT(W, KW, stride, pad) + bias * OC),                  \
	  B * TP_OUT(H, KH, stride, pad) * TP_OUT(W, KW, stride, pad) * KH * KW * C * OC)                      \
	X(V, void, tnn_conv2d_bwd,                                                                             \
	  (float *dinp, float *dweight, float *dbias, const float *dout, const float *inp, const float *weight, \
	   int B, int C, int H, int W, int OC, int KH, int KW, int stride, int pad),                           \
	  (dinp, dweight, dbias, dout, inp, weight, B, C, H, W, OC, KH, KW, stride, pad),                      \
	  (B, C, H, W, OC, KH, KW, stride, pad, dinp, dweight, dbias),                                         \
	  (B, C, H, W, OC, KH, KW, stride, pad, TP_NZ(dinp), TP_NZ(dweight), TP_NZ(dbias)),                    \
	  2 * B * TP_OUT(H, KH, stride, pad) * TP_OUT(W, KW, stride, pad) * KH * KW * C * OC *                 \
			  (dinp + dweight) +                                                                   \
		  dinp * B * C * TP_TAPS(H, KH, stride, pad) * TP_TAPS(W, KW, stride, pad) +                   \
		  dbias * B * OC * TP_OUT(H, KH, stride, pad) * TP_OUT(W, KW, stride, pad),                    \
	  4 * (B * OC * TP_OUT(H, KH, stride, pad) * TP_OUT(W, KW, stride, pad) +                              \
	       dinp * (OC * C * KH * KW + 2 * B * C * H * W) + dweight * (B * C * H * W + 2 * OC * C * KH * KW) + \
	       dbias * 2 * OC),                                                                                \
	  B * TP_OUT(H, KH, stride, pad) * TP_OUT(W, KW, stride, pad) * KH * KW * C * OC * (dinp + dweight))   \
	X(V, void, tnn_maxpool2d_fwd,                                                                          \
	  (float *out, int *argmax, const float *inp, int B, int C, int H, int W, int K, int stride),         \
	  (out, argmax, inp, B, C, H, W, K, stride), (B, C, H, W, K, stride), (B, C, H, W, K, stride),         \
	  B * C * TP_OUT(H, K, stride, 0) * TP_OUT(W, K, stride, 0) * K * K,                                   \
	  4 * (B * C * H * W + 2 * B * C * TP_OUT(H, K, stride, 0) * TP_OUT(W, K, stride, 0)), 0)              \
	X(V, void, tnn_maxpool2d_bwd,                                                                          \
	  (float *dinp, const float *dout, const int *argmax, int B, int C, int H, int W, int K, int stride), \
	  (dinp, dout, argmax, B, C, H, W, K, stride), (B, C, H, W, K, stride), (B, C, H, W, K, stride),       \
	  B * C * TP_OUT(H, K, stride, 0) * TP_OUT(W, K, stride, 0),                                           \
	  4 * (2 * B * C * TP_OUT(H, K, stride, 0) * TP_OUT(W, K, stride, 0) + 2 * B * C * H * W), 0)          \
	X(V, void, tnn_relu_fwd, (float *out, const float *inp, long n), (out, inp, n), (n), (n), n, 8 * n, 0) \
	X(V, void, tnn_relu_bwd, (float *dinp, const float *dout, const float *inp, long n), (dinp, dout, inp, n), \
	  (n), (n), 2 * n, 16 * n, 0)                                                                          \
	X(V, void, tnn_gelu_fwd, (float *out, const float *inp, long n), (out, inp, n), (n), (n), 9 * n, 8 * n, 0) \
	X(V, void, tnn_gelu_bwd, (float *dinp, const float *dout, const float *inp, long n), (dinp, dout, inp, n), \
	  (n), (n), 20 * n, 16 * n, 0)                                                                         \
	X(V, void, tnn_softmax_fwd, (float *out, const float *inp, int N, int C), (out, inp, N, C), (N, C),   \
	  (N, C), 5 * N * C, 8 * N * C, 0)                                                                     \
	X(V, void, tnn_causal_softmax_fwd, (float *att, const float *preatt, int BH, int T, float scale),     \
	  (att, preatt, BH, T, scale), (BH, T), (BH, T), 5 * BH * TP_P(T), 4 * (BH * TP_P(T) + BH * T * T), 0) \
	X(V, void, tnn_causal_softmax_bwd,                                                                     \
	  (float *dpreatt, const float *datt, const float *att, int BH, int T, float scale),                  \
	  (dpreatt, datt, att, BH, T, scale), (BH, T), (BH, T), 5 * BH * TP_P(T), 16 * BH * TP_P(T), 0)        \
	X(V, void, tnn_layernorm_fwd,                                                                          \
	  (float *out, float *mean, float *rstd, const float *inp, const float *weight, const float *bias,    \
	   int N, int C),                                                                                      \
	  (out, mean, rstd, inp, weight, bias, N, C), (N, C), (N, C), 8 * N * C,                               \
	  4 * (2 * N * C + 2 * C + 2 * N), 0)                                                                  \
	X(V, void, tnn_layernorm_bwd,                                                                          \
	  (float *dinp, float *dweight, float *dbias, const float *dout, const float *inp, const float *weight, \
	   const float *mean, const float *rstd, int N, int C),                                                \
	  (dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C), (N, C, dinp, dweight, dbias),           \
	  (N, C, TP_NZ(dinp), TP_NZ(dweight), TP_NZ(dbias)), N * C * (13 * dinp + 5 * (dweight || dbias)),      \
	  (dinp || dweight || dbias) * 4 * (2 * N * C + 2 * N + dinp * (2 * N * C + C) + 2 * C * (dweight + dbias)), \
	  0)                                                                                                   \
	X(V, void, tnn_attention_fwd, (float *out, float *att, const float *qkv, int B, int T, int C, int NH), \
	  (out, att, qkv, B, T, C, NH), (B, T, C, NH), (B, T, C, NH),                                          \
	  (NH ? 4 * B * NH * (C / NH) * TP_P(T) : 0) + 5 * B * NH * TP_P(T),                                   \
	  4 * (4 * B * T * C + B * NH * T * T), NH ? 2 * B * NH * (C / NH) * TP_P(T) : 0)                      \
	X(V, void, tnn_attention_bwd,                                                                          \
	  (float *dqkv, const float *dout, const float *qkv, const float *att, int B, int T, int C, int NH),  \
	  (dqkv, dout, qkv, att, B, T, C, NH), (B, T, C, NH), (B, T, C, NH),                                   \
	  (NH ? 8 * B * NH * (C / NH) * TP_P(T) + 3 * B * T * NH * (C / NH) : 0) + 5 * B * NH * TP_P(T),       \
	  4 * (10 * B * T * C + B * NH * T * T), NH ? 4 * B * NH * (C / NH) * TP_P(T) : 0)                     \
	X(V, void, tnn_attention_decode,                                                                       \
	  (float *out, const float *q, const float *kcache, const float *vcache, int B, int NH, int HS,       \
	   int TCAP, int n),                                                                                   \
	  (out, q, kcache, vcache, B, NH, HS, TCAP, n), (B, NH, HS, TCAP, n), (B, NH, HS, TCAP, n),            \
	  4 * B * NH * HS * n + 5 * B * NH * n, 4 * (2 * B * NH * HS + 2 * B * NH * n * HS),                   \
	  2 * B * NH * HS * n)                                                                                 \
	X(V, void, tnn_embedding_fwd, (float *out, const int *ids, const float *table, int N, int V, int C),  \
	  (out, ids, table, N, V, C), (N, V, C), (N, V, C), 0, 4 * (N + 2 * N * C), 0)                         \
	X(V, void, tnn_embedding_bwd, (float *dtable, const float *dout, const int *ids, int N, int V, int C), \
	  (dtable, dout, ids, N, V, C), (N, V, C), (N, V, C), N * C, 4 * (N + 3 * N * C), 0)                   \
	X(V, void, tnn_add, (float *out, const float *a, const float *b, long n), (out, a, b, n), (n), (n), n, \
	  12 * n, 0)                                                                                           \
	X(R, float, tnn_crossentropy_fwd,                                                                      \
	  (float *losses, float *probs, const float *logits, const int *targets, int N, int V),               \
	  (losses, probs, logits, targets, N, V), (N, V), (N, V), 5 * N * V + 2 * N, 4 * (2 * N * V + 2 * N), 0) \
	X(V, void, tnn_crossentropy_bwd,                                                                       \
	  (float *dlogits, const float *probs, const int *targets, int N, int V, float dloss),                \
	  (dlogits, probs, targets, N, V, dloss), (N, V), (N, V), 2 * N * V + N, 4 * (3 * N * V + N), 0)       \
	X(V, void, tnn_adamw,                                                                                  \
	  (float *param, const float *grad, float *m, float *v, long n, int t, float lr, float beta1,          \
	   float beta2, float eps, float weight_decay),                                                        \
	  (param, grad, m, v, n, t, lr, beta1, beta2, eps, weight_decay), (n), (n), 16 * n, 28 * n, 0)         \
	X(V, void, tnn_sgd,                                                                                    \
	  (float *param, const float *grad, float *mom, long n, float lr, float momentum, float weight_decay), \
	  (param, grad, mom, n, lr, momentum, weight_decay), (n, mom), (n, TP_NZ(mom)), (4 + 2 * mom) * n,     \
	  4 * (3 * n + mom * 2 * n), 0)                                                                        \
	X(V, void, cblas_sgemm,                                                                                \
	  (int order, int transa, int transb, int M, int N, int K, float alpha, const float *A, int lda,      \
	   const float *B, int ldb, float beta, float *C, int ldc),                                            \
	  (order, transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc), (M, N, K, ta, tb, beta),      \
	  (M, N, K, transa != 111, transb != 111, tprof_f32_nonzero(beta)), 2 * M * N * K,                     \
	  4 * (M * K + K * N + M * N + beta * M * N), M * N * K)                                               \
	X(V, void, cblas_dgemm,                                                                                \
	  (int order, int transa, int transb, int M, int N, int K, double alpha, const double *A, int lda,    \
	   const double *B, int ldb, double beta, double *C, int ldc),                                         \
	  (order, transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc), (M, N, K, ta, tb, beta),      \
	  (M, N, K, transa != 111, transb != 111, tprof_f64_nonzero(beta)), 2 * M * N * K,                     \
	  8 * (M * K + K * N + M * N + beta * M * N), M * N * K)                                               \
	X(V, void, sgemm_,                                                                                     \
	  (const char *transa, const char *transb, const int *m, const int *n, const int *k,                  \
	   const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,                \
	   const float *beta, float *c, const int *ldc, unsigned long la, unsigned long lb),                  \
	  (transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb), (M, N, K, ta, tb, beta),     \
	  (*m, *n, *k, !TP_NOTRANS(*transa), !TP_NOTRANS(*transb), tprof_f32_nonzero(*beta)), 2 * M * N * K,   \
	  4 * (M * K + K * N + M * N + beta * M * N), M * N * K)                                               \
	X(V, void, dgemm_,                                                                                     \
	  (const char *transa, const char *transb, const int *m, const int *n, const int *k,                  \
	   const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,             \
	   const double *beta, double *c, const int *ldc, unsigned long la, unsigned long lb),                \
	  (transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb), (M, N, K, ta, tb, beta),     \
	  (*m, *n, *k, !TP_NOTRANS(*transa), !TP_NOTRANS(*transb), tprof_f64_nonzero(*beta)), 2 * M * N * K,   \
	  8 * (M * K + K * N + M * N + beta * M * N), M * N * K)                                               \
	TP_BLAS(X, s, float, 4) TP_BLAS(X, d, double, 8)

/* Nonzero test of a float by its bits: no floating-point instruction, so no exception flag can be
 * raised in the traced program's floating-point state. */
static inline int tprof_f32_nonzero(float f)
{
	uint32_t u;
	__builtin_memcpy(&u, &f, sizeof(u));
	return (u & 0x7fffffffu) != 0;
}

static inline int tprof_f64_nonzero(double f)
{
	uint64_t u;
	__builtin_memcpy(&u, &f, sizeof(u));
	return (u & 0x7fffffffffffffffull) != 0;
}

enum tprof_op_id {
	TPROF_OP_NONE = 0,
#define TP_ENUM(RK, RET, NAME, ...) TPROF_OP_##NAME,
	TPROF_OPS(TP_ENUM)
#undef TP_ENUM
	TPROF_NOPS
};

#define TPROF_OP_MAX_SHAPE 12

/* Declares the shape names as int64 locals read from s[]. */
#define TP_UNPAREN(...) __VA_ARGS__
#define TP_NARGS(...) TP_NARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define TP_NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, N, ...) N
#define TP_CAT(a, b) TP_CAT_(a, b)
#define TP_CAT_(a, b) a##b
/* 128 bits: M*K+K*N+M*N of int sizes passes 2^63. A negative size is 0 (a kernel given one does
 * nothing with it), so that two negatives cannot make a positive cost; flags and a padding are taken
 * as they are (a negative padding crops, and flags are bits). The names are compared as constants,
 * folded away. */
static inline __int128 tprof_shape_value(const char *name, int64_t v)
{
	if (v >= 0 || __builtin_strcmp(name, "flags") == 0 || __builtin_strcmp(name, "pad") == 0)
		return v;
	return 0;
}
#define TP_V(x, i) const __int128 x = tprof_shape_value(#x, s[i]); (void)x;
#define TP_D1(a) TP_V(a, 0)
#define TP_D2(a, b) TP_D1(a) TP_V(b, 1)
#define TP_D3(a, b, c) TP_D2(a, b) TP_V(c, 2)
#define TP_D4(a, b, c, d) TP_D3(a, b, c) TP_V(d, 3)
#define TP_D5(a, b, c, d, e) TP_D4(a, b, c, d) TP_V(e, 4)
#define TP_D6(a, b, c, d, e, f) TP_D5(a, b, c, d, e) TP_V(f, 5)
#define TP_D7(a, b, c, d, e, f, g) TP_D6(a, b, c, d, e, f) TP_V(g, 6)
#define TP_D8(a, b, c, d, e, f, g, h) TP_D7(a, b, c, d, e, f, g) TP_V(h, 7)
#define TP_D9(a, b, c, d, e, f, g, h, i) TP_D8(a, b, c, d, e, f, g, h) TP_V(i, 8)
#define TP_D10(a, b, c, d, e, f, g, h, i, j) TP_D9(a, b, c, d, e, f, g, h, i) TP_V(j, 9)
#define TP_D11(a, b, c, d, e, f, g, h, i, j, k) TP_D10(a, b, c, d, e, f, g, h, i, j) TP_V(k, 10)
#define TP_D12(a, b, c, d, e, f, g, h, i, j, k, l) TP_D11(a, b, c, d, e, f, g, h, i, j, k) TP_V(l, 11)
#define TP_DECL(...) TP_CAT(TP_D, TP_NARGS(__VA_ARGS__))(__VA_ARGS__)

/* The cost of one call from its shape values: FLOPs, bytes and MACs (a negative shape value counts as 0). */
struct tprof_op_cost {
	uint64_t flops, bytes, macs;
};

/* A cost in [0, 2^64 - 1]: negative shapes give 0, more than 64 bits the largest. */
static inline uint64_t tprof_cost_clamp(__int128 v)
{
	return v <= 0 ? 0 : v > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

#define TP_COSTFN(RK, RET, NAME, PARAMS, ARGS, SNAMES, SVALS, FLOPS, BYTES, MACS)                               \
	static inline struct tprof_op_cost tprof_cost_##NAME(const int64_t *s)                                 \
	{                                                                                                      \
		TP_DECL SNAMES __int128 f_ = (FLOPS), b_ = (BYTES), m_ = (MACS);                                \
		struct tprof_op_cost c = {tprof_cost_clamp(f_), tprof_cost_clamp(b_), tprof_cost_clamp(m_)};     \
		return c;                                                                                      \
	}
TPROF_OPS(TP_COSTFN)
#undef TP_COSTFN

/* Static description of an op: name, number of shape values and their names (comma-separated),
 * element size of its floating-point data (4 or 8). */
struct tprof_op_info {
	const char *name;
	unsigned nshape;
	const char *shape_names;
	unsigned elem_bytes;
};

/* float64 ops: the BLAS and LAPACK d* routines, through either entry point (cblas_d..., cblas_id...,
 * d..._, id..._); every other op works on float32. */
#define TP_ELEM_BYTES(s)                                                                                      \
	(((s)[0] == 'c' && (s)[5] == '_') ? (((s)[6] == 'd' || ((s)[6] == 'i' && (s)[7] == 'd')) ? 8u : 4u)       \
					  : (((s)[0] == 'd' || ((s)[0] == 'i' && (s)[1] == 'd')) ? 8u : 4u))

static inline const struct tprof_op_info *tprof_op_info(unsigned op)
{
#define TP_INFO(RK, RET, NAME, PARAMS, ARGS, SNAMES, SVALS, ...)                                                \
	{#NAME, TP_NARGS SNAMES, #SNAMES, TP_ELEM_BYTES(#NAME)},
	static const struct tprof_op_info info[] = {{"?", 0, "()", 4}, TPROF_OPS(TP_INFO)};
#undef TP_INFO
	return op < TPROF_NOPS ? &info[op] : &info[0];
}

/* Whether op's FLOPs are a nominal count (an iterative LAPACK driver: the work depends on the data). */
static inline int tprof_op_nominal(unsigned op)
{
	switch (op) {
	case TPROF_OP_ssyevd_: case TPROF_OP_dsyevd_: case TPROF_OP_sgesdd_: case TPROF_OP_dgesdd_:
	case TPROF_OP_sgelsd_: case TPROF_OP_dgelsd_:
		return 1;
	}
	return 0;
}

/* The cost of op from its shape (nshape values); zeros for an unknown op or a shape of the wrong size. */
static inline struct tprof_op_cost tprof_op_cost(unsigned op, const int64_t *s, unsigned nshape)
{
	struct tprof_op_cost zero = {0, 0, 0};
	if (op == 0 || op >= TPROF_NOPS || nshape != tprof_op_info(op)->nshape)
		return zero;
	switch (op) {
#define TP_CASE(RK, RET, NAME, ...)                                                                             \
	case TPROF_OP_##NAME:                                                                                  \
		return tprof_cost_##NAME(s);
		TPROF_OPS(TP_CASE)
#undef TP_CASE
	}
	return zero;
}

#endif
