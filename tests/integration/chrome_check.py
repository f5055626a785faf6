#!/usr/bin/env python3
"""Checks a `tprof export --chrome` file the way a strict trace-event importer would, for
tests/integration/chrome.bats: the file is UTF-8 and parses as JSON with only the top-level keys
every importer knows; every event has integer pid and tid, every non-metadata event a numeric ts >= 0
and "ph" and "ts" as its first keys, every X event a numeric dur >= 0, every counter numeric args;
the X slices of each thread nest properly (checked on exact nanoseconds, numbers parsed as decimals).
Optionally compares with `tprof ops --json` (kernel slices per op and their FLOPs), `tprof peak
--json` (the live-heap counter's maximum and its time) and the names hostile_names.c uses.
Prints a summary as JSON; exits 1 with the reasons when a check fails.

usage: chrome_check.py OUT.json [--ops OPS.json] [--peak PEAK.json] [--hostile]
                                [--max-counter N] [--no-clipped]"""
import collections
import decimal
import json
import sys

# tests/kernels/hostile_names.c's names, as bytes (names are cut at 63 bytes by the recorder).
HOSTILE = [
    b"quote\" back\\slash",
    b"line\nbreak\r\ttab",
    b"'; system('touch /tmp/tprof_hostile_canary'); print '",
    b"\"; system(\"touch /tmp/tprof_hostile_canary\"); print \"",
    b"`touch /tmp/tprof_hostile_canary`",
    b"\x01\x1f ctl \x7f",
    b"bad utf8 \xff\xfe \xc3",
    b"comma,semi;\"csv\"",
    b"</script><b>html</b>",
    b"@x{1} $y %z ^w _v",
]
HOSTILE_PARAM = b"para\"ms\n"


class Fail(Exception):
    pass


def is_num(v):
    return isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool)


def ns(v, what):
    """Exact nanoseconds of a microsecond value."""
    if not is_num(v):
        raise Fail("%s is not a number: %r" % (what, v))
    x = decimal.Decimal(v) * 1000
    if x != x.to_integral_value():
        raise Fail("%s has more than nanosecond precision: %r" % (what, v))
    return int(x)


def expect_name(b):
    """What a name recorded as bytes b reads as: invalid UTF-8 bytes become U+FFFD, one each."""
    return b.decode("utf-8", errors="replace")


