#!/usr/bin/env bats
# The stack-based commands (leaks, peak, allocs, export) on programs whose answers are known by
# construction: planted leaks in C, C++ and a dlopen'ed library at lines marked LEAK:<function>, a
# stripped binary, a stack deeper than the recorder's limit, a peak built step by step; and leak
# records compared with valgrind memcheck's, function by function.

load helpers

P="$TPROF_ROOT/tests/progs"

# line_of FILE FUNCTION: the line marked LEAK:FUNCTION
line_of() {
	grep -n "LEAK:$2\b" "$1" | cut -d: -f1
}

# by_function JSON: "function line bytes blocks" for each planting function of a leaks/peak JSON
# (the first frame whose function starts with plant_/plugin_/site_/recurse, parameters dropped,
# with the line of that frame), summed over records, sorted
by_function() {
	$PY - "$1" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
out = {}
for r in d.get("leaks", d.get("live", [])):
    key = ("(other)", 0)
    for f in r["stack"]:
        fn = re.sub(r"\(.*\)$", "", f["function"] or "")
        if re.match(r"(plant_|plugin_|site_|recurse)", fn):
            key = (fn, f["line"])
            break
    b = out.setdefault(key, [0, 0])
    b[0] += r["bytes"]
    b[1] += r["blocks"]
for (fn, line), (by, bl) in sorted(out.items()):
    print(fn, line, by, bl)
PY
}

@test "leaks: planted C leaks are named at their function and line, with exact bytes and blocks" {
	traced "$B/progs/stacks_leak"
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	"$B/tprof" report --json t.trace >r.json
	src="$P/stacks_leak.c"
	expected="plant_calloc $(line_of "$src" plant_calloc) 77 1
plant_chain $(line_of "$src" plant_chain) 4000 4
plant_malloc $(line_of "$src" plant_malloc) 300 3
plant_memalign $(line_of "$src" plant_memalign) 256 1
plant_realloc $(line_of "$src" plant_realloc) 500 1
plant_strdup $(line_of "$src" plant_strdup) 24 2"
	run by_function l.json
	echo "$output"
	[ "$output" = "$expected" ]
	# every block is reported: the built-in suppressions hide nothing of the program's own,
	# not even the strdup'ed strings whose allocation site is in the C library
	[ "$(jget l.json leaked_bytes)" = 5157 ]
	[ "$(jget l.json leaked_blocks)" = 12 ]
	[ "$(jget l.json leaked_bytes)" = "$(jget r.json leaked_bytes)" ]
	[ "$(jget l.json leaked_blocks)" = "$(jget r.json leaked_blocks)" ]
	[ "$(jget l.json suppressed_bytes)" = 0 ]
	[ "$(jget l.json reported_bytes)" = 5157 ]
	[ "$(jget l.json records)" = 9 ]
}

@test "leaks: planted C++ leaks (new, new[], inside std::vector and std::string)" {
	traced "$B/progs/stacks_leak_cxx"
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	src="$P/stacks_leak_cxx.cpp"
	expected="plant_new $(line_of "$src" plant_new) 40 1
plant_new_array $(line_of "$src" plant_new_array) 100 1
plant_string $(line_of "$src" plant_string) 266 4
plant_vector $(line_of "$src" plant_vector) 224 2"
	run by_function l.json
	echo "$output"
	[ "$output" = "$expected" ]
	[ "$(jget l.json leaked_bytes)" = 630 ]
	[ "$(jget l.json reported_blocks)" = 8 ]
}

@test "leaks: text output reads like valgrind's loss records" {
	traced "$B/progs/stacks_leak"
	run "$B/tprof" leaks --kinds all t.trace
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"300 bytes in 3 blocks are definitely lost: record 2 of 9"* ]]
	[[ "$output" == *"1,000 bytes in 1 block is still reachable: record 9 of 9"* ]]
	[[ "$output" == *"definitely lost: 1,157 bytes in 8 blocks"* ]]
	[[ "$output" == *"still reachable: 4,000 bytes in 4 blocks"* ]]
	[[ "$output" == *"at plant_malloc (stacks_leak.c:$(line_of "$P/stacks_leak.c" plant_malloc)) [stacks_leak]"* ]]
	[[ "$output" == *"at __GI___strdup"*"by plant_strdup (stacks_leak.c:"* ]]
	[[ "$output" == *"in use at exit: 5,157 bytes in 12 blocks"* ]]
	"$B/tprof" leaks --kinds all --json --top 2 t.trace >l.json
	$PY -c 'import json,sys; d=json.load(open("l.json")); assert len(d["leaks"]) == 2 and d["records"] == 9'
}

