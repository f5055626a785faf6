#!/usr/bin/env bats
# tprof plot: the four pictures (PNG signature and size, or well-formed SVG) with their .gp and .dat
# beside them; the memory curve keeps the exact peak of tprof peak; long kernel-call lanes are merged
# to the picture's resolution; names built to break gnuplot (tests/kernels/hostile_names.c) are only
# ever shown, never run; gnuplot missing or failing and bad traces give clear errors and no pictures.

load helpers

export TPROF_PEAK_GFLOPS=100 # so that a missing roofline cache does not make tprof measure
CANARY=/tmp/tprof_hostile_canary
GPT_SMALL="--vocab 64 --ctx 32 --layers 2 --heads 2 --dmodel 32 --batch 2 --steps 6 --lr 3e-3 --period 12 --gen 4"

# record PROG ARGS...: runs PROG under libtprof.so writing t.trace. Under SAN=1 libtnn.so (and the
# workloads) are ASan-instrumented, and ASan's runtime must be loaded first: its malloc then hides
# the heap calls from libtprof.so, but kernel calls and annotations are still recorded.
record() {
	local pre="$B/libtprof.so"
	if ldd "$B/libtnn.so" | grep -q libasan; then
		pre="$(gcc -print-file-name=libasan.so) $pre"
	fi
	ASAN_OPTIONS=detect_leaks=0 TPROF_OUTPUT=t.trace LD_PRELOAD="$pre" "$@" >/dev/null
}

# check_pictures DIR EXT: the four pictures, each with its .gp and .dat, of the documented size
# (the timeline's height follows its number of lanes, the lines of block 1 of timeline.dat).
check_pictures() {
	$PY - "$1" "$2" <<'PY'
import os, re, struct, sys, xml.dom.minidom
d, ext = sys.argv[1], sys.argv[2]
dat = open(os.path.join(d, "timeline.dat")).read()
lanes = [l for l in re.split(r"\n\n\n", dat)[1].splitlines() if l and not l.startswith("#")]
h = min(max(300 + 140 * len(lanes), 580), 2400)
want = {"memory": (1400, 720), "timeline": (1400, h), "ops": (1400, 720), "roofline": (1400, 900)}
for name, (w, h) in want.items():
    for e in ("gp", "dat"):
        p = os.path.join(d, name + "." + e)
        assert os.path.getsize(p) > 0, p
    p = os.path.join(d, name + "." + ext)
    data = open(p, "rb").read()
    assert len(data) > 1000, (p, len(data))
    if ext == "png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n", p
        assert data[12:16] == b"IHDR", p
        size = struct.unpack(">II", data[16:24])
    else:
        svg = xml.dom.minidom.parseString(data).documentElement
        assert svg.tagName == "svg", p
        size = (int(svg.getAttribute("width")), int(svg.getAttribute("height")))
    assert size == (w, h), (p, size, (w, h))
PY
}

# dat FILE N: the data lines of block N (gnuplot's index N) of a .dat file
dat() {
	$PY -c 'import re, sys
b = re.split(r"\n\n\n", open(sys.argv[1]).read())[int(sys.argv[2])]
print("\n".join(l for l in b.splitlines() if l and not l.startswith("#")))' "$1" "$2"
}

@test "four PNG pictures of a transformer run, each beside its script and data; file names printed" {
	record "$B/transformer_bench" $GPT_SMALL
	run "$B/tprof" plot -o out t.trace
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'out/memory.png\nout/timeline.png\nout/ops.png\nout/roofline.png')" ] # no warnings
	check_pictures out png
	# the ops picture's bars are tprof ops's self-time shares: with several threads, those of the one
	# that marks steps (here the main thread: tprof ops --thread main)
	"$B/tprof" ops --json t.trace >all.json
	if [ "$($PY -c 'import json; print(json.load(open("all.json"))["threads"])')" -gt 1 ]; then
		"$B/tprof" ops --thread main --json t.trace >ops.json
		grep -q "of one thread's wall time" out/ops.gp
	else
		cp all.json ops.json
	fi
	$PY - ops.json out/ops.dat <<'PY'
