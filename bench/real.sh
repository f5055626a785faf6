#!/usr/bin/env bash
# Overhead on programs nobody here wrote, whose allocations come from many call paths (unlike the
# storm's one): a perl script that fills and empties a hash of arrays (its own timer), and
# `openssl speed sha256` on 1 KiB blocks (two allocations per digest, from two call paths; its own
# rate). Bare, under tprof with stacks (default depth) and without (TPROF_DEPTH=0), and under
# heaptrack, alternating; best of RUNS. Prints each one's time (perl) or rate (openssl) and the
# extra time of tprof against heaptrack's. Run it on an idle machine.
set -u
BUILD=${BUILD:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
B="$root/$BUILD"
RUNS=${REAL_RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
have_heaptrack=1
command -v heaptrack >/dev/null || have_heaptrack=0
cat >hash.pl <<'PL'
use Time::HiRes qw(time);
my $t = time; my %h;
for my $i (1..300000) { $h{"k$i"} = [$i, "v$i"]; delete $h{"k" . ($i - 1000)} if $i > 1000; }
my @a = map { { x => $_ } } 1..100000;
printf "%.6f\n", time - $t;
PL
# run KIND COMMAND...: the program's own figure under KIND (bare, tprof, tprof0, heaptrack)
run() {
	local kind=$1
	shift
	rm -f r.trace h.*
	case $kind in
	bare) "$@" ;;
	tprof) TPROF_QUIET=1 TPROF_OUTPUT=r.trace LD_PRELOAD="$B/libtprof.so" "$@" ;;
	tprof0) TPROF_DEPTH=0 TPROF_QUIET=1 TPROF_OUTPUT=r.trace LD_PRELOAD="$B/libtprof.so" "$@" ;;
	heaptrack) heaptrack -o h "$@" 2>/dev/null ;;
	esac
}
kinds="bare tprof tprof0"
[ $have_heaptrack = 1 ] && kinds="$kinds heaptrack"
for prog in perl openssl; do
	command -v $prog >/dev/null || { echo "$prog: not installed, skipped"; continue; }
	: >res.txt
	for r in $(seq "$RUNS"); do
		for k in $kinds; do
			if [ $prog = perl ]; then
				v=$(run $k perl hash.pl | grep -E "^[0-9]+\.[0-9]+$" | tail -1) # heaptrack prints lines of its own
			else # digests per second of 1 KiB, as seconds per million digests
				v=$(run $k openssl speed -seconds 1 -bytes 1024 sha256 2>/dev/null | awk '$1 == "sha256" { sub(/k$/, "", $2); printf "%.6f\n", 1024 / ($2 * 1000) * 1e6 }')
			fi
			echo "$k $v" >>res.txt
		done
	done
	awk -v prog=$prog '{ if (!($1 in m) || $2 < m[$1]) m[$1] = $2 }
		END {
			what = prog == "perl" ? "perl hash script, s" : "openssl sha256 1 KiB, s per million digests"
			printf "%-44s bare %.3f  tprof %.3f  tprof0 %.3f", what, m["bare"], m["tprof"], m["tprof0"]
			if ("heaptrack" in m) {
				h = m["heaptrack"] - m["bare"]; t = m["tprof"] - m["bare"]; t0 = m["tprof0"] - m["bare"]
				printf "  heaptrack %.3f  extra time tprof/heaptrack %.2f (stacks off %.2f)", m["heaptrack"], t / h, t0 / h
			}
			printf "\n" }' res.txt
done
echo "(best of $RUNS runs each, alternating; tprof: stacks at the default depth; tprof0: TPROF_DEPTH=0)"
