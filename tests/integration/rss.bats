#!/usr/bin/env bats
# The resident set size samples: a program whose memory rises by 64 MiB and falls back at known
# moments shows it in its samples, at the sampling interval, with a sample at start and at the end;
# TPROF_RSS_INTERVAL_MS sets the interval or turns sampling off; a fork child has samples of its own;
# every way out of a process ends with a sample, and SIGKILL loses little. Bounds on times are loose:
# the machine is shared.

load helpers

# rss_check DUMP [INTERVAL_MS]: checks the samples of a rss_wave trace (64 MiB up, held, down).
rss_check() {
	$PY - "$1" "${2:-10}" <<'PY'
import statistics, sys
MiB = 1 << 20
interval = int(sys.argv[2]) * 1_000_000
s, ev = [], []
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("# rss "):
        s.append((int(f[2]), int(f[3])))
    elif not line.startswith("#"):
        ev.append(f)
big = [e for e in ev if e[3] == "malloc" and e[4] == str(64 * MiB)]
assert len(big) == 1, big
t_malloc, ptr = int(big[0][1]), big[0][5]
t_free = [int(e[1]) for e in ev if e[3] == "free" and e[5] == ptr][0]
last_event = max(int(e[1]) for e in ev)
times = [t for t, _ in s]
gaps = [b - a for a, b in zip(times, times[1:])]
base, peak = s[0][1], max(b for _, b in s)
t_peak = [t for t, b in s if b == peak][0]
print("samples", len(s), "base", base, "peak", peak, "at", t_peak, "last", s[-1],
      "malloc at", t_malloc, "free at", t_free, "gaps", gaps)
assert times == sorted(times)
assert times[0] <= t_malloc  # the sample at start, before main
assert peak >= base + 64 * MiB
assert t_malloc <= t_peak <= t_free + 2_000_000  # while the block was held
assert s[-1][1] <= base + 16 * MiB  # the last sample, after the munmap
# samples are taken while the process lives: the last one within an interval (and some slack for
# a busy machine) of its last event, and well after the free
assert times[-1] >= last_event - interval - 20_000_000 and times[-1] >= t_free + 50_000_000
# about one sample per interval between the first and the last (the final one comes when it comes)
med = statistics.median(gaps[:-1])
assert 0.7 * interval <= med <= 1.6 * interval, med
assert len(s) >= (times[-1] - times[0]) / interval / 2
assert all(b > 0 for _, b in s)
PY
}

@test "a 64 MiB block held then unmapped: the samples rise, peak while it is held, fall back" {
	traced "$B/progs/rss_wave"
	"$B/tprof" dump t.trace >d.txt
	rss_check d.txt 10
	"$B/tprof" report --json t.trace >r.json
	peak=$(awk '$1 == "#" && $2 == "rss" {print $4}' d.txt | sort -n | tail -1)
	[ "$(jget r.json peak_rss_bytes)" = "$peak" ]
	[ "$(jget r.json rss_samples)" = "$(grep -c '^# rss ' d.txt)" ]
	[ "$(jget r.json peak_rss_bytes)" -ge $((64 << 20)) ]
	run "$B/tprof" report t.trace
	[[ "$output" == *"peak RSS       $($PY -c "print(f'{$peak:,}')") bytes ("*" MiB), at "*" ms, of "*" samples"* ]]
}

@test "tprof's own shared memory is left out of the samples: 8 threads' rings do not add 16 MiB to the peak" {
	# each thread that goes round its ring (64 Ki entries of 32 bytes) makes 2 MiB of the memory
	# file resident in the process; the samples count the program's memory, not tprof's
	bare=$(/usr/bin/time -f %M "$B/bench/storm_nofp" 8 50000 2>&1 >/dev/null | tail -1)
	traced "$B/bench/storm_nofp" 8 50000
	"$B/tprof" report --json t.trace >r.json
	peak=$(jget r.json peak_rss_bytes)
	echo "bare $bare KiB, traced peak $((peak >> 10)) KiB"
	[ "$peak" -le $(((bare + 4096) << 10)) ] # tprof's private memory, a few hundred KiB per thread at most
	[ "$(jget r.json peak_rss_includes_tprof)" = false ]
	run "$B/tprof" report t.trace
	[[ "$output" != *"tprof's shared memory included"* ]]
}

@test "TPROF_RSS_INTERVAL_MS sets the interval" {
	TPROF_RSS_INTERVAL_MS=40 traced "$B/progs/rss_wave" 64 250 250
	"$B/tprof" dump t.trace >d.txt
	rss_check d.txt 40
}

