"""Checks `tprof ops --group-by shape --json` against the analytic FLOP formulas of every wrapped
kernel, written here independently of include/tprof_ops.h from include/tnn.h, docs/OPS.md and, for
BLAS and LAPACK, LAPACK Working Note 41's multiplication and addition counts (exact fractions, which
must come out whole), and checks that the shares add up. Usage: ops_check.py OPS.json [--all] ;
--all: every op must appear."""
import json, re, sys
from fractions import Fraction as F

def P(T): return T * (T + 1) // 2
def out(i, k, s, p): return 0 if i + 2 * p - k < 0 else (i + 2 * p - k) // s + 1

def taps(i, k, s, p):
    """the window positions inside the input, over every output position (col2im's adds)"""
    return sum(1 for o in range(max(out(i, k, s, p), 0)) for j in range(k) if 0 <= o * s - p + j < i)

def conv_macs(B, C, H, W, OC, KH, KW, stride, pad):
    return B * out(H, KH, stride, pad) * out(W, KW, stride, pad) * KH * KW * C * OC

FLOPS = {
    "tnn_matmul": lambda M, N, K, flags, bias: 2 * M * N * K + (M * N if bias else 0),
    "tnn_matmul_bwd": lambda M, N, K, dA, dB, dbias: 2 * M * N * K * (dA + dB) + (M * N if dbias else 0),
    "tnn_linear_fwd": lambda N, C, OC, bias: 2 * N * C * OC + (N * OC if bias else 0),
    "tnn_linear_bwd": lambda N, C, OC, dinp, dweight, dbias: 2 * N * C * OC * (dinp + dweight) + (N * OC if dbias else 0),
    "tnn_im2col": lambda C, H, W, KH, KW, stride, pad: 0,
    "tnn_col2im": lambda C, H, W, KH, KW, stride, pad: C * taps(H, KH, stride, pad) * taps(W, KW, stride, pad),
    "tnn_conv2d_fwd": lambda B, C, H, W, OC, KH, KW, stride, pad, bias: 2 * conv_macs(B, C, H, W, OC, KH, KW, stride, pad)
        + (B * OC * out(H, KH, stride, pad) * out(W, KW, stride, pad) if bias else 0),
    "tnn_conv2d_bwd": lambda B, C, H, W, OC, KH, KW, stride, pad, dinp, dweight, dbias:
        2 * conv_macs(B, C, H, W, OC, KH, KW, stride, pad) * (dinp + dweight)
        + (B * C * taps(H, KH, stride, pad) * taps(W, KW, stride, pad) if dinp else 0)
        + (B * OC * out(H, KH, stride, pad) * out(W, KW, stride, pad) if dbias else 0),
    "tnn_maxpool2d_fwd": lambda B, C, H, W, K, stride: B * C * out(H, K, stride, 0) * out(W, K, stride, 0) * K * K,
    "tnn_maxpool2d_bwd": lambda B, C, H, W, K, stride: B * C * out(H, K, stride, 0) * out(W, K, stride, 0),
    "tnn_relu_fwd": lambda n: n, "tnn_relu_bwd": lambda n: 2 * n,
    "tnn_gelu_fwd": lambda n: 9 * n, "tnn_gelu_bwd": lambda n: 20 * n,
    "tnn_softmax_fwd": lambda N, C: 5 * N * C,
    "tnn_causal_softmax_fwd": lambda BH, T: 5 * BH * P(T),
    "tnn_causal_softmax_bwd": lambda BH, T: 5 * BH * P(T),
    "tnn_layernorm_fwd": lambda N, C: 8 * N * C,
    "tnn_layernorm_bwd": lambda N, C, dinp, dweight, dbias: N * C * (13 * dinp + (5 if dweight or dbias else 0)),
    "tnn_attention_fwd": lambda B, T, C, NH: 4 * B * NH * (C // NH) * P(T) + 5 * B * NH * P(T),
    "tnn_attention_bwd": lambda B, T, C, NH: 8 * B * NH * (C // NH) * P(T) + 5 * B * NH * P(T) + 3 * B * T * NH * (C // NH),
    "tnn_attention_decode": lambda B, NH, HS, TCAP, n: 4 * B * NH * HS * n + 5 * B * NH * n,
    "tnn_embedding_fwd": lambda N, V, C: 0, "tnn_embedding_bwd": lambda N, V, C: N * C,
    "tnn_add": lambda n: n,
    "tnn_crossentropy_fwd": lambda N, V: 5 * N * V + 2 * N, "tnn_crossentropy_bwd": lambda N, V: 2 * N * V + N,
    "tnn_adamw": lambda n: 16 * n, "tnn_sgd": lambda n, mom: (6 if mom else 4) * n,
    "cblas_sgemm": lambda M, N, K, ta, tb, beta: 2 * M * N * K,
    "cblas_dgemm": lambda M, N, K, ta, tb, beta: 2 * M * N * K,
    "sgemm_": lambda M, N, K, ta, tb, beta: 2 * M * N * K,
    "dgemm_": lambda M, N, K, ta, tb, beta: 2 * M * N * K,
}

# BLAS (both precisions, both entry points) and LAPACK: fmuls + fadds as LAWN 41 gives them.
def lawn(fmuls, fadds):
    t = F(fmuls) + F(fadds)
    assert t.denominator == 1, t
    return max(int(t), 0)

def getrf(M, N):
    m, n = M, N
    if m < n:
        m, n = n, m
    return lawn(F(1, 2) * m * n * n - F(n ** 3, 6) + F(1, 2) * m * n - F(1, 2) * n * n + F(2, 3) * n,
                F(1, 2) * m * n * n - F(n ** 3, 6) - F(1, 2) * m * n + F(n, 6))

def getrs(N, NRHS): return lawn(NRHS * N * N, NRHS * N * (N - 1))

def geqrf(m, n):
    if m > n:
        return lawn(m * n * n - F(n ** 3, 3) + m * n + F(n * n, 2) + F(23 * n, 6), m * n * n - F(n ** 3, 3) + F(n * n, 2) + F(5 * n, 6))
    return lawn(n * m * m - F(m ** 3, 3) + 2 * n * m - F(m * m, 2) + F(23 * m, 6), n * m * m - F(m ** 3, 3) + n * m - F(m * m, 2) + F(5 * m, 6))

# nominal counts of the iterative drivers (Golub and Van Loan): the cheaper of Golub-Reinsch and R-SVD
def svd(m, n, vectors):
    big, small = max(m, n), min(m, n)
    if vectors == 0:
        return min(4 * big * small ** 2 - (4 * small ** 3) // 3, 2 * big * small ** 2 + 2 * small ** 3)
    if vectors == 1:
        return min(14 * big * small ** 2 + 8 * small ** 3, 6 * big * small ** 2 + 20 * small ** 3)
    return min(4 * big ** 2 * small + 8 * big * small ** 2 + 9 * small ** 3, 4 * big ** 2 * small + 22 * small ** 3)

BLAS = {
    "asum": lambda n: lawn(0, n - 1), "axpy": lambda n: lawn(n, n), "copy": lambda n: 0,
    "dot": lambda n: lawn(n, n - 1), "nrm2": lambda n: lawn(n, n - 1), "rot": lambda n: lawn(4 * n, 2 * n),
    "scal": lambda n: lawn(n, 0), "swap": lambda n: 0, "amax": lambda n: lawn(0, n - 1),
    "gemv": lambda M, N, t, beta: lawn(M * N, M * N), "symv": lambda N, beta: lawn(N * N, N * N),
    "ger": lambda M, N: lawn(M * N, M * N),
    "syr": lambda N: lawn(F(N * (N + 1), 2), F(N * (N + 1), 2)), "syr2": lambda N: lawn(N * (N + 1), N * (N + 1)),
    "trmv": lambda N: lawn(F(N * (N + 1), 2), F(N * (N - 1), 2)), "trsv": lambda N: lawn(F(N * (N + 1), 2), F(N * (N - 1), 2)),
    "gemm": lambda M, N, K, ta, tb, beta: lawn(M * N * K, M * N * K),
    "symm": lambda M, N, left, beta: lawn(M * M * N, M * M * N) if left else lawn(M * N * N, M * N * N),
    "syrk": lambda N, K, beta: lawn(F(K * N * (N + 1), 2), F(K * N * (N + 1), 2)),
    "syr2k": lambda N, K, beta: lawn(K * N * N, K * N * N + N) if K else 0,
    "trmm": lambda M, N, left: lawn(F(N * M * (M + 1), 2), F(N * M * (M - 1), 2)) if left else lawn(F(M * N * (N + 1), 2), F(M * N * (N - 1), 2)),
    "trsm": lambda M, N, left: lawn(F(N * M * (M + 1), 2), F(N * M * (M - 1), 2)) if left else lawn(F(M * N * (N + 1), 2), F(M * N * (N - 1), 2)),
}
LAPACK = {
    "getrf": getrf, "getrs": getrs, "gesv": lambda N, NRHS: getrf(N, N) + getrs(N, NRHS),
    "potrf": lambda N: lawn(F(N ** 3, 6) + F(N * N, 2) + F(N, 3), F(N ** 3, 6) - F(N, 6)),
    "geqrf": lambda M, N, query: 0 if query else geqrf(M, N),
    "syevd": lambda N, vectors, query: 0 if query else (9 * N ** 3 if vectors else (4 * N ** 3) // 3),
    "gesdd": lambda M, N, vectors, query: 0 if query else svd(M, N, vectors),
    "gelsd": lambda M, N, NRHS, query: 0 if query else min(4 * max(M, N) * min(M, N) ** 2 + 8 * min(M, N) ** 3,
                                                          2 * max(M, N) * min(M, N) ** 2 + 11 * min(M, N) ** 3),
}
for p in "sd":
    for name, f in BLAS.items():
        if name == "gemm":
            continue  # listed above
        base = "i" + p + name if name == "amax" else p + name
        FLOPS["cblas_" + base] = f
        FLOPS[base + "_"] = f
    for name, f in LAPACK.items():
        FLOPS[p + name + "_"] = f

d = json.load(open(sys.argv[1]))
seen, bad = set(), 0
for op in d["ops"]:
    m = re.fullmatch(r"([A-Za-z0-9_]+)\((.*)\)", op["name"])
    name = m.group(1)
    # a negative size counts as 0 (the kernels do nothing with it); flags and padding are kept
    args = {k: int(v) if k in ("flags", "pad") else max(0, int(v))
            for k, v in (kv.split("=") for kv in m.group(2).split(","))}
    want = FLOPS[name](**args) * op["calls"]
    seen.add(name)
    # calls with nothing to do: tnn_matmul with M or N 0, an element-wise kernel with n 0, a row
    # kernel with no rows or columns
    idle = (name == "tnn_matmul" and (args["M"] == 0 or args["N"] == 0)) or \
        (name in ("tnn_relu_fwd", "tnn_relu_bwd", "tnn_gelu_fwd", "tnn_gelu_bwd", "tnn_add", "tnn_adamw",
                  "tnn_sgd") and args["n"] == 0) or \
        (name == "tnn_softmax_fwd" and (args["N"] == 0 or args["C"] == 0))
    if idle and op["bytes"]:
        print(f"MISMATCH {op['name']}: a call with nothing to do moves {op['bytes']} bytes")
        bad += 1
    if name == "tnn_layernorm_bwd" and not (args["dinp"] or args["dweight"] or args["dbias"]) and op["bytes"]:
        print(f"MISMATCH {op['name']}: a call with nothing to do moves {op['bytes']} bytes")
        bad += 1
    if op["flops"] != want:
        print(f"MISMATCH {op['name']}: calls {op['calls']} flops {op['flops']} analytic {want}")
        bad += 1
self_sum = sum(op["self_ns"] for op in d["ops"])
if abs(self_sum - d["in_ops_ns"]) > max(1000, d["in_ops_ns"] * 1e-4):
    print(f"self times {self_sum} do not add up to the time in kernels {d['in_ops_ns']}")
    bad += 1
rest = d["outside_ns"] + d.get("idle_ns", 0)  # idle: OpenMP pool threads between regions
if self_sum + rest > d["wall_ns"] * (1 + 1e-4) + 1000 or self_sum + rest < d["wall_ns"] * (1 - 1e-4) - 1000:
    print(f"self {self_sum} + outside {d['outside_ns']} + idle {d.get('idle_ns', 0)} != wall {d['wall_ns']}")
    bad += 1
if "--all" in sys.argv and seen != set(FLOPS):
    print("ops never seen:", sorted(set(FLOPS) - seen))
    bad += 1
print(f"{len(d['ops'])} rows, {len(seen)} ops checked, {bad} problems")
sys.exit(1 if bad else 0)
