#!/usr/bin/env bats
# Kernel interposition and tprof ops: every wrapped kernel's FLOPs equal its analytic formula for the
# shapes used, the shares add up, the real result is unchanged, a BLAS loaded RTLD_LOCAL is reached,
# NumPy's dgemm is counted, annotations give steps and ranges, and malformed KERNELS blocks are rejected.

load helpers

export TPROF_PEAK_GFLOPS=100
CHECK="$TPROF_ROOT/tests/integration/ops_check.py"
# Under SAN=1 libtnn.so is built with ASan, whose runtime must come first: it cannot run preloaded.
no_asan_tnn() {
	if ldd "$B/libtnn.so" | grep -q libasan; then
		skip "libtnn.so is ASan-instrumented (SAN=1) and cannot run under LD_PRELOAD"
	fi
}
GPT_SMALL="--vocab 64 --ctx 32 --layers 2 --heads 2 --dmodel 32 --batch 2 --steps 6 --lr 3e-3 --period 12 --gen 4"

@test "every op-table kernel is wrapped and its FLOPs equal the analytic formula" {
	no_asan_tnn
	bare=$("$B/progs/kernel_calls" 2>&1)
	run traced "$B/progs/kernel_calls"
	[ "$status" -eq 0 ]
	[ "$output" = "$bare" ] # BLAS results unchanged
	"$B/tprof" ops --group-by shape --json t.trace >ops.json
	run $PY "$CHECK" ops.json --all
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the same with Netlib's reference BLAS and LAPACK, whose drivers call BLAS and LAPACK through the PLT" {
	no_asan_tnn
	ref=/usr/lib/x86_64-linux-gnu
	[ -e $ref/blas/libblas.so.3 ] && [ -e $ref/lapack/liblapack.so.3 ] || skip "reference BLAS/LAPACK not installed"
	export LD_LIBRARY_PATH=$ref/blas:$ref/lapack
	ldd "$B/progs/libkcall_blas.so" | grep -q "$ref/lapack/liblapack.so.3"
	bare=$("$B/progs/kernel_calls" 2>&1)
	run traced "$B/progs/kernel_calls"
	[ "$status" -eq 0 ]
	[ "$output" = "$bare" ]
	unset LD_LIBRARY_PATH
	"$B/tprof" ops --group-by shape --json t.trace >ops.json
	run $PY "$CHECK" ops.json --all
	echo "$output"
	[ "$status" -eq 0 ]
	# reference dgesv_ calls dgetrs_ through the PLT: recorded as a nested call (one direct, one inside)
	"$B/tprof" ops --json t.trace | $PY -c '
import json, sys
rows = {o["name"]: o for o in json.load(sys.stdin)["ops"]}
assert rows["dgetrs_"]["calls"] == 2 and rows["dgesv_"]["calls"] == 1, rows["dgetrs_"]'
}

@test "shapes with a 64-bit value or more than four values are recorded exactly" {
	no_asan_tnn
	traced "$B/progs/kernel_wide"
	"$B/tprof" ops --group-by shape --json t.trace >ops.json
	run $PY -c '
import json
print(sorted(o["name"] for o in json.load(open("ops.json"))["ops"]))'
	echo "$output"
	[ "$output" = "['tnn_adamw(n=-1099511627776)', 'tnn_im2col(C=0,H=5,W=6,KH=7,KW=8,stride=9,pad=-10)', 'tnn_relu_fwd(n=-8589934599)']" ]
}

