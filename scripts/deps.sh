#!/usr/bin/env bash
# Installs the Debian packages tprof needs to build, test and demo, and only those that are missing.
# Called by `make deps` (and so by `make demo`) and by .ci/run. Needs root (or sudo) only when
# something is missing.
set -eu
pkgs=(
	gcc g++ make libc6-dev pkg-config   # toolchain
	libunwind-dev uthash-dev libdw-dev libelf-dev libzstd-dev   # preload and analyzer libraries
	gnuplot-nox                     # tprof plot
	valgrind heaptrack bats         # ground truth, the rival, the test runner
	python3 python3-numpy sqlite3 gzip coreutils time   # real programs the tests trace; /usr/bin/time for peak RSS
	curl cmake perl git make xz-utils openssl util-linux zstd   # more real programs the tests trace (flock: util-linux; zstd: corrupt blocks made)
	libopenblas-dev libgomp1        # workloads (optional BLAS, OpenMP)
	clang libclang-rt-14-dev        # the fuzz target (libFuzzer, ASan, UBSan)
	debhelper lintian man-db groff-base zsh   # make deb and its check; the man page's and completions' checks
	libc6-i386                      # a 32-bit program for the tests (its loader must not see libtprof.so)
	bubblewrap libfaketime          # a sandbox and another preload the tests trace
)
missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
