#!/usr/bin/env bats
# --csv on every command that prints a table: RFC 4180 that python's csv module parses, the documented
# header, one row per row of the command's --json output and the same numbers
# (tests/integration/csv_check.py); --csv=TABLE for commands with several tables; --json with --csv
# is a usage error. Hostile names (tests/kernels/hostile_names.c, on the naive kernels) keep their exact bytes in CSV,
# never change the row count, and come out escaped in text tables.

load helpers

CHECK="$TPROF_ROOT/tests/integration/csv_check.py"
# The roofline from a file the tests write (setup), never measured here.
export TPROF_PEAK_GFLOPS=100

STACK="function,file,line,module,offset,stack"
H_REPORT="file,program,exe,pid,ppid,clock,duration_ns,threads,events,allocations,frees,bytes_allocated,peak_bytes,peak_blocks,peak_time_ns,leaked_bytes,leaked_blocks,unmatched_frees,failed_allocations,reused_live_addresses,lost_events,lossy,complete,end,signal,calls_malloc,calls_calloc,calls_realloc,calls_reallocarray,calls_free,calls_posix_memalign,calls_aligned_alloc,calls_memalign,calls_valloc,calls_pvalloc,peak_rss_bytes,peak_rss_time_ns,rss_samples,exit_status,malloc_owner,cut_at_byte,reserve_failed,seccomp,leaks_classified,definitely_lost_bytes,definitely_lost_blocks,indirectly_lost_bytes,indirectly_lost_blocks,possibly_lost_bytes,possibly_lost_blocks,still_reachable_bytes,still_reachable_blocks,not_classified,peak_rss_includes_tprof,unfinished_call,new_unhooked,deepbind"
H_THREADS="tid,name,events,lost"
H_LEAKS="kind,bytes,blocks,indirect_bytes,truncated,$STACK"
H_PEAK="bytes,blocks,truncated,$STACK"
H_SITES="allocations,bytes,temporary,truncated,$STACK"
H_HIST="min,max,allocations,bytes"
H_SCALLS="calls,bytes,temporary,truncated,$STACK"
H_SPEAK="bytes,blocks,truncated,$STACK"
H_STEMP="temporary,calls,bytes,truncated,$STACK"
H_OPS="name,calls,self_ns,total_ns,flops,macs,bytes,gflops_per_s,percent_of_peak,fp_bits,intensity,bound,p50_ns,p95_ns,p99_ns,ci95_lo_ns,ci95_hi_ns,flops_nominal"
H_RANGES="$H_OPS,alloc_bytes,allocs,peak_live_growth,kernel_ns"
H_OPTHREADS="tid,name,main,wall_ns,kernel_ns,pool_ns,outside_ns,idle_ns,calls"
H_OPREGIONS="opened_by,regions,threads,wall_ns,busy_ns,imbalance"
H_STEPS="count,skipped,mean_ns,std_ns,p50_ns,p95_ns,ci95_lo_ns,ci95_hi_ns,flops_per_step"
H_COMPARE="file,program,params,steps,step_mean_ns,step_ci95_lo_ns,step_ci95_hi_ns,flops_per_step,gflops_per_s,kernel_share,heap_peak_bytes"
H_ROOF="version,cpu,cores,isa,fp32_gflops_1core,fp32_gflops_all,fp64_gflops_1core,fp64_gflops_all,stream_gbs_1core,stream_gbs_all,stream_array_mib,seconds,measured_at,busy,source,others_from,cache_path,cache_saved,ridge_fp32,ridge_fp64"
H_ISA="isa,fp32_gflops_1core,fp32_gflops_all,fp64_gflops_1core,fp64_gflops_all"
H_DSUM="metric,a,b,delta,rel"
H_DOPS="name,status,calls_a,calls_b,calls_delta,calls_rel,self_ns_a,self_ns_b,self_ns_delta,self_ns_rel,total_ns_a,total_ns_b,total_ns_delta,total_ns_rel,flops_a,flops_b,flops_delta,flops_rel,gflops_per_s_a,gflops_per_s_b,gflops_per_s_delta,gflops_per_s_rel"
H_DSITES="site,stack,truncated,status,allocations_a,allocations_b,allocations_delta,allocations_rel,bytes_a,bytes_b,bytes_delta,bytes_rel,leaked_bytes_a,leaked_bytes_b,leaked_bytes_delta,leaked_bytes_rel,leaked_blocks_a,leaked_blocks_b,leaked_blocks_delta,leaked_blocks_rel"
H_DSTEPS="count_a,count_b,mean_ns_a,mean_ns_b,std_ns_a,std_ns_b,ci95_lo_ns_a,ci95_hi_ns_a,ci95_lo_ns_b,ci95_hi_ns_b,delta_mean_ns,rel,delta_ci95_lo_ns,delta_ci95_hi_ns,verdict,flops_per_step_a,flops_per_step_b,flops_per_step_delta,flops_per_step_rel,gflops_per_s_a,gflops_per_s_b"

setup() {
	WORK=$(mktemp -d)
	cd "$WORK"
	export TPROF_QUIET=1
	export TPROF_ROOFLINE_CACHE=$WORK/roofline.json
}