@test "transformer_bench: FLOPs match the formulas per shape and the shares add up" {
	no_asan_tnn
	traced "$B/transformer_bench" $GPT_SMALL >/dev/null
	"$B/tprof" ops --group-by shape --json t.trace >ops.json
	run $PY "$CHECK" ops.json
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "OpenMP: FLOPs per step equal the benchmark's own count for 1, 2 and 4 threads; pool threads' time is theirs or idle" {
	no_asan_tnn
	# attention opens parallel regions in which the pool's threads call tnn_matmul: those calls are
	# the attention's (its FLOPs include them), not top-level calls of the pool threads
	for n in 1 2 4; do
		rm -f t.trace
		OMP_NUM_THREADS=$n traced "$B/transformer_bench" --layers 2 --batch 2 --steps 2 --gen 0 >bench.out
		want=$(awk '$1 == "flops_per_step" { print $2 }' bench.out)
		"$B/tprof" ops --json t.trace >o.json
		$PY - o.json "$want" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
want, n = int(sys.argv[2]), int(sys.argv[3])
assert d["steps"]["flops_per_step"] == want, (d["steps"]["flops_per_step"], want)
assert d["threads"] == n, d["threads"]
assert d["in_ops_ns"] + d["outside_ns"] + d["idle_ns"] == d["wall_ns"], d
assert sum(o["self_ns"] for o in d["ops"]) == d["in_ops_ns"], d
assert (d["idle_ns"] > 0) == (n > 1), d["idle_ns"]
PY
		# the regions each op opened: on as many threads as the pool has, never below even
		"$B/tprof" ops --by region --json t.trace >rg.json
		$PY - rg.json "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
rows = {r["opened_by"]: r for r in d["regions"]}
mm = rows["tnn_matmul"]
assert mm["regions"] > 0 and mm["threads"] == n and mm["imbalance"] >= 1, mm
assert all(r["busy_ns"] > 0 and r["wall_ns"] > 0 and r["threads"] <= n for r in d["regions"]), d
PY
	done
	run "$B/tprof" ops --by region t.trace
	[[ "$output" == *"opened by"*"imbalance"*"tnn_matmul"* ]]
	run "$B/tprof" ops t.trace
	[[ "$output" == *"  idle "*"OpenMP pool threads waiting between regions"* ]]
	[[ "$output" == *"(idle OpenMP threads)"* ]]
	[[ "$output" == *"main thread: "*"in kernels"* ]]
	# per thread: the main thread works in kernels, the pool threads for its calls or idle
	"$B/tprof" ops --by thread --json t.trace >th.json
	$PY - th.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
th = d["threads"]
assert len(th) == 4 and sum(t["main"] for t in th) == 1, th
for t in th:
    assert t["kernel_ns"] + t["pool_ns"] + t["outside_ns"] + t["idle_ns"] == t["wall_ns"], t
    if t["main"]:
        assert t["pool_ns"] == 0 and t["idle_ns"] == 0 and t["kernel_ns"] > 0, t
    else:
        assert t["pool_ns"] > 0 and t["idle_ns"] > 0, t
assert sum(t["kernel_ns"] + t["pool_ns"] for t in th) == d["in_ops_ns"], d
PY
	run "$B/tprof" ops --by thread t.trace
	[[ "$output" =~ [0-9]" main" ]]
	run "$B/tprof" ops --by nothing t.trace
	[ "$status" -eq 1 ]
	# no tprof frame in any stack: not the kernel wrappers', not the regions' bodies on pool threads
	"$B/tprof" allocs --top 0 --json t.trace >a.json
	$PY - a.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
mods = {f["module"] for s in d["by_allocations"] for f in s["stack"]}
assert "libtprof.so" not in mods, mods
assert any("tnn_attention_bwd" == f["function"] for s in d["by_allocations"] for f in s["stack"])
for s in d["by_allocations"]:
    names = [f["function"] for f in s["stack"]]
    assert all(a != b or not a or not a.startswith("tnn_") for a, b in zip(names, names[1:])), names
PY
	# the peak says where it fell: the step, and the range (a pool thread's: the opening thread's)
	"$B/tprof" peak --json t.trace >p.json
	$PY - p.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["peak_step"] in (0, 1), d["peak_step"]
assert d["peak_range"] and d["peak_range"].split("/")[0] in ("forward", "backward", "optimizer"), d["peak_range"]
PY
	run "$B/tprof" peak t.trace
	[[ "$output" == *"  in step "*", range "*"(thread "* ]]
}

@test "OpenMP with events lost (lossy mode, a tiny ring): each thread's parts still add up to its wall time, and --by thread says events were lost" {
	no_asan_tnn
	# a writer that keeps up with a ring of 64 loses nothing: a few tries
	for try in 1 2 3 4 5; do
		rm -f t.trace
		OMP_NUM_THREADS=2 TPROF_LOSSY=1 TPROF_RING_ENTRIES=64 traced "$B/transformer_bench" --steps 3 --layers 1 \
			--dmodel 64 --ctx 32 --batch 1 --gen 2 >/dev/null
		"$B/tprof" ops --by thread --json t.trace >th.json
		[ "$(jget th.json lost_events)" -eq 0 ] || break
	done
	[ "$(jget th.json lost_events)" -gt 0 ] || skip "no event was lost in 5 runs (a writer fast enough for a ring of 64)"
	$PY - th.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for t in d["threads"]:
    assert t["kernel_ns"] + t["pool_ns"] + t["outside_ns"] + t["idle_ns"] == t["wall_ns"], t
assert sum(t["idle_ns"] for t in d["threads"]) == d["idle_ns"], d
assert sum(t["outside_ns"] for t in d["threads"]) == d["outside_ns"], d
PY
	run "$B/tprof" ops --by thread t.trace
	[[ "$output" == *"events were lost"* ]]
}

@test "OpenMP tasks that pool threads run at a region's closing barrier are the region's work (GOMP_task)" {
	# libkomp_task.so's tnn_linear_fwd: one thread creates a task per row without waiting; the other
	# threads run them at the region's end, after their share of the body has returned
	bare=$("$B/progs/kernel_tasks")
	for n in 2 4; do
		rm -f t.trace
		OMP_NUM_THREADS=$n run traced "$B/progs/kernel_tasks"
		[ "$status" -eq 0 ]
		[ "$output" = "$bare" ]
		"$B/tprof" ops --json t.trace >o.json
		$PY - o.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
calls = {o["name"]: o["calls"] for o in d["ops"]}
assert calls == {"tnn_linear_fwd": 6, "tnn_add": 6 * 64}, calls
# the tasks' tnn_add calls are nested in the call that opened the region: FLOPs once
assert d["steps"]["flops_per_step"] == 2 * 64 * 96 * 128, d["steps"]
assert d["in_ops_ns"] + d["outside_ns"] + d["idle_ns"] == d["wall_ns"], d
PY
	done
}

@test "OpenMP tasks with a detach clause run as bare: the runtime writes into their argument block" {
	bare=$("$B/progs/komp_detach")
	[ "$bare" = "detached tasks: 21210" ]
	run traced "$B/progs/komp_detach"
	[ "$status" -eq 0 ]
	[ "$output" = "$bare" ]
}

@test "--thread main: the main thread's op table; its tnn_matmul share within 2 points of the Chrome export's" {
	no_asan_tnn
	OMP_NUM_THREADS=2 traced "$B/transformer_bench" $GPT_SMALL --steps 100 >/dev/null
	"$B/tprof" ops --thread main --json t.trace >m.json
	"$B/tprof" ops --json t.trace >all.json
	"$B/tprof" export t.trace --chrome c.json
	# the Chrome figure as a reader of the main thread's track gets it: tnn_matmul slices' self time
	# (duration minus the kernel slices directly inside) over the track's extent
	$PY - m.json all.json c.json <<'PY'
import json, sys
m, a, c = (json.load(open(f)) for f in sys.argv[1:4])
ev = c["traceEvents"]
pid = next(e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name")
track = [e for e in ev if e.get("tid") == pid and e.get("ph") in ("X", "i")]
ks = sorted((e for e in track if e.get("cat") == "kernel"), key=lambda e: (e["ts"], -e["dur"]))
inner, stack = [0.0] * len(ks), []
for i, e in enumerate(ks):
    while stack and ks[stack[-1]]["ts"] + ks[stack[-1]]["dur"] <= e["ts"]:
        stack.pop()
    if stack:
        inner[stack[-1]] += e["dur"]
    stack.append(i)
chrome_self = sum(e["dur"] - inner[i] for i, e in enumerate(ks) if e["name"] == "tnn_matmul")  # us
extent = max(e["ts"] + e.get("dur", 0) for e in track) - min(e["ts"] for e in track)
row = next(o for o in m["ops"] if o["name"] == "tnn_matmul")
share, chrome_share = 100 * row["self_ns"] / m["wall_ns"], 100 * chrome_self / extent
print(f"tprof {share:.2f} %, Chrome {chrome_share:.2f} %")
assert abs(row["self_ns"] / 1e3 - chrome_self) <= 0.001 * chrome_self, (row["self_ns"], chrome_self)
assert abs(share - chrome_share) < 2, (share, chrome_share)
# one thread: its own calls only (the pool's work for them is in the whole table's self time)
assert m["threads"] == 1 and m["in_ops_ns"] + m["outside_ns"] + m["idle_ns"] == m["wall_ns"], m
whole = next(o for o in a["ops"] if o["name"] == "tnn_matmul")
assert whole["self_ns"] > row["self_ns"] and whole["calls"] > row["calls"], (whole, row)
PY
	run "$B/tprof" ops --thread main t.trace
	[[ "$output" == *"the main thread, only (--thread)"* ]]
	run "$B/tprof" ops --thread 1 t.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"thread 1 made no kernel call and ran no OpenMP region"* ]]
	run "$B/tprof" ops --thread x t.trace
	[ "$status" -eq 1 ]
	# options of the op table where they would change nothing: refused, as export refuses its own
	for a in "--by thread --sort calls" "--by range --group-by shape" "--by region --wide" "--by range --by thread" \
		"--by thread --csv=steps" "--by region --csv=steps"; do
		run "$B/tprof" ops $a t.trace
		[ "$status" -eq 1 ]
		[[ "$output" == *"is for the op table, not --by "* || "$output" == *"one --by at a time"* ]]
	done
	# --by region lists every thread's regions: a thread would change nothing, said
	run "$B/tprof" ops --by region --thread main t.trace
	[ "$status" -eq 1 ]
	[[ "$output" == *"--thread is not for --by region"* ]]
	"$B/tprof" ops --by range --sort calls t.trace >/dev/null
	# a pool thread: only its own calls in its table (the work it did in regions other threads'
	# calls opened is theirs: pool_ns, as --by thread has it), every share within its wall time,
	# and the shares add up to it
	pool=$("$B/tprof" report --json t.trace | $PY -c 'import json, sys; print(json.load(sys.stdin)["thread_list"][1]["tid"])')
	"$B/tprof" ops --thread "$pool" --json t.trace >p.json
	"$B/tprof" ops --by thread --json t.trace >bt.json
	$PY - p.json bt.json "$pool" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
th = [t for t in json.load(open(sys.argv[2]))["threads"] if t["tid"] == int(sys.argv[3])][0]
rows = p["ops"]
assert all(r["calls"] > 0 and 0 <= r["self_ns"] <= p["wall_ns"] for r in rows), rows
assert sum(r["self_ns"] for r in rows) == p["in_ops_ns"], p
assert p["in_ops_ns"] + p["outside_ns"] + p["idle_ns"] + p["pool_ns"] == p["wall_ns"], p
assert 0 < p["pool_ns"] <= th["pool_ns"] and p["in_ops_ns"] == th["kernel_ns"], (p, th)
PY
}

