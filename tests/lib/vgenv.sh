# Sourced by vgcompare.sh and vgleaks.sh: the environment both runs of a command start from, so
# that valgrind and libtprof.so see it equal byte for byte in length. Programs copy their
# environment (perl, make, Tcl's env array, zsh's parameters), so each variable is a block and its
# length is bytes allocated. Both runs start from a minimal one (PATH, HOME, PWD, PERL_HASH_SEED
# when set, and tprof's two variables); valgrind adds its LD_PRELOAD, GLIBC*_FORCE_NEW and
# LD_LIBRARY_PATH, and the tprof run gets the same, with libtprof.so's path padded with slashes to
# the length of valgrind's LD_PRELOAD.
# In: $build, and TRACE (the trace's name). Out: the arrays vg_env and tp_env, to put before the
# command.
vgpre=$(env -i /usr/bin/valgrind -q /usr/bin/env 2>/dev/null | sed -n 's/^LD_PRELOAD=//p')
tppre=$build/libtprof.so
while [ ${#tppre} -lt ${#vgpre} ]; do tppre=/$tppre; done
vg_env=(env -i "PATH=$PATH" "HOME=${HOME:-/}" "PWD=$PWD" ${PERL_HASH_SEED:+"PERL_HASH_SEED=$PERL_HASH_SEED"}
	TPROF_QUIET=1 "TPROF_OUTPUT=$TRACE")
tp_env=("${vg_env[@]}" GLIBCPP_FORCE_NEW=1 GLIBCXX_FORCE_NEW=1 LD_LIBRARY_PATH=/usr/lib/debug
	LD_PRELOAD="$tppre")
