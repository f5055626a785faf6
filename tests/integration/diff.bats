#!/usr/bin/env bats
# tprof diff on two runs of one program whose second run makes known changes (tests/kernels/
# diff_run.c): a kernel's shape, another's call count, an op removed and one added, one allocation
# site's size, a bigger working set and one more leaked block. The diff must report exactly those
# deltas, match allocation sites across runs although ASLR moved them, report no change at all
# between a trace and itself, and reject what is not a trace.

load helpers

# before.trace and after.trace: the two runs
two_runs() {
	TPROF_OUTPUT=before.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/diff_run"
	TPROF_OUTPUT=after.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/diff_run" after
}

# site_line NAME: the line of diff_run.c marked SITE:NAME
site_line() {
	grep -n "SITE:$1\b" "$TPROF_ROOT/tests/kernels/diff_run.c" | cut -d: -f1
}

@test "diff reports exactly the known changes: FLOPs, calls, ops added and removed, bytes, peak, leaks" {
	two_runs
	"$B/tprof" diff --json --top 0 before.trace after.trace >d.json
	$PY - d.json "$(site_line working_set)" "$(site_line scratch)" "$(site_line leak_extra)" "$(site_line keep)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ws, scratch, leak, keep = sys.argv[2:6]
s = {r["metric"]: r for r in d["summary"]}
# FLOPs: matmul K 16 -> 32, one more tnn_add of 1000, relu (700) removed, gelu (9 x 300) added; 5 steps
per_step = 2 * 16 * 16 * 16 + 1000 - 700 + 9 * 300
assert per_step == 11192
assert s["flops"]["delta"] == 5 * per_step, s["flops"]
assert s["flops"]["a"] == 5 * (2 * 16 * 16 * 16 + 3 * 1000 + 700), s["flops"]
assert s["flops_per_step"]["delta"] == per_step, s["flops_per_step"]
assert s["steps"]["a"] == s["steps"]["b"] == 5 and s["steps"]["delta"] == 0, s["steps"]
# heap: +20,000 working set, +5 x 500 scratch, +777 leaked; the peak grows by the working set and
# one scratch buffer
assert s["bytes_allocated"]["delta"] == 20000 + 2500 + 777, s["bytes_allocated"]
assert s["allocations"]["delta"] == 1, s["allocations"]
assert s["peak_bytes"]["delta"] == 20500, s["peak_bytes"]
assert s["leaked_bytes"]["delta"] == 777 and s["leaked_blocks"]["delta"] == 1, (s["leaked_bytes"], s["leaked_blocks"])
assert s["leaked_bytes"]["a"] == 100 and abs(s["leaked_bytes"]["rel"] - 7.77) < 1e-9, s["leaked_bytes"]
# ops, matched by name
assert d["ops_total"] == 4 and len(d["ops"]) == 4, d["ops"]
o = {r["name"]: r for r in d["ops"]}
mm, add, relu, gelu = o["tnn_matmul"], o["tnn_add"], o["tnn_relu_fwd"], o["tnn_gelu_fwd"]
assert mm["status"] == "changed" and mm["calls_delta"] == 0 and mm["flops_delta"] == 5 * 2 * 16 * 16 * 16, mm
assert mm["flops_rel"] == 1, mm
assert add["status"] == "changed" and add["calls_a"] == 15 and add["calls_delta"] == 5, add
assert add["flops_delta"] == 5000 and abs(add["calls_rel"] - 1 / 3) < 1e-6, add
assert relu["status"] == "removed" and relu["calls_b"] == 0 and relu["flops_delta"] == -3500, relu
assert relu["calls_rel"] == -1 and relu["self_ns_b"] == 0 and relu["self_ns_delta"] == -relu["self_ns_a"], relu
assert gelu["status"] == "added" and gelu["calls_a"] == 0 and gelu["calls_b"] == 5, gelu
assert gelu["flops_delta"] == 13500 and gelu["calls_rel"] is None and gelu["flops_rel"] is None, gelu
for r in d["ops"]:
    for m in ("calls", "self_ns", "total_ns", "flops"):
        assert r[m + "_delta"] == r[m + "_b"] - r[m + "_a"], (r, m)
# allocation sites, matched by frames: largest change in bytes first
sites = d["sites"]
assert d["sites_total"] == len(sites)
want = [("working_set", ws, "changed", 1, 20000, 0, 0), ("scratch", scratch, "changed", 5, 2500, 0, 0),
        ("leak_extra", leak, "added", 1, 777, 777, 1)]
for i, (fn, line, status, allocs, dbytes, dleak, dblocks) in enumerate(want):
    r = sites[i]
    assert r["site"] == "%s (diff_run.c:%s)" % (fn, line), (i, r["site"], fn, line)
    assert r["stack"][0] == r["site"] and r["stack"][1].startswith("main (diff_run.c:"), r["stack"]
    assert r["status"] == status and r["allocations_b"] == allocs and r["bytes_delta"] == dbytes, r
    assert r["leaked_bytes_delta"] == dleak and r["leaked_blocks_delta"] == dblocks, r
assert sites[0]["bytes_a"] == 100000 and sites[1]["bytes_a"] == 5000 and sites[1]["allocations_delta"] == 0
assert sites[2]["bytes_a"] == 0 and sites[2]["bytes_rel"] is None
kept = [r for r in sites if r["site"] == "keep (diff_run.c:%s)" % keep]
assert len(kept) == 1 and kept[0]["status"] == "same" and kept[0]["leaked_bytes_a"] == 100, kept
for r in sites[3:]: # everything else is the same in both runs
    assert r["status"] == "same", r
    assert all(r[m + "_delta"] == 0 and r[m + "_rel"] == 0
               for m in ("allocations", "bytes", "leaked_bytes", "leaked_blocks")), r
# steps: both runs mark 5; the change of the mean and its CI are consistent
st = d["steps"]
assert st["count_a"] == st["count_b"] == 5, st
assert st["flops_per_step_delta"] == per_step, st
# the change from the exact means, which the JSON gives to the ns: within 1 ns of the difference
assert abs(st["delta_mean_ns"] - (st["mean_ns_b"] - st["mean_ns_a"])) <= 1, st
assert st["delta_ci95_lo_ns"] <= st["delta_mean_ns"] <= st["delta_ci95_hi_ns"], st
assert st["verdict"] == ("slower" if st["delta_ci95_lo_ns"] > 0 else "faster" if st["delta_ci95_hi_ns"] < 0
                         else "within noise"), st
PY
}

