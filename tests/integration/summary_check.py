"""Checks `tprof summary --top 0 --json` against the commands that each answer one part of it on the
same trace: report (totals, leak kinds), allocs (sites by calls, temporary), peak (what was live at
the peak) and leaks --kinds all (in use at exit, by stack). Usage: summary_check.py DIR, with
summary.json, report.json, allocs.json, peak.json and leaks.json in DIR."""
import collections, json, os, sys

d = sys.argv[1]
S, R, A, P, L = (json.load(open(os.path.join(d, f + ".json"))) for f in ("summary", "report", "allocs", "peak", "leaks"))
bad = []


def key(stack):
    return tuple((f.get("function"), f.get("module"), f.get("offset")) for f in stack)


def same(what, a, b):
    if a != b:
        bad.append(f"{what}: summary {a!r}, other {b!r}")


for k in ("allocations", "frees", "bytes_allocated", "peak_bytes", "peak_blocks", "peak_time_ns", "leaks_classified"):
    same(k, S[k], R[k])
same("in use bytes", S["in_use_bytes"], R["leaked_bytes"])
same("in use blocks", S["in_use_blocks"], R["leaked_blocks"])
for kind in ("definitely_lost", "indirectly_lost", "possibly_lost", "still_reachable"):
    for u in ("bytes", "blocks"):
        same(f"{kind}_{u}", S[f"{kind}_{u}"], R[f"{kind}_{u}"])
same("temporary", S["temporary"], A["temporary"])
# a site's calls include its failed ones, as the totals do; allocs counts the blocks obtained
if R["failed_allocations"] == 0:
    same("sites", S["sites"], A["sites"])
    same("by calls", sorted((s["calls"], s["bytes"], s["temporary"], key(s["stack"])) for s in S["by_calls"]),
         sorted((s["allocations"], s["bytes"], s["temporary"], key(s["stack"])) for s in A["by_allocations"]))
same("calls of the sites", sum(s["calls"] for s in S["by_calls"]), R["allocations"] + R["failed_allocations"])
same("bytes of the sites", sum(s["bytes"] for s in S["by_calls"]), R["bytes_allocated"])
# blocks of 0 bytes are blocks too
same("blocks at the peak", sum(s["blocks"] for s in S["peak_consumers"]), R["peak_blocks"])
same("blocks in use", sum(s["blocks"] for s in S["in_use_at_exit"]), R["leaked_blocks"])
same("peak", sorted((s["bytes"], s["blocks"], key(s["stack"])) for s in S["peak_consumers"]),
     sorted((s["bytes"], s["blocks"], key(s["stack"])) for s in P["live"]))
use = collections.defaultdict(lambda: [0, 0])
for s in L["leaks"]:
    use[key(s["stack"])][0] += s["bytes"]
    use[key(s["stack"])][1] += s["blocks"]
same("in use", sorted((s["bytes"], s["blocks"], key(s["stack"])) for s in S["in_use_at_exit"]),
     sorted((b, n, k) for k, (b, n) in use.items()))
# the tables are sorted as they say
for t, f in (("by_calls", "calls"), ("peak_consumers", "bytes"), ("by_temporary", "temporary"), ("in_use_at_exit", "bytes")):
    v = [s[f] for s in S[t]]
    if v != sorted(v, reverse=True):
        bad.append(f"{t} not sorted by {f}")
print("\n".join(bad) if bad else f"equal: {len(S['by_calls'])} sites, {len(S['peak_consumers'])} at the peak, {len(S['in_use_at_exit'])} in use")
sys.exit(1 if bad else 0)
