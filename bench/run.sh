#!/usr/bin/env bash
# `make bench`: every benchmark, one after another (never in parallel: they time things), and the
# stack walk's check against libunwind.
set -u
here=$(cd "$(dirname "$0")" && pwd)
echo "== heap-call overhead: malloc/free storm (bench/storm.sh)"
bash "$here/storm.sh"
echo
echo "== programs nobody here wrote: perl and openssl, allocating from many call paths (bench/real.sh)"
bash "$here/real.sh"
echo
echo "== many distinct call stacks: trace sizes and summary against heaptrack (bench/stacks.sh)"
bash "$here/stacks.sh"
if [ -f "$here/workloads.sh" ]; then
	echo
	echo "== workloads (bench/workloads.sh)"
	bash "$here/workloads.sh"
fi
echo
echo "== per-process cost: /bin/true and fork storms (bench/procs.sh)"
bash "$here/procs.sh"
echo
echo "== kernel-call overhead (bench/kernels.sh)"
bash "$here/kernels.sh"
echo
echo "== leak scan at exit: a 1 GiB heap of small blocks, against valgrind's (bench/leakscan.sh)"
bash "$here/leakscan.sh"
echo
echo "== stack walk: every capture of the hard-case program compared with a full libunwind unwind"
root=$(cd "$here/.." && pwd)
B="$root/${BUILD:-build}"
work=$(mktemp -d)
for p in unwind_check unwind_check_O0; do
	(cd "$work" && TPROF_VERIFY_STACKS=1 TPROF_QUIET=1 TPROF_OUTPUT=u.trace LD_PRELOAD="$B/libtprof.so" \
		"$B/progs/$p" 300 "$B/progs/libstacks_plugin.so" 2>&1 >/dev/null | sed -n "s/^tprof: stack check: /$p: /p"
		rm -f u.trace)
done
rm -rf "$work"