@test "cnn_bench and mlp_bench: FLOPs match the formulas per shape" {
	no_asan_tnn
	traced "$B/cnn_bench" --image 12 --channels 8,8 --classes 4 --batch 8 --steps 3 >/dev/null
	"$B/tprof" ops --group-by shape --json t.trace >ops.json
	$PY "$CHECK" ops.json
	rm t.trace
	traced "$B/mlp_bench" --input 32 --hidden 64,32 --classes 4 --batch 16 --steps 3 >/dev/null
	"$B/tprof" ops --group-by shape --json t.trace >ops.json
	$PY "$CHECK" ops.json
}

@test "the step count of the annotated transformer_bench and skipping warm-up steps" {
	no_asan_tnn
	traced "$B/transformer_bench" $GPT_SMALL >/dev/null
	"$B/tprof" ops --json t.trace >a.json
	[ "$(jget a.json steps.count)" -eq 6 ]
	"$B/tprof" ops --json --skip-steps 2 t.trace >b.json
	[ "$(jget b.json steps.count)" -eq 4 ]
	[ "$(jget b.json steps.skipped)" -eq 2 ]
	run "$B/tprof" ops --skip-steps 7 t.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot skip 7 steps"*"so at most 6 can be skipped"* ]]
}

@test "--by range: forward, backward, optimizer and layers, with heap bytes" {
	no_asan_tnn
	traced "$B/transformer_bench" $GPT_SMALL >/dev/null
	"$B/tprof" ops --by range --json t.trace >r.json
	"$B/tprof" report --json t.trace >rep.json
	$PY - r.json rep.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rep = json.load(open(sys.argv[2]))
rows = {r["name"]: r for r in d["ops"]}
# the top-level ranges and "(no range)" share every allocation of the run
top = [r for n, r in rows.items() if "/" not in n]
assert "(no range)" in rows
assert sum(r["allocs"] for r in top) == rep["allocations"], ([(r["name"], r["allocs"]) for r in top], rep["allocations"])
assert sum(r["alloc_bytes"] for r in top) == rep["bytes_allocated"]
for k in ("forward", "backward", "optimizer", "forward/layer0", "backward/layer1"):
    assert k in rows, (k, sorted(rows))
    assert rows[k]["calls"] == 6, (k, rows[k]["calls"])
assert rows["optimizer"]["flops"] > 0
# a range's multiply-adds are those of its top-level calls, as its FLOPs are (matmuls: half of them)
assert 0 < rows["forward"]["macs"] <= rows["forward"]["flops"], rows["forward"]
assert 0 < rows["backward/layer1"]["macs"] <= rows["backward/layer1"]["flops"], rows["backward/layer1"]
assert rows["backward"]["alloc_bytes"] > 0 # per-step scratch
# the per-op breakdown of each range adds up to its kernel time, and names what ran there
for name, r in rows.items():
    assert sum(o["self_ns"] for o in r["by_op"]) == r["kernel_ns"], name
    assert sum(o["flops"] for o in r["by_op"]) == r["flops"], name
assert "tnn_adamw" in [o["name"] for o in rows["optimizer"]["by_op"]]
assert "tnn_attention_fwd" in [o["name"] for o in rows["forward/layer0"]["by_op"]]
assert "tnn_attention_fwd" not in [o["name"] for o in rows["backward/layer1"]["by_op"]]
# each block's two halves: attention and feed-forward, GEMMs included, and nothing else in a layer
for d in ("forward", "backward"):
    att, mlp, layer = rows[d + "/layer0/attention"], rows[d + "/layer0/mlp"], rows[d + "/layer0"]
    assert "tnn_matmul" in [o["name"] for o in att["by_op"]] + [o["name"] for o in mlp["by_op"]], d
    assert ("tnn_attention_" + ("fwd" if d == "forward" else "bwd")) in [o["name"] for o in att["by_op"]], d
    assert "tnn_gelu_" + ("fwd" if d == "forward" else "bwd") in [o["name"] for o in mlp["by_op"]], d
    assert att["flops"] + mlp["flops"] == layer["flops"], (d, att["flops"], mlp["flops"], layer["flops"])
PY
	# the text table shows them under their range
	run "$B/tprof" ops --by range t.trace
	[[ "$output" == *"optimizer"*"tnn_adamw"* ]]
}

