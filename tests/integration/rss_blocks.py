"""Rewrites the RSS blocks of a good trace for the reader tests, re-checksumming every block it
writes so that only the reader's parsing can catch what is wrong (docs/FORMAT.md, Resident set size).
Usage:
  rss_blocks.py cases GOOD    writes one file per malformed RSS block, prints "FILE OFFSET MESSAGE"
                              (the offset and the message the reader must give)
  rss_blocks.py split GOOD OUT
                              writes OUT with the first RSS block of 2 or more samples cut in two
                              blocks (the second starting with an absolute sample): the same series
  rss_blocks.py offset FILE   prints the offset of the first RSS block"""
import struct, sys

RSS = 14

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF

def block(t, payload):
    return bytes([t]) + struct.pack("<II", len(payload), crc32c(bytes([t]) + payload)) + payload

def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    return bytes(out + bytes([v]))

def svarint(v):
    return varint(-2 * v - 1 if v < 0 else 2 * v)

def get_varint(b, i):
    v = s = 0
    while True:
        v |= (b[i] & 0x7F) << s
        s += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i

def get_svarint(b, i):
    v, i = get_varint(b, i)
    return (v >> 1) ^ -(v & 1), i

def blocks(d):
    off = 16
    while off < len(d):
        n = struct.unpack_from("<I", d, off + 1)[0]
        yield off, d[off], d[off + 9:off + 9 + n]
        off += 9 + n

def samples(payload):
    count, i = get_varint(payload, 0)
    tick, i = get_varint(payload, i)
    size, i = get_varint(payload, i)
    out = [(tick, size)]
    for _ in range(count - 1):
        dt, i = get_varint(payload, i)
        ds, i = get_svarint(payload, i)
        tick, size = tick + dt, size + ds
        out.append((tick, size))
    assert i == len(payload)
    return out

def encode(s):
    p = varint(len(s)) + varint(s[0][0]) + varint(s[0][1])
    for (t0, b0), (t1, b1) in zip(s, s[1:]):
        p += varint(t1 - t0) + svarint(b1 - b0)
    return p

def first_rss(d, least=1):
    for off, t, payload in blocks(d):
        if t == RSS and len(samples(payload)) >= least:
            return off, payload
    sys.exit("no RSS block with %d samples" % least)

def cases(d):
    off, payload = first_rss(d)
    end = off + 9 + len(payload)
    tick, size = samples(payload)[0]
    bad = {
        "zero": (varint(0) + varint(tick) + varint(size), "RSS block with a bad sample count"),
        "short": (varint(3) + varint(tick) + varint(size) + varint(5) + varint(0), "RSS sample 2 of 3 cut short"),
        "long": (payload + b"\x00", "RSS block longer than its samples"),
        "negative": (varint(2) + varint(tick) + varint(size) + varint(1) + svarint(-size - 4096),
                     "RSS sample 1 has a time or size out of range"),
        "overflow": (varint(2) + varint(2**64 - 2) + varint(size) + varint(5) + svarint(0),
                     "RSS sample 1 has a time or size out of range"),
    }
    for name, (p, msg) in bad.items():
        open(name + ".trace", "wb").write(d[:off] + block(RSS, p) + d[end:])
        print(name + ".trace", off, msg)
    # a block whose first sample is earlier than the previous block's last
    later, earlier = encode([(tick + 1000, size)]), encode([(tick, size)])
    open("back.trace", "wb").write(d[:off] + block(RSS, later) + block(RSS, earlier) + d[end:])
    print("back.trace", off + 9 + len(later), "RSS sample 0 is earlier than the sample before it")

def split(d, out):
    off, payload = first_rss(d, 2)
    s = samples(payload)
    open(out, "wb").write(d[:off] + block(RSS, encode(s[:1])) + block(RSS, encode(s[1:])) +
                          d[off + 9 + len(payload):])

if __name__ == "__main__":
    d = open(sys.argv[2], "rb").read()
    if sys.argv[1] == "cases":
        cases(d)
    elif sys.argv[1] == "split":
        split(d, sys.argv[3])
    else:
        print(first_rss(d)[0])
