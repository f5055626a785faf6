#!/usr/bin/env bats
# The reader against files that are not good traces: every one gets a clear message naming the file
# (and the byte offset where it applies) and exit status 2; a trace cut at a block boundary (what a
# killed process leaves) reads as incomplete, and one cut inside its last block reads up to that
# block and says where it was cut. Never a crash.

load helpers

RSS_BLOCKS="$TPROF_ROOT/tests/integration/rss_blocks.py"

setup_file() {
	export FIXTURE=$(mktemp -d)
	TPROF_QUIET=1 TPROF_OUTPUT="$FIXTURE/good.trace" LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	settled "$FIXTURE/good.trace"
}

teardown_file() {
	rm -rf "$FIXTURE"
}

@test "random bytes: not a trace" {
	head -c 4096 /dev/urandom >rand.trace
	run "$B/tprof" report rand.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"rand.trace"*"not a tprof trace"* ]]
}

@test "empty file" {
	: >empty.trace
	run "$B/tprof" report empty.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"empty.trace"*"empty"* ]]
}

@test "missing file and directory" {
	run "$B/tprof" report nope.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"nope.trace"* ]]
	run "$B/tprof" report /tmp
	[ "$status" -eq 2 ]
}

@test "newer version is refused with a clear message" {
	cp "$FIXTURE/good.trace" v.trace
	newer=$(($(format_version) + 1))
	printf "\\x$(printf %02x $newer)\\x00" | dd of=v.trace bs=1 seek=8 conv=notrunc 2>/dev/null
	run "$B/tprof" report v.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"version $newer is newer"* ]]
}