def load(path):
    raw = open(path, "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Fail("not UTF-8: %s" % e)
    pairs_dups = []

    def hook(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            pairs_dups.append(keys)
        return collections.OrderedDict(pairs)

    d = json.loads(text, parse_float=decimal.Decimal, object_pairs_hook=hook)
    return d, pairs_dups


def check(path, no_clipped=False):
    d, dups = load(path)
    errors = []
    if not isinstance(d, dict) or not isinstance(d.get("traceEvents"), list):
        raise Fail("not an object with a traceEvents array")
    extra = set(d) - {"traceEvents", "otherData"}
    if extra:
        errors.append("top-level keys importers may not know: %s" % sorted(extra))
    if list(d)[0] != "traceEvents":
        errors.append("traceEvents is not the first key")
    for keys in dups:
        errors.append("duplicate keys %s" % keys)
    other = d.get("otherData", {})
    slices = collections.defaultdict(list)  # (pid, tid) -> [(start, end, event)]
    counters = collections.defaultdict(list)  # name -> [(ns, value)]
    meta = collections.defaultdict(dict)  # tid -> {what: value}
    kernels, ranges, marks, steps, instants = [], [], [], [], []
    for i, e in enumerate(d["traceEvents"]):
        try:
            if not isinstance(e, dict):
                raise Fail("not an object")
            ph = e.get("ph")
            for k in ("pid", "tid"):
                if not isinstance(e.get(k), int) or isinstance(e.get(k), bool) or e[k] < 0:
                    raise Fail("%s is not a non-negative integer" % k)
            if list(e)[:2] != ["ph", "ts"]:
                raise Fail("ph and ts are not the first keys: %s" % list(e)[:3])
            if not isinstance(e.get("name"), str):
                raise Fail("no name")
            if ph == "M":
                if e["name"] not in ("process_name", "thread_name", "thread_sort_index"):
                    raise Fail("unknown metadata %r" % e["name"])
                meta[e["tid"]][e["name"]] = e["args"]["name" if e["name"].endswith("name") else "sort_index"]
                continue
            t = ns(e.get("ts"), "ts")
            if t < 0:
                raise Fail("negative ts")
            if ph == "X":
                dur = ns(e.get("dur"), "dur")
                if dur < 0:
                    raise Fail("negative dur")
                slices[(e["pid"], e["tid"])].append((t, t + dur, e))
                if e.get("cat") == "kernel":
                    a = e["args"]
                    if not (is_num(a["flops"]) and is_num(a["bytes"])):
                        raise Fail("kernel args not numbers")
                    kernels.append((t, dur, e))
                elif e.get("cat") == "range":
                    ranges.append((t, dur, e))
                elif e.get("cat") == "step":
                    steps.append((t, dur, e))
                else:
                    raise Fail("X of unknown category")
            elif ph == "C":
                a = e.get("args")
                if not isinstance(a, dict) or not a or not all(is_num(v) for v in a.values()):
                    raise Fail("counter args are not all numbers")
                counters[e["name"]].append((t, a["bytes"]))
            elif ph == "i":
                if e.get("s") not in ("t", "p", "g"):
                    raise Fail("instant without a scope")
                (marks if e.get("cat") == "mark" else instants).append((t, e))
            else:
                raise Fail("unexpected phase %r" % ph)
        except (Fail, KeyError, TypeError) as x:
            errors.append("event %d %s: %s" % (i, json.dumps(e, default=str)[:200], x))
    # nesting: by start, the longer first; a slice must end by its parent's end
    for key, v in slices.items():
        v.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s, en, e in v:
            while stack and stack[-1][1] <= s:
                stack.pop()
            if stack and en > stack[-1][1]:
                errors.append("thread %s: %s [%d, %d] crosses %s [%d, %d]" % (
                    key, e["name"], s, en, stack[-1][2]["name"], stack[-1][0], stack[-1][1]))
            stack.append((s, en, e))
    if no_clipped:
        for k in ("slices_clipped", "ranges_snapped"):
            if other.get(k) != 0:
                errors.append("otherData.%s = %r" % (k, other.get(k)))
    return d, errors, dict(kernels=kernels, ranges=ranges, marks=marks, steps=steps, instants=instants,
                           counters=counters, meta=meta, other=other)


def by_op(kernels):
    n, flops = collections.Counter(), collections.Counter()
    for _, _, e in kernels:
        n[e["name"]] += 1
        flops[e["name"]] += e["args"]["flops"]
    return n, flops


def main(argv):
    path = argv[1]
    opts = argv[2:]

    def opt(name):
        return opts[opts.index(name) + 1] if name in opts else None

    try:
        d, errors, r = check(path, "--no-clipped" in opts)
    except (Fail, ValueError) as x:
        print("chrome_check: %s: %s" % (path, x))
        return 1
    heap = r["counters"].get("live heap", [])
    n, flops = by_op(r["kernels"])
    if opt("--ops"):
        ops = json.load(open(opt("--ops")))
        if len(r["kernels"]) != ops["calls"]:
            errors.append("%d kernel slices, tprof ops counts %d calls" % (len(r["kernels"]), ops["calls"]))
        rows = {o["name"]: o for o in ops["ops"]}
        if set(rows) != set(n):
            errors.append("ops differ: %s vs %s" % (sorted(rows), sorted(n)))
        for name, o in rows.items():
            if n[name] != o["calls"] or flops[name] != o["flops"]:
                errors.append("%s: %d slices, %d FLOPs; tprof ops: %d calls, %d FLOPs" % (
                    name, n[name], flops[name], o["calls"], o["flops"]))
    if opt("--peak"):
        peak = json.load(open(opt("--peak")))
        top = max((v for _, v in heap), default=0)
        if top != peak["peak_bytes"]:
            errors.append("live heap counter max %d, tprof peak %d" % (top, peak["peak_bytes"]))
        at = [t for t, v in heap if v == top]
        if peak["peak_bytes"] and (not at or at[0] != peak["peak_time_ns"]):
            errors.append("peak at %s ns in the counter, %d in tprof peak" % (at[:1], peak["peak_time_ns"]))
        if r["other"].get("peak_bytes") != peak["peak_bytes"]:
            errors.append("otherData.peak_bytes %r" % r["other"].get("peak_bytes"))
    if opt("--max-counter") and len(heap) > int(opt("--max-counter")):
        errors.append("%d live heap samples, more than %s" % (len(heap), opt("--max-counter")))
    if "--hostile" in opts:
        want = {expect_name(b) for b in HOSTILE}
        got_ranges = {e["name"] for _, _, e in r["ranges"]}
        got_marks = {e["name"] for _, e in r["marks"]}
        if got_ranges != want:
            errors.append("range names differ: %r" % sorted(got_ranges ^ want))
        if got_marks != want:
            errors.append("mark names differ: %r" % sorted(got_marks ^ want))
        for b in HOSTILE:  # valid UTF-8 comes back byte for byte
            try:
                s = b.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if s.encode("utf-8") != b or s not in got_ranges:
                errors.append("%r does not round-trip" % b)
        params = r["other"].get("params", {})
        if params.get(HOSTILE_PARAM.decode()) != 42:
            errors.append("params %r" % params)
        if "\ufffd" not in "".join(got_ranges):
            errors.append("invalid UTF-8 was not replaced by U+FFFD")
    summary = dict(
        kernels=len(r["kernels"]), ranges=len(r["ranges"]), marks=len(r["marks"]),
        steps=[e["name"] for _, _, e in sorted(r["steps"], key=lambda s: s[0])],
        heap_samples=len(heap), heap_max=max((v for _, v in heap), default=0),
        rss_samples=len(r["counters"].get("RSS", [])),
        thread_names={str(k): v.get("thread_name") for k, v in r["meta"].items()},
        other=r["other"])
    print(json.dumps(summary, default=str))
    for x in errors[:50]:
        print("chrome_check: " + x, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
