#!/usr/bin/env bash
# Runs one command under valgrind memcheck (--leak-check=full --show-leak-kinds=all) and under
# libtprof.so, and compares their leak records per leaking function: the first frame of a record's
# stack that is not the allocator itself (malloc, operator new, strdup, ... and valgrind's
# replacements of them). For each such function the bytes and blocks in use at exit must be equal,
# and so must the totals ("in use at exit"). valgrind counts a record's indirect bytes into its
# headline ("224 (24 direct, 200 indirect) bytes"): only the direct bytes belong to the record.
# Prints both tables; exits 0 when they are equal.
# usage: vgleaks.sh BUILD_DIR WORKDIR -- COMMAND ARGS...
set -u
build=$(cd "$1" && pwd) work=$2
shift 3
cd "$work" || exit 2
rm -f tl.trace
valgrind --leak-check=full --show-leak-kinds=all --num-callers=64 --log-file=vgl.log "$@" >/dev/null 2>&1
# the same environment valgrind gives the program (see vgcompare.sh)
GLIBCPP_FORCE_NEW=1 GLIBCXX_FORCE_NEW=1 LD_LIBRARY_PATH=/usr/lib/debug${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	TPROF_QUIET=1 TPROF_OUTPUT=tl.trace LD_PRELOAD="$build/libtprof.so" "$@" >/dev/null 2>&1
"$build/tprof" leaks --json --no-default-suppressions tl.trace >tl.json || exit 1
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
vg = {}
vg_total = None
rec = None
for line in open("vgl.log"):
    line = re.sub(r"^==\d+== ?", "", line.rstrip("\n"))
    m = re.match(r"([\d,]+) (?:\(([\d,]+) direct, [\d,]+ indirect\) )?bytes in ([\d,]+) blocks are .* in loss record", line)
    if m:
        rec = {"bytes": n(m[2] or m[1]), "blocks": n(m[3]), "key": None}
        continue
    m = re.match(r"\s+(?:at|by) 0x[0-9A-Fa-f]+: (.*)$", line)
    if m and rec is not None:
        if rec["key"] is None:
            fn, _, where = m[1].rpartition(" (")
            if "vg_replace_malloc" in where or "vgpreload" in where or short(fn) in ALLOC:
                continue
            rec["key"] = short(fn)
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
for r in d["leaks"]:
    key = "(no stack)"
    for f in r["stack"]:
        name = f["function"] or "%s+0x%x" % (f["module"], f["offset"] or 0)
        if short(name) in ALLOC:
            continue
        key = short(name)
        break
    b = tp.setdefault(key, [0, 0])
    b[0] += r["bytes"]
    b[1] += r["blocks"]
tp_total = [d["leaked_bytes"], d["leaked_blocks"]]

print("%-50s %22s %22s" % ("leaking function", "valgrind bytes/blocks", "tprof bytes/blocks"))
for k in sorted(set(vg) | set(tp)):
    print("%-50s %22s %22s" % (k[:50], "%d/%d" % tuple(vg.get(k, (0, 0))), "%d/%d" % tuple(tp.get(k, (0, 0)))))
print("%-50s %22s %22s" % ("in use at exit", vg_total and "%d/%d" % tuple(vg_total), "%d/%d" % tuple(tp_total)))
sys.exit(0 if vg == tp and vg_total == tp_total and d["complete"] else 1)
PY
