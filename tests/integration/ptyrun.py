"""Runs a command as the leader of a new session on a pseudo-terminal, as a terminal emulator does,
and drives it: ptyrun.py [--send DELAY:TEXT]... [--hangup DELAY] [--timeout S] -- COMMAND ARGS...
Each --send writes TEXT (Python escapes: \\x03 is ^C, \\x1a is ^Z, \\r is Enter) DELAY seconds after the
previous one; --hangup closes the terminal DELAY seconds after the last send. Prints the terminal's
output with \\r removed, then a line "status N" (N as os.waitstatus_to_exitcode: -SIG when killed by
SIG) and "after S" (seconds from the last send or hangup to the end, one decimal)."""
import argparse
import os
import pty
import select
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--send", action="append", default=[])
ap.add_argument("--hangup", type=float, default=None)
ap.add_argument("--timeout", type=float, default=30)
ap.add_argument("cmd", nargs=argparse.REMAINDER)
a = ap.parse_args()
cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
out = bytearray()
start = time.time()
last = start


def pump(until):
    global fd
    while fd >= 0 and time.time() < until:
        r, _, _ = select.select([fd], [], [], max(0.0, min(0.05, until - time.time())))
        if r:
            try:
                d = os.read(fd, 4096)
            except OSError:
                d = b""
            if not d:
                return False
            out.extend(d)
    return True


for s in a.send:
    delay, text = s.split(":", 1)
    pump(time.time() + float(delay))
    if fd >= 0:
        os.write(fd, text.encode().decode("unicode_escape").encode("latin-1"))
    last = time.time()
if a.hangup is not None:
    pump(time.time() + a.hangup)
    os.close(fd)
    fd = -1
    last = time.time()
deadline = start + a.timeout
st = None
while time.time() < deadline:
    if not pump(min(deadline, time.time() + 0.1)):
        break
    w, s = os.waitpid(pid, os.WNOHANG)
    if w == pid:
        st = s
        break
if st is None:
    while time.time() < deadline:  # the terminal closed: the command ends
        w, s = os.waitpid(pid, os.WNOHANG)
        if w == pid:
            st = s
            break
        time.sleep(0.02)
sys.stdout.write(out.decode("utf-8", "replace").replace("\r", ""))
print()
print("status", os.waitstatus_to_exitcode(st) if st is not None else "?")
print("after %.1f" % (time.time() - last))
