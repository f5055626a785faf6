"""Corrupts a good trace inside one of its ZEVENTS blocks for the reader tests: decompresses the
block's payload (zstd), flips one to three bits of the EVENTS records, compresses it again and
re-checksums the block, so that only the decoding can catch what is wrong (when anything can: a
changed size or pointer is a different, valid trace). The block and the bits follow from SEED.
Usage: zflip.py GOOD OUT SEED"""
import random, subprocess, sys

from rss_blocks import blocks, block, get_varint, varint

ZEVENTS = 11

def main():
    good, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    d = open(good, "rb").read()
    r = random.Random(seed)
    off, _, p = r.choice([b for b in blocks(d) if b[1] == ZEVENTS])
    tid, i = get_varint(p, 0)
    raw_len, j = get_varint(p, i)
    raw = bytearray(subprocess.run(["zstd", "-d", "-c", "-q"], input=p[j:], capture_output=True, check=True).stdout)
    assert len(raw) == raw_len, (len(raw), raw_len)
    for _ in range(r.choice([1, 1, 3])):
        raw[r.randrange(len(raw))] ^= 1 << r.randrange(8)
    comp = subprocess.run(["zstd", "-c", "-q"], input=bytes(raw), capture_output=True, check=True).stdout
    n = int.from_bytes(d[off + 1:off + 5], "little")
    open(out, "wb").write(d[:off] + block(ZEVENTS, varint(tid) + varint(len(raw)) + comp) + d[off + 9 + n:])

main()