# same CSV_TABLE ROWS HEADER -- COMMAND ARGS...: COMMAND with --csv[=TABLE] and with --json, compared
# (CSV_TABLE "" for plain --csv)
same() {
	local table=$1 rows=$2 header=$3
	shift 4
	local opt=--csv${table:+=$table}
	"$B/tprof" "$1" "$opt" "${@:2}" >out.csv
	"$B/tprof" "$1" --json "${@:2}" >out.json
	$PY "$CHECK" out.csv out.json "$rows" "$header"
}

@test "report, leaks, peak, allocs and summary: every table as CSV equals the JSON" {
	traced "$B/progs/stacks_leak"
	same "" . "$H_REPORT" -- report t.trace
	same threads thread_list "$H_THREADS" -- report t.trace
	same "" leaks "$H_LEAKS" -- leaks t.trace
	same "" leaks "$H_LEAKS" -- leaks --top 2 t.trace
	[ "$(wc -l <out.csv)" -eq 3 ]
	same "" live "$H_PEAK" -- peak t.trace
	same "" by_allocations "$H_SITES" -- allocs --top 0 t.trace
	same by_allocations by_allocations "$H_SITES" -- allocs t.trace
	same by_bytes by_bytes "$H_SITES" -- allocs --top 3 t.trace
	same histogram histogram "$H_HIST" -- allocs t.trace
	same "" by_calls "$H_SCALLS" -- summary t.trace
	same peak_consumers peak_consumers "$H_SPEAK" -- summary --top 0 t.trace
	same by_temporary by_temporary "$H_STEMP" -- summary t.trace
	same in_use_at_exit in_use_at_exit "$H_SPEAK" -- summary --top 3 t.trace
	# a known row: plant_calloc leaks 77 bytes in 1 block from its marked line
	line=$(grep -n 'LEAK:plant_calloc\b' "$TPROF_ROOT/tests/progs/stacks_leak.c" | cut -d: -f1)
	"$B/tprof" leaks --csv t.trace >l.csv
	grep -q "^definite,77,1,0,false,plant_calloc,[^,]*stacks_leak.c,$line,stacks_leak,[0-9]*,plant_calloc (stacks_leak.c:$line);main (stacks_leak.c:" l.csv
}

@test "ops (by op, by shape, by range, steps), compare and diff: every table as CSV equals the JSON" {
	TPROF_OUTPUT=a.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/diff_run"
	TPROF_OUTPUT=b.trace LD_PRELOAD="$B/libtprof.so" "$B/progs/diff_run" after
	same "" ops "$H_OPS" -- ops a.trace
	[ "$(wc -l <out.csv)" -eq 4 ]
	same ops ops "$H_OPS" -- ops --group-by shape --sort name b.trace
	grep -q '^"tnn_matmul(M=16,N=16,K=32,flags=0,bias=0)",5,' out.csv # quoted: commas inside
	same "" ops "$H_RANGES" -- ops --by range a.trace
	same "" threads "$H_OPTHREADS" -- ops --by thread a.trace
	same "" regions "$H_OPREGIONS" -- ops --by region a.trace
	same steps steps "$H_STEPS" -- ops a.trace
	grep -q '^5,0,' out.csv
	same steps steps "$H_STEPS" -- ops --skip-steps 2 a.trace
	grep -q '^3,2,' out.csv
	same "" runs "$H_COMPARE" -- compare a.trace b.trace a.trace
	same "" summary "$H_DSUM" -- diff a.trace b.trace
	grep -q '^leaked_bytes,100,877,777,7.77' out.csv
	same ops ops "$H_DOPS" -- diff a.trace b.trace
	grep -q '^tnn_gelu_fwd,added,0,5,5,,' out.csv # no relative change from 0
	same sites sites "$H_DSITES" -- diff --top 0 a.trace b.trace
	same steps steps "$H_DSTEPS" -- diff a.trace b.trace
}

@test "roofline: the figures and the per-ISA table as CSV equal the JSON" {
	"$B/tprof" roofline --json >here.json
	$PY - here.json roofline.json <<'PY'
import json, sys
here = json.load(open(sys.argv[1]))
isa = lambda n, x: {"isa": n, "fp32_gflops_1core": x, "fp32_gflops_all": 2 * x, "fp64_gflops_1core": x / 2,
                    "fp64_gflops_all": x}
c = {"version": 1, "cpu": here["cpu"], "cores": here["cores"], "isa": "baseline", "fp32_gflops_1core": 10.5,
     "fp32_gflops_all": 21, "fp64_gflops_1core": 5.25, "fp64_gflops_all": 10.5, "stream_gbs_1core": 7,
     "stream_gbs_all": 9.75, "by_isa": [isa("baseline", 10.5), isa("other", 3.125)], "stream_array_mib": 64,
     "seconds": 1.5, "measured_at": 1700000000, "busy": False}
json.dump(c, open(sys.argv[2], "w"))
PY
	unset TPROF_PEAK_GFLOPS
	same "" . "$H_ROOF" -- roofline
	grep -q ',baseline,10.5,21,5.25,10.5,7,9.75,64,1.5,1700000000,false,cache,cache,' out.csv
	same by_isa by_isa "$H_ISA" -- roofline
	[ "$(wc -l <out.csv)" -eq 3 ]
}

