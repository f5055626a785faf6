"""Rewrites the compressed stack tables (ZSTACKS blocks, version 8) of a good trace for the reader
tests, re-checksumming every block it writes, so that only the reader's own checks can catch what
is wrong (docs/FORMAT.md, Block types). zstd through the C library (ctypes): no zstd program needed.
Usage:
  zstacks.py count FILE       prints the number of ZSTACKS and STACKS blocks, and their bytes
  zstacks.py plain IN OUT     writes OUT with every ZSTACKS block as the STACKS block it holds
  zstacks.py corrupt IN OUT   flips a byte of the first ZSTACKS block's compressed data
  zstacks.py ratio IN OUT     the first ZSTACKS block claims more than 64 times its bytes
  zstacks.py version IN OUT V writes OUT as format version V (the blocks unchanged)
Prints the byte offset of the block it changed (corrupt, ratio)."""
import ctypes, struct, sys

from rss_blocks import block, blocks, get_varint, varint

STACKS, ZSTACKS = 8, 16
zstd = ctypes.CDLL("libzstd.so.1")
zstd.ZSTD_decompress.restype = ctypes.c_size_t
zstd.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]


def unzip(payload):
    raw, i = get_varint(payload, 0)
    out = ctypes.create_string_buffer(raw)
    n = zstd.ZSTD_decompress(out, raw, bytes(payload[i:]), len(payload) - i)
    assert not zstd.ZSTD_isError(n) and n == raw, (n, raw)
    return out.raw


def main():
    mode, src = sys.argv[1], sys.argv[2]
    d = open(src, "rb").read()
    bl = list(blocks(d))
    if mode == "count":
        for t in (ZSTACKS, STACKS):
            sel = [p for _, tt, p in bl if tt == t]
            print(len(sel), sum(len(p) for p in sel))
        return
    out = bytearray(d[:16])
    if mode == "version":
        struct.pack_into("<H", out, 8, int(sys.argv[4]))
    done = False
    for off, t, p in bl:
        if t == ZSTACKS and mode == "plain":
            out += block(STACKS, unzip(p))
        elif t == ZSTACKS and not done and mode == "corrupt":
            q = bytearray(p)
            _, i = get_varint(q, 0)
            q[i + (len(q) - i) // 2] ^= 0x5A  # inside the frame's compressed data
            out += block(ZSTACKS, bytes(q))
            done = True
            print(off)
        elif t == ZSTACKS and not done and mode == "ratio":
            _, i = get_varint(p, 0)
            raw = 64 * len(p) + 1
            while raw <= 64 * len(varint(raw) + p[i:]):  # the varint may grow the payload
                raw += 64
            out += block(ZSTACKS, varint(raw) + p[i:])
            done = True
            print(off)
        else:
            n = struct.unpack_from("<I", d, off + 1)[0]
            out += d[off:off + 9 + n]
    open(sys.argv[3], "wb").write(bytes(out))


main()