@test "a flipped byte anywhere is caught by the block checksum" {
	# in the first block's type and length, and inside the payloads of the first, a middle and the
	# last block
	offs=$($PY -c '
import sys; sys.path.insert(0, sys.argv[2]); from rss_blocks import blocks
b = list(blocks(open(sys.argv[1], "rb").read()))
pick = [b[0], b[len(b) // 2], b[-1]]
print(16, 17, " ".join(str(o + 9 + len(p) // 2) for o, t, p in pick if len(p)))' "$FIXTURE/good.trace" "$TPROF_ROOT/tests/integration")
	for off in $offs; do
		cp "$FIXTURE/good.trace" c.trace
		$PY -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^0x55]))' c.trace "$off"
		run "$B/tprof" report c.trace
		echo "$off: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"c.trace: byte "* ]]
	done
}

@test "a block length flipped past the end of the file and past what a recorder writes is corrupt, not a cut" {
	# the third byte of a middle block's length set: 16 MB, under the 16 MiB limit but over the
	# 1 MiB a recorder's blocks fit in; read as a cut, the blocks after it would be dropped unsaid
	off=$($PY -c '
import sys; sys.path.insert(0, sys.argv[2]); from rss_blocks import blocks
b = list(blocks(open(sys.argv[1], "rb").read()))
print(b[len(b) // 2][0] + 3)' "$FIXTURE/good.trace" "$TPROF_ROOT/tests/integration")
	cp "$FIXTURE/good.trace" c.trace
	$PY -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); f.write(bytes([0xff]))' c.trace "$off"
	run "$B/tprof" report c.trace
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"c.trace: byte $((off - 3)): corrupt: block length "*" runs past the end of the file and is longer than any block a recorder writes (1048567)"* ]]
}

@test "every bit of a middle and of the last block's length flipped: corrupt, never read as a cut" {
	# a length made longer runs past the end of the file, where a cut would end too; but a complete
	# block (that one, or the last) ends exactly there, which no cut leaves
	offs=$($PY -c '
import sys; sys.path.insert(0, sys.argv[2]); from rss_blocks import blocks
b = list(blocks(open(sys.argv[1], "rb").read()))
print(b[len(b) // 2][0], b[-1][0])' "$FIXTURE/good.trace" "$TPROF_ROOT/tests/integration")
	past=0
	for blk in $offs; do
		for k in 1 2 3 4; do
			for bit in 0 1 2 3 4 5 6 7; do
				cp "$FIXTURE/good.trace" c.trace
				$PY -c 'import sys; f=open(sys.argv[1],"r+b"); o=int(sys.argv[2]); f.seek(o); b=f.read(1); f.seek(o); f.write(bytes([b[0]^(1<<int(sys.argv[3]))]))' c.trace $((blk + k)) "$bit"
				run "$B/tprof" report c.trace
				[ "$status" -eq 2 ] || { echo "block $blk byte $k bit $bit: $output"; false; }
				[[ "$output" == *"c.trace: byte $blk: corrupt: "* ]] || { echo "block $blk byte $k bit $bit: $output"; false; }
				[[ "$output" != *"cut at byte"* ]]
				[[ "$output" != *"runs past the end of the file, but a complete block ends there"* ]] || past=$((past + 1))
			done
		done
	done
	echo "flips past the end of the file: $past"
	[ "$past" -ge 16 ] # each block's high bits, at least
}

@test "a length past the end, then a megabyte of block headers whose lengths reach exactly the end: read as a cut in moments" {
	# each such header would be checksummed over the rest of the file: 6.7 s of CRC once
	$PY - "$FIXTURE/good.trace" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, blocks = 16, []
while off < len(d):
    blocks.append(off)
    off += 9 + struct.unpack_from("<I", d, off + 1)[0]
out = bytearray(d[:blocks[2]]) + bytes([4]) + struct.pack("<I", 1000000) + bytes(4)
body = bytearray(1000000 - 16)
size = len(out) + len(body)
for i in range(0, len(body) - 9, 5):
    body[i] = 4
    struct.pack_into("<I", body, i + 1, size - (len(out) + i) - 9)
open("hostile.trace", "wb").write(out + body)
PY
	s=$EPOCHREALTIME
	run "$B/tprof" report hostile.trace
	e=$EPOCHREALTIME
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"trace cut at byte"* ]]
	[ $(( (10#${e//[!0-9]/} - 10#${s//[!0-9]/}) / 1000 )) -lt 2000 ]
}

@test "cut at every block boundary: incomplete, read up to there; inside a block: read up to that block, the cut said" {
	$PY - "$FIXTURE/good.trace" >bounds.txt <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off = 16
while off < len(d):
    print(off)
    off += 9 + struct.unpack_from("<I", d, off + 1)[0]
PY
	n=0
	while read -r b; do
		n=$((n + 1))
		head -c "$b" "$FIXTURE/good.trace" >cut.trace
		run "$B/tprof" report --json cut.trace
		if [ "$b" -le 16 ]; then
			[ "$status" -eq 2 ]
		else
			[ "$status" -eq 0 ]
			echo "$output" >cut.json
			[ "$(jget cut.json complete)" = false ]
			[ "$(jget cut.json cut_at_byte)" = None ]
		fi
		# 5 bytes into the block at b (its header cut), and 10 (its payload cut, if it has one)
		for into in 5 10; do
			head -c "$((b + into))" "$FIXTURE/good.trace" >mid.trace
			run "$B/tprof" report mid.trace
			echo "$b+$into: $output"
			if [ "$b" -le 16 ]; then
				# no complete INFO block: still an error, at the cut
				[ "$status" -eq 2 ]
				[[ "$output" == *"mid.trace: byte $b: truncated: no complete INFO block"* ]]
				continue
			fi
			if [ "$(stat -c %s mid.trace)" -lt "$((b + into))" ]; then
				continue # the file ends before: nothing cut at b
			fi
			next=$(awk -v b="$b" '$1 > b { print $1; exit }' bounds.txt)
			if [ -n "$next" ] && [ "$((b + into))" -ge "$next" ]; then
				continue # the block at b is whole: the cut is in a later one
			fi
			[ "$status" -eq 0 ]
			[[ "$output" == *"trace cut at byte $b after $((n - 1)) complete blocks: the rest is lost ("*" events before it;"* ]]
			"$B/tprof" report --json mid.trace >mid.json
			[ "$(jget mid.json cut_at_byte)" = "$b" ]
			[ "$(jget mid.json complete)" = false ]
			[ "$(jget mid.json end)" = none ]
			# the events counted before the cut are the ones read, as report counts them (a
			# realloc is two)
			events=$("$B/tprof" dump mid.trace 2>/dev/null | grep -c '^[0-9]' || true)
			[[ "$output" == *"($events events before it;"* ]]
			[ "$(jget mid.json events)" = "$events" ]
		done
	done <bounds.txt
	[ "$n" -ge 4 ]
}

@test "a cut trace: report says where in every format, every other command warns once on stderr" {
	size=$(stat -c %s "$FIXTURE/good.trace")
	at=$($PY - "$FIXTURE/good.trace" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, last = 16, 16
while off < len(d):
    last = off
    off += 9 + struct.unpack_from("<I", d, off + 1)[0]
print(last)
PY
)
	head -c "$((size - 1))" "$FIXTURE/good.trace" >cut.trace
	run "$B/tprof" report --csv cut.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *",$at,"*$'\r' ]] # cut_at_byte, before the leak columns
	for cmd in "leaks" "peak" "allocs" "dump" "export --folded out.folded"; do
		"$B/tprof" $cmd cut.trace >out.txt 2>err.txt
		cat err.txt
		[ "$(wc -l <err.txt)" -eq 1 ]
		grep -q "^tprof: warning: cut.trace: trace cut at byte $at after [0-9]* complete blocks: the rest is lost" err.txt
	done
	# report prints the cut, and nothing on stderr
	"$B/tprof" report cut.trace >out.txt 2>err.txt
	[ ! -s err.txt ]
	grep -q "^  incomplete     trace cut at byte $at after" out.txt
}

@test "fuzz: 300 random mutations never crash the reader" {
	$PY - "$FIXTURE/good.trace" "$B/tprof" <<'PY'
import random, subprocess, sys
good = open(sys.argv[1], "rb").read()
rnd = random.Random(1)
for i in range(300):
    d = bytearray(good)
    kind = i % 3
    if kind == 0:
        for _ in range(rnd.randint(1, 8)):
            d[rnd.randrange(len(d))] = rnd.randrange(256)
    elif kind == 1:
        d = d[: rnd.randrange(len(d))]
    else:
        p = rnd.randrange(16, len(d))
        d[p:p] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 16)))
    open("m.trace", "wb").write(d)
    r = subprocess.run([sys.argv[2], "report", "--json", "m.trace"], capture_output=True)
    if r.returncode not in (0, 2):
        print("mutation", i, "exit", r.returncode, r.stderr)
        sys.exit(1)
PY
}

@test "a malformed RSS block is rejected with its offset, even with a good checksum" {
	$PY "$RSS_BLOCKS" cases "$FIXTURE/good.trace" >cases.txt
	[ "$(wc -l <cases.txt)" -eq 6 ]
	while read -r f off msg; do
		run "$B/tprof" report "$f"
		echo "$f: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"$f: byte $off: corrupt: $msg"* ]]
	done <cases.txt
}

@test "RSS samples cut in two blocks read as the same series" {
	$PY "$RSS_BLOCKS" split "$FIXTURE/good.trace" split.trace
	[ "$(stat -c %s split.trace)" -gt "$(stat -c %s "$FIXTURE/good.trace")" ]
	"$B/tprof" dump "$FIXTURE/good.trace" | grep '^# rss ' >a.txt
	"$B/tprof" dump split.trace | grep '^# rss ' >b.txt
	[ "$(wc -l <a.txt)" -ge 2 ]
	cmp a.txt b.txt
}

@test "format versions: 1 is refused as older, 2 reads unless it holds RSS blocks, 4 unless LEAKS" {
	cp "$FIXTURE/good.trace" v1.trace
	printf '\x01\x00' | dd of=v1.trace bs=1 seek=8 conv=notrunc 2>/dev/null
	run "$B/tprof" report v1.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"v1.trace: byte 8: trace format version 1 is older than this tprof reads (2 to $(format_version))"* ]]
	# (uncompressed: a ZSTACKS block, which version 2 cannot hold, would come first)
	TPROF_COMPRESS=0 TPROF_LEAKSCAN=0 TPROF_RSS_INTERVAL_MS=0 TPROF_OUTPUT=plain.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	settled plain.trace
	printf '\x02\x00' | dd of=plain.trace bs=1 seek=8 conv=notrunc 2>/dev/null
	"$B/tprof" report --json plain.trace >r.json
	"$B/tprof" report --json "$FIXTURE/good.trace" >g.json
	[ "$(jget r.json allocations)" = "$(jget g.json allocations)" ]
	[ "$(jget r.json peak_rss_bytes)" = None ]
	# (without a leak scan: its LEAKS block, which version 2 cannot hold either, would come first)
	TPROF_COMPRESS=0 TPROF_LEAKSCAN=0 TPROF_QUIET=1 TPROF_OUTPUT=v2.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	settled v2.trace
	printf '\x02\x00' | dd of=v2.trace bs=1 seek=8 conv=notrunc 2>/dev/null
	off=$($PY "$RSS_BLOCKS" offset v2.trace)
	run "$B/tprof" report v2.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"v2.trace: byte $off: corrupt: block type 14 does not exist in format version 2"* ]]
	TPROF_COMPRESS=0 TPROF_QUIET=1 TPROF_OUTPUT=v4.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/heap_known" >/dev/null
	settled v4.trace
	printf '\x04\x00' | dd of=v4.trace bs=1 seek=8 conv=notrunc 2>/dev/null
	run "$B/tprof" report v4.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"corrupt: block type 15 does not exist in format version 4"* ]]
}