import json, re, shlex, sys
ops = json.load(open(sys.argv[1]))
rows = sorted(ops["ops"], key=lambda r: (-r["self_ns"], r["name"]))
bars = [l for l in re.split(r"\n\n\n", open(sys.argv[2]).read())[1].splitlines() if l and not l.startswith("#")]
for r, bar in zip(rows, bars[:11]):
    f = shlex.split(bar)
    assert f[4] == r["name"], (f, r["name"])
    assert abs(float(f[1]) - 100.0 * r["self_ns"] / ops["wall_ns"]) < 1e-4, (f, r)
rest = {shlex.split(b)[4]: shlex.split(b) for b in bars if shlex.split(b)[4].startswith("(")}
outside = rest["(outside kernels)"]
assert abs(float(outside[1]) - 100.0 * ops["outside_ns"] / ops["wall_ns"]) < 1e-4
if ops["idle_ns"]: # OpenMP pool threads between regions: a bar of their own
    idle = rest["(idle OpenMP threads)"]
    assert abs(float(idle[1]) - 100.0 * ops["idle_ns"] / ops["wall_ns"]) < 1e-4
PY
	# re-running a script from its directory makes its picture again
	rm out/ops.png
	(cd out && gnuplot ops.gp)
	[ -s out/ops.png ]
}

@test "--format svg: four well-formed SVG files of the same sizes, no PNG" {
	record "$B/transformer_bench" $GPT_SMALL
	run "$B/tprof" plot --format svg -o svgout t.trace
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'svgout/memory.svg\nsvgout/timeline.svg\nsvgout/ops.svg\nsvgout/roofline.svg')" ]
	check_pictures svgout svg
	[ -z "$(ls svgout/*.png 2>/dev/null)" ]
	# the default directory is the current one
	mkdir here && cd here && "$B/tprof" plot --format svg ../t.trace >/dev/null
	[ -s roofline.svg ] && [ -s roofline.gp ] && [ -s roofline.dat ]
}

@test "the memory curve is downsampled but keeps the exact peak of tprof peak, when it was first reached" {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/storm" 2 100000 >/dev/null
	"$B/tprof" peak --json t.trace >peak.json
	"$B/tprof" plot -o out t.trace >/dev/null
	dat out/memory.dat 1 >curve.txt
	dat out/memory.dat 2 >peak.txt
	$PY - peak.json curve.txt peak.txt <<'PY'
import json, sys
peak = json.load(open(sys.argv[1]))
curve = [l.split() for l in open(sys.argv[2])]
def ns(s):
    whole, frac = s.split(".")
    return int(whole) * 10**9 + int(frac)
top = max(int(v) for t, v in curve)
assert top == peak["peak_bytes"], (top, peak["peak_bytes"])
assert len(curve) <= 4 * (1400 - 90 - 40) + 1, len(curve) # 400000 events, a few points per pixel
t, v = open(sys.argv[3]).read().split()
# two threads: an event the clocks put before the one before it is drawn at that one's time; how far
# apart they can be is how far the threads' interpolated clocks disagree, which grows when a thread
# is descheduled between two measured events (a loaded machine: milliseconds)
assert int(v) == peak["peak_bytes"] and 0 <= ns(t) - peak["peak_time_ns"] < 5000000, (t, v, peak)
assert [t, v] in curve
times = [ns(t) for t, v in curve]
assert times == sorted(times)
PY
	# a peak reached twice (stacks_peak): the first time is the one kept
	rm t.trace
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/stacks_peak"
	"$B/tprof" peak --json t.trace >peak.json
	"$B/tprof" plot -o out2 t.trace >/dev/null
	[ "$(jget peak.json peak_bytes)" -eq 6300 ]
	[ "$(dat out2/memory.dat 2 | cut -d' ' -f2)" -eq 6300 ]
	[ "$(dat out2/memory.dat 1 | cut -d' ' -f2 | sort -n | tail -1)" -eq 6300 ]
	t=$(dat out2/memory.dat 2 | cut -d' ' -f1)
	[ "$(dat out2/memory.dat 1 | grep -c ' 6300$')" -eq 2 ] # reached twice
	[ "$(dat out2/memory.dat 1 | grep ' 6300$' | head -1 | cut -d' ' -f1)" = "$t" ]
	[ "$($PY -c 'import sys; print(round(float(sys.argv[1]) * 1e9))' "$t")" -eq "$(jget peak.json peak_time_ns)" ]
}

