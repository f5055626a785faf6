#!/usr/bin/env bash
# Runs one command twice, under valgrind memcheck and under libtprof.so, and compares the heap
# totals: allocations, frees, bytes allocated, bytes and blocks in use at exit. Prints both and
# exits 0 when they are equal. Also checks the program's stdout and exit status are unchanged.
# usage: [VG_OPTS='--opt ...'] vgcompare.sh BUILD_DIR WORKDIR -- COMMAND ARGS...
# (VG_OPTS: more options for valgrind, as for a difference it causes that has one: docs/FORMAT.md)
set -u
build=$(cd "$1" && pwd) work=$2 lib=$(cd "$(dirname "$0")" && pwd)
shift 3
cd "$work" || exit 2
# what the runs write goes to .vg, made before both: the directory the command runs in holds the
# same names in both runs (python lists it when it imports)
mkdir -p .vg
rm -f .vg/t.trace .vg/t.trace.* # traces are never overwritten: an older one would be read instead
TRACE=$PWD/.vg/t.trace
. "$lib/vgenv.sh"
# glib's slice allocator takes plain malloc under valgrind (it asks whether it runs there): both
# runs get G_SLICE=always-malloc, which says the same outside.
# valgrind's log on descriptor 9, and the tprof run given one too: --log-file would take descriptor 3
# in the program, whose first open then returns 4 (docs/FORMAT.md)
"${vg_env[@]}" G_SLICE=always-malloc valgrind --leak-check=full ${VG_OPTS:-} --log-fd=9 "$@" >.vg/vg.out 2>/dev/null 9>.vg/vg.log
vg_rc=$?
"${tp_env[@]}" G_SLICE=always-malloc "$@" >.vg/tp.out 2>/dev/null 9>/dev/null
tp_rc=$?
cd .vg || exit 2
"$build/tprof" report --json t.trace >t.json || exit 1
/usr/bin/python3 - "$vg_rc" "$tp_rc" <<'PY'
import json, re, sys
vg = open("vg.log").read()
# the command's own summary: a child it forks is memcheck's too, and one that ends first prints
# its summary first; the log's first line is the command's
pid = re.match(r"==(\d+)==", vg)[1]
m = re.search(r"==%s== +in use at exit: ([\d,]+) bytes in ([\d,]+) blocks" % pid, vg)
h = re.search(r"==%s== +total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated" % pid, vg)
if not m or not h:  # the command exec'd another program (a wrapper script), which valgrind did not follow
    sys.exit("vgcompare: valgrind's log has no HEAP SUMMARY of the command's process (did it exec "
             "another program? run that one directly): .vg/vg.log")
n = lambda s: int(s.replace(",", ""))
want = dict(leaked_bytes=n(m[1]), leaked_blocks=n(m[2]), allocations=n(h[1]), frees=n(h[2]),
            bytes_allocated=n(h[3]))
got = json.load(open("t.json"))
bad = [k for k in want if got[k] != want[k]]
print("valgrind:", want)
print("tprof:   ", {k: got[k] for k in want}, "complete:", got["complete"], "lost:", got["lost_events"])
same_out = open("vg.out", "rb").read() == open("tp.out", "rb").read()
if not same_out: print("stdout differs")
if sys.argv[1] != sys.argv[2]: print("exit status differs:", sys.argv[1:])
sys.exit(1 if bad or not same_out or sys.argv[1] != sys.argv[2] or not got["complete"] else 0)
PY
