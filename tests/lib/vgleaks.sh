#!/usr/bin/env bash
# Runs one command under valgrind memcheck (--leak-check=full --show-leak-kinds=all) and under
# libtprof.so, and compares their leak records per leak kind and leaking function: the first frame
# of a record's stack that is not the allocator itself (malloc, operator new, strdup, ... and
# valgrind's replacements of them). For each such (kind, function) the bytes and blocks must be
# equal, and so must the LEAK SUMMARY's bytes and blocks per kind and the totals ("in use at
# exit"). valgrind counts a record's indirect bytes into its headline ("224 (24 direct, 200
# indirect) bytes"): only the direct bytes belong to the record. One known difference is allowed
# and printed: each thread's dtv (allocate_dtv) is 16 bytes larger under tprof, whose library adds
# a TLS module; its blocks must still match. Prints both tables; exits 0 when
# they are equal.
# With VGLEAKS_TOTALS=1 only the LEAK SUMMARY and the totals are compared (for programs without
# symbols, whose frames valgrind shows as ??? and tprof as module+offset).
# usage: vgleaks.sh BUILD_DIR WORKDIR -- COMMAND ARGS...
set -u
build=$(cd "$1" && pwd) work=$2 lib=$(cd "$(dirname "$0")" && pwd)
shift 3
cd "$work" || exit 2
mkdir -p .vg # what the runs write (see vgcompare.sh)
rm -f .vg/tl.trace
TRACE=$PWD/.vg/tl.trace
. "$lib/vgenv.sh"
# the log on descriptor 9 in both runs, not 3 in valgrind's alone (see vgcompare.sh)
"${vg_env[@]}" valgrind --leak-check=full --show-leak-kinds=all --num-callers=64 --log-fd=9 "$@" >/dev/null 2>&1 9>.vg/vgl.log
"${tp_env[@]}" "$@" >/dev/null 2>&1 9>/dev/null
cd .vg || exit 2
"$build/tprof" leaks --json --kinds all --no-default-suppressions tl.trace >tl.json || exit 1
/usr/bin/python3 - <<'PY'
import json, re, sys

ALLOC = {"malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
         "valloc", "pvalloc", "operator new", "operator new[]", "strdup", "strndup", "__strdup",
         "__strndup", "__GI___strdup", "__GI___strndup"}

def short(fn):
    """The function name without its parameter list: 'f(int, char)' -> 'f'."""
    fn = fn.strip()
    if fn.endswith(" const"):
        fn = fn[:-6]
    if fn.endswith(")"):
        depth = 0
        for i in range(len(fn) - 1, -1, -1):
            depth += fn[i] == ")"
            depth -= fn[i] == "("
            if depth == 0:
                return fn[:i]
    return fn

def n(s):
    return int(s.replace(",", ""))

# valgrind: "==PID== 224 (24 direct, 200 indirect) bytes in 1 blocks are definitely lost in loss
# record 5 of 6" then "==PID==    at 0x...: FUNCTION (FILE:LINE)" / "by ..." lines
KINDS = {"definitely lost": "definite", "indirectly lost": "indirect", "possibly lost": "possible",
         "still reachable": "reachable"}
vg = {}
vg_total = None
vg_sum = {}
rec = None
for line in open("vgl.log"):
    line = re.sub(r"^==\d+== ?", "", line.rstrip("\n"))
    m = re.match(r"([\d,]+) (?:\(([\d,]+) direct, [\d,]+ indirect\) )?bytes in ([\d,]+) blocks are (.*) in loss record", line)
    if m:
        rec = {"bytes": n(m[2] or m[1]), "blocks": n(m[3]), "key": None, "kind": KINDS[m[4]]}
        continue
    m = re.match(r"\s*(definitely lost|indirectly lost|possibly lost|still reachable): ([\d,]+) bytes in ([\d,]+) blocks", line)
    if m:
        vg_sum[KINDS[m[1]]] = [n(m[2]), n(m[3])]
        continue
    m = re.match(r"\s+(?:at|by) 0x[0-9A-Fa-f]+: (.*)$", line)
    if m and rec is not None:
        if rec["key"] is None:
            fn, _, where = m[1].rpartition(" (")
            if "vg_replace_malloc" in where or "vgpreload" in where or short(fn) in ALLOC:
                continue
            rec["key"] = (rec["kind"], short(fn))
            b = vg.setdefault(rec["key"], [0, 0])
            b[0] += rec["bytes"]
            b[1] += rec["blocks"]
        continue
    m = re.search(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks", line)
    if m:
        vg_total = [n(m[1]), n(m[2])]
    rec = None if not line.strip().startswith(("at ", "by ")) else rec

tp = {}
d = json.load(open("tl.json"))
classified = d["classified"]
for r in d["leaks"]:
    key = "(no stack)"
    for f in r["stack"]:
        name = f["function"] or "%s+0x%x" % (f["module"], f["offset"] or 0)
        if short(name) in ALLOC:
            continue
        key = short(name)
        break
    key = (r["kind"] if classified else "?", key)
    b = tp.setdefault(key, [0, 0])
    b[0] += r["bytes"]
    b[1] += r["blocks"]
tp_total = [d["leaked_bytes"], d["leaked_blocks"]]

tp_sum = {k: [d["summary"][k]["bytes"], d["summary"][k]["blocks"]] for k in KINDS.values()}

# the dtv difference: compare blocks, and the bytes without the dtvs
dtv = {}
for k in set(vg) | set(tp):
    if k[1] == "allocate_dtv":
        v, t = vg.get(k, [0, 0]), tp.get(k, [0, 0])
        if v[1] == t[1] and t[0] - v[0] == 16 * t[1]:
            dtv[k[0]] = t[0] - v[0]
            tp[k] = [v[0], t[1]]
for kind, extra in dtv.items():
    tp_sum[kind][0] -= extra
    tp_total[0] -= extra

print("%-60s %22s %22s" % ("kind / leaking function", "valgrind bytes/blocks", "tprof bytes/blocks"))
for k in sorted(set(vg) | set(tp)):
    name = "%s %s" % k
    print("%-60s %22s %22s" % (name[:60], "%d/%d" % tuple(vg.get(k, (0, 0))), "%d/%d" % tuple(tp.get(k, (0, 0)))))
for kind in KINDS.values():
    print("%-60s %22s %22s" % ("LEAK SUMMARY " + kind, "%d/%d" % tuple(vg_sum.get(kind, (0, 0))), "%d/%d" % tuple(tp_sum[kind])))
print("%-60s %22s %22s" % ("in use at exit", vg_total and "%d/%d" % tuple(vg_total), "%d/%d" % tuple(tp_total)))
if dtv:
    print("allowed: each thread's dtv is 16 bytes larger under tprof:", dtv)
if not vg_total:
    vg_sum = {k: [0, 0] for k in KINDS.values()}
import os
totals_only = os.environ.get("VGLEAKS_TOTALS") == "1"
ok = (totals_only or vg == tp) and vg_total == tp_total and d["complete"] and classified
ok = ok and all(vg_sum.get(k, [0, 0]) == tp_sum[k] for k in KINDS.values())
if not classified:
    print("not classified:", d["not_classified"])
sys.exit(0 if ok else 1)
PY
