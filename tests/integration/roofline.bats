#!/usr/bin/env bats
# tprof roofline: one short measurement (setup_file) whose JSON parses and whose figures are positive and
# consistent with each other; later runs read the cache instead of measuring; TPROF_PEAK_GFLOPS overrides
# the FP32 peak; a cache of another machine, method version or a malformed one is not used. Only
# setup_file measures: the other tests set TPROF_PEAK_GFLOPS where a cache is missing, which never measures.

load helpers

# BUILD may be relative to the repository (when bats is run by hand).
ROOT=${TPROF_ROOT:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
B=${BUILD:-build}
case $B in /*) ;; *) B=$ROOT/$B ;; esac

setup_file() {
	unset TPROF_PEAK_GFLOPS
	export ROOF=$(mktemp -d)
	TPROF_ROOFLINE_CACHE="$ROOF/cache/roofline.json" "$B/tprof" roofline --json --remeasure >"$ROOF/m.json" \
		2>"$ROOF/m.err"
	echo $? >"$ROOF/m.rc"
}

teardown_file() {
	rm -rf "$ROOF"
}

setup() {
	WORK=$(mktemp -d)
	cd "$WORK"
	unset TPROF_PEAK_GFLOPS XDG_CACHE_HOME
	cp "$ROOF/cache/roofline.json" cache.json || true # when missing, the first test says why
	export TPROF_ROOFLINE_CACHE=$WORK/cache.json
}

# check FILE.json PYTHON: runs the Python statements with d = the parsed object; an assert that fails
# shows the object.
check() {
	$PY -c 'import json, sys
d = json.load(open(sys.argv[1]))
try:
    exec(sys.argv[2])
except AssertionError:
    print(json.dumps(d, indent=1)); raise' "$1" "$2"
}

@test "measured: the JSON parses, every figure is positive and they are consistent" {
	cat "$ROOF/m.err"
	[ "$(cat "$ROOF/m.rc")" = 0 ]
	$PY -c 'import json,sys; json.load(sys.stdin)' <"$ROOF/m.json"
	check "$ROOF/m.json" '
assert d["source"] == "measured" and d["others_from"] == "measured", d["source"]
assert d["cache_saved"] is True and d["cache_path"].endswith("/cache/roofline.json")
assert d["version"] == 1 and d["cpu"] and d["cores"] >= 1
for k in ("fp32_gflops_1core", "fp32_gflops_all", "fp64_gflops_1core", "fp64_gflops_all",
          "stream_gbs_1core", "stream_gbs_all", "ridge_fp32", "ridge_fp64", "stream_array_mib"):
    assert d[k] > 0, k
# all cores do at least (nearly) what one does; 0.8 leaves room for a noisy machine, and a
# measurement that saw other work running ("busy") may be below it
for k in ("fp32_gflops", "fp64_gflops", "stream_gbs"):
    assert d["busy"] or d[k + "_all"] >= 0.8 * d[k + "_1core"], k
# the roofs are those of the ISA named, which is one of those measured
isas = {o["isa"]: o for o in d["by_isa"]}
assert d["isa"] in isas, d["isa"]
for k in ("fp32_gflops_1core", "fp32_gflops_all", "fp64_gflops_1core", "fp64_gflops_all"):
    assert d[k] == isas[d["isa"]][k], k
# vectors hold twice as many floats as doubles (one core: the all-core figures suffer more from noise)
for o in d["by_isa"]:
    assert o["fp32_gflops_1core"] > 0 and o["fp64_gflops_1core"] > 0, o
    if o["isa"] != "baseline":
        assert o["fp32_gflops_1core"] >= 1.5 * o["fp64_gflops_1core"], o
# a machine with AVX2+FMA is not measured with the fallback
assert "baseline" not in isas or len(isas) == 1
assert abs(d["ridge_fp32"] - d["fp32_gflops_all"] / d["stream_gbs_all"]) <= 1e-3 * d["ridge_fp32"]
assert abs(d["ridge_fp64"] - d["fp64_gflops_all"] / d["stream_gbs_all"]) <= 1e-3 * d["ridge_fp64"]
assert d["seconds"] < 10, d["seconds"]
'
	[ "$($PY -c 'import json,sys; print(json.load(sys.stdin)["cores"])' <"$ROOF/m.json")" = "$(nproc)" ]
	if grep -qw avx512f /proc/cpuinfo; then grep -q '"isa":"avx512f"' "$ROOF/m.json"; fi
	if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then grep -q '"isa":"avx2+fma"' "$ROOF/m.json"; fi
}

@test "a second run reads the cache and gives the same figures" {
	"$B/tprof" roofline --json >r.json
	check r.json '
m = json.load(open(sys.argv[1].replace("r.json", "cache.json")))
assert d["source"] == "cache" and d["others_from"] == "cache", d["source"]
assert d["cache_saved"] is False and d["cache_path"] == "'"$WORK"'/cache.json"
for k in ("fp32_gflops_all", "fp64_gflops_1core", "stream_gbs_all", "isa", "cpu", "cores", "measured_at", "by_isa"):
    assert d[k] == m[k], k
'
	# the cache holds the measurement, not where it was read from
	run grep -c '"source"' cache.json
	[ "$output" = 0 ]
}

@test "TPROF_PEAK_GFLOPS overrides the FP32 all-core peak, and only that" {
	TPROF_PEAK_GFLOPS=1234.5 "$B/tprof" roofline --json >r.json
	check r.json '
m = json.load(open(sys.argv[1].replace("r.json", "cache.json")))
assert d["source"] == "TPROF_PEAK_GFLOPS" and d["others_from"] == "cache", d["source"]
assert d["fp32_gflops_all"] == 1234.5
assert d["fp64_gflops_all"] == m["fp64_gflops_all"] and d["stream_gbs_all"] == m["stream_gbs_all"]
assert abs(d["ridge_fp32"] - 1234.5 / d["stream_gbs_all"]) <= 1e-3 * d["ridge_fp32"]
'
	# the cache still holds the measured peak
	check cache.json 'assert d["fp32_gflops_all"] != 1234.5'
	run "$B/tprof" roofline
	[ "$status" -eq 0 ]
	TPROF_PEAK_GFLOPS=1234.5 "$B/tprof" roofline >r.txt
	grep -q 'FP32 all-core peak set by TPROF_PEAK_GFLOPS' r.txt
	grep -q 'FP32 FMA peak, all [0-9]* cores (TPROF_PEAK_GFLOPS) *1234.5 GFLOP/s' r.txt
}

@test "a bad TPROF_PEAK_GFLOPS is reported and ignored" {
	TPROF_PEAK_GFLOPS=fast "$B/tprof" roofline --json >r.json 2>err.txt
	grep -q "ignoring TPROF_PEAK_GFLOPS='fast'" err.txt
	check r.json 'assert d["source"] == "cache"'
}

@test "a cache of another CPU, core count or version, or a malformed one, is not used" {
	export TPROF_PEAK_GFLOPS=100 # so that a missing cache does not make tprof measure
	for edit in 's/"cores":[0-9]*/"cores":99999/' 's/"cpu":"[^"]*"/"cpu":"Some Other CPU"/' \
		's/"version":1/"version":999/' 's/"isa":"[^"]*"/"isa":"sse9"/'; do
		sed "$edit" "$ROOF/cache/roofline.json" >cache.json
		if cmp -s cache.json "$ROOF/cache/roofline.json"; then false; fi
		"$B/tprof" roofline --json >r.json
		check r.json 'assert d["others_from"] == "none" and d["fp64_gflops_all"] == 0 and d["fp32_gflops_all"] == 100, d'
	done
	head -c 40 "$ROOF/cache/roofline.json" >cache.json
	"$B/tprof" roofline --json >r.json 2>err.txt
	grep -q 'ignoring the roofline cache .*cache.json: not the JSON object tprof writes' err.txt
	check r.json 'assert d["others_from"] == "none"'
}