@test "a FIFO never hangs the reader: given as the trace, or named in one as the program" {
	mkfifo fifo
	run timeout 10 "$B/tprof" report fifo
	[ "$status" -eq 2 ]
	[[ "$output" == *"fifo: not a regular file"* ]]
	# the program's path, recorded in the trace, is a FIFO by the time the trace is read
	cp "$B/progs/heap_known" ./prog
	TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" ./prog >/dev/null
	settled t.trace
	rm prog
	mkfifo prog
	for c in report leaks peak allocs; do
		run timeout 20 "$B/tprof" "$c" t.trace
		echo "# $c: $status"
		[ "$status" -eq 0 ]
	done
	run timeout 20 "$B/tprof" export t.trace --folded out.folded
	[ "$status" -eq 0 ]
	run timeout 20 "$B/tprof" diff t.trace t.trace
	[ "$status" -eq 0 ]
	# a FIFO nobody has open named as a suppression file (read as empty) or as export's output
	# (refused): where open would wait for the other end for good
	run timeout 20 "$B/tprof" leaks --suppressions fifo t.trace
	[ "$status" -eq 0 ]
	run timeout 20 "$B/tprof" export t.trace --folded fifo
	[ "$status" -eq 2 ]
	[[ "$output" == *"fifo: a FIFO no process reads"* ]]
}

