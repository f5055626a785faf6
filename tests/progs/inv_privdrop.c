/* A daemon's privilege drop, for tests/integration/invisible.bats: started as root, it allocates,
 * drops to nobody (65534) with setgroups/setresgid/setresuid, checks that every id changed, then
 * allocates and frees BLOCKS blocks of SIZE bytes (a size nothing else uses, for the trace check) and
 * returns 0. Prints what it saw. Not root: prints "not root" and exits 77. */
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "inv.h"

#define BLOCKS 1000
#define SIZE 7001

int main(void)
{
	if (getuid() != 0) {
		say("not root\n");
		return 77;
	}
	for (int i = 0; i < 1000; i++) {
		sink = malloc(64);
		free(sink);
	}
	if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
	    setresuid(65534, 65534, 65534) != 0) {
		say("cannot drop privileges\n");
		return 1;
	}
	uid_t r, e, s;
	gid_t gr, ge, gs;
	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	say("uid %d %d %d gid %d %d %d groups %d\n", (int)r, (int)e, (int)s, (int)gr, (int)ge, (int)gs,
	    getgroups(0, NULL));
	for (int i = 0; i < BLOCKS; i++) {
		void *p = malloc(SIZE);
		sink = p;
		free(p);
	}
	usleep(20000);
	say("%d blocks of %d bytes allocated and freed as nobody\n", BLOCKS, SIZE);
	return r == 65534 && e == 65534 && s == 65534 && ge == 65534 ? 0 : 1;
}
