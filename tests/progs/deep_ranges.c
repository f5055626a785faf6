/* Ranges nested 70 deep (tprof ops folds those past the 64th into it), then, still inside the
 * outermost, a range of its own that lasts about 20 ms: its pops must close what they opened. */
#include <time.h>

#include "../../include/tprof.h"

int main(void)
{
	tprof_range_push("outer");
	for (int i = 0; i < 70; i++)
		tprof_range_push("d");
	for (int i = 0; i < 70; i++)
		tprof_range_pop();
	tprof_range_push("after");
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
	tprof_range_pop();
	tprof_range_pop();
	return 0;
}
