#!/usr/bin/env bash
# `make bench`: every benchmark, one after another (never in parallel: they time things).
set -u
here=$(cd "$(dirname "$0")" && pwd)
echo "== heap-call overhead: malloc/free storm (bench/storm.sh)"
bash "$here/storm.sh"
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