@test "100000 kernel calls in one lane are merged to the timeline's resolution" {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/kernel_bench" 100000 >/dev/null
	"$B/tprof" plot -o out t.trace >/dev/null
	check_pictures out png
	boxes=$(dat out/timeline.dat 2 | tail -n +2 | wc -l) # after the column header
	echo "boxes $boxes"
	[ "$boxes" -ge 1 ] && [ "$boxes" -le $((2 * (1400 - 150 - 40))) ]
	[ "$(dat out/timeline.dat 2 | head -1)" = '"tnn_add"' ]
}

@test "dense step boundaries thin to at most one line per 12 pixels, and the key says which" {
	record "$B/transformer_bench" ${GPT_SMALL/--steps 6/--steps 300} --period 1000
	"$B/tprof" plot -o out t.trace >/dev/null
	# memory: block 3; timeline: the last block. Plot areas 1400 - 90 - 40 and 1400 - 150 - 40 pixels.
	mem=$(dat out/memory.dat 3 | wc -l)
	tl=$($PY -c 'import re, sys; print(len([l for l in re.split(r"\n\n\n", open(sys.argv[1]).read())[-1].split() if l]))' out/timeline.dat)
	echo "memory $mem, timeline $tl lines"
	[ "$mem" -le $(((1400 - 90 - 40) / 12)) ] && [ "$mem" -ge 50 ]
	[ "$tl" -le $(((1400 - 150 - 40) / 12)) ] && [ "$tl" -ge 50 ]
	grep -Eq 'step boundary \([0-9]+ of [0-9]{3} shown\)' out/memory.gp
	grep -Eq 'step boundary \([0-9]+ of [0-9]{3} shown\)' out/timeline.gp
	# no two lines closer than 12 pixels of the x axis (0 to span), whatever the steps' lengths
	dat out/memory.dat 3 >m.txt
	$PY - out/memory.gp m.txt <<'PY'
import re, sys
span = float(re.search(r"^span = ([0-9.e+-]+)", open(sys.argv[1]).read(), re.M).group(1))
x = [float(v) for v in open(sys.argv[2]).read().split()]
gaps = [b - a for a, b in zip(x, x[1:])]
assert min(gaps) >= span * 12 / (1400 - 90 - 40) * (1 - 1e-9), (min(gaps), span)
PY
	# few steps: every one, and the key says nothing more (unless a loaded machine made one step
	# so long that the others' boundaries come closer than 12 pixels: then the key says how many)
	rm -f t.trace
	record "$B/transformer_bench" $GPT_SMALL
	"$B/tprof" plot -o few t.trace >/dev/null
	n=$(dat few/memory.dat 3 | wc -l)
	if [ "$n" -eq 7 ]; then
		grep -q 'title "step boundary"' few/timeline.gp
	else
		grep -q "step boundary ($n of 7 shown)" few/memory.gp
	fi
}

