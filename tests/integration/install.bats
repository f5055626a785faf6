#!/usr/bin/env bats
# make install / uninstall into a temporary DESTDIR: the installed tprof finds its library and
# recorder relative to itself (so the tree can be moved), records and reads a program; the man page
# renders and says what the commands accept; completion offers commands and options; pkg-config
# gives the header's flags; --version and help; uninstall leaves no file behind.

load helpers

setup_file() {
	export DEST=$(mktemp -d)
	make -C "$TPROF_ROOT" -s install DESTDIR="$DEST" PREFIX=/usr BUILD="${BUILD:-build}" >/dev/null
}

teardown_file() {
	rm -rf "$DEST"
}

@test "the installed tprof records a program and reads its trace; the tree can be moved" {
	for f in bin/tprof lib/tprof/libtprof.so lib/tprof/tprof-recorder include/tprof.h share/pkgconfig/tprof.pc \
		share/man/man1/tprof.1 share/bash-completion/completions/tprof share/zsh/vendor-completions/_tprof \
		share/doc/tprof/README.md; do
		[ -f "$DEST/usr/$f" ] || { echo "missing $f"; false; }
	done
	run "$DEST/usr/bin/tprof" record -o x.trace -- "$B/progs/heap_known"
	[ "$status" -eq 0 ]
	run "$DEST/usr/bin/tprof" report --json x.trace
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | $PY -c 'import json,sys; print(json.load(sys.stdin)["complete"])')" = True ]
	cp -a "$DEST/usr" moved
	run moved/bin/tprof record -o y.trace -- ls /
	[ "$status" -eq 0 ]
	moved/bin/tprof report y.trace >/dev/null
	# without its library, it says where it looked and what to set
	mkdir alone && cp "$DEST/usr/bin/tprof" alone/
	run alone/tprof record -o z.trace -- /bin/true
	[ "$status" -eq 3 ]
	[[ "$output" == *"cannot find libtprof.so"*"TPROF_LIB"* ]]
	TPROF_LIB="$DEST/usr/lib/tprof/libtprof.so" alone/tprof record -o z.trace -- ls / >/dev/null
	alone/tprof report z.trace >/dev/null
}

@test "man tprof: every command's options, the TPROF_ variables, no groff warning" {
	page="$DEST/usr/share/man/man1/tprof.1"
	run groff -man -ww -z "$page"
	[ -z "$output" ]
	text=$(MANWIDTH=100 man -l "$page" 2>/dev/null)
	for c in record report summary leaks peak allocs ops compare diff export plot roofline dump; do
		[[ "$text" == *"tprof $c"*"usage: tprof $c"* ]] || { echo "no section for $c"; false; }
	done
	[[ "$text" == *"--error-exitcode"*"--thread main|TID"* ]]
	[[ "$text" == *ENVIRONMENT*TPROF_DEPTH=N*TPROF_LIB=PATH* ]]
}

@test "bash and zsh completion: commands and a command's options; pkg-config; --version; help" {
	run bash -c "source '$DEST/usr/share/bash-completion/completions/tprof'; complete -p tprof"
	[[ "$output" == *"-F _tprof tprof"* ]]
	run bash -c "source '$DEST/usr/share/bash-completion/completions/tprof'; COMP_WORDS=('$DEST/usr/bin/tprof' su); COMP_CWORD=1; _tprof; echo \${COMPREPLY[@]}"
	[ "$output" = summary ]
	run bash -c "source '$DEST/usr/share/bash-completion/completions/tprof'; COMP_WORDS=('$DEST/usr/bin/tprof' leaks --k); COMP_CWORD=2; _tprof; echo \${COMPREPLY[@]}"
	[ "$output" = --kinds ]
	run env PKG_CONFIG_PATH="$DEST/usr/share/pkgconfig" pkg-config --libs tprof
	[ "$(echo $output)" = "-ldl" ] # pkg-config ends it with a space
	run env PKG_CONFIG_PATH="$DEST/usr/share/pkgconfig" pkg-config --variable=includedir tprof
	[ "$output" = /usr/include ]
	# zsh: compinit finds it; run with compadd and _files replaced by functions that print what they
	# are given, it offers commands, options, files
	if command -v zsh >/dev/null; then
		run zsh -fc "fpath=('$DEST/usr/share/zsh/vendor-completions' \$fpath); autoload -U compinit; compinit -u -D; print \$_comps[tprof]"
		[ "$output" = _tprof ]
		zc() { zsh -fc "compadd() { [[ \$1 == -a ]] && print -l -- \${(P)2} }; _files() { print FILES }; words=($1); CURRENT=$2; PREFIX=$3; source '$DEST/usr/share/zsh/vendor-completions/_tprof'"; }
		[[ " $(zc "'$DEST/usr/bin/tprof' su" 2 su | tr '\n' ' ') " == *" summary "* ]]
		[[ " $(zc "'$DEST/usr/bin/tprof' leaks --k" 3 --k | tr '\n' ' ') " == *" --kinds "* ]]
		[ "$(zc "'$DEST/usr/bin/tprof' leaks x" 3 x)" = FILES ]
	fi
	run "$DEST/usr/bin/tprof" --version
	[ "$status" -eq 0 ]
	[[ "$output" == "tprof $(cat "$TPROF_ROOT/VERSION")"*"reads versions 2 to $(format_version)"*libdw*libzstd*libunwind* ]]
	[ "$("$DEST/usr/bin/tprof" version)" = "$output" ]
	run "$DEST/usr/bin/tprof" help peak
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: tprof peak"* ]]
	run "$DEST/usr/bin/tprof" help nothing
	[ "$status" -eq 1 ]
}

@test "make uninstall removes every installed file and tprof's own directories" {
	make -C "$TPROF_ROOT" -s uninstall DESTDIR="$DEST" PREFIX=/usr >/dev/null
	[ -z "$(find "$DEST" -type f)" ]
	[ ! -e "$DEST/usr/lib/tprof" ] && [ ! -e "$DEST/usr/share/doc/tprof" ]
}