@test "leaks: equal to valgrind memcheck's leak records per leaking function (C, C++, loader)" {
	for prog in stacks_leak stacks_leak_cxx; do
		run "$TPROF_ROOT/tests/lib/vgleaks.sh" "$B" "$WORK" -- "$B/progs/$prog"
		echo "$output"
		[ "$status" -eq 0 ]
	done
	# a dlopen'ed library left loaded: its leaks and the loader's blocks for it (valgrind cannot
	# name the frames of a library that was closed, so this one stays open)
	run "$TPROF_ROOT/tests/lib/vgleaks.sh" "$B" "$WORK" -- "$B/progs/stacks_dlopen" "$B/progs/libstacks_plugin.so" keep
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"plugin_ctor"*"64/1"*"64/1"* ]]
	[[ "$output" == *"_dl_new_object"* ]]
}

@test "leaks: a dlopen'ed library's leaks are named after dlclose; built-in suppressions spare them" {
	traced "$B/progs/stacks_dlopen" "$B/progs/libstacks_plugin.so"
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	src="$P/plugin/stacks_plugin.c"
	expected="plugin_ctor $(line_of "$src" plugin_ctor) 64 1
plugin_leak $(line_of "$src" plugin_leak) 144 3"
	run by_function l.json
	echo "$output"
	[ "$output" = "$expected" ]
	# the constructor ran inside the loader (ld-linux frames below it) and is still reported
	$PY -c '
import json
d = json.load(open("l.json"))
for r in d["leaks"]:
    assert r["stack"][0]["module"] == "libstacks_plugin.so", r["stack"][0]
ctor = [r for r in d["leaks"] if r["stack"][0]["function"] == "plugin_ctor"][0]
assert any((f["module"] or "").startswith("ld-linux") for f in ctor["stack"])'
}

@test "leaks: built-in suppressions hide the loader's blocks for a library never closed, nothing else" {
	traced "$B/progs/stacks_dlopen" "$B/progs/libstacks_plugin.so" keep
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	"$B/tprof" leaks --kinds all --json --no-default-suppressions t.trace >all.json
	$PY -c '
import json
d, a = json.load(open("l.json")), json.load(open("all.json"))
key = lambda r: json.dumps(r["stack"])
shown = {key(r) for r in d["leaks"]}
hidden = [r for r in a["leaks"] if key(r) not in shown]
assert hidden, "nothing was suppressed"
for r in hidden:   # every hidden record was allocated inside the loader
    assert r["stack"][0]["module"].startswith("ld-linux"), r["stack"][0]
assert d["suppressed_bytes"] == sum(r["bytes"] for r in hidden)
assert d["suppressed_blocks"] == sum(r["blocks"] for r in hidden)
assert d["leaked_bytes"] == a["leaked_bytes"] == d["suppressed_bytes"] + d["reported_bytes"]
assert d["reported_bytes"] == 208 and a["suppressed_bytes"] == 0
assert [s["origin"].split(":")[0] for s in d["suppressions"]] == ["default"] * len(d["suppressions"])'
	# the printed built-in list, read back as a file, suppresses the same
	"$B/tprof" leaks --print-default-suppressions >default.supp
	"$B/tprof" leaks --kinds all --json --no-default-suppressions --suppressions default.supp t.trace >f.json
	[ "$(jget f.json suppressed_bytes)" = "$(jget l.json suppressed_bytes)" ]
	[ "$(jget f.json records)" = "$(jget l.json records)" ]
}

