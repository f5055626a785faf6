/* Ranges whose names hold the path separator and the escape: "a/b", then "c\d" inside it, around
 * the heap peak (1 MiB), between two steps. tprof peak and tprof ops must name the path alike, with
 * '/' and '\' of a name escaped, so that it does not read as three ranges a, b and c\d. */
#include <stdlib.h>

#include "../../include/tprof.h"

int main(void)
{
	tprof_step();
	tprof_range_push("a/b");
	tprof_range_push("c\\d");
	void *volatile p = malloc(1 << 20);
	tprof_range_pop();
	tprof_range_pop();
	free(p);
	tprof_step();
	return 0;
}