@test "NumPy's matrix product through an RTLD_LOCAL BLAS: one dgemm of 2*512*128*256 FLOPs" {
	$PY -c "import numpy" 2>/dev/null || skip "python3-numpy is not installed"
	prog='import numpy as np; a=np.ones((512,256)); b=np.ones((256,128)); print((a@b).sum())'
	bare=$($PY -c "$prog")
	run traced $PY -c "$prog"
	[ "$status" -eq 0 ]
	[ "$output" = "$bare" ]
	"$B/tprof" ops --json t.trace >o.json
	$PY - o.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
gemm = [o for o in d["ops"] if "gemm" in o["name"]]
assert len(gemm) == 1 and gemm[0]["calls"] == 1 and gemm[0]["flops"] == 33554432, gemm
PY
}

@test "NumPy's LAPACK calling the BLAS it was loaded with: finding the real function leaves the heap as bare" {
	$PY -c "import numpy" 2>/dev/null || skip "python3-numpy is not installed"
	# the lookup asked the loader for LAPACK's scope (dlopen RTLD_NOLOAD), which made it build
	# LAPACK's dependency list: an 88-byte block the program never allocated, left in use and
	# definitely lost, and two frees of blocks whose allocation tprof's guard hid
	TPROF_OUTPUT=np.trace LD_PRELOAD="$B/libtprof.so" $PY -c 'import numpy as np; np.linalg.eigvalsh(np.eye(3))'
	"$B/tprof" report --json np.trace >r.json
	[ "$(jget r.json unmatched_frees)" = 0 ]
	[ "$(jget r.json definitely_lost_bytes)" = 0 ]
	"$B/tprof" ops --json np.trace >o.json
	grep -q dsyevd o.json
}

