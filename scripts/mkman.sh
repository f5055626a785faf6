#!/usr/bin/env bash
# Writes the tprof(1) man page on stdout, made from what the tprof executable given says of itself
# (`tprof help`, every `tprof help COMMAND`, `tprof --version`) and from the README's table of
# TPROF_* variables, so that the page says what the code accepts: `make install` runs it.
# Usage: mkman.sh TPROF README.md
set -eu
tprof=$1 readme=$2
# roff-safe text: backslashes doubled, a leading dot or quote made literal
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
version=$("$tprof" --version | head -1 | cut -d' ' -f2)
cat <<HEAD
.TH TPROF 1 "" "tprof $version" "User Commands"
.SH NAME
tprof \\- heap, kernel and FLOP profiler for native machine-learning code
.SH SYNOPSIS
.B tprof record
[\\fB\\-o\\fR \\fIFILE\\fR] \\fB\\-\\-\\fR \\fIPROGRAM\\fR [\\fIARGS\\fR...]
.br
.B tprof
\\fICOMMAND\\fR [\\fIOPTIONS\\fR] \\fITRACE\\fR...
.SH DESCRIPTION
\\fBtprof record\\fR runs a program with \\fBlibtprof.so\\fR preloaded; every heap call and every call of
a wrapped kernel (the tnn_* kernels, BLAS, LAPACK) is recorded into a trace file, which the other
commands read.
.SH COMMANDS
.nf
HEAD
"$tprof" help | awk '/^commands:/{on=1; next} on && /^  /' | esc
echo ".fi"
for c in $("$tprof" help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1}'); do
	[ "$c" = help ] || [ "$c" = version ] && continue
	echo ".SS tprof $c"
	echo ".nf"
	"$tprof" help "$c" | esc
	echo ".fi"
done
echo ".SH ENVIRONMENT"
# the README's rows: | `TPROF_X=...` | effect |
grep -E '^\| `TPROF_[A-Z_]+' "$readme" | while IFS='|' read -r _ var effect _; do
	var=$(echo "$var" | sed -e 's/^ *`//' -e 's/` *$//')
	echo ".TP"
	echo "$var" | esc | sed 's/^/.B /'
	echo "$effect" | sed -e 's/^ *//' -e 's/ *$//' -e 's/`//g' | esc
done
cat <<'TAIL'
.SH EXIT STATUS
0 success; 1 a usage error; 2 a file that is not a valid trace; 3 a picture that could not be drawn
(gnuplot missing or failing). \fBtprof record\fR ends as the program ended (its status, or its signal).
.SH FILES
.TP
.I PREFIX/lib/tprof/libtprof.so
the library preloaded into traced programs (TPROF_LIB names another)
.TP
.I PREFIX/lib/tprof/tprof-recorder
the recorder process libtprof.so starts when no tprof record serves it
.SH SEE ALSO
.BR valgrind (1),
.BR heaptrack (1);
README.md and docs/ in PREFIX/share/doc/tprof
TAIL
