#!/usr/bin/env python3
"""Checks one `tprof ... --csv` table against the same command's --json output, for csv.bats.

usage: csv_check.py CSV JSON ROWS HEADER

ROWS says where the JSON holds the table's rows: "." (the top-level object is the one row), a key
whose value is a list of row objects, or a key whose value is one object (one row; null: none).
HEADER is the documented header, comma-separated. The CSV must be RFC 4180 (records end with CRLF,
fields parsed by python's csv module), have that header, as many rows as the JSON and, field by field,
the JSON's values, and its columns the JSON row's members in their order (flattened as below; lists
that are not pairs or stacks, i.e. nested tables and lists of names, have no column): numbers
equal, null as an empty field, booleans as true/false, strings byte for
byte (names that are not valid UTF-8 are compared as bytes in the CSV only: JSON replaces them).
Field names map to JSON keys as the commands document: X_lo_ns / X_hi_ns are X_ns[0] / X_ns[1],
calls_NAME is calls.NAME, report's signal is null when absent; a stack-command row's function, file, line, module and offset are those of
its innermost frame and stack its frames' labels joined by ';'. Prints the rows checked; exits 1 with
the first difference."""
import csv
import io
import json
import sys


def fail(msg):
    print("csv_check: " + msg)
    sys.exit(1)


def records_end_with_crlf(data):
    """True when every record separator outside quotes is CRLF and the data ends with one."""
    quoted = False
    for i, c in enumerate(data):
        if c == ord('"'):
            quoted = not quoted
        elif c == ord("\n") and not quoted and (i == 0 or data[i - 1] != ord("\r")):
            return False
    return data.endswith(b"\r\n") and not quoted


def label(frame):
    """A frame's label as the analyzer writes it (stack_print_label)."""
    fn, fl, line, mod = frame["function"], frame["file"], frame["line"], frame["module"]
    base = fl.rsplit("/", 1)[-1] if fl else None
    if fn and base and line:
        s = "%s (%s:%d)" % (fn, base, line)
    elif fn and base:
        s = "%s (%s)" % (fn, base)
    elif fn and mod:
        s = "%s [%s]" % (fn, mod)
    elif fn:
        s = fn
    elif mod:
        s = "%s+0x%x" % (mod, frame["offset"])
    else:
        s = frame["address"]
    return s + (" (inlined)" if frame["inlined"] else "")


def json_value(row, col):
    """The JSON value for a CSV column, or raise KeyError."""
    if col in row:
        v = row[col]
        if col == "stack" and isinstance(v, list):
            return ";".join(label(f) if isinstance(f, dict) else f for f in v)
        return v
    if isinstance(row.get("stack"), list) and col in ("function", "file", "line", "module", "offset"):
        if not row["stack"]:
            return None
        v = row["stack"][0][col]
        return v  # an unknown line is 0 in both
    for half, k in (("_lo_ns", 0), ("_hi_ns", 1)):
        if col.endswith(half):
            pair = row[col[: -len(half)] + "_ns"]
            return None if pair is None else pair[k]  # null: no interval, two empty fields
    if col == "signal":  # report's JSON has it only when a signal ended the run
        return row.get("signal")
    if col.startswith("calls_") and isinstance(row.get("calls"), dict):
        return row["calls"][col[len("calls_"):]]
    raise KeyError(col)


def flatten(row, header):
    """The CSV columns a JSON row's members make, in their order."""
    cols = []
    for k, v in row.items():
        lo = (k[:-3] + "_lo_ns") if k.endswith("_ns") else k + "_lo"
        if k == "stack" and isinstance(v, list) and v and all(isinstance(f, str) for f in v):
            cols.append(k)  # labels (diff's sites): one field, joined by ';'
        elif k == "stack" and (isinstance(v, list) or v is None):
            cols += ["function", "file", "line", "module", "offset", "stack"]
        elif (isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v)) or \
                (v is None and lo in header):
            cols += [lo, lo.replace("_lo", "_hi")]
        elif isinstance(v, list):
            continue
        elif isinstance(v, dict):
            cols += [k + "_" + sub for sub in v]
        else:
            cols.append(k)
    return cols


def same(field, v):
    """field: the CSV field as bytes; v: the JSON value."""
    if v is None:
        return field == b""
    if isinstance(v, bool):
        return field == (b"true" if v else b"false")
    if isinstance(v, (int, float)):
        try:
            return float(field) == float(v)
        except ValueError:
            return False
    try:
        text = field.decode("utf-8")
    except UnicodeDecodeError:
        return True  # JSON replaced the invalid bytes; the CSV keeps them (checked by the caller)
    return text == v


def main():
    if len(sys.argv) != 5:
        fail(__doc__)
    path, jpath, where, header = sys.argv[1:5]
    data = open(path, "rb").read()
    if not records_end_with_crlf(data):
        fail("%s: records do not all end with CRLF" % path)
    # latin-1 maps each byte to one character, so fields come back as their exact bytes
    rows = list(csv.reader(io.StringIO(data.decode("latin-1"), newline=""), strict=True))
    rows = [[f.encode("latin-1") for f in r] for r in rows]
    want = header.split(",")
    got = [f.decode() for f in rows[0]]
    if got != want:
        fail("header %s, documented %s" % (got, want))
    d = json.load(open(jpath))
    jrows = [d] if where == "." else d[where]
    if isinstance(jrows, dict):
        jrows = [jrows]
    elif jrows is None:
        jrows = []
    body = rows[1:]
    if len(body) != len(jrows):
        fail("%d CSV rows, %d JSON rows" % (len(body), len(jrows)))
    for n, j in enumerate(jrows):
        if flatten(j, want) != want:
            fail("JSON row %d's members %s, in this order, are not the CSV columns %s" % (n, flatten(j, want), want))
    for n, (r, j) in enumerate(zip(body, jrows)):
        if len(r) != len(want):
            fail("row %d has %d fields, the header %d" % (n, len(r), len(want)))
        for col, field in zip(want, r):
            try:
                v = json_value(j, col)
            except (KeyError, IndexError):
                fail("column %s is not in the JSON row %s" % (col, j))
            if not same(field, v):
                fail("row %d, %s: CSV %r, JSON %r" % (n, col, field, v))
    print("%s: %d rows equal to the JSON" % (path, len(body)))


main()