@test "leaks: a stripped binary shows module+offset inside the right functions, no guessed names" {
	traced "$B/progs/stacks_leak_stripped"
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	nm -S "$B/progs/stacks_leak" | grep ' plant_' >syms.txt
	$PY - <<'PY'
import json
d = json.load(open("l.json"))
syms = {}
for line in open("syms.txt"):
    start, size, _, name = line.split()
    syms[name] = (int(start, 16), int(size, 16))
def owner(off):  # return addresses point just past the call, inside the calling function
    return [n for n, (s, z) in syms.items() if s < off <= s + z]
got = {}
for r in d["leaks"]:
    for f in r["stack"]:
        if f["module"] == "stacks_leak_stripped":
            assert f["function"] is None and f["file"] is None, f
    f = r["stack"][0] if r["stack"][0]["module"] == "stacks_leak_stripped" else r["stack"][1]
    o = owner(f["offset"])
    assert len(o) == 1, (f, o)
    b = got.setdefault(o[0], [0, 0])
    b[0] += r["bytes"]
    b[1] += r["blocks"]
want = {"plant_malloc": [300, 3], "plant_calloc": [77, 1], "plant_realloc": [500, 1],
        "plant_strdup": [24, 2], "plant_memalign": [256, 1], "plant_chain": [4000, 4]}
assert got == want, got
PY
	run "$B/tprof" leaks --kinds all t.trace
	[[ "$output" == *"at stacks_leak_stripped+0x"* ]]
}

@test "leaks: a stack deeper than TPROF_DEPTH is cut at the limit and marked truncated" {
	traced "$B/progs/stacks_deep"
	"$B/tprof" leaks --kinds all --json t.trace >l.json
	line=$(line_of "$P/stacks_deep.c" recurse)
	LINE=$line $PY -c '
import json, os
d = json.load(open("l.json"))
assert d["records"] == 1, d
r = d["leaks"][0]
assert r["bytes"] == 42 and r["blocks"] == 1 and r["truncated"] is True
assert len(r["stack"]) == 64, len(r["stack"])
assert {f["function"] for f in r["stack"]} == {"recurse"}
assert r["stack"][0]["line"] == int(os.environ["LINE"])'
	run "$B/tprof" leaks --kinds all t.trace
	[[ "$output" == *"cut at the recorder's depth limit"* ]]
	# with a deeper limit the whole stack is there, down to main
	TPROF_DEPTH=200 TPROF_OUTPUT=t200.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/stacks_deep"
	"$B/tprof" leaks --kinds all --json t200.trace >l200.json
	$PY -c '
import json
r = json.load(open("l200.json"))["leaks"][0]
assert r["truncated"] is False
names = [f["function"] for f in r["stack"]]
assert names.count("recurse") == 101 and "main" in names, names'
}

@test "peak: the known peak and exactly what was live at it, by stack" {
	traced "$B/progs/stacks_peak"
	"$B/tprof" peak --json t.trace >p.json
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget p.json peak_bytes)" = 6300 ]
	[ "$(jget p.json peak_blocks)" = 5 ]
	[ "$(jget p.json peak_bytes)" = "$(jget r.json peak_bytes)" ]
	[ "$(jget p.json peak_time_ns)" = "$(jget r.json peak_time_ns)" ]
	run by_function p.json
	echo "$output"
	[ "$output" = "site_b 12 2000 1
site_c 13 4000 1
site_loop 20 300 3" ]
	$PY -c '
import json
live = json.load(open("p.json"))["live"]
assert [(r["bytes"], r["stack"][0]["function"]) for r in live] == [(4000, "site_c"), (2000, "site_b"), (300, "site_loop")]'
	run "$B/tprof" peak t.trace
	[[ "$output" == *"peak: 6,300 bytes"*"4,000 bytes in 1 block (63.5% of the peak)"*"at site_c"* ]]
}

@test "allocs: sites by calls and bytes, temporaries, size histogram" {
	traced "$B/progs/stacks_peak"
	"$B/tprof" allocs --json t.trace >a.json
	[ "$(jget a.json allocations)" = 8 ]
	[ "$(jget a.json bytes_allocated)" = 19599 ]
	[ "$(jget a.json temporary)" = 3 ]
	[ "$(jget a.json sites)" = 6 ]
	$PY -c '
import json
d = json.load(open("a.json"))
site = lambda r: r["stack"][0]["function"]
assert site(d["by_allocations"][0]) == "site_loop" and d["by_allocations"][0]["allocations"] == 3
assert [site(r) for r in d["by_bytes"]] == ["site_e", "site_c", "site_d", "site_a", "site_b", "site_loop"]
# freed before the next allocation of the thread: c, d and e; a is freed after b was allocated
assert {site(r): r["temporary"] for r in d["by_bytes"]} == {"site_a": 0, "site_b": 0, "site_c": 1, "site_d": 1, "site_e": 1, "site_loop": 0}
h = [(b["min"], b["max"], b["allocations"], b["bytes"]) for b in d["histogram"]]
assert h == [(64, 127, 3, 300), (1024, 2047, 1, 2000), (2048, 4095, 3, 10999), (4096, 8191, 1, 6300)], h'
	"$B/tprof" allocs --json --top 2 t.trace >a2.json
	$PY -c 'import json; d=json.load(open("a2.json")); assert len(d["by_bytes"]) == 2 and d["sites"] == 6'
	run "$B/tprof" allocs t.trace
	[[ "$output" == *"8 allocations, 19,599 bytes allocated, from 6 sites"* ]]
	[[ "$output" == *"2048..4095"* ]]
}

