#!/usr/bin/env bats
# The fuzz target (tests/fuzz/fuzz_trace.c: every command that reads a trace, under ASan and UBSan)
# runs for a short while over the corpus in tests/fuzz/corpus: no crash, leak, hang or blow-up.
# Longer runs: make fuzz; build/fuzz/fuzz_trace -max_total_time=3600 DIR tests/fuzz/corpus

load helpers

@test "fuzz: 30 s of libFuzzer over every command that reads a trace finds nothing" {
	command -v clang >/dev/null || skip "clang is not installed (scripts/deps.sh installs it)"
	(cd "$TPROF_ROOT" && make -s fuzz >/dev/null)
	mkdir corpus
	cp "$TPROF_ROOT"/tests/fuzz/corpus/* corpus/
	run timeout 120 "$TPROF_ROOT/build/fuzz/fuzz_trace" -seed=1 -max_total_time=30 -rss_limit_mb=2048 -timeout=10 \
		-artifact_prefix="$WORK/" corpus
	echo "$output" | grep -v '^tprof' | tail -20
	[ "$status" -eq 0 ]
	[ -z "$(ls "$WORK" | grep -E '^(crash|leak|oom|timeout|slow-unit)-')" ]
	[[ "$output" == *"Done "*" runs in "* ]]
}