@test "a trace cut short while it is read: a message and exit status 2, never SIGBUS" {
	TPROF_OUTPUT=big.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/storm" 1 1000000 >/dev/null
	settled big.trace
	# dump blocks on the full pipe after its first lines; the file is cut meanwhile
	set +e
	TPROF_DECODE_THREAD=0 "$B/tprof" dump big.trace 2>err | { sleep 0.5; truncate -s 4096 big.trace; cat >/dev/null; }
	rc=${PIPESTATUS[0]}
	set -e
	cat err
	[ "$rc" -eq 2 ]
	grep -q 'cut short while it was read' err
}

@test "50000 threads of one block each: read in linear time and memory (once: minutes and gigabytes)" {
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" many.trace --threads 50000
	limit=""
	ldd "$B/tprof" | grep -q libasan || limit="prlimit --as=1073741824" # 1 GiB of address space
	# shellcheck disable=SC2086 # limit is words
	run timeout 120 $limit "$B/tprof" report --json many.trace
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" >r.json
	[ "$(jget r.json threads)" = 50001 ]
	[ "$(jget r.json allocations)" = 50003 ]
	[ "$(jget r.json leaked_blocks)" = 0 ]
	[ "$(jget r.json complete)" = true ]
}

@test "a stack defined under the largest id: tables sized by what the file holds (once: 400 MB to 1.4 GB)" {
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" sid.trace --stack-id 16777215 >/dev/null
	limit=""
	ldd "$B/tprof" | grep -q libasan || limit="prlimit --as=268435456" # 256 MiB of address space
	for c in report leaks peak allocs "diff sid.trace"; do
		# shellcheck disable=SC2086 # limit and c are words
		run timeout 60 $limit "$B/tprof" $c sid.trace
		echo "# $c: $status"
		[ "$status" -eq 0 ]
	done
	run "$B/tprof" dump sid.trace
	[[ "$output" == *"# stack 1: 0x401000 0x401010"* ]] # the reader's ids count the stacks defined
}

@test "a million kernel calls: the heap commands check them but keep none (once: 190 MiB to read a 21 MB trace)" {
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" k.trace --kcalls 1000000 >/dev/null
	limit=""
	ldd "$B/tprof" | grep -q libasan || limit="prlimit --as=100663296" # 96 MiB of address space
	for c in report summary leaks allocs; do
		# shellcheck disable=SC2086 # limit and c are words
		run timeout 60 $limit "$B/tprof" $c k.trace
		echo "# $c: $status $output" | head -3
		[ "$status" -eq 0 ]
	done
	run "$B/tprof" report --json k.trace
	printf '%s\n' "$output" >r.json
	[ "$(jget r.json allocations)" = 3 ]
	[ "$(jget r.json complete)" = true ]
	# the commands that use the calls still have them all
	run "$B/tprof" ops --json k.trace
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" >o.json
	[ "$(jget o.json calls)" = 1000000 ]
	# and a bad record among them is still found by every command
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" kb.trace --kcalls 1000 --kcall-bad-op >/dev/null
	for c in report summary leaks allocs ops; do
		run "$B/tprof" $c kb.trace
		echo "# $c: $status $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"corrupt: kernel call record 2998 names op 2, which no NAMES block defined before it"* ]]
	done
}