@test "NumPy's linear algebra, unmodified: solve, cholesky, eigh, svd, lstsq and a vector dot with their textbook FLOPs" {
	$PY -c "import numpy" 2>/dev/null || skip "python3-numpy is not installed"
	cat >la.py <<'PY'
import numpy as np
n = 200
rng = np.random.default_rng(0)
A = rng.standard_normal((n, n))
S = A @ A.T + n * np.eye(n)
b = rng.standard_normal(n)
x = np.linalg.solve(S, b)
L = np.linalg.cholesky(S)
w, V = np.linalg.eigh(S)
U, s, Vt = np.linalg.svd(A[:, :120])
z = np.linalg.lstsq(A[:, :50], b, rcond=None)[0]
v = np.arange(1000.0)
print(round(float(x.sum() + L.sum() + w.sum() + s.sum() + z.sum() + v @ v), 6))
PY
	bare=$($PY la.py)
	run traced $PY la.py
	[ "$status" -eq 0 ]
	[ "$output" = "$bare" ]
	"$B/tprof" ops --json t.trace >o.json
	$PY - o.json <<'PY'
import json, sys
from fractions import Fraction as F
rows = {o["name"]: o for o in json.load(open(sys.argv[1]))["ops"]}
n = 200
want = {
    # LU with partial pivoting 2n^3/3 - n^2/2 + 5n/6, then two triangular solves 2n^2 - n (LAWN 41)
    "dgesv_": (1, F(2 * n ** 3, 3) - F(n ** 2, 2) + F(5 * n, 6) + 2 * n ** 2 - n, False),
    # Cholesky n^3/3 + n^2/2 + n/6
    "dpotrf_": (1, F(n ** 3, 3) + F(n ** 2, 2) + F(n, 6), False),
    # symmetric eigenvalues and vectors 9n^3 (Golub and Van Loan); the workspace query counts 0
    "dsyevd_": (2, 9 * n ** 3, True),
    # full SVD of 200 x 120, R-SVD: 4m^2n + 22n^3
    "dgesdd_": (2, 4 * 200 ** 2 * 120 + 22 * 120 ** 3, True),
    # least squares 200 x 50 by SVD, R-SVD: 2mn^2 + 11n^3
    "dgelsd_": (2, 2 * 200 * 50 ** 2 + 11 * 50 ** 3, True),
    # dot product of 1000 numbers: 1000 multiplications, 999 additions
    "cblas_ddot": (1, 1999, False),
}
for name, (calls, flops, nominal) in want.items():
    r = rows[name]
    assert (r["calls"], r["flops"], r["flops_nominal"]) == (calls, flops, nominal), (name, r, calls, flops)
print("ok")
PY
	run "$B/tprof" ops t.trace
	[[ "$output" == *"nominal FLOPs (data-dependent iterations; docs/OPS.md): "*"dsyevd_"* ]]
}

@test "an unannotated program runs unchanged and annotations without the preload are no-ops" {
	run "$B/transformer_bench" $GPT_SMALL
	[ "$status" -eq 0 ]
	[[ "$output" == *"summary loss"* ]]
}