@test "export: folded stacks, outermost first, for each metric" {
	traced "$B/progs/stacks_peak"
	"$B/tprof" export t.trace --folded peak.folded --metric peak
	cat peak.folded
	[ "$(wc -l <peak.folded)" -eq 3 ]
	grep -q '^_start;.*;main;site_c 4000$' peak.folded
	grep -q '^_start;.*;main;site_b 2000$' peak.folded
	grep -q '^_start;.*;main;site_loop 300$' peak.folded
	"$B/tprof" export t.trace --folded bytes.folded
	[ "$(awk '{s += $NF} END {print s}' bytes.folded)" = 19599 ]
	"$B/tprof" export t.trace --folded - --metric allocs >allocs.folded
	[ "$(awk '{s += $NF} END {print s}' allocs.folded)" = 8 ]
	traced "$B/progs/stacks_leak_cxx" >/dev/null
	rm t.trace
	TPROF_OUTPUT=c.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/stacks_leak_cxx"
	"$B/tprof" export c.trace --folded leaked.folded --metric leaked
	cat leaked.folded
	[ "$(awk '{s += $NF} END {print s}' leaked.folded)" = 630 ]
	grep -q ';plant_vector();std::vector<int, std::allocator<int> >::vector(.*);operator new(unsigned long) 200$' leaked.folded
	run "$B/tprof" export c.trace --folded x --metric nope
	[ "$status" -eq 1 ]
}

@test "suppression files: leak: matches any frame, leak_site: only the allocation site" {
	traced "$B/progs/stacks_leak"
	cat >my.supp <<-'EOF'
	# planted on purpose

	leak:plant_calloc
	  leak:^plant_chain$
	leak_site:plant_strdup
	EOF
	"$B/tprof" leaks --kinds all --json --suppressions my.supp t.trace >l.json
	# plant_strdup's allocation site is strdup, in the C library: leak_site does not reach it
	[ "$(jget l.json suppressed_bytes)" = 4077 ]
	[ "$(jget l.json suppressed_blocks)" = 5 ]
	[ "$(jget l.json leaked_bytes)" = 5157 ]
	[ "$(jget l.json reported_bytes)" = 1080 ]
	[ "$(jget l.json records)" = 4 ]
	$PY -c '
import json
d = json.load(open("l.json"))
s = [(x["rule"], x["origin"], x["bytes"], x["blocks"], x["records"]) for x in d["suppressions"]]
assert s == [("leak:plant_calloc", "my.supp:3", 77, 1, 1), ("leak:^plant_chain$", "my.supp:4", 4000, 4, 4)], s'
	echo 'leak:plant_str*' >any.supp
	"$B/tprof" leaks --kinds all --json --suppressions any.supp --suppressions my.supp t.trace >l2.json
	[ "$(jget l2.json suppressed_bytes)" = 4101 ]
	run "$B/tprof" leaks --kinds all --suppressions my.supp t.trace
	[[ "$output" == *"suppressed: 4,077 bytes in 5 blocks"* ]]
	[[ "$output" == *"4,000 bytes in 4 blocks: leak:^plant_chain$ (my.supp:4)"* ]]
	# a suppressions file that is not one, or cannot be read, is bad input: 2 (README: exit status)
	printf 'leak:ok\nlek:plant_malloc\n' >bad.supp
	run "$B/tprof" leaks --suppressions bad.supp t.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad.supp:2: not a suppression"* ]]
	run "$B/tprof" leaks --suppressions missing.supp t.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"missing.supp"* ]]
}