@test "diff text: the summary, the verdict on the steps, ops and sites with their changes" {
	two_runs
	run "$B/tprof" diff before.trace after.trace
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"leaked bytes"*"100 B"*"877 B"*"+777 B"*"+777.0%"* ]]
	[[ "$output" == *"heap peak"*"+20,500 B"* ]]
	[[ "$output" == *"FLOPs (top-level calls)"*"+55,960"* ]]
	[[ "$output" == *"FLOPs per step A 11,892   B 23,084   change +11,192"* ]]
	[[ "$output" =~ "95% CI of the change ["[^]]*"]: "(slower|faster|within the noise) ]]
	[[ "$output" == *"tnn_gelu_fwd"*"added"*"5 (new)"* ]]
	[[ "$output" == *"tnn_relu_fwd"*"removed"*"0 (-100.0%)"* ]]
	[[ "$output" == *"added: bytes allocated 777 B (+777 B, new)"*"at leak_extra (diff_run.c:$(site_line leak_extra))"* ]]
}

@test "allocation sites match across runs by their frames, although ASLR moved their addresses" {
	[ "$(cat /proc/sys/kernel/randomize_va_space)" != 0 ] || skip "ASLR is off on this machine"
	two_runs
	# the recorded return address of the scratch site differs between the runs...
	for r in before after; do
		"$B/tprof" allocs --json --top 0 $r.trace >$r.json
		$PY -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(next(s["stack"][0]["address"] for s in d["by_bytes"] if s["stack"][0]["function"] == "scratch"))' $r.json >$r.addr
	done
	! cmp -s before.addr after.addr
	# ...and diff still pairs it: one row, changed, not one removed and one added
	"$B/tprof" diff --csv=sites --top 0 before.trace after.trace >s.csv
	$PY - s.csv <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1], newline="")) if r["site"].startswith("scratch (")]
assert len(rows) == 1 and rows[0]["status"] == "changed" and rows[0]["bytes_delta"] == "2500", rows
PY
}

@test "runs recorded without stacks: one site for all allocations, with the exact totals" {
	TPROF_DEPTH=0 TPROF_OUTPUT=before.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/diff_run"
	TPROF_DEPTH=0 TPROF_OUTPUT=after.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/diff_run" after
	"$B/tprof" diff --json before.trace after.trace >d.json
	$PY - d.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["sites_total"] == 1, d["sites"]
s = d["sites"][0]
assert s["site"] == "(no stack recorded)" and s["stack"] == [s["site"]] and s["status"] == "changed", s
assert s["bytes_delta"] == 20000 + 2500 + 777 and s["allocations_delta"] == 1, s
assert s["leaked_bytes_delta"] == 777 and s["leaked_blocks_delta"] == 1, s
PY
}

