/* A child subreaper whose children leave a grandchild behind as they end: each child forks, the
 * grandchild execs this program again (a new image, which looks for its ancestors' recorder), and
 * the child ends a moment later, while the new image may be walking up through it. The subreaper
 * reaps both and says so for every process it did not start; it prints how many it reaped. Under
 * tprof, a new image that lost its way up (its parent reaped between two reads) started a recorder
 * of its own, which ended as one more child of the subreaper. With "3" the child's child forks the
 * one that execs and both end at once: two ancestors gone during the walk. Usage: subreaper_storm
 * [N [USEC [3]]]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "leaf") == 0) {
		void *volatile p = malloc(10);
		free(p);
		return 0;
	}
	int n = argc > 1 ? atoi(argv[1]) : 300, usec = argc > 2 ? atoi(argv[2]) : 600;
	int three = argc > 3 && strcmp(argv[3], "3") == 0;
	if (prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) != 0)
		return 2;
	volatile pid_t *leaf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (leaf == MAP_FAILED)
		return 3;
	void *volatile p = malloc(100);
	free(p);
	int reaped = 0, odd = 0;
	for (int i = 0; i < n; i++) {
		leaf[0] = leaf[1] = 0;
		pid_t c = fork();
		if (c < 0)
			return 4;
		if (c == 0) {
			void *volatile q = malloc(10);
			free(q);
			pid_t g = fork();
			if (g > 0 && three)
				leaf[1] = g;
			if (g == 0 && three) { /* the middle one: forks the leaf and ends at once */
				pid_t l = fork();
				if (l == 0) {
					execl("/proc/self/exe", argv[0], "leaf", (char *)NULL);
					_exit(127);
				}
				*leaf = l;
				_exit(l < 0 ? 5 : 0);
			}
			if (g == 0) {
				execl("/proc/self/exe", argv[0], "leaf", (char *)NULL);
				_exit(127);
			}
			if (!three)
				*leaf = g;
			usleep((useconds_t)usec);
			_exit(g < 0 ? 5 : 0);
		}
		pid_t w;
		int st;
		while ((w = wait(&st)) > 0) {
			reaped++;
			if (w != c && w != leaf[0] && (!three || w != leaf[1])) {
				odd++;
				printf("reaped %d, not a child or grandchild of ours (status %#x)\n", (int)w, st);
			}
			else if (st != 0)
				printf("pid %d ended with status %#x\n", (int)w, st);
		}
	}
	printf("reaped %d of %d\n", reaped, (three ? 3 : 2) * n);
	return odd ? 1 : 0;
}