@test "--csv: RFC 4180 quoting of a path with a comma, a quote and a newline" {
	traced "$B/progs/stacks_leak"
	name=$'odd, "name"\nhere.trace'
	mv t.trace "$name"
	same "" . "$H_REPORT" -- report "$name"
	$PY - out.csv "$name" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert len(rows) == 2 and rows[1][0] == sys.argv[2], rows
PY
	grep -q '^"odd, ""name""$' out.csv # quoted, the quotes doubled, the newline kept inside
}

@test "--csv usage: not with --json, TABLE must exist, one-table commands take no TABLE" {
	traced "$B/progs/stacks_leak"
	for cmd in report leaks peak allocs ops; do
		run "$B/tprof" $cmd --json --csv t.trace
		[ "$status" -eq 1 ]
		[[ "$output" == *"--json and --csv exclude each other"* ]]
	done
	run "$B/tprof" compare --csv --json t.trace t.trace
	[ "$status" -eq 1 ]
	run "$B/tprof" roofline --csv --json
	[ "$status" -eq 1 ]
	run "$B/tprof" allocs --csv=nosuch t.trace
	[ "$status" -eq 1 ]
	[[ "$output" == *"no table 'nosuch'"*"by_allocations, by_bytes, histogram"* ]]
	run "$B/tprof" leaks --csv=leaks t.trace
	[ "$status" -eq 1 ]
	run "$B/tprof" ops --csv=nosuch t.trace
	[ "$status" -eq 1 ]
	run "$B/tprof" peak --csv bad-missing.trace
	[ "$status" -eq 2 ]
}

@test "hostile names: exact bytes through CSV, the row count intact, escaped in every text table" {
	rm -f /tmp/tprof_hostile_canary
	traced "$B/progs/hostile_names_naive" >/dev/null # on libknaive.so: runs under SAN=1 too
	"$B/tprof" ops --by range --csv t.trace >r.csv
	"$B/tprof" ops --by range --json t.trace >r.json
	$PY "$CHECK" r.csv r.json ops "$H_RANGES"
	# every range name of the program, byte for byte, in the CSV (as a path: '/' and '\' escaped)
	$PY - r.csv "$TPROF_ROOT/tests/kernels/hostile_names.c" <<'PY'
import codecs, csv, io, re, sys
src = open(sys.argv[2]).read()
block = src[src.index("names[] = {"):src.index("};", src.index("names[] = {"))]
names = [codecs.decode(m, "unicode_escape").encode("latin-1") for m in re.findall(r'^\s*"((?:[^"\\]|\\.)*)",$', block, re.M)]
assert len(names) == 10, names
names = [n.replace(b"\\", b"\\\\").replace(b"/", b"\\/") for n in names]
rows = list(csv.reader(io.StringIO(open(sys.argv[1], "rb").read().decode("latin-1"), newline="")))
got = sorted(r[0].encode("latin-1") for r in rows[1:])
assert got == sorted(names), (got, sorted(names))
assert all(r[1] == "4" for r in rows[1:]), rows # 3 steps + 1 thread each: nothing split a row
PY
	# text tables: no raw control byte, one line per range, each name escaped
	"$B/tprof" ops --by range t.trace >ops.txt
	"$B/tprof" report t.trace >report.txt
	"$B/tprof" compare t.trace t.trace >compare.txt
	"$B/tprof" diff t.trace t.trace >diff.txt
	"$B/tprof" leaks t.trace >leaks.txt
	"$B/tprof" allocs t.trace >allocs.txt
	$PY - ops.txt report.txt compare.txt diff.txt leaks.txt allocs.txt <<'PY'
import sys
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    bad = sorted({b for b in data if (b < 0x20 and b != 0x0a) or b == 0x7f})
    assert not bad, (path, bad)
    data.decode("utf-8") # invalid UTF-8 was escaped too
ops = open(sys.argv[1], "rb").read().decode()
for esc in ('quote" back\\\\\\\\slash ', # the path's "\\" for the name's '\', each '\' then escaped
            "line\\nbreak\\r\\ttab ", "\\x01\\x1f ctl \\x7f ", "bad utf8 \\xff\\xfe \\xc3 ",
            'comma,semi;"csv" '):
    lines = [l for l in ops.splitlines() if l.startswith(esc)]
    assert len(lines) == 1 and lines[0][len(esc):].split()[0] == "4", (esc, lines)
PY
	[ ! -e /tmp/tprof_hostile_canary ]
}

@test "output that cannot be written (a full disk): a message and exit status 2, in every format" {
	[ -w /dev/full ] || skip "no /dev/full"
	traced "$B/progs/stacks_leak"
	for args in "report" "report --json" "leaks --csv" "summary --json" "dump"; do
		run bash -c '"$0" $1 t.trace >/dev/full' "$B/tprof" "$args"
		echo "$args: $status $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"cannot write the output: No space left on device"* ]]
	done
}
