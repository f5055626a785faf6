/* Starts N threads one after another (default 3000), each marking one range (an event that needs
 * its thread's slot, like a heap call, at less cost than a new malloc arena): more threads than
 * the preload has slots, faster than the recorder frees the slots of threads that are gone on its
 * own (every 200 ms). */
#include <pthread.h>
#include <stdlib.h>

#include "../../include/tprof.h"

static void *work(void *arg)
{
	(void)arg;
	tprof_range_push("work");
	tprof_range_pop();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3000;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, work, NULL) != 0 || pthread_join(t, NULL) != 0)
			return 1;
	}
	return 0;
}
