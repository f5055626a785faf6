#!/usr/bin/env bats
# Trace format version 4 as the reader takes it, on traces written by hand (mktrace.py) so that each
# holds exactly what a test asks: INFO's malloc owner (and the warning when no heap call was
# intercepted), END's flags (INFLIGHT: not complete, the end still said) and its new reasons, the
# exit status in text, JSON and CSV, older versions without those fields, and a file cut inside a
# block, which every command reads up to the cut and says so once.

load helpers

MK="$TPROF_ROOT/tests/integration/mktrace.py"
CHECK="$TPROF_ROOT/tests/integration/csv_check.py"
# ops, compare, diff and plot read the roofline: from TPROF_PEAK_GFLOPS, never measured here
export TPROF_PEAK_GFLOPS=100

setup() {
	WORK=$(mktemp -d)
	cd "$WORK"
	export TPROF_QUIET=1
	export TPROF_ROOFLINE_CACHE=$WORK/roofline.json
}

# mk OUT ARGS...: writes a hand-made trace, its block list in OUT.blocks ("OFFSET TYPE LENGTH")
mk() {
	$PY "$MK" "$@" >"$1.blocks"
}

# csv_col FILE.csv NAME: the field of column NAME in the one row
csv_col() {
	$PY -c 'import csv,sys; r=list(csv.reader(open(sys.argv[1], newline=""))); print(r[1][r[0].index(sys.argv[2])])' "$1" "$2"
}

@test "v4 INFO: malloc owner empty when the calls were intercepted, no warning" {
	mk t.trace --events 6
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json malloc_owner)" = "" ]
	[ "$(jget r.json events)" = 6 ]
	[ "$(jget r.json allocations)" = 3 ]
	[ "$(jget r.json complete)" = true ]
	run "$B/tprof" report t.trace
	[ "$status" -eq 0 ]
	[[ "$output" != *"intercepted"* ]]
	# no events and no owner: nothing special either
	mk e.trace --events 0
	run "$B/tprof" report e.trace
	[ "$status" -eq 0 ]
	[[ "$output" != *"intercepted"* ]]
	[[ "$output" != *"warning"* ]]
}

@test "v4 INFO: a malloc owner and no heap event: the report warns, JSON and CSV carry the owner" {
	owner=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
	mk t.trace --events 0 --owner "$owner"
	run "$B/tprof" report t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"  warning        no heap call was intercepted: the program's malloc is $owner (the executable defines malloc itself, or another allocator was preloaded ahead of libtprof.so)"* ]]
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json malloc_owner)" = "$owner" ]
	[ "$(jget r.json events)" = 0 ]
	"$B/tprof" report --csv t.trace >r.csv
	[ "$(csv_col r.csv malloc_owner)" = "$owner" ]
	$PY "$CHECK" r.csv r.json . "$(head -1 r.csv | tr -d '\r')"
	# with heap events the calls were intercepted after all: no warning, the owner still in JSON
	mk s.trace --events 4 --owner "$owner"
	run "$B/tprof" report s.trace
	[[ "$output" != *"intercepted"* ]]
	"$B/tprof" report --json s.trace >s.json
	[ "$(jget s.json malloc_owner)" = "$owner" ]
	# an owner that is not a plain path comes out escaped, never breaking the line
	mk h.trace --events 0 --owner $'/tmp/evil\nlib.so'
	run "$B/tprof" report h.trace
	[[ "$output" == *'malloc is /tmp/evil\nlib.so (the executable'* ]]
}

@test "v4 INFO without its malloc owner is corrupt" {
	mk t.trace --no-owner-field
	run "$B/tprof" report t.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"t.trace: byte 16: corrupt: INFO block without the malloc owner"* ]]
}

@test "versions 2 and 3: no malloc owner (empty), no END flags, reasons 1 to 4" {
	for v in 2 3; do
		mk v$v.trace --version $v --events 5 --end 1,0
		"$B/tprof" report --json v$v.trace >r.json
		[ "$(jget r.json malloc_owner)" = "" ]
		[ "$(jget r.json complete)" = true ]
		[ "$(jget r.json end)" = exit ]
		[ "$(jget r.json exit_status)" = 0 ] # older recorders wrote 0: said as the file says
		[ "$(jget r.json allocations)" = 3 ]
		mk w$v.trace --version $v --events 0 --end 2,7
		"$B/tprof" report --json w$v.trace >w.json
		[ "$(jget w.json end)" = _exit ]
		[ "$(jget w.json exit_status)" = 7 ]
		for reason in 5 6 0; do
			mk b.trace --version $v --end $reason,0
			off=$(awk '$2 == 7 { print $1 }' b.trace.blocks)
			run "$B/tprof" report b.trace
			[ "$status" -eq 2 ]
			[[ "$output" == *"b.trace: byte $off: corrupt: END block with unknown reason $reason (format version $v has 1 to 4)"* ]]
		done
	done
}