@test "malformed KERNELS and NAMES blocks are rejected with a message" {
	no_asan_tnn
	TPROF_COMPRESS=0 traced "$B/progs/kernel_calls" >/dev/null # plain KERNELS blocks to rewrite
	# rewrite the first call record's op id to 0, which no NAMES block defines, fixing the CRC
	$PY - t.trace bad.trace <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
def crc32c(b):
    c = 0xffffffff
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82f63b78 & -(c & 1))
    return c ^ 0xffffffff
def varint(b, i):
    v = s = 0
    while True:
        x = b[i]; i += 1; v |= (x & 0x7f) << s; s += 7
        if not x & 0x80: return v, i
def svarint(b, i):
    v, i = varint(b, i)
    return v, i
off = 16
done = False
while off < len(data) and not done:
    t = data[off]; n = int.from_bytes(data[off+1:off+5], "little"); p = off + 9
    if t == 12: # KERNELS: find its first call record (annotations, an OpenMP region's, may come first)
        _, i = varint(data, p); count, i = varint(data, i)
        for _ in range(count):
            if data[i] == 1:
                data[i + 1] = 0 # op 0: ids start at 1, so no NAMES block defines it
                data[off+5:off+9] = crc32c(bytes(data[off:off+1]) + bytes(data[p:p+n])).to_bytes(4, "little")
                done = True
                break
            i += 1
            for _ in range(5): # kind, seq, tick, name, value
                _, i = varint(data, i)
    off = p + n
open(sys.argv[2], "wb").write(data)
PY
	run "$B/tprof" ops bad.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"names op 0, which no NAMES block defined"* ]]
}

@test "compare: parameters and FLOPs per step of two runs side by side" {
	no_asan_tnn
	traced "$B/transformer_bench" $GPT_SMALL >/dev/null
	mv t.trace gpt.trace
	traced "$B/mlp_bench" --input 32 --hidden 64,32 --classes 4 --batch 16 --steps 4 >mlp.out
	"$B/tprof" compare --json gpt.trace t.trace >c.json
	$PY - c.json "$(awk '$1 == "params" { print $2 }' mlp.out)" "$(awk '$1 == "flops_per_step" { print $2 }' mlp.out)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
gpt, mlp = d["runs"]
assert gpt["program"] == "transformer_bench" and gpt["steps"] == 6 and gpt["params"] > 0, gpt
assert mlp["params"] == int(sys.argv[2]), (mlp, sys.argv[2])
# the bench's own count, exactly (its batch preparation, inside the step, calls no kernel)
assert mlp["flops_per_step"] == int(sys.argv[3]), (mlp, sys.argv[3])
PY
	run "$B/tprof" compare gpt.trace t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"gpt.trace"*"t.trace"* ]] # runs named by file: two runs of one program differ
}

@test "annotations a signal handler makes while its thread writes a heap event are kept: the steps add up" {
	# they were lost (counted): 2,540 of 3,500 in this program, and 130 steps of 499 came out
	run traced "$B/progs/annot_signal" 1000
	[ "$status" -eq 0 ]
	[ "$output" = 1000 ]
	"$B/tprof" report --json t.trace >r.json
	"$B/tprof" ops --json t.trace >o.json
	$PY - r.json o.json <<'PY'
import json, sys
r, o = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("lost", r["lost_events"], "steps", o["steps"]["count"])
assert r["lost_events"] < 350, r["lost_events"]  # 3,500 annotations; a full ring may still drop a few
assert o["steps"]["count"] >= 450, o["steps"]  # 500 boundaries, 499 steps
assert o["lost_events"] == r["lost_events"], (o["lost_events"], r["lost_events"])
PY
}

@test "a range named with '/' or '\\': peak and ops --by range escape them alike, one path, never three ranges" {
	traced "$B/progs/slash_ranges"
	"$B/tprof" peak --json t.trace >p.json
	"$B/tprof" ops --by range --json t.trace >r.json
	$PY - p.json r.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
rows = [r["name"] for r in json.load(open(sys.argv[2]))["ops"]]
assert p["peak_range"] == "a\\/b/c\\\\d", p["peak_range"]
assert p["peak_range"] in rows, (p["peak_range"], rows)
PY
}

@test "--by range: ranges nested deeper than 64 are folded into the 64th, and every pop closes its own" {
	traced "$B/progs/deep_ranges"
	"$B/tprof" ops --by range --json t.trace >r.json
	$PY - r.json <<'PY'
import json, sys
rows = {r["name"]: r for r in json.load(open(sys.argv[1]))["ops"]}
assert "outer/after" in rows, sorted(rows)
assert "after" not in rows, sorted(rows)
assert rows["outer/after"]["calls"] == 1 and rows["outer/after"]["total_ns"] >= 20000000, rows["outer/after"]
assert rows["outer"]["calls"] == 1 and rows["outer"]["total_ns"] >= rows["outer/after"]["total_ns"]
deep = "outer/" + "/".join(["d"] * 63)
assert rows[deep]["calls"] == 1, sorted(rows)
PY
}

