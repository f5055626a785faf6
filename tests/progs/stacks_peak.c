/* A heap peak known by construction, for tprof peak (tests/integration/stacks.bats). Live bytes:
 *   site_a 3000, site_b 2000 -> 5000; free a -> 2000; site_loop 3 x 100 -> 2300;
 *   site_c 4000 -> 6300, the peak; free c -> 2300; site_d 3999 -> 6299 (just below);
 *   everything freed -> 0; site_e 6300 -> 6300 again, which equals the peak but does not pass it.
 * So the peak is 6300 bytes in 5 blocks, reached by site_c's allocation, with site_c 4000 (1 block),
 * site_b 2000 (1) and site_loop 300 (3) live. Nothing leaks. The peak's two times are 20 ms apart. */
#include <stdlib.h>
#include <time.h>
static void *keep[3];

static void *site_a(void) { return malloc(3000); }
static void *site_b(void) { return malloc(2000); }
static void *site_c(void) { return malloc(4000); }
static void *site_d(void) { return malloc(3999); }
static void *site_e(void) { return malloc(6300); }

static void site_loop(void)
{
	for (int i = 0; i < 3; i++)
		keep[i] = malloc(100);
}

int main(void)
{
	void *a = site_a();
	void *b = site_b();
	free(a);
	site_loop();
	void *c = site_c();
	free(c);
	void *d = site_d();
	free(d);
	free(b);
	for (int i = 0; i < 3; i++)
		free(keep[i]);
	struct timespec gap = {0, 20 * 1000 * 1000}; /* makes no heap call */
	nanosleep(&gap, NULL);
	free(site_e());
	return 0;
}
