/* A traced process that asks its recorder for the reachability scan itself, naming as the thread to
 * read through a process that is not one of its threads: a child of its own that it leaves a zombie
 * (nothing can be read of one). The recorder must read this process, as it registered, whatever
 * the shared memory names: its 100-byte block, held in a global, is then still reachable; read
 * through the zombie, the scan would fail ("unreadable"). Its trace ends at the SIGKILL it sends
 * itself once the scan is over. Run under libtprof.so. */
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

static void *volatile held;

int main(void)
{
	held = malloc(100); /* registers; the block the scan must find */
	pid_t zombie = fork();
	if (zombie < 0)
		return 1;
	if (zombie == 0)
		_exit(0);
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long base = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "memfd:tprof")) {
			base = strtoul(line, NULL, 16);
			break;
		}
	if (f)
		fclose(f);
	if (!base) {
		fprintf(stderr, "rogue_scan: no shared memory of tprof's mapped\n");
		return 1;
	}
	struct timespec ts = {0, 100000000};
	nanosleep(&ts, NULL); /* the child is a zombie by now */
	struct tprof_shm *shm = (struct tprof_shm *)base;
	shm->scan_threads[0].tid = zombie;
	shm->scan_threads[0].sp = 0;
	shm->scan_asked = 0;
	shm->scan_reason = TPROF_END_EXIT;
	atomic_store(&shm->scan_stopped, 1);
	atomic_store(&shm->scan_state, TPROF_SCAN_ASKED);
	atomic_fetch_add(&shm->kick, 1);
	syscall(SYS_futex, &shm->kick, FUTEX_WAKE, 1, NULL, NULL, 0);
	for (int i = 0; i < 1000 && atomic_load(&shm->scan_state) != TPROF_SCAN_DONE; i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	printf("scan %s\n", atomic_load(&shm->scan_state) == TPROF_SCAN_DONE ? "done" : "not done");
	fflush(stdout);
	raise(SIGKILL);
	return 0;
}