@test "the cache goes under XDG_CACHE_HOME, else HOME" {
	unset TPROF_ROOFLINE_CACHE
	mkdir -p xdg/tprof home/.cache/tprof
	cp cache.json xdg/tprof/roofline.json
	cp cache.json home/.cache/tprof/roofline.json
	XDG_CACHE_HOME=$WORK/xdg "$B/tprof" roofline --json >r.json
	check r.json 'assert d["source"] == "cache" and d["cache_path"] == "'"$WORK"'/xdg/tprof/roofline.json", d'
	# a relative XDG_CACHE_HOME is invalid (XDG base directory spec): HOME is used
	XDG_CACHE_HOME=xdg HOME=$WORK/home "$B/tprof" roofline --json >r.json
	check r.json 'assert d["source"] == "cache" and d["cache_path"] == "'"$WORK"'/home/.cache/tprof/roofline.json", d'
}

@test "text output says what every figure is and where it came from" {
	run "$B/tprof" roofline
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"read from $WORK/cache.json"* ]]
	[[ "$output" == *"FP32 FMA peak, 1 core ("*") "*" GFLOP/s"* ]]
	[[ "$output" == *"FP32 FMA peak, all $(nproc) cores ("*") "*" GFLOP/s"* ]]
	[[ "$output" == *"FP64 FMA peak, all $(nproc) cores ("*") "*" GFLOP/s"* ]]
	[[ "$output" == *"STREAM triad bandwidth, all $(nproc) cores"*" GB/s"* ]]
	[[ "$output" == *"ridge point, FP32, all cores"*" FLOP/byte"* ]]
	[[ "$output" == *"an FMA counting 2"* ]]
}

@test "usage: --help, and an unknown option is a usage error" {
	run "$B/tprof" roofline --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"usage: tprof roofline"* ]]
	run "$B/tprof" roofline --frobnicate
	[ "$status" -eq 1 ]
	[[ "$output" == *"unknown option '--frobnicate'"* ]]
	run "$B/tprof" --help
	[[ "$output" == *"roofline [--json|--csv] [--remeasure]"* ]]
}

@test "ops on a cache measured on a busy machine says so (text BUSY, JSON peak_busy); an idle one does not" {
	[ -s cache.json ] || skip "no measurement"
	! ldd "$B/libtnn.so" | grep -q libasan || skip "libtnn.so is ASan-instrumented (SAN=1): it cannot run preloaded"
	traced "$B/progs/kernel_calls" >/dev/null
	for busy in true false; do
		$PY -c 'import json, sys
c = json.load(open("cache.json")); c["busy"] = sys.argv[1] == "true"
json.dump(c, open("cache.json", "w"))' $busy
		run "$B/tprof" ops t.trace
		[ "$status" -eq 0 ]
		if [ $busy = true ]; then [[ "$output" == *"BUSY: the peaks were measured"* ]]; else [[ "$output" != *BUSY* ]]; fi
		"$B/tprof" ops --json t.trace >o.json
		check o.json "assert d['peak_busy'] is $([ $busy = true ] && echo True || echo False)"
	done
}
