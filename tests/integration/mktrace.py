"""Writes a small trace by hand, block by block with correct checksums (rss_blocks.py's helpers),
so that the reader tests can hold exactly the fields they test (docs/FORMAT.md): the INFO block of
any version, plain EVENTS blocks of one thread, and an END block with any reason, value and flags.
Prints one line per block, "OFFSET TYPE LENGTH", for tests that cut the file inside one.

Usage: mktrace.py OUT [--version V] [--owner PATH] [--no-owner-field] [--events N] [--per-block K]
                      [--threads T [--dup-seq]] [--stack-id ID] [--zraw N] [--last-clock TICK,MONO]
                      [--tsc] [--end REASON,VALUE[,FLAGS] | --no-end]
                      [--leaks ENTRIES] [--leaks-summary STATUS,ERRNO,BLOCKS,BYTES[,LISTED]] [--leaks-raw HEX]
                      [--kcalls N [--kcall-bad-op]]

The events are N heap calls of thread 4242, K (default 4) per EVENTS block: even ones are
malloc(16 * (i + 1)) at 0x10000 + 0x100 * i, odd ones free the block the call before took, so N
calls make (N + 1) / 2 allocations of which, for N odd, the last is still in use at the end.
--threads T adds T more threads (tids 100001..100000+T), each with a THREAD block and one EVENTS block of a
malloc and its free, after the others' events (--reuse-tid: all of tid 100001, each ended by a
THREAD_END before the next, as when the kernel gives a gone thread's id to a new one); with --dup-seq their sequence numbers start again at 1
(numbers that thread 4242 has too: corrupt), and the blocks are printed as without --threads. --last-clock replaces the last CLOCK pair's tick and CLOCK_MONOTONIC ns; --tsc says the ticks are
the TSC's (clock 1) instead of CLOCK_MONOTONIC ns. --zraw N adds a ZEVENTS block of thread 4242 that claims N bytes once decompressed (its zstd data
is not valid). --stack-id ID defines one stack (two frames) under that id in a STACKS block, which no event uses.
--huge makes every call a malloc of 2^62 bytes that is never freed (byte totals past 2^64 from
the fifth on). --owner is INFO's malloc_owner (version 4; default empty), --no-owner-field leaves that string out
(a version 4 INFO that is then malformed). --end defaults to 1,0 (exit, status 0); FLAGS is written
in version 4 only, and is 0 unless given.
--leaks writes a LEAKS part-0 block (version 5) before END: ENTRIES is ADDR:SIZE:KIND[:HEUR[:INDIRECT]]
items, comma-separated, written in the order given (addresses as deltas, as the format has them);
--leaks-summary writes the summary after it (LISTED defaults to the number of entries; the other
fields are 0); --leaks-raw HEX adds a LEAKS block with that payload after both.
--kcalls N defines op 1 ("kop", one shape value n) and annotation name 1 ("layer") in a NAMES block and
writes N kernel calls of thread 4242, each inside a range push and pop of "layer" (so 2N
annotations), in KERNELS blocks of 10,000 records after the heap events; --kcall-bad-op makes the
last call name op 2, which no NAMES block defines (corrupt)."""
import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rss_blocks import block, svarint, varint  # noqa: E402

INFO, CLOCK, THREAD, EVENTS, THREAD_END, END, STACKS, ZEVENTS, KERNELS, NAMES, LEAKS = 1, 2, 3, 4, 6, 7, 8, 11, 12, 13, 15
TID = 4242


def string(s):
    b = s.encode() if isinstance(s, str) else s
    return varint(len(b)) + b


def info(version, owner, owner_field, clock=2):
    p = varint(TID) + varint(1) + varint(clock)  # pid, ppid, clock: CLOCK_MONOTONIC unless 1 (TSC)
    p += varint(0) + varint(4096) + varint(8) + varint(1700000000000000000) + varint(65536) + varint(0)
    p += string("/usr/bin/handmade") + varint(2) + string("handmade") + string("--x")
    if version >= 4 and owner_field:
        p += string(owner)
    return p


