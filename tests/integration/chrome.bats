#!/usr/bin/env bats
# tprof export --chrome: the Chrome trace-event JSON parses and passes chrome_check.py (numeric
# times, properly nested slices per thread, numeric counters); it holds one kernel slice per call
# with the FLOPs of tprof ops, a live-heap counter whose maximum is tprof peak's, a bounded number of
# counter samples for millions of heap events; --min-dur and --steps drop exactly what they say;
# hostile names stay valid JSON and valid UTF-8 names come back exactly; bad input fails cleanly.

load helpers

CHECK="$TPROF_ROOT/tests/integration/chrome_check.py"
GPT_SMALL="--vocab 64 --ctx 32 --layers 2 --heads 2 --dmodel 32 --batch 2 --steps 6 --lr 3e-3 --period 12 --gen 4"

# Under SAN=1 libtnn.so is built with ASan, whose runtime must come first: it cannot run preloaded.
# The programs that use it then come from the plain build next to it when there is one (the analyzer
# under test is still $B's, sanitized); without one, those tests are skipped.
is_asan() {
	ldd "$1/libtnn.so" 2>/dev/null | grep -q libasan
}
if ! is_asan "$B"; then
	T="$B"
elif [ -x "${B%/san}/transformer_bench" ] && [ -x "${B%/san}/progs/hostile_names" ] && ! is_asan "${B%/san}"; then
	T="${B%/san}"
else
	T=""
fi
no_tnn() {
	if [ -z "$T" ]; then
		skip "libtnn.so is ASan-instrumented (SAN=1) and no plain build is there to run its programs"
	fi
}

setup_file() {
	export FIXTURE=$(mktemp -d)
	if [ -n "$T" ]; then
		TPROF_QUIET=1 TPROF_OUTPUT="$FIXTURE/gpt.trace" LD_PRELOAD="$B/libtprof.so" \
			"$T/transformer_bench" $GPT_SMALL >/dev/null
		settled "$FIXTURE/gpt.trace"
	fi
}

teardown_file() {
	rm -rf "$FIXTURE"
}

@test "kernel_calls: one slice per kernel call, FLOPs per op as tprof ops, heap peak as tprof peak" {
	no_tnn
	traced "$T/progs/kernel_calls" >/dev/null
	"$B/tprof" export t.trace --chrome out.json
	"$B/tprof" ops --json --top 0 t.trace >ops.json
	"$B/tprof" peak --json t.trace >peak.json
	run $PY "$CHECK" out.json --ops ops.json --peak peak.json --no-clipped
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jget ops.json calls)" -ge 35 ] # every op-table kernel, nested calls included
	# shapes by name, GFLOP/s and intensity from the recorded call
	$PY - out.json <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
mm = [e for e in ev if e.get("cat") == "kernel" and e["name"] == "tnn_matmul" and e["args"]["shape"]["M"] == 5]
assert len(mm) == 1, mm
a = mm[0]["args"]
assert a["shape"] == {"M": 5, "N": 7, "K": 9, "flags": 0, "bias": 1}, a
assert a["flops"] == 2 * 5 * 7 * 9 + 5 * 7, a # with the bias
assert abs(a["gflops_per_s"] - a["flops"] / (mm[0]["dur"] * 1000)) <= 1e-5 * a["gflops_per_s"] + 1e-9, (a, mm[0]["dur"])
assert abs(a["intensity"] - a["flops"] / a["bytes"]) <= 1e-5 * a["intensity"], a
PY
}

@test "transformer_bench: nested kernel and range slices, steps, thread names, counts as tprof ops" {
	no_tnn
	cp "$FIXTURE/gpt.trace" t.trace
	"$B/tprof" export t.trace --chrome out.json
	"$B/tprof" ops --json --top 0 t.trace >ops.json
	"$B/tprof" peak --json t.trace >peak.json
	$PY "$CHECK" out.json --ops ops.json --peak peak.json --no-clipped >sum.json
	$PY - sum.json out.json t.trace <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))
