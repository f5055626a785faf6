#!/usr/bin/env bats
# The Debian package: `make deb` (dpkg-buildpackage -us -uc -b on a copy of the sources) builds it,
# lintian finds nothing at its default level, its changelog's version is VERSION's, and the tprof
# it holds records and reads a program and has its man page. On CI (a fresh machine) the package is
# also installed, used and purged; elsewhere it is only unpacked.

load helpers

setup_file() {
	command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || return 0
	make -C "$TPROF_ROOT" -s deb BUILD="$BUILD_DEB" >/dev/null
}

BUILD_DEB=build/debtest
DEB="$TPROF_ROOT/$BUILD_DEB/deb"

need_tools() {
	command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
		skip "debhelper is not installed (scripts/deps.sh installs it)"
}

@test "make deb builds the package; lintian is clean; the version is VERSION's" {
	need_tools
	v=$(cat "$TPROF_ROOT/VERSION")
	[ -f "$DEB/tprof_${v}_amd64.deb" ]
	[ "$(cd "$TPROF_ROOT" && dpkg-parsechangelog -S Version)" = "$v" ]
	command -v lintian >/dev/null || skip "lintian is not installed"
	run lintian "$DEB/tprof_${v}_amd64.changes"
	echo "$output"
	[ "$status" -eq 0 ]
	! echo "$output" | grep -q '^[EW]: '
}

@test "the packaged tprof records ls and reads its trace; man tprof opens" {
	need_tools
	v=$(cat "$TPROF_ROOT/VERSION")
	dpkg-deb -x "$DEB/tprof_${v}_amd64.deb" root
	run root/usr/bin/tprof record -o ls.trace -- ls /
	[ "$status" -eq 0 ]
	root/usr/bin/tprof report ls.trace >/dev/null
	man -l root/usr/share/man/man1/tprof.1.gz 2>/dev/null | grep -q "tprof summary"
	if [ "${CI:-}" = true ] && [ "$(id -u)" -eq 0 ] && ! dpkg -s tprof >/dev/null 2>&1; then
		dpkg -i "$DEB/tprof_${v}_amd64.deb"
		tprof record -o ls2.trace -- ls / >/dev/null
		tprof report ls2.trace >/dev/null
		man tprof | grep -q "tprof record"
		dpkg -P tprof
		[ ! -e /usr/bin/tprof ] && [ ! -e /usr/lib/tprof ]
	fi
}