@test "a trace diffed with itself: no change anywhere" {
	two_runs
	"$B/tprof" diff --json --top 0 after.trace after.trace >d.json
	$PY - d.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["summary"]) == 12, d["summary"]
for r in d["summary"]:
    assert r["a"] == r["b"] and r["delta"] == 0 and r["rel"] == 0, r
assert len(d["ops"]) == 3 and len(d["sites"]) >= 4
for r in d["ops"] + d["sites"]:
    assert r["status"] == "same", r
    for k, v in r.items():
        if k.endswith("_delta") or k.endswith("_rel"):
            assert v == 0, (k, r)
st = d["steps"]
assert st["delta_mean_ns"] == 0 and st["delta_ci95_lo_ns"] <= 0 <= st["delta_ci95_hi_ns"], st
assert st["verdict"] == "within noise" and st["flops_per_step_delta"] == 0, st
PY
	run "$B/tprof" diff after.trace after.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"within the noise"* ]]
	# every summary row ends in "=" (no change)
	summary=$(sed -n '/^ *A *B *change$/,/^$/p' <<<"$output" | sed '1d;$d')
	[ "$(wc -l <<<"$summary")" -eq 12 ]
	! grep -v ' =$' <<<"$summary"
	! grep -E '^  (changed|added|removed):' <<<"$output"
}

@test "diff --top N keeps the N largest changes of each table, and says how many there are" {
	two_runs
	"$B/tprof" diff --json --top 1 before.trace after.trace >d.json
	[ "$(jget d.json ops_total)" = 4 ]
	$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["ops"]) == 1 and len(d["sites"]) == 1
assert d["sites"][0]["bytes_delta"] == 20000, d["sites"]' d.json
	run "$B/tprof" diff --top 2 before.trace after.trace
	[[ "$output" == *"ops (the top 2 of 4,"* ]]
}

@test "diff: invalid traces exit 2 with a message, usage errors exit 1" {
	two_runs
	printf 'not a trace at all' >bad.trace
	run "$B/tprof" diff before.trace bad.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad.trace"*"not a tprof trace"* ]]
	run "$B/tprof" diff bad.trace after.trace
	[ "$status" -eq 2 ]
	# a trace cut inside a block is read up to the cut, which is said once
	settled after.trace
	head -c 200 after.trace >cut.trace
	run "$B/tprof" diff before.trace cut.trace
	[ "$status" -eq 0 ]
	[ "$(grep -c 'warning: cut.trace: trace cut at byte' <<<"$output")" -eq 1 ]
	cp after.trace flip.trace
	printf '\xff' | dd of=flip.trace bs=1 seek=30 conv=notrunc 2>/dev/null
	run "$B/tprof" diff before.trace flip.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"flip.trace: byte 16: corrupt"* ]]
	run "$B/tprof" diff before.trace missing.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"missing.trace"* ]]
	run "$B/tprof" diff before.trace
	[ "$status" -eq 1 ]
	run "$B/tprof" diff before.trace after.trace after.trace
	[ "$status" -eq 1 ]
	run "$B/tprof" diff --json --csv before.trace after.trace
	[ "$status" -eq 1 ]
	[[ "$output" == *"--json and --csv exclude each other"* ]]
	run "$B/tprof" diff --csv=nosuch before.trace after.trace
	[ "$status" -eq 1 ]
	[[ "$output" == *"tables: summary, ops, sites, steps"* ]]
	run "$B/tprof" diff --skip-steps 9 before.trace after.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot skip 9 steps"* ]]
}

@test "steps marked but fewer than two kept: too few steps, and no interval from one step" {
	two_runs
	"$B/tprof" diff --json --skip-steps 5 before.trace after.trace >d.json
	$PY - d.json <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["steps"]
assert st is not None and st["verdict"] == "too few steps", st
assert st["count_a"] == 0 and st["mean_ns_a"] is None and st["delta_mean_ns"] is None, st
PY
	"$B/tprof" diff --json --skip-steps 4 before.trace after.trace >e.json
	$PY - e.json <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["steps"]
assert st["count_a"] == st["count_b"] == 1 and st["verdict"] == "too few steps", st
assert st["ci95_lo_ns_a"] is None and st["ci95_hi_ns_b"] is None, st  # one value: no interval
PY
	run "$B/tprof" diff --skip-steps 4 before.trace after.trace
	[[ "$output" == *"(one step: no confidence interval)"* ]]
	[[ "$output" != *"marked in one run only"* ]]
}
