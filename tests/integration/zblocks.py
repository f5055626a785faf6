"""Rewrites the compressed tables (ZSTACKS and ZKERNELS blocks, version 8) of a good trace for the
reader tests, re-checksumming every block it writes, so that only the reader's own checks can catch
what is wrong (docs/FORMAT.md, Block types). zstd through the C library (ctypes): no zstd program
needed. TYPE is STACKS or KERNELS.
Usage:
  zblocks.py count FILE TYPE       prints the number of compressed and of plain TYPE blocks, and
                                   their bytes: "NZ ZBYTES NPLAIN PLAINBYTES"
  zblocks.py plain IN OUT          writes OUT with every compressed block as the plain block it holds
  zblocks.py corrupt IN OUT TYPE   breaks the zstd frame of the first compressed TYPE block
  zblocks.py ratio IN OUT TYPE     the first compressed TYPE block claims more than 64 times its bytes
  zblocks.py version IN OUT V      writes OUT as format version V (the blocks unchanged)
corrupt and ratio print the byte offset of the block they changed."""
import ctypes, struct, sys

from rss_blocks import block, blocks, get_varint, varint

PLAIN = {"STACKS": 8, "KERNELS": 12}
ZTYPE = {"STACKS": 16, "KERNELS": 17}
UNZ = {16: 8, 17: 12}
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
        kind = sys.argv[3]
        z = [p for _, t, p in bl if t == ZTYPE[kind]]
        plain = [p for _, t, p in bl if t == PLAIN[kind]]
        print(len(z), sum(len(p) for p in z), len(plain), sum(len(p) for p in plain))
        return
    out = bytearray(d[:16])
    if mode == "version":
        struct.pack_into("<H", out, 8, int(sys.argv[4]))
    target = ZTYPE[sys.argv[4]] if mode in ("corrupt", "ratio") else None
    done = False
    for off, t, p in bl:
        if t in UNZ and mode == "plain":
            out += block(UNZ[t], unzip(p))
        elif t == target and not done and mode == "corrupt":
            q = bytearray(p)
            _, i = get_varint(q, 0)
            q[i] ^= 0xFF  # the frame's magic number: no frame at all (a byte inside its compressed
            # data may still decompress, to other bytes: only the block's checksum guards those)
            out += block(t, bytes(q))
            done = True
            print(off)
        elif t == target and not done and mode == "ratio":
            _, i = get_varint(p, 0)
            raw = 64 * len(p) + 1
            while raw <= 64 * len(varint(raw) + p[i:]):  # the varint may grow the payload
                raw += 64
            out += block(t, varint(raw) + p[i:])
            done = True
            print(off)
        else:
            n = struct.unpack_from("<I", d, off + 1)[0]
            out += d[off:off + 9 + n]
    open(sys.argv[3], "wb").write(bytes(out))


main()