@test "annotation names: empty is no name, a long one is cut between characters, a '/' in one is not nesting" {
	traced /usr/bin/python3 -c '
import ctypes
f = ctypes.CDLL(None).tprof_annotate
f.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int64]
f(5, b"", 7)                       # a param without a name
f(4, b"", 0)                       # a mark without a name
f(1, b"", 0); f(2, None, 0)        # an unnamed range
f(1, b"a/b", 0); f(2, None, 0)     # one range named a/b ...
f(1, b"a", 0); f(1, b"b", 0); f(2, None, 0); f(2, None, 0) # ... and b inside a
f(1, ("x" * 61 + "\u20ac").encode(), 0); f(2, None, 0) # the euro sign would end at byte 64
'
	run "$B/tprof" report t.trace
	[ "$status" -eq 0 ]
	"$B/tprof" ops --by range --json t.trace >r.json
	$PY - r.json <<'PY'
import json, sys
rows = {r["name"]: r for r in json.load(open(sys.argv[1]))["ops"]}
assert rows["a\\/b"]["calls"] == 1 and rows["a/b"]["calls"] == 1 and rows["a"]["calls"] == 1, sorted(rows)
assert rows["?"]["calls"] == 1, sorted(rows)
assert "x" * 61 in rows and not any(k.startswith("x" * 61) and k != "x" * 61 for k in rows), sorted(rows)
PY
}

@test "text tables fit 120 columns on the bundled benches; --wide shows every column" {
	no_asan_tnn
	TPROF_OUTPUT=gpt.trace LD_PRELOAD="$B/libtprof.so" "$B/transformer_bench" $GPT_SMALL >/dev/null
	TPROF_OUTPUT=cnn.trace LD_PRELOAD="$B/libtprof.so" "$B/cnn_bench" --image 12 --channels 8,8 --classes 4 --batch 8 --steps 3 >/dev/null
	TPROF_OUTPUT=mlp.trace LD_PRELOAD="$B/libtprof.so" "$B/mlp_bench" --input 32 --hidden 64,32 --classes 4 --batch 16 --steps 3 >/dev/null
	settled gpt.trace cnn.trace mlp.trace
	for tr in gpt.trace cnn.trace mlp.trace; do
		for cmd in "ops" "ops --group-by shape" "ops --by range" "ops --by thread" "ops --by region" "allocs" "diff gpt.trace" \
			"compare gpt.trace cnn.trace mlp.trace"; do
			"$B/tprof" $cmd $tr >out.txt 2>/dev/null
			w=$(LC_ALL=C.UTF-8 wc -L <out.txt)
			echo "$cmd $tr: $w columns"
			[ "$w" -le 120 ]
		done
	done
	# one unit per column: the unit is in the heading, the cells are numbers
	"$B/tprof" ops gpt.trace >out.txt
	grep -Eq '^name +calls +self (ns|us|ms|s) +self% +total (ns|us|ms|s) ' out.txt
	! grep -E '^tnn_' out.txt | grep -Eq ' (ns|us|ms) '
	# --wide: the distribution, the CI, the FLOPs and the bytes too
	"$B/tprof" ops --wide gpt.trace >wide.txt
	grep -Eq ' p50 (ns|us|ms|s) .* p99 .*95% CI of mean .*GFLOP .*bytes ' wide.txt
	# long names are cut in text, whole in JSON
	"$B/tprof" ops --group-by shape gpt.trace >shape.txt
	grep -q '…' shape.txt
	"$B/tprof" ops --group-by shape --json gpt.trace | $PY -c '
import json, sys; d = json.load(sys.stdin); assert any(len(o["name"]) > 26 for o in d["ops"])'
}

@test "kernel-call tables go out compressed (ZKERNELS), read exactly as the KERNELS they hold; a bad one is corrupt at its offset" {
	no_asan_tnn
	Z="$TPROF_ROOT/tests/integration/zblocks.py"
	export PYTHONPATH="$TPROF_ROOT/tests/integration"
	traced "$B/transformer_bench" $GPT_SMALL >/dev/null
	# (a block too small to gain stays plain)
	read -r nz zbytes np0 pbytes0 < <($PY "$Z" count t.trace KERNELS)
	[ "$nz" -ge 1 ]
	$PY "$Z" plain t.trace p.trace
	read -r nz2 _ np pbytes < <($PY "$Z" count p.trace KERNELS)
	echo "ZKERNELS: $nz blocks, $zbytes bytes (and $np0 plain); as KERNELS: $np blocks, $pbytes bytes"
	[ "$nz2" -eq 0 ] && [ "$np" -eq $((nz + np0)) ]
	[ "$zbytes" -lt $((pbytes - pbytes0)) ]
	# every command that reads kernel calls says the same of both (but the file name)
	for c in "ops --json" "ops --by range --json" "ops --group-by shape" report "summary --json" dump \
		"export --chrome /dev/stdout"; do
		# shellcheck disable=SC2086 # c is words
		"$B/tprof" $c t.trace | sed 's/"file":"[^"]*"//' >a.out
		# shellcheck disable=SC2086
		"$B/tprof" $c p.trace | sed 's/p\.trace/t.trace/g; s/"file":"[^"]*"//' >b.out
		cmp a.out b.out
	done
	bad_zblocks KERNELS ops
	rm -f t.trace
	TPROF_COMPRESS=0 traced "$B/transformer_bench" $GPT_SMALL >/dev/null
	read -r nz _ np _ < <($PY "$Z" count t.trace KERNELS)
	[ "$nz" -eq 0 ] && [ "$np" -ge 1 ]
}