assert s["steps"] == ["step %d" % i for i in range(6)], s["steps"]
assert s["ranges"] == 6 * (3 + 2 * 2 * 3), s["ranges"] # forward, backward, optimizer; layer0-1 twice, each with attention and mlp
o = d["otherData"]
assert o["program"] == "transformer_bench" and o["complete"] is True, o
assert o["kernel_slices"] == o["kernel_calls"] == s["kernels"] > 0, o
assert o["params"]["params"] > 0, o["params"]
assert o["steps"] is None and o["dropped_shorter_than_min_dur"] == 0, o
assert s["thread_names"][str(o["pid"])] == "transformer_ben", s["thread_names"] # comm: 15 bytes
ev = d["traceEvents"]
procs = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
assert [p["args"]["name"] for p in procs] == ["transformer_bench"], procs
# every kernel and range slice is on a traced thread of the traced process
tids = {e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert all(e["pid"] == o["pid"] and e["tid"] in tids for e in ev if e["ph"] in "Xi"), "stray track"
# a forward range holds its step's layer ranges and kernel calls
fw = [e for e in ev if e.get("cat") == "range" and e["name"] == "forward"][0]
inside = [e for e in ev if e["ph"] == "X" and e["tid"] == fw["tid"] and fw["ts"] <= e["ts"]
          and e["ts"] + e["dur"] <= fw["ts"] + fw["dur"] and e is not fw]
assert {"layer0", "layer1"} <= {e["name"] for e in inside}, [e["name"] for e in inside][:20]
assert any(e.get("cat") == "kernel" for e in inside)
PY
}

