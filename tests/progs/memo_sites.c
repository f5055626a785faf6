/* Heap calls from one allocation site reached by six call paths, in a pseudo-random order: two
 * paths at the same depth through different callers (the same start of the walk, other words on
 * the stack), deeper ones, and more paths than the stack walk keeps walks of. Path k allocates
 * 100 + k bytes, so that a stack given another path's id shows in its bytes. Prints the number
 * of calls of each path: "path K CALLS FRAMES", FRAMES the functions from the site out to main. */
#include <stdio.h>
#include <stdlib.h>

static void *volatile sink;

__attribute__((noinline)) static void site(size_t n)
{
	sink = malloc(n);
	free(sink);
}
__attribute__((noinline)) static void via_a(size_t n) { site(n); }
__attribute__((noinline)) static void via_b(size_t n) { site(n); }
__attribute__((noinline)) static void via_c(size_t n) { via_a(n); }
__attribute__((noinline)) static void via_d(size_t n) { via_b(n); }
__attribute__((noinline)) static void via_e(size_t n) { site(n); }

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 30000;
	static const char *const frames[6] = {"site,main", "site,via_a,main", "site,via_b,main",
					      "site,via_a,via_c,main", "site,via_b,via_d,main", "site,via_e,main"};
	long calls[6] = {0};
	unsigned x = 12345;
	for (long i = 0; i < rounds; i++) {
		x = x * 1103515245u + 12345u;
		unsigned k = (x >> 16) % 6;
		/* runs of the same path now and then, as loops make them */
		int run = (x >> 8) % 8 == 0 ? 5 : 1;
		for (int r = 0; r < run; r++) {
			size_t n = 100 + k;
			switch (k) {
			case 0: site(n); break;
			case 1: via_a(n); break;
			case 2: via_b(n); break;
			case 3: via_c(n); break;
			case 4: via_d(n); break;
			default: via_e(n); break;
			}
			calls[k]++;
		}
	}
	for (int k = 0; k < 6; k++)
		printf("path %d %ld %s\n", k, calls[k], frames[k]);
	return 0;
}