@test "stack tables: many deep stacks go out compressed (ZSTACKS), read exactly as the STACKS they hold; a bad one is corrupt at its offset" {
	Z="$TPROF_ROOT/tests/integration/zblocks.py"
	export PYTHONPATH="$TPROF_ROOT/tests/integration"
	traced "$B/progs/many_stacks" 4000 14 >/dev/null
	# (a last table of a few stacks, which compression would not shrink, goes out plain: how many
	# stacks the writer's last pass finds depends on timing)
	read -r nz zbytes np0 _ < <($PY "$Z" count t.trace STACKS)
	[ "$nz" -ge 1 ]
	$PY "$Z" plain t.trace p.trace
	read -r nz2 _ np pbytes < <($PY "$Z" count p.trace STACKS)
	echo "ZSTACKS: $nz blocks, $zbytes bytes, and $np0 plain; as STACKS: $np blocks, $pbytes bytes"
	[ "$nz2" -eq 0 ] && [ "$np" -eq $((nz + np0)) ]
	[ "$zbytes" -lt $((pbytes / 4)) ]
	# every command says the same of both (but the file name)
	for c in report "report --json" leaks "leaks --json" peak "allocs --json" "summary --json" dump \
		"export --folded /dev/stdout"; do
		# shellcheck disable=SC2086 # c is words
		"$B/tprof" $c t.trace >a.out
		# shellcheck disable=SC2086
		"$B/tprof" $c p.trace | sed 's/p\.trace/t.trace/g' >b.out
		cmp a.out b.out
	done
	# i >> 1 takes 2000 values for i in 0..3999: 2000 paths, distinct stacks 14 calls and more deep
	[ "$("$B/tprof" dump t.trace | grep -c ' malloc ')" -eq 4000 ]
	[ "$("$B/tprof" dump t.trace | awk '/ malloc / {print $NF}' | sort -u | wc -l)" -eq 2000 ]
	# a frame that does not decompress, a length claimed past the ratio, the block in version 7
	bad_zblocks STACKS leaks
	$PY "$Z" version t.trace v7.trace 7
	run "$B/tprof" report v7.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"corrupt: block type 16 does not exist in format version 7"* ]]
	# compression off: plain STACKS, the same stacks
	rm -f t.trace
	TPROF_COMPRESS=0 traced "$B/progs/many_stacks" 4000 14 >/dev/null
	read -r nz _ < <($PY "$Z" count t.trace STACKS)
	[ "$nz" -eq 0 ]
	[ "$("$B/tprof" dump t.trace | awk '/ malloc / {print $NF}' | sort -u | wc -l)" -eq 2000 ]
}

@test "stack commands: usage errors exit 1, invalid traces exit 2 with a message" {
	echo "not a trace" >bad.trace
	for cmd in leaks peak allocs; do
		run "$B/tprof" $cmd bad.trace
		[ "$status" -eq 2 ]
		[[ "$output" == *"bad.trace"* ]]
		run "$B/tprof" $cmd --bogus bad.trace
		[ "$status" -eq 1 ]
		run "$B/tprof" $cmd
		[ "$status" -eq 1 ]
	done
	run "$B/tprof" export bad.trace --folded out.folded
	[ "$status" -eq 2 ]
	run "$B/tprof" export bad.trace
	[ "$status" -eq 1 ]
	traced "$B/progs/stacks_peak"
	head -c $(($(stat -c %s t.trace) - 5)) t.trace >cut.trace # inside the last block
	for cmd in leaks peak allocs; do
		# read up to the cut, said once on stderr
		"$B/tprof" $cmd cut.trace >out.txt 2>err.txt
		[ "$(wc -l <err.txt)" -eq 1 ]
		grep -q '^tprof: warning: cut.trace: trace cut at byte [0-9]* after [0-9]* complete blocks: the rest is lost' err.txt
	done
}

# every capture of the check program compared with a full libunwind unwind: the walk of
# preload/unwind.c must give the same frames (signal frames and stack realignment included), and
# never stop short of them
check_walk() {
	local prog=$1 out
	"$prog" 400 "$B/progs/libstacks_plugin.so" >bare.out
	TPROF_VERIFY_STACKS=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$prog" 400 \
		"$B/progs/libstacks_plugin.so" >traced.out 2>traced.err
	settled t.trace
	cmp bare.out traced.out
	out=$(grep '^tprof: stack check:' traced.err)
	echo "$out"
	[[ $out =~ ^tprof:\ stack\ check:\ ([0-9]+)\ captures\ compared\ with\ libunwind,\ ([0-9]+)\ differed,\ ([0-9]+)\ cut\ short ]]
	local n=${BASH_REMATCH[1]} bad=${BASH_REMATCH[2]} cut=${BASH_REMATCH[3]}
	[ "$bad" = 0 ]
	[ "$n" -ge 20000 ]
	[ "$cut" = 0 ]
	"$B/tprof" report t.trace >/dev/null
}