@test "a process idle for a second is sampled less often, down to once a second, then at the interval again" {
	# rss_wave 16 20 3000: 16 MiB held 20 ms, freed, then 3 s without a heap call or a change of its
	# resident size: its first second of quiet is sampled every 10 ms, the rest every quarter of the
	# time it has been idle (at most a second apart); the sample at exit ends the curve
	traced "$B/progs/rss_wave" 16 20 3000
	"$B/tprof" dump t.trace >d.txt
	$PY - d.txt <<'PY'
import sys
s = [int(l.split()[2]) for l in open(sys.argv[1]) if l.startswith("# rss ")]
ev = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
quiet = [int(e[1]) for e in ev if e[3] == "free" and e[5] != "0x0"][0]  # the block's (then exit's)
first = [t for t in s if quiet < t <= quiet + 900_000_000]
later = [t for t in s if t > quiet + 1_300_000_000]
gaps = [b - a for a, b in zip(later, later[1:])]
print("samples", len(s), "first second", len(first), "after 1.3 s", len(later), "gaps", gaps)
assert len(first) >= 45, len(first)  # every 10 ms (some slack for a busy machine)
assert 2 <= len(later) <= 15, len(later)  # 170 at the interval
assert all(g <= 1_100_000_000 for g in gaps[:-1]), gaps  # at most a second apart (the exit's aside)
PY
}

@test "TPROF_RSS_INTERVAL_MS=0: no samples, no RSS block, report says null" {
	TPROF_RSS_INTERVAL_MS=0 traced "$B/progs/rss_wave" 16 20 20
	"$B/tprof" dump t.trace >d.txt
	! grep -q '^# rss ' d.txt
	$PY - t.trace <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, types = 16, set()
while off < len(d):
    types.add(d[off])
    off += 9 + struct.unpack_from("<I", d, off + 1)[0]
assert 14 not in types and 1 in types and 7 in types, types
PY
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json peak_rss_bytes)" = None ]
	[ "$(jget r.json rss_samples)" = 0 ]
	run "$B/tprof" report t.trace
	[ "$status" -eq 0 ]
	[[ "$output" != *"RSS"* ]]
}

@test "fork: a child's trace has its own samples, none of the parent's" {
	TPROF_OUTPUT=f.%p.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/rss_wave" fork >pids.txt
	[ "$(wc -l <pids.txt)" -eq 3 ]
	parent=$(ls f.*.trace | sed 's/f\.\(.*\)\.trace/\1/' | grep -vxF -f pids.txt)
	"$B/tprof" dump "f.$parent.trace" >p.txt
	rss_check p.txt 10
	# the parent held 64 MiB when it forked (its samples of it staged at some fork at least); the
	# children never had it (MADV_DONTFORK)
	while read -r child; do
		"$B/tprof" report --json "f.$child.trace" >c.json
		[ "$(jget c.json ppid)" = "$parent" ]
		"$B/tprof" dump "f.$child.trace" >c.txt
		$PY - p.txt c.txt <<'PY'
import sys
def rss(p):
    return [(int(l.split()[2]), int(l.split()[3])) for l in open(p) if l.startswith("# rss ")]
p, c = rss(sys.argv[1]), rss(sys.argv[2])
print("parent", len(p), "child", c)
assert len(c) >= 3, c
assert max(b for _, b in c) < max(b for _, b in p) - 48 * (1 << 20)
assert c[-1][0] >= 50_000_000  # the child slept 60 ms before its final sample
PY
	done <pids.txt
}

@test "every way out of a process: samples up to its last interval, SIGKILL too" {
	for mode in exit _exit abort segv; do
		rm -f t.trace
		run traced "$B/progs/lifecycle" "$mode"
		"$B/tprof" dump t.trace >d.txt
		$PY - d.txt "$mode" <<'PY'
import sys
s = [int(l.split()[2]) for l in open(sys.argv[1]) if l.startswith("# rss ")]
ev = [int(l.split()[1]) for l in open(sys.argv[1]) if not l.startswith("#")]
print(sys.argv[2], s, max(ev))
# one at start-up; exit and _exit add one on the way out; a fatal signal leaves the periodic ones
assert len(s) >= (2 if sys.argv[2] in ("exit", "_exit") else 1), sys.argv[2]
assert s[-1] >= max(ev) - 30_000_000, sys.argv[2]
PY
	done
	# SIGKILL: the recorder wrote the samples it had taken; the program ran 300 ms
	rm -f t.trace
	run traced "$B/progs/lifecycle" kill
	[ "$status" -eq 137 ]
	"$B/tprof" dump t.trace >d.txt
	last=$(awk '$1 == "#" && $2 == "rss" {t = $3} END {print t + 0}' d.txt)
	echo "kill: last sample at $last ns"
	[ "$last" -ge 150000000 ]
	TPROF_OUTPUT=e.%p.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/lifecycle" exec "$B/progs/heap_known" >/dev/null
	for f in e.*.trace*; do
		"$B/tprof" report --json "$f" >r.json
		[ "$(jget r.json rss_samples)" -ge 2 ]
	done
	[ "$(ls e.*.trace* | wc -l)" -eq 2 ]
}

@test "sampling every millisecond in a program that closes every descriptor" {
	run env TPROF_RSS_INTERVAL_MS=1 TPROF_OUTPUT=t.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/fd_closer" mine.txt
	[ "$status" -eq 0 ]
	[ "$(cat mine.txt)" = mine ]
	printf '%s\n' "${lines[@]}" | grep -qx 5 # the size of its own file, which the recorder never touched
	run "$B/tprof" report --json t.trace
	[ "$status" -eq 0 ]
}