@test "END reasons: how the process ended in text, JSON and CSV, with the exit status" {
	# reason,value  end  signal  exit_status  text
	while IFS='|' read -r ev end sig st text; do
		mk t.trace --events 3 --end "$ev"
		"$B/tprof" report --json t.trace >r.json
		"$B/tprof" report --csv t.trace >r.csv
		echo "$ev: $(cat r.json)"
		[ "$(jget r.json complete)" = true ]
		[ "$(jget r.json end)" = "$end" ]
		$PY -c 'import json,sys; d=json.load(open("r.json")); s=sys.argv[1]; assert d.get("signal") == (int(s) if s else None), d' "$sig"
		$PY -c 'import json,sys; d=json.load(open("r.json")); s=sys.argv[1]; assert d["exit_status"] == (int(s) if s else None), d' "$st"
		[ "$(csv_col r.csv end)" = "$end" ]
		[ "$(csv_col r.csv signal)" = "$sig" ]
		[ "$(csv_col r.csv exit_status)" = "$st" ]
		$PY "$CHECK" r.csv r.json . "$(head -1 r.csv | tr -d '\r')"
		run "$B/tprof" report t.trace
		[ "$status" -eq 0 ]
		[[ "$output" == *"  duration       "*", 1 thread, $text"$'\n'* ]]
	done <<'EOF'
1,3|exit||3|ended by exit (status 3)
1,0|exit||0|ended by exit (status 0)
2,7|_exit||7|ended by _exit (status 7)
3,11|fatal signal|11||ended by fatal signal 11 (SIGSEGV)
3,6|fatal signal|6||ended by fatal signal 6 (SIGABRT)
3,40|fatal signal|40||ended by fatal signal 40 (SIGRTMIN+6)
3,200|fatal signal|200||ended by fatal signal 200
4,0|exec|||ended by exec
5,42|quick_exit||42|ended by quick_exit (status 42)
6,0|vanished|||ended without an exit call (raw exit system call or killed)
EOF
	# no END: end none, exit status null
	mk n.trace --events 3 --no-end
	"$B/tprof" report --json n.trace >n.json
	[ "$(jget n.json end)" = none ]
	[ "$(jget n.json exit_status)" = None ]
	[ "$(jget n.json complete)" = false ]
	run "$B/tprof" report n.trace
	[[ "$output" == *"incomplete: no end recorded"* ]]
}

@test "END reason outside 1 to 6 is corrupt in version 4" {
	for reason in 0 7 1000; do
		mk t.trace --end $reason,0
		off=$(awk '$2 == 7 { print $1 }' t.trace.blocks)
		run "$B/tprof" report t.trace
		[ "$status" -eq 2 ]
		[[ "$output" == *"t.trace: byte $off: corrupt: END block with unknown reason $reason (format version 4 has 1 to 6)"* ]]
	done
}

@test "END flag INFLIGHT: not complete, the end and exit status still reported" {
	mk t.trace --events 5 --end 1,4,1
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json complete)" = false ]
	[ "$(jget r.json end)" = exit ]
	[ "$(jget r.json exit_status)" = 4 ]
	[ "$(jget r.json cut_at_byte)" = None ]
	[ "$(jget r.json allocations)" = 3 ]
	"$B/tprof" report --csv t.trace >r.csv
	[ "$(csv_col r.csv complete)" = false ]
	[ "$(csv_col r.csv exit_status)" = 4 ]
	run "$B/tprof" report t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"ended by exit (status 4)"* ]]
	[[ "$output" == *"  incomplete     a thread was inside a heap call when the process ended: that call may be missing"* ]]
	mk s.trace --end 3,11,1
	"$B/tprof" report --json s.trace >s.json
	[ "$(jget s.json complete)" = false ]
	[ "$(jget s.json signal)" = 11 ]
	run "$B/tprof" leaks s.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"inside a heap call when the process ended"* ]]
	"$B/tprof" leaks --json s.trace >l.json
	[ "$(jget l.json complete)" = false ]
}

@test "END flag RESERVE (version 6): the report warns and says so in JSON; still complete; corrupt in version 5" {
	mk t.trace --version 6 --events 5 --end 1,0,2
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json reserve_failed)" = true ]
	[ "$(jget r.json complete)" = true ]
	run "$B/tprof" report t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"warning        memory for call stacks or a thread's ring was refused"* ]]
	mk u.trace --version 6 --events 5 --end 1,0
	"$B/tprof" report --json u.trace >u.json
	[ "$(jget u.json reserve_failed)" = false ]
	mk v.trace --version 5 --events 5 --end 1,0,2
	off=$(awk '$2 == 7 { print $1 }' v.trace.blocks)
	run "$B/tprof" report v.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"v.trace: byte $off: corrupt: END block with unknown flags 0x2"* ]]
}