@test "stack walk: randomized recursion (frame pointers or not, alloca, realigned stacks, code without unwind information, signals, longjmp, exceptions, threads, dlclose) matches libunwind" {
	check_walk "$B/progs/unwind_check"
	check_walk "$B/progs/unwind_check_O0"
}

@test "stack walk: a fork child that returns from a handler into an interrupted capture walks right" {
	# the rule computation of a new return address works in the thread's walk cache; a handler
	# that forks there and has the child allocate walks in it too, and the capture it interrupted
	# then read the other walk's rule (a wrong stack, kept for the child's life) before it gave up
	command -v gdb >/dev/null || skip "gdb is not installed"
	printf '%s\n' 'set startup-with-shell off' 'set breakpoint pending on' 'set follow-fork-mode parent' \
		'handle SIGUSR1 nostop noprint pass' "set environment LD_PRELOAD=$B/libtprof.so" \
		"set environment TPROF_OUTPUT=$WORK/f.%p.trace" 'set environment TPROF_VERIFY_STACKS=1' \
		'break frame_state if armed == 1' run 'set var armed = 0' finish delete 'signal SIGUSR1' >cmds
	run timeout 120 gdb -q -batch -x cmds "$B/progs/stacks_forkwalk"
	echo "$output"
	[[ "$output" == *"parent done"* ]]
	[[ "$output" == *"child done"* ]]
	[ "$(echo "$output" | grep -c 'captures compared with libunwind, 0 differed')" = 2 ]
	[ "$(echo "$output" | grep -c 'differed')" = 2 ]
}

@test "export --folded: a module named with a line break and a ';' stays one frame of one line" {
	n=$(printf 'lib\nx;y.so')
	cp "$B/progs/libstacks_plugin.so" "./$n"
	strip --strip-all "./$n" # its frames are then module+offset
	traced "$B/progs/stacks_dlopen" "$PWD/$n" keep
	"$B/tprof" export t.trace --folded f.txt --metric leaked
	cat -A f.txt
	grep -q '^_start;.*;lib?x:y\.so+0x[0-9a-f]* [0-9]*$' f.txt
	! grep -qv ' [0-9]*$' f.txt # every line ends in its count
}

@test "a module's path that names a FIFO or a device by the time of reading is looked at, never opened" {
	cp "$B/progs/heap_known" ./prog
	traced ./prog >/dev/null
	rm prog
	mkfifo prog
	# a writer waits for a reader of the FIFO: opening it for reading, even O_NONBLOCK, lets it on
	sh -c 'exec 7>prog && : >opened' &
	w=$!
	run "$B/tprof" peak t.trace
	echo "$output"
	[ "$status" -eq 0 ]
	sleep 0.3
	[ ! -e opened ]
	timeout 5 cat prog >/dev/null # let the writer go
	wait "$w" || true
	[[ "$output" == *"prog+0x"* ]] # its frames by module and offset
}

@test "stack walk: six call paths to one site in turn, more than the walks kept: each allocation under its own path's stack" {
	traced "$B/progs/memo_sites" 30000 >expected
	"$B/tprof" allocs --json t.trace >a.json
	$PY - expected a.json <<'PY'
import json, sys
want = {}
for line in open(sys.argv[1]):
    _, k, calls, frames = line.split()
    want[frames] = (int(calls), 100 + int(k))
d = json.load(open(sys.argv[2]))
got = {}
for r in d["by_allocations"]:
    fns = [f["function"] or "?" for f in r["stack"]]
    if fns[0] != "site":
        continue
    key = ",".join(fns[:fns.index("main") + 1])
    assert key not in got, ("two records for", key)
    got[key] = (r["allocations"], r["bytes"])
for key, (calls, size) in want.items():
    assert got.get(key) == (calls, calls * size), (key, got.get(key), calls, calls * size)
assert len(got) == len(want), got
PY
}