@test "the op table is written op by op, before the first call of each: none in a trace without kernel calls" {
	no_asan_tnn
	traced "$B/progs/heap_known" >/dev/null
	mv t.trace heap.trace
	traced "$B/transformer_bench" $GPT_SMALL >/dev/null
	PYTHONPATH="$TPROF_ROOT/tests/integration" $PY - heap.trace t.trace <<'PY'
import sys
from rss_blocks import blocks, get_varint
def op_entries(path):
    ids = []
    for _, t, p in blocks(open(path, "rb").read()):
        if t != 13:
            continue
        n, i = get_varint(p, 0)
        for _ in range(n):
            space, i = get_varint(p, i)
            ident, i = get_varint(p, i)
            for _ in range(2):  # name, detail
                ln, i = get_varint(p, i)
                i += ln
            if space == 0:
                ids.append(ident)
    return ids
assert op_entries(sys.argv[1]) == [], op_entries(sys.argv[1])
ids = op_entries(sys.argv[2])
assert ids and len(ids) == len(set(ids)), ids  # each op once
print(len(ids), "ops defined")
PY
	# every op the table shows was defined (the reader refuses a call of an undefined op)
	"$B/tprof" ops --json t.trace >/dev/null
}

@test "compare and ops: a run without params or steps says null, not -1 or 0" {
	traced "$B/progs/heap_known" >/dev/null
	cp t.trace u.trace
	"$B/tprof" compare --json t.trace u.trace >c.json
	"$B/tprof" ops --json t.trace >o.json
	$PY - c.json o.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    assert r["params"] is None and r["steps"] == 0, r
    assert r["step_mean_ns"] is None and r["step_ci95_ns"] is None and r["gflops_per_s"] is None, r
s = json.load(open(sys.argv[2]))["steps"]
assert s["count"] == 0 and all(s[k] is None for k in ("mean_ns", "std_ns", "p50_ns", "p95_ns", "ci95_ns", "flops_per_step")), s
PY
	[ "$("$B/tprof" ops --csv=steps t.trace | tail -1 | tr -d "\r")" = "0,0,,,,,,," ]
	"$B/tprof" compare --csv t.trace u.trace >c.csv
	$PY -c 'import csv, sys; rows = list(csv.reader(open(sys.argv[1]))); assert len({len(r) for r in rows}) == 1, rows' c.csv
}

@test "dump lists every kernel call and annotation, as ops counts them" {
	no_asan_tnn
	traced "$B/mlp_bench" --steps 3 >/dev/null
	"$B/tprof" dump t.trace >d.txt
	"$B/tprof" ops --json t.trace >o.json
	[ "$(grep -c '^# kcall ' d.txt)" -eq "$(jget o.json calls)" ]
	[ "$(grep -c '^# annot [0-9]* [0-9]* [0-9]* step ' d.txt)" -eq $(($(jget o.json steps.count) + 1)) ]
	grep -q '^# kcall [0-9]* [0-9]* [0-9]* tnn_matmul flops [0-9]* bytes [0-9]* shape [0-9,]*$' d.txt
}

@test "--skip-steps past every kernel call: says so, not that the trace has none" {
	no_asan_tnn
	cat >s.c <<'C'
#include "tnn.h"
#include "tprof.h"
int main(void)
{
	static float a[64], b[64];
	tprof_step();
	tnn_relu_fwd(b, a, 64);
	tprof_step();
	tprof_step();
	return 0;
}
C
	cc -I"$TPROF_ROOT/include" -o s s.c -L"$B" -ltnn -Wl,-rpath,"$B"
	traced ./s
	run "$B/tprof" ops --skip-steps 1 t.trace
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"no kernel call after the 1 skipped step"* ]]
	[[ "$output" != *"the trace has no kernel calls"* ]]
}

@test "ranges named past the 4,095 names a process keeps: ops says how many have no name" {
	cat >n.c <<'C'
#include <stdio.h>
#include "tprof.h"
int main(void)
{
	char name[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		tprof_range_push(name);
		tprof_range_pop();
	}
	return 0;
}
C
	cc -I"$TPROF_ROOT/include" -o n n.c
	traced ./n
	run "$B/tprof" ops --by range t.trace
	echo "$output" | head -12
	[ "$status" -eq 0 ]
	[[ "$output" == *"warning: 905 ranges, marks or parameters have no name"* ]]
}