def events_block(calls, seq0):
    """calls: [(seq, kind, size, ptr)] with consecutive seqs after seq0; ticks are 1000 + 10 * seq."""
    streams = [bytearray() for _ in range(6)]
    prev_tick, prev_ptr = 1000 + 10 * seq0, 0
    for seq, kind, size, ptr in calls:
        head = kind | 0x10  # SEQ_NEXT
        if kind != 5:
            head |= 0x20  # SAME_STACK: stack 0, as the block starts
        streams[0].append(head)
        streams[2] += svarint(1000 + 10 * seq - prev_tick)
        prev_tick = 1000 + 10 * seq
        if kind != 5:
            streams[3] += varint(size)
        streams[5] += svarint(ptr - prev_ptr)
        prev_ptr = ptr
    p = varint(TID) + varint(len(calls)) + varint(seq0) + varint(1000 + 10 * seq0)
    for s in streams:
        p += varint(len(s))
    for s in streams:
        p += bytes(s)
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--version", type=int, default=4)
    ap.add_argument("--owner", default="")
    ap.add_argument("--no-owner-field", action="store_true")
    ap.add_argument("--events", type=int, default=6)
    ap.add_argument("--per-block", type=int, default=4)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--reuse-tid", action="store_true")
    ap.add_argument("--dup-seq", action="store_true")
    ap.add_argument("--stack-id", type=int, default=0)
    ap.add_argument("--zraw", type=int, default=0)
    ap.add_argument("--last-clock", default="")
    ap.add_argument("--tsc", action="store_true")
    ap.add_argument("--end", default="1,0")
    ap.add_argument("--no-end", action="store_true")
    ap.add_argument("--leaks", default="")
    ap.add_argument("--leaks-summary", default="")
    ap.add_argument("--leaks-raw", default="")
    ap.add_argument("--huge", action="store_true")
    ap.add_argument("--kcalls", type=int, default=0)
    ap.add_argument("--kcall-bad-op", action="store_true")
    a = ap.parse_args()

    calls = []
    for i in range(a.events):
        seq = i + 1
        if a.huge:  # no real program: every call a malloc of 2^62 bytes, never freed
            calls.append((seq, 1, 2**62, 0x10000 + 0x100 * i))
        elif i % 2 == 0:
            calls.append((seq, 1, 16 * (i + 1), 0x10000 + 0x100 * i))
        else:
            calls.append((seq, 5, 0, 0x10000 + 0x100 * (i - 1)))
    blocks = [(INFO, info(a.version, a.owner, not a.no_owner_field, 1 if a.tsc else 2)),
              (CLOCK, varint(1000) + varint(1000) + varint(1700000000000000000)),
              (THREAD, varint(TID) + string("handmade"))]
    if a.stack_id:
        blocks.append((STACKS, varint(1) + varint(a.stack_id) + varint(0) + varint(2) + varint(0x401000) + svarint(16)))
    for k in range(0, len(calls), a.per_block):
        chunk = calls[k:k + a.per_block]
        blocks.append((EVENTS, events_block(chunk, chunk[0][0] - 1)))
    if a.kcalls:
        blocks.append((NAMES, varint(2) + varint(0) + varint(1) + string("kop") + string("n") +
                       varint(1) + varint(1) + string("layer") + string("")))
        # per call: push (kind 1, seq 1, tick +1, name 1, value 0), the call (op 1, 1 tick after the
        # push, 5 ticks long, 64 FLOPs, 256 bytes, n = 16), pop (kind 2, tick +7 from the call's enter)
        push = bytes([2]) + varint(1) + varint(1) + svarint(1) + varint(1) + svarint(0)
        call = bytes([1]) + varint(1) + svarint(1) + varint(5) + varint(64) + varint(256) + varint(1) + svarint(16)
        pop = bytes([2]) + varint(2) + varint(1) + svarint(7) + varint(0) + svarint(0)
        for k in range(0, a.kcalls, 3333):
            n = min(3333, a.kcalls - k)
            body = (push + call + pop) * n
            if a.kcall_bad_op and k + n == a.kcalls:
                body = body[:-len(call + pop)] + bytes([1]) + varint(2) + call[2:] + pop
            blocks.append((KERNELS, varint(TID) + varint(3 * n) + body))
    if a.zraw:
        blocks.append((ZEVENTS, varint(TID) + varint(a.zraw) + b"\x28\xb5\x2f\xfd" + bytes(16)))
    seq = 0 if a.dup_seq else a.events
    for k in range(100001, 100001 + a.threads):
        tid = 100001 if a.reuse_tid else k  # --reuse-tid: each thread has the id of the one before
        blocks.append((THREAD, varint(tid) + string("t%d" % k)))
        ptr = 0x900000 + 0x40 * (k - 100000)
        ev = events_block([(seq + 1, 1, 32, ptr), (seq + 2, 5, 0, ptr)], seq)
        blocks.append((EVENTS, varint(tid) + ev[len(varint(TID)):]))
        if a.reuse_tid:
            blocks.append((THREAD_END, varint(tid)))
        seq += 2
    last = 1000 + 10 * (seq + 1)
    tick, mono = last, last
    if a.last_clock:
        tick, mono = (int(x, 0) for x in a.last_clock.split(","))
    blocks.append((CLOCK, varint(tick) + varint(mono) + varint(1700000000000000000 + last)))
    blocks.append((THREAD_END, varint(TID)))
    entries = [e.split(":") for e in a.leaks.split(",")] if a.leaks else []
    if entries:
        p, prev = bytes([0]) + varint(len(entries)), 0
        for e in entries:
            addr, size, kind = int(e[0], 0), int(e[1], 0), int(e[2], 0)
            heur = int(e[3], 0) if len(e) > 3 else 0
            p += varint((addr - prev) & (2**64 - 1)) + varint(size) + bytes([kind | heur << 2])
            if kind == 3:
                p += varint(int(e[4], 0) if len(e) > 4 else 0)
            prev = addr
        blocks.append((LEAKS, p))
    if a.leaks_summary:
        f = [int(x, 0) for x in a.leaks_summary.split(",")]
        listed = f[4] if len(f) > 4 else len(entries)
        p = bytes([1]) + varint(f[0]) + varint(f[1]) + varint(1) + varint(f[2]) + varint(f[3]) + varint(listed)
        p += varint(1) + varint(0) + varint(12345) + varint(4096) + varint(0)
        blocks.append((LEAKS, p))
    if a.leaks_raw:
        blocks.append((LEAKS, bytes.fromhex(a.leaks_raw)))
    if not a.no_end:
        f = [int(x, 0) for x in a.end.split(",")]
        reason, value, flags = f[0], f[1], f[2] if len(f) > 2 else 0
        p = varint(reason) + varint(value) + varint(seq + 1) + varint(seq) + varint(0) + varint(0)
        p += varint(0)
        if a.version >= 4:
            p += varint(flags)
        blocks.append((END, p))

    data = bytearray(b"TPROFTRC" + struct.pack("<HHI", a.version, 16, 0))
    made = {}  # the --kcalls blocks are alike: their checksum once (Python's CRC is slow)
    for t, p in blocks:
        if not a.threads or a.dup_seq:
            print(len(data), t, len(p))
        if (t, p) not in made:
            made = {(t, p): block(t, p)}
        data += made[(t, p)]
    open(a.out, "wb").write(data)


if __name__ == "__main__":
    main()
