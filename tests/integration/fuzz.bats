#!/usr/bin/env bats
# The fuzz target (tests/fuzz/fuzz_trace.c: every command that reads a trace, under ASan and UBSan)
# runs 6000 inputs over the corpus in tests/fuzz/corpus, and 3000 with the decode thread: no crash,
# leak, hang or blow-up; and the cache-file reader's target (tests/fuzz/fuzz_symcache.c) 20000 over
# tests/fuzz/symcache_corpus, and the suppression-file reader's (tests/fuzz/fuzz_supp.c) 50000 over
# tests/fuzz/supp_corpus.
# Longer runs: make fuzz; build/fuzz/fuzz_trace -max_total_time=3600 DIR tests/fuzz/corpus

load helpers

# fuzz TARGET CORPUS RUNS: builds the targets, runs TARGET over a copy of tests/fuzz/CORPUS with a
# fixed seed and count (the same inputs every run: found bugs are fixed, not met by chance)
fuzz() {
	command -v clang >/dev/null || skip "clang is not installed (scripts/deps.sh installs it)"
	(cd "$TPROF_ROOT" && make -s fuzz >/dev/null)
	mkdir corpus
	cp "$TPROF_ROOT/tests/fuzz/$2"/* corpus/
	run timeout 300 "$TPROF_ROOT/build/fuzz/$1" -seed=1 -runs="$3" -rss_limit_mb=2048 -timeout=10 \
		-artifact_prefix="$WORK/" corpus
	echo "$output" | grep -v '^tprof' | tail -20
	[ "$status" -eq 0 ]
	[ -z "$(ls "$WORK" | grep -E '^(crash|leak|oom|timeout|slow-unit)-')" ]
	[[ "$output" == *"Done "*" runs in "* ]]
}

@test "fuzz: 6000 runs of libFuzzer over every command that reads a trace find nothing" {
	fuzz fuzz_trace corpus 6000
}

@test "fuzz: 3000 runs over every command that reads a trace, with the decode thread, find nothing" {
	# the pipeline and the decompression ahead (prefetch.c), which one thread never runs
	TPROF_DECODE_THREAD=1 fuzz fuzz_trace corpus 3000
}

@test "fuzz: 20000 runs of libFuzzer over the symbolizer's cache-file reader find nothing" {
	fuzz fuzz_symcache symcache_corpus 20000
}

@test "fuzz: 50000 runs of libFuzzer over the leak suppression file reader find nothing" {
	fuzz fuzz_supp supp_corpus 50000
}