@test "--min-dur drops exactly the kernel calls shorter than NS and says how many" {
	no_tnn
	cp "$FIXTURE/gpt.trace" t.trace
	"$B/tprof" export t.trace --chrome full.json
	ns=$($PY -c '
import json, sys
d = [round(e["dur"] * 1000) for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("cat") == "kernel"]
print(sorted(d)[len(d) // 2])' full.json)
	"$B/tprof" export t.trace --chrome min.json --min-dur "$ns"
	$PY "$CHECK" min.json --no-clipped >/dev/null
	$PY - full.json min.json "$ns" <<'PY'
import decimal, json, os, sys
sys.path.insert(0, os.environ["TPROF_ROOT"] + "/tests/integration")
import chrome_check as cc
ns = int(sys.argv[3])
full = json.load(open(sys.argv[1]), parse_float=decimal.Decimal)
mn = json.load(open(sys.argv[2]), parse_float=decimal.Decimal)
def kernels(d):
    return [(e["tid"], cc.ns(e["ts"], "ts"), cc.ns(e["dur"], "dur"), e["name"]) for e in d["traceEvents"]
            if e.get("cat") == "kernel"]
short = [k for k in kernels(full) if k[2] < ns]
assert 0 < len(short) < len(kernels(full)), (len(short), ns)
assert sorted(kernels(mn)) == sorted(k for k in kernels(full) if k[2] >= ns)
o = mn["otherData"]
assert o["min_dur_ns"] == ns and o["dropped_shorter_than_min_dur"] == len(short), (o, len(short))
assert o["kernel_slices"] == len(kernels(mn)) and o["kernel_calls"] == len(kernels(full)), o
# ranges, steps and counters are not affected
cat = lambda d, c: sum(1 for e in d["traceEvents"] if e.get("cat") == c or (c == "C" and e["ph"] == "C"))
assert all(cat(full, c) == cat(mn, c) for c in ("range", "step", "C"))
PY
}

@test "--steps A-B keeps what falls inside those steps; A- keeps what tprof ops --skip-steps A keeps" {
	no_tnn
	cp "$FIXTURE/gpt.trace" t.trace
	"$B/tprof" export t.trace --chrome full.json
	"$B/tprof" export t.trace --chrome s.json --steps 2-3
	$PY "$CHECK" s.json --no-clipped >/dev/null
	$PY - full.json s.json <<'PY'
import decimal, json, os, sys
sys.path.insert(0, os.environ["TPROF_ROOT"] + "/tests/integration")
import chrome_check as cc
full = json.load(open(sys.argv[1]), parse_float=decimal.Decimal)
s = json.load(open(sys.argv[2]), parse_float=decimal.Decimal)
def ev(d, pred):
    return [e for e in d["traceEvents"] if e["ph"] != "M" and pred(e)]
steps = {e["name"]: e for e in ev(full, lambda e: e.get("cat") == "step" and e["ph"] == "X")}
w0 = cc.ns(steps["step 2"]["ts"], "ts")
w1 = cc.ns(steps["step 3"]["ts"], "ts") + cc.ns(steps["step 3"]["dur"], "dur")
o = s["otherData"]
assert cc.ns(o["steps"]["window_start"], "w") == w0 and cc.ns(o["steps"]["window_end"], "w") == w1, o["steps"]
assert [e["name"] for e in ev(s, lambda e: e.get("cat") == "step" and e["ph"] == "X")] == ["step 2", "step 3"]
start = lambda e: cc.ns(e["ts"], "ts")
end = lambda e: start(e) + cc.ns(e.get("dur", 0), "dur")
key = lambda e: (e["tid"], start(e), e["name"])
want = sorted(key(e) for e in ev(full, lambda e: e.get("cat") == "kernel") if w0 <= start(e) < w1)
got = sorted(key(e) for e in ev(s, lambda e: e.get("cat") == "kernel"))
assert got == want and len(got) > 0, (len(got), len(want))
dropped = len(ev(full, lambda e: e.get("cat") == "kernel")) - len(got)
assert o["steps"]["dropped_kernels"] == dropped, (o["steps"], dropped)
# 2 steps: two forward, backward, optimizer ranges and their layers (with attention and mlp), inside the window
ranges = ev(s, lambda e: e.get("cat") == "range")
assert len(ranges) == 2 * 15 and all(w0 <= start(e) and end(e) <= w1 for e in ranges), len(ranges)
heap = ev(s, lambda e: e["ph"] == "C")
assert heap and all(w0 <= start(e) < w1 for e in heap)
PY
	"$B/tprof" export t.trace --chrome tail.json --steps 2-
	"$B/tprof" ops --json --skip-steps 2 t.trace >ops.json
	$PY "$CHECK" tail.json --no-clipped >sum.json
	[ "$(jget sum.json kernels)" -eq "$(jget ops.json calls)" ]
	"$B/tprof" export t.trace --chrome one.json --steps 5
	$PY "$CHECK" one.json >sum.json
	[ "$(jget sum.json steps)" = "['step 5']" ]
	run "$B/tprof" export t.trace --chrome x.json --steps 6
	[ "$status" -eq 2 ] # a trace without what was asked: bad input, as ops --skip-steps
	[[ "$output" == *"--steps asks for step 6, but the program marked 7 step boundaries"*"steps 0 to 5"* ]]
	[ ! -e x.json ]
	run "$B/tprof" export t.trace --chrome x.json --steps 2:3
	[ "$status" -eq 1 ]
	[[ "$output" == *"--steps takes A-B"* ]]
}

@test "hostile names: valid JSON, names that are valid UTF-8 come back byte for byte" {
	no_tnn
	rm -f /tmp/tprof_hostile_canary
	traced "$T/progs/hostile_names" >/dev/null
	"$B/tprof" export t.trace --chrome - >out.json
	"$B/tprof" ops --json --top 0 t.trace >ops.json
	"$B/tprof" peak --json t.trace >peak.json
	run $PY "$CHECK" out.json --hostile --ops ops.json --peak peak.json --no-clipped
	echo "$output"
	[ "$status" -eq 0 ]
	[ ! -e /tmp/tprof_hostile_canary ]
	grep -q '"name":"quote\\" back\\\\slash"' out.json
	# its thread named itself after its first events
	grep -qF '"name":"thread_name","args":{"name":"\"th\u000a`x`\\"}' out.json
	run grep -c "$(printf '\x01')" out.json # control bytes are escaped
	[ "$output" = 0 ]
	# params: each key once, though two names hold bytes that JSON writes alike
	$PY - out.json <<'PY'
import json, sys
def once(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), keys
    return dict(pairs)
p = json.load(open(sys.argv[1]), object_pairs_hook=once)["otherData"]["params"]
assert p["x\ufffd"] == 3 and p['para"ms\n'] == 42, p
PY
}

@test "millions of heap events: a bounded number of counter samples, the exact peak kept" {
	traced "$B/progs/storm" 2 1000000 >/dev/null
	"$B/tprof" export t.trace --chrome out.json
	"$B/tprof" peak --json t.trace >peak.json
	# 4096 buckets, at most 3 samples each, plus the starting level
	$PY "$CHECK" out.json --peak peak.json --max-counter 12289 --no-clipped >sum.json
	$PY - sum.json <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))["other"]
assert o["heap_changes"] > 4000000, o # every malloc and free changes the live bytes
assert o["heap_samples"] <= 12289 and o["kernel_slices"] == 0, o
PY
}

@test "bad input: invalid trace, unwritable output, wrong options" {
	head -c 4096 /dev/urandom >rand.trace
	run "$B/tprof" export rand.trace --chrome out.json
	[ "$status" -eq 2 ]
	[[ "$output" == *"rand.trace"*"not a tprof trace"* ]]
	[ ! -e out.json ]
	traced "$B/progs/heap_known" >/dev/null
	# a file that cannot be written: 2, as one that cannot be read (README: exit status)
	run "$B/tprof" export t.trace --chrome /nonexistent/dir/out.json
	[ "$status" -eq 2 ]
	[[ "$output" == *"/nonexistent/dir/out.json: No such file or directory"* ]]
	if [ "$(id -u)" -ne 0 ]; then
		mkdir ro && chmod 555 ro
		run "$B/tprof" export t.trace --chrome ro/out.json
		[ "$status" -eq 2 ]
		[[ "$output" == *"ro/out.json: Permission denied"* ]]
	fi
	if [ -w /dev/full ]; then
		run "$B/tprof" export t.trace --chrome /dev/full
		[ "$status" -eq 2 ]
		[[ "$output" == *"/dev/full"* ]]
		[ -c /dev/full ] # a device: written to, never removed
	fi
	# a file system that fills while the file is written: 2, and no half-written file left
	if unshare -m true 2>/dev/null; then
		rm -f t.trace
		traced "$B/progs/storm" 1 20000 >/dev/null # 570 KB of JSON
		mkdir small
		run unshare -m sh -c 'mount -t tmpfs -o size=8k tmpfs small && "$1" export t.trace --chrome small/out.json; echo "rc=$?"; ls small' sh "$B/tprof"
		echo "$output"
		[[ "$output" == *"small/out.json: No space left on device (the part written is removed)"* ]]
		[[ "$output" == *"rc=2"* ]]
		! grep -qx out.json <<<"$output" # ls lists no file
	fi
	run "$B/tprof" export t.trace --chrome
	[ "$status" -eq 1 ]
	run "$B/tprof" export t.trace --chrome out.json --min-dur 1.5
	[ "$status" -eq 1 ]
	[[ "$output" == *"--min-dur needs a number of nanoseconds"* ]]
	run "$B/tprof" export t.trace --chrome out.json --metric peak
	[ "$status" -eq 1 ]
	run "$B/tprof" export t.trace --folded out.txt --steps 1-2
	[ "$status" -eq 1 ]
	run "$B/tprof" export t.trace --folded out.txt --chrome out.json
	[ "$status" -eq 1 ]
	[[ "$output" == *"one of --folded or --chrome"* ]]
	# a program without kernels or annotations: a valid file with the heap counter only
	"$B/tprof" export t.trace --chrome - >ok.json
	$PY "$CHECK" ok.json >sum.json
	[ "$(jget sum.json kernels)" -eq 0 ]
	[ "$(jget sum.json heap_samples)" -gt 1 ]
}