@test "END flag SECCOMP (version 7): the report notes it, says why leaks are not classified, JSON and CSV say so; corrupt in version 6" {
	mk t.trace --version 7 --events 5 --end 1,0,4
	"$B/tprof" report --json t.trace >r.json
	[ "$(jget r.json seccomp)" = true ]
	[ "$(jget r.json reserve_failed)" = false ]
	[ "$(jget r.json complete)" = true ]
	"$B/tprof" report --csv t.trace >r.csv
	[ "$(csv_col r.csv seccomp)" = true ]
	run "$B/tprof" report t.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"note           the process installed a seccomp filter"* ]]
	mk u.trace --version 7 --events 5 --end 1,0
	"$B/tprof" report --json u.trace >u.json
	[ "$(jget u.json seccomp)" = false ]
	mk v.trace --version 6 --events 5 --end 1,0,4
	off=$(awk '$2 == 7 { print $1 }' v.trace.blocks)
	run "$B/tprof" report v.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"v.trace: byte $off: corrupt: END block with unknown flags 0x4"* ]]
}

@test "END flags NEW_UNHOOKED and DEEPBIND (version 11): the report warns that its totals undercount, JSON and CSV say so; corrupt in version 10" {
	for f in 16 32 48; do
		mk t.trace --version 11 --events 5 --end 1,0,$f
		"$B/tprof" report --json t.trace >r.json
		[ "$(jget r.json new_unhooked)" = $([ $((f & 16)) != 0 ] && echo true || echo false) ]
		[ "$(jget r.json deepbind)" = $([ $((f & 32)) != 0 ] && echo true || echo false) ]
		[ "$(jget r.json complete)" = true ]
		"$B/tprof" report --csv t.trace >r.csv
		[ "$(csv_col r.csv deepbind)" = $([ $((f & 32)) != 0 ] && echo true || echo false) ]
		run "$B/tprof" report t.trace
		[ "$status" -eq 0 ]
		[[ "$output" == *"TOTALS BELOW UNDERCOUNT"* ]]
		mk v.trace --version 10 --events 5 --end 1,0,$f
		off=$(awk '$2 == 7 { print $1 }' v.trace.blocks)
		run "$B/tprof" report v.trace
		[ "$status" -eq 2 ]
		[[ "$output" == *"v.trace: byte $off: corrupt: END block with unknown flags $(printf '0x%x' $f)"* ]]
	done
	mk u.trace --version 11 --events 5 --end 1,0
	run "$B/tprof" report u.trace
	[[ "$output" != *"TOTALS BELOW UNDERCOUNT"* ]]
}

@test "END flags this reader does not know are corrupt" {
	for flags in 2 3 0x80 0x100000000; do
		mk t.trace --end 1,0,$flags
		off=$(awk '$2 == 7 { print $1 }' t.trace.blocks)
		run "$B/tprof" report t.trace
		[ "$status" -eq 2 ]
		want=$(printf '0x%x' $((flags & ~1)))
		[[ "$output" == *"t.trace: byte $off: corrupt: END block with unknown flags $want"* ]]
	done
}

@test "cut inside a block: report reads up to it and says where, in text, JSON and CSV" {
	mk t.trace --events 10 --per-block 4
	# the third EVENTS block (calls 9 and 10), cut 3 bytes into its payload
	read -r off _ len < <(awk '$2 == 4' t.trace.blocks | sed -n 3p)
	nblocks=$(awk -v o="$off" '$1 < o' t.trace.blocks | wc -l)
	head -c "$((off + 9 + 3))" t.trace >cut.trace
	run "$B/tprof" report cut.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"  incomplete     trace cut at byte $off after $nblocks complete blocks: the rest is lost (8 events before it; the block there has 12 of its $((9 + len)) bytes)"* ]]
	[[ "$output" == *"incomplete: no end recorded"* ]]
	"$B/tprof" report --json cut.trace >r.json 2>err.txt
	[ ! -s err.txt ]
	[ "$(jget r.json cut_at_byte)" = "$off" ]
	[ "$(jget r.json complete)" = false ]
	[ "$(jget r.json end)" = none ]
	[ "$(jget r.json events)" = 8 ]
	[ "$(jget r.json allocations)" = 4 ]
	"$B/tprof" report --csv cut.trace >r.csv 2>err.txt
	[ ! -s err.txt ]
	[ "$(csv_col r.csv cut_at_byte)" = "$off" ]
	$PY "$CHECK" r.csv r.json . "$(head -1 r.csv | tr -d '\r')"
	# cut inside the header of the END block: everything else is read
	endoff=$(awk '$2 == 7 { print $1 }' t.trace.blocks)
	head -c "$((endoff + 4))" t.trace >h.trace
	run "$B/tprof" report h.trace
	[ "$status" -eq 0 ]
	[[ "$output" == *"trace cut at byte $endoff after $(awk -v o="$endoff" '$1 < o' t.trace.blocks | wc -l) complete blocks: the rest is lost (10 events before it; the file ends 4 bytes into a 9-byte block header)"* ]]
	[[ "$output" == *"10 recorded"* ]]
}

