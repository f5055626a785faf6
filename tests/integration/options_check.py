"""Every option a tprof command accepts is in its help, and every option its help names is accepted.
Accepted: `tprof CMD OPT 1 /nonexistent/x.trace` answers otherwise than it does for an option no
command has (`--zzz-bogus` in OPT's place); candidates: every option any command's help names and
every option-like string literal in the analyzer's sources. Usage: options_check.py TPROF SRC_DIR"""
import glob, re, subprocess, sys

tprof, src = sys.argv[1], sys.argv[2]
OPT = re.compile(r"(?<![\w/-])(--?[a-z][a-z0-9-]*)")


def out(*args):
    p = subprocess.run([tprof, *args], capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "TPROF_ROOFLINE_CACHE": "/nonexistent/roofline.json"})
    return p.returncode, p.stdout + p.stderr


help_all = out("help")[1]
cmds = [l.split()[0] for l in help_all.split("commands:")[1].splitlines()
        if l.startswith("  ") and l.split() and l.split()[0] not in ("help", "version")]
documented = {c: set(OPT.findall(out("help", c)[1])) - {"--", "-h", "--help"} for c in cmds}
literals = set()
for f in glob.glob(src + "/**/*.c", recursive=True):
    literals |= set(re.findall(r'"(--?[a-z][a-z0-9-]*)"', open(f).read()))
candidates = (set().union(*documented.values()) | literals) - {"-h", "--help"}
bad = 0
for c in cmds:
    rc_b, bogus = out(c, "--zzz-bogus", "1", "/nonexistent/x.trace")
    accepted = set()
    for o in sorted(candidates):
        rc, text = out(c, o, "1", "/nonexistent/x.trace")
        if (rc, text) != (rc_b, bogus.replace("--zzz-bogus", o)):
            accepted.add(o)
    if accepted != documented[c]:
        bad += 1
        print(f"{c}: accepted but not in its help: {sorted(accepted - documented[c])}; "
              f"in its help but not accepted: {sorted(documented[c] - accepted)}")
print(f"{len(cmds)} commands, {len(candidates)} candidate options, {bad} mismatches")
sys.exit(1 if bad else 0)