@test "a compressed EVENTS block that claims more than 1 MiB once decompressed is corrupt" {
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" z.trace --zraw 2097152 >/dev/null
	run "$B/tprof" report z.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"z.trace: byte "*"corrupt: malformed block of type 11"* ]]
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" z.trace --zraw 1000 >/dev/null
	run "$B/tprof" report z.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"does not decompress to its 1000 bytes"* ]]
}

@test "clocks: a pair that goes back in time, or a TSC rate no clock has, is corrupt at its offset" {
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" c.trace --last-clock 2000,500 >/dev/null
	run "$B/tprof" report c.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"c.trace: byte "*": corrupt: a clock pair goes back in time (500 ns after 1000 ns)"* ]]
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" c.trace --tsc --last-clock 2000,500000000000 >/dev/null
	run "$B/tprof" report c.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"corrupt: impossible clock calibration (5e+08 ns per tick)"* ]]
	# a plausible TSC: 1.5 ticks per ns
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" c.trace --tsc --last-clock 3000000,2000000 >/dev/null
	run "$B/tprof" report --json c.trace
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" >r.json
	[ "$(jget r.json duration_ns)" = 1999000 ]
}

@test "two threads with the same sequence number: corrupt at the block of the second" {
	# the reader's merge finds it, after both blocks were read: it named no offset
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" d.trace --events 6 --threads 1 --dup-seq >blocks.txt
	off=$(awk '$2 == 4 { o = $1 } END { print o + 9 }' blocks.txt) # the last EVENTS block's payload
	run "$B/tprof" report d.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"d.trace: byte $off: corrupt: event sequence number 1 of thread 100001 repeats or goes back"* ]]
}

@test "byte totals past 2^64 are corrupt input, never wrapped numbers" {
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" huge.trace --huge --events 4 >/dev/null
	run "$B/tprof" report --json huge.trace # 2^64 exactly: not yet
	[ "$status" -eq 2 ]
	[[ "$output" == *"pass 2^64 at event 4"* ]]
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" huge3.trace --huge --events 3 >/dev/null
	"$B/tprof" report --json huge3.trace >r.json
	[ "$(jget r.json bytes_allocated)" = 13835058055282163712 ]
	for cmd in report leaks peak allocs summary ops "export --chrome x.json" "export --folded f.txt" "plot -o pics"; do
		run "$B/tprof" $cmd huge.trace
		echo "$cmd: $status $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"pass 2^64 at event 4"* ]]
	done
}

@test "inputs made to blow up a reader, under 10 MB each: every command ends in 2 s and 64 MiB" {
	ldd "$B/tprof" | grep -q libasan && skip "ASan's own memory and time"
	py="$TPROF_ROOT/tests/integration/mktrace.py"
	$PY "$py" threads.trace --threads 20000 >/dev/null  # once: 14 s and 735 MB at 20,000 threads
	$PY "$py" sid.trace --stack-id 16777215 >/dev/null  # once: 400 MB to 1.4 GB
	$PY "$py" z.trace --zraw 1048576 >/dev/null         # claims 1 MiB decompressed
	$PY "$py" huge.trace --huge --events 9 >/dev/null   # byte totals past 2^64
	for f in threads sid z huge; do
		[ "$(stat -c %s $f.trace)" -lt 10000000 ]
		for c in report leaks peak allocs summary ops dump "export --folded f.txt" "export --chrome c.json" \
			"diff $f.trace"; do
			# shellcheck disable=SC2086 # c is words
			TPROF_PEAK_GFLOPS=100 /usr/bin/time -o t.txt -f "%e %M" "$B/tprof" $c $f.trace >/dev/null 2>&1 || true
			read -r secs kib < <(tail -1 t.txt) # after "Command exited with non-zero status"
			echo "# $f: $c: $secs s, $kib KiB"
			$PY -c 'import sys; sys.exit(not (float(sys.argv[1]) <= 2 and int(sys.argv[2]) <= 65536))' "$secs" "$kib"
		done
	done
}

@test "a thread id the kernel gave again to a new thread (after the first's THREAD_END) counts as another thread" {
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" reuse.trace --events 4 --threads 3 --reuse-tid >/dev/null
	"$B/tprof" report --json reuse.trace >r.json
	[ "$(jget r.json threads)" = 4 ] # 4242 and three threads of id 100001
	run "$B/tprof" report reuse.trace
	[[ "$output" == *", 4 threads,"* ]]
	$PY "$TPROF_ROOT/tests/integration/mktrace.py" distinct.trace --events 4 --threads 3 >/dev/null
	"$B/tprof" report --json distinct.trace >d.json
	[ "$(jget d.json threads)" = 4 ]
}