@test "cut inside a block: every other command warns once on stderr and goes on" {
	mk t.trace --events 10 --per-block 4
	mk good.trace --events 10 --per-block 4
	off=$(awk '$2 == 4' t.trace.blocks | sed -n 2p | cut -d' ' -f1)
	head -c "$((off + 11))" t.trace >cut.trace
	want="tprof: warning: cut.trace: trace cut at byte $off after"
	for cmd in "leaks" "leaks --json" "peak" "allocs --csv" "ops" "dump" "export --folded f.txt" \
		"export --chrome c.json" "plot -o plots" "diff cut.trace" "diff good.trace" "compare good.trace"; do
		mkdir -p plots
		set -- $cmd
		verb=$1
		shift
		run "$B/tprof" "$verb" "$@" cut.trace
		echo "$cmd: status $status"
		[ "$status" -eq 0 ]
		"$B/tprof" "$verb" "$@" cut.trace >out.txt 2>err.txt
		cat err.txt
		# plot says on stderr too that the trace has no kernel calls (no ops picture)
		grep -v "plot: the trace has no kernel calls" err.txt >warn.txt || true
		[ "$(grep -c . warn.txt)" -eq 1 ]
		[[ "$(cat warn.txt)" == "$want "*" complete blocks: the rest is lost (4 events before it; "* ]]
	done
	# what was read is what the commands show: the first EVENTS block's calls
	"$B/tprof" dump cut.trace 2>/dev/null | grep -vc '^#' >n.txt
	[ "$(cat n.txt)" = 4 ]
	"$B/tprof" leaks --json cut.trace 2>/dev/null >l.json
	[ "$(jget l.json complete)" = false ]
}

@test "only the end of the file may be cut: a wrong header there is corrupt, a cut INFO an error" {
	mk t.trace --events 2
	size=$(stat -c %s t.trace)
	# a block type that does not exist, 3 bytes of header
	{ cat t.trace; printf '\x63\x01\x00'; } >x.trace
	run "$B/tprof" report x.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"x.trace: byte $size: corrupt: unknown block type 99"* ]]
	# a length over the 16 MiB limit, 6 bytes of header
	{ cat t.trace; printf '\x04\x00\x00\x00\x02\x00'; } >l.trace
	run "$B/tprof" report l.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"l.trace: byte $size: corrupt: block length 33554432 exceeds"* ]]
	# a plausible header whose payload runs past the end: cut, after the whole trace
	{ cat t.trace; printf '\x04\x40\x00\x00\x00\x00\x00\x00\x00\x01'; } >p.trace
	run "$B/tprof" report --json p.trace
	[ "$status" -eq 0 ]
	echo "$output" >p.json
	[ "$(jget p.json cut_at_byte)" = "$size" ]
	[ "$(jget p.json complete)" = false ]
	[ "$(jget p.json end)" = none ] # the END before the cut is not the end of the file
	# a corrupt block before the cut is still corrupt
	off=$(awk '$2 == 4 { print $1 }' t.trace.blocks)
	head -c "$((size - 2))" t.trace >c.trace
	$PY -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2]) + 12); b=f.read(1); f.seek(int(sys.argv[2]) + 12); f.write(bytes([b[0]^1]))' c.trace "$off"
	run "$B/tprof" report c.trace
	[ "$status" -eq 2 ]
	[[ "$output" == *"c.trace: byte $off: corrupt: block checksum mismatch"* ]]
	# the INFO block cut: no trace at all
	for n in 17 20 30; do
		head -c $n t.trace >i.trace
		run "$B/tprof" report i.trace
		[ "$status" -eq 2 ]
		[[ "$output" == *"i.trace: byte 16: truncated: no complete INFO block"* ]]
		run "$B/tprof" leaks i.trace
		[ "$status" -eq 2 ]
	done
}
