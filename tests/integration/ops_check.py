"""Checks `tprof ops --group-by shape --json` against the analytic FLOP formulas of every wrapped
kernel, written here independently of include/tprof_ops.h from include/tnn.h and docs/OPS.md, and
checks that the shares add up. Usage: ops_check.py OPS.json [--all] ; --all: every op must appear."""
import json, re, sys

def P(T): return T * (T + 1) // 2
def out(i, k, s, p): return (i + 2 * p - k) // s + 1

def conv_macs(B, C, H, W, OC, KH, KW, stride, pad):
    return B * out(H, KH, stride, pad) * out(W, KW, stride, pad) * KH * KW * C * OC

FLOPS = {
    "tnn_matmul": lambda M, N, K, flags, bias: 2 * M * N * K + (M * N if bias else 0),
    "tnn_matmul_bwd": lambda M, N, K, dA, dB, dbias: 2 * M * N * K * (dA + dB) + (M * N if dbias else 0),
    "tnn_linear_fwd": lambda N, C, OC, bias: 2 * N * C * OC + (N * OC if bias else 0),
    "tnn_linear_bwd": lambda N, C, OC, dinp, dweight, dbias: 2 * N * C * OC * (dinp + dweight) + (N * OC if dbias else 0),
    "tnn_im2col": lambda C, H, W, KH, KW, stride, pad: 0,
    "tnn_col2im": lambda C, H, W, KH, KW, stride, pad: C * KH * KW * out(H, KH, stride, pad) * out(W, KW, stride, pad),
    "tnn_conv2d_fwd": lambda B, C, H, W, OC, KH, KW, stride, pad, bias: 2 * conv_macs(B, C, H, W, OC, KH, KW, stride, pad)
        + (B * OC * out(H, KH, stride, pad) * out(W, KW, stride, pad) if bias else 0),
    "tnn_conv2d_bwd": lambda B, C, H, W, OC, KH, KW, stride, pad, dinp, dweight, dbias:
        2 * conv_macs(B, C, H, W, OC, KH, KW, stride, pad) * (dinp + dweight)
        + (B * C * KH * KW * out(H, KH, stride, pad) * out(W, KW, stride, pad) if dinp else 0)
        + (B * OC * out(H, KH, stride, pad) * out(W, KW, stride, pad) if dbias else 0),
    "tnn_maxpool2d_fwd": lambda B, C, H, W, K, stride: B * C * out(H, K, stride, 0) * out(W, K, stride, 0) * K * K,
    "tnn_maxpool2d_bwd": lambda B, C, H, W, K, stride: B * C * out(H, K, stride, 0) * out(W, K, stride, 0),
    "tnn_relu_fwd": lambda n: n, "tnn_relu_bwd": lambda n: n,
    "tnn_gelu_fwd": lambda n: 10 * n, "tnn_gelu_bwd": lambda n: 20 * n,
    "tnn_softmax_fwd": lambda N, C: 5 * N * C,
    "tnn_causal_softmax_fwd": lambda BH, T: 5 * BH * P(T),
    "tnn_causal_softmax_bwd": lambda BH, T: 4 * BH * P(T),
    "tnn_layernorm_fwd": lambda N, C: 8 * N * C, "tnn_layernorm_bwd": lambda N, C: 14 * N * C,
    "tnn_attention_fwd": lambda B, T, C, NH: 4 * B * NH * (C // NH) * P(T) + 5 * B * NH * P(T),
    "tnn_attention_bwd": lambda B, T, C, NH: 8 * B * NH * (C // NH) * P(T) + 4 * B * NH * P(T),
    "tnn_attention_decode": lambda B, NH, HS, TCAP, n: 4 * B * NH * HS * n + 5 * B * NH * n,
    "tnn_embedding_fwd": lambda N, V, C: 0, "tnn_embedding_bwd": lambda N, V, C: N * C,
    "tnn_add": lambda n: n,
    "tnn_crossentropy_fwd": lambda N, V: 5 * N * V + 2 * N, "tnn_crossentropy_bwd": lambda N, V: 2 * N * V,
    "tnn_adamw": lambda n: 15 * n, "tnn_sgd": lambda n, mom: 6 * n,
    "cblas_sgemm": lambda M, N, K, ta, tb, beta: 2 * M * N * K,
    "cblas_dgemm": lambda M, N, K, ta, tb, beta: 2 * M * N * K,
    "sgemm_": lambda M, N, K, ta, tb, beta: 2 * M * N * K,
    "dgemm_": lambda M, N, K, ta, tb, beta: 2 * M * N * K,
}

d = json.load(open(sys.argv[1]))
seen, bad = set(), 0
for op in d["ops"]:
    m = re.fullmatch(r"([A-Za-z0-9_]+)\((.*)\)", op["name"])
    name = m.group(1)
    args = {k: int(v) for k, v in (kv.split("=") for kv in m.group(2).split(","))}
    want = FLOPS[name](**args) * op["calls"]
    seen.add(name)
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