@test "hostile names: gnuplot only shows them, never runs them, in PNG and SVG" {
	rm -f "$CANARY"
	record "$B/progs/hostile_names"
	run "$B/tprof" plot -o png t.trace
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | wc -l)" -eq 4 ] # the four names, no gnuplot message
	check_pictures png png
	run "$B/tprof" plot --format svg -o svg t.trace
	[ "$status" -eq 0 ]
	check_pictures svg svg
	[ ! -e "$CANARY" ]
	# no string of the trace is in a script: they are all in the data
	! grep -l -e hostile -e system -e 'touch ' png/*.gp svg/*.gp
	grep -qF '"\042; system(\042touch /tmp/tprof_hostile_canary\042); print \042"' png/timeline.dat
	grep -qF '"`touch /tmp/tprof_hostile_canary`"' png/timeline.dat
	# every range name, drawn from the data by gnuplot, comes out as the same text
	block=$(grep -o '^# index [0-9]*: ranges' png/timeline.dat | grep -o '[0-9][0-9]*')
	cat >names.gp <<EOF
set terminal svg size 1200,2400 noenhanced
set output 'names.svg'
set yrange [-1:*]
plot 'png/timeline.dat' index $block using (0):0:5 with labels notitle
EOF
	gnuplot names.gp
	[ ! -e "$CANARY" ]
	$PY - names.svg <<'PY'
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
texts = set("".join(n.data for n in t.childNodes if n.nodeType == n.TEXT_NODE) for t in doc.getElementsByTagName("text"))
want = ['quote" back\\slash', 'line\\nbreak\\r\\ttab',
        "'; system('touch /tmp/tprof_hostile_canary'); print '",
        '"; system("touch /tmp/tprof_hostile_canary"); print "',
        "`touch /tmp/tprof_hostile_canary`", "\\x01\\x1f ctl \\x7f", "bad utf8 \ufffd\ufffd \ufffd",
        'comma,semi;"csv"', "</script><b>html</b>", "@x{1} $y %z ^w _v"]
missing = [w for w in want if w not in texts]
assert not missing, (missing, sorted(texts))
PY
}

@test "gnuplot missing: a message naming gnuplot-nox, exit status 3, nothing written" {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	settled t.trace
	run env PATH=/nonexistent "$B/tprof" plot -o out t.trace
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" == *"gnuplot"*"not found"*"gnuplot-nox"* ]]
	[ ! -e out ]
}

# plot_with_gnuplot SCRIPT: tprof plot -o out t.trace (run) with a gnuplot in PATH that runs SCRIPT, a
# printf format (its arguments: none) for the shell script it is
plot_with_gnuplot() {
	mkdir -p fake
	# shellcheck disable=SC2059 # the format is the script
	printf "#!/bin/sh\n$1" >fake/gnuplot
	chmod +x fake/gnuplot
	run env PATH="$PWD/fake:$PATH" "$B/tprof" plot -o out t.trace
	echo "$output"
}

@test "gnuplot failing: its messages shown, exit status 3, no half-made picture" {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	plot_with_gnuplot 'echo "fake gnuplot: cannot draw $1" >&2\n: >memory.png\nexit 1\n'
	[ "$status" -eq 3 ]
	[[ "$output" == *"gnuplot failed on out/memory.gp (exit status 1)"* ]]
	[[ "$output" == *"fake gnuplot: cannot draw memory.gp"* ]]
	[ ! -e out/memory.png ]
	[ ! -e out/timeline.png ]
}

@test "bad input: an invalid trace exits 2 without writing, bad options exit 1" {
	printf 'not a trace at all, just text\n' >bad.trace
	run "$B/tprof" plot -o out bad.trace
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad.trace"* ]]
	[ ! -e out ]
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	cp t.trace flip.trace
	printf '\xff' | dd of=flip.trace bs=1 seek=30 conv=notrunc 2>/dev/null
	run "$B/tprof" plot -o out flip.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"flip.trace: byte 16: corrupt"* ]]
	[ ! -e out ]
	# a trace cut inside a block is drawn from what came before the cut, which is said once
	head -c 200 t.trace >cut.trace
	run "$B/tprof" plot -o cutout cut.trace
	[ "$status" -eq 0 ]
	[ "$(grep -c 'warning: cut.trace: trace cut at byte' <<<"$output")" -eq 1 ]
	[ -e cutout/memory.png ]
	run "$B/tprof" plot --format jpeg t.trace
	[ "$status" -eq 1 ]
	[[ "$output" == *"--format takes png or svg"* ]]
	run "$B/tprof" plot -o
	[ "$status" -eq 1 ]
	run "$B/tprof" plot
	[ "$status" -eq 1 ]
	run "$B/tprof" plot --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"usage: tprof plot"* ]]
	touch afile
	run "$B/tprof" plot -o afile t.trace
	[ "$status" -eq 2 ] # a directory that cannot be written: bad output, as README's exit statuses say
	[[ "$output" == *"afile is not a directory"* ]]
}

@test "a trace without kernel calls gets the memory picture only, and a line that says why" {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	settled t.trace
	run "$B/tprof" plot -o out t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"out/memory.png"* ]]
	[[ "$output" == *"no kernel calls: no ops, timeline or roofline picture"* ]]
	# on stderr: stdout lists the files made, for tools to read
	[ "$("$B/tprof" plot -o out2 t.trace 2>/dev/null)" = "out2/memory.png" ]
	[ -s out/memory.png ]
	[ ! -e out/ops.png ] && [ ! -e out/timeline.png ] && [ ! -e out/roofline.png ]
}

@test "an output that is the trace being read is refused, the trace left whole (plot and export)" {
	TPROF_OUTPUT=memory.dat LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	settled memory.dat
	cp memory.dat keep.trace
	run "$B/tprof" plot -o . memory.dat
	[ "$status" -ne 0 ]
	[[ "$output" == *"memory.dat is the trace being read: not written over"* ]]
	cmp memory.dat keep.trace
	for how in --chrome --folded; do
		run "$B/tprof" export keep.trace "$how" keep.trace
		[ "$status" -eq 2 ]
		[[ "$output" == *"keep.trace is the trace being read"* ]]
		cmp memory.dat keep.trace
	done
}

@test "a picture gnuplot leaves cut short (a full file system, where it still exits 0) is exit 2, and removed" {
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	# a PNG's first bytes without its IEND chunk, then exit 0, as gnuplot does on a full disk
	plot_with_gnuplot 'printf "\\\\211PNG\\\\r\\\\n\\\\032\\\\n0123456789abcdef" >memory.png\nexit 0\n'
	[ "$status" -eq 2 ]
	[[ "$output" == *"gnuplot wrote out/memory.png only in part (is the file system full?)"* ]]
	[ ! -e out/memory.png ]
	# the same script ending the file as a PNG ends: a whole picture
	plot_with_gnuplot 'printf "\\\\211PNG\\\\r\\\\n\\\\032\\\\n0123\\\\0\\\\0\\\\0\\\\0IEND\\\\256B\\\\140\\\\202" >memory.png\nexit 0\n'
	[ "$status" -eq 0 ]
	[ -s out/memory.png ]
}

@test "in the C locale gnuplot draws without a word; the files are listed a line each, escaped as in messages" {
	traced "$B/progs/heap_known" >/dev/null
	d=$'o\nut'
	LC_ALL=C "$B/tprof" plot -o "$d" t.trace >out.txt 2>err.txt
	cat out.txt err.txt
	[ "$(cat out.txt)" = 'o\nut/memory.png' ]
	[ "$(cat err.txt)" = "tprof: plot: the trace has no kernel calls: no ops, timeline or roofline picture" ]
	[ -s "$d/memory.png" ]
}

@test "plot into a directory that cannot be made is exit 2 (output that cannot be written), and says why" {
	traced "$B/progs/heap_known" >/dev/null
	: >afile
	run "$B/tprof" plot -o afile/sub t.trace
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"afile/sub"* ]]
}
