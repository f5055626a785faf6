/* Every kind of leak memcheck tells apart, planted at known functions, for tests/integration/
 * leakscan.bats, which compares tprof leaks with valgrind --leak-check=full on this program:
 *   definite        plant_definite: 2 x 100 bytes, no pointer anywhere
 *   definite + indirect  plant_list: a lost list, head 24 bytes (definite), 3 nodes of 24 (indirect)
 *   possible        plant_possible: 64 bytes held only through an interior pointer in a global,
 *                   and the 40-byte block that one points at by its start (possible too)
 *   indirect via interior  plant_lost_interior: a lost 32-byte block holds a pointer into a 48-byte one
 *   reachable       plant_global (global), plant_tls (this thread's TLS), plant_stack (another
 *                   thread's stack, the thread blocked), plant_register (a register of a running
 *                   thread, nowhere in memory), plant_thread_tls (another thread's TLS)
 * argv[1] picks the way out: exit (default), return, _exit, quick_exit. Built -O0 -g. */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *global_ptr;
static char *global_interior;
static __thread void *tls_ptr;
static __thread void *thread_tls_ptr;
static sem_t ready, never;

struct node {
	struct node *next;
	uint64_t a, b;
};

static void plant_definite(void)
{
	for (int i = 0; i < 2; i++) {
		char *p = malloc(100);
		memset(p, 1, 100);
	}
}

static void plant_list(void)
{
	struct node *head = NULL;
	for (int i = 0; i < 4; i++) {
		struct node *n = malloc(sizeof(*n));
		n->next = head;
		n->a = n->b = 0;
		head = n;
	}
}

static void plant_possible(void)
{
	char *p = malloc(64);
	void **q = malloc(40);
	memset(p, 0, 64);
	memset(q, 0, 40);
	((void **)p)[0] = q;
	global_interior = p + 16;
}

static void plant_lost_interior(void)
{
	char *x = malloc(48);
	memset(x, 0, 48);
	char **l = malloc(32);
	memset(l, 0, 32);
	l[0] = x + 8;
}

static void plant_global(void)
{
	global_ptr = malloc(4096);
	memset(global_ptr, 0, 4096);
}

static void plant_tls(void)
{
	tls_ptr = malloc(72);
	memset(tls_ptr, 0, 72);
}

static void *plant_stack(void *arg)
{
	(void)arg;
	void *volatile held = malloc(200);
	memset(held, 0, 200);
	sem_post(&ready);
	while (sem_wait(&never) != 0)
		;
	return held;
}

static void *plant_thread_tls(void *arg)
{
	(void)arg;
	thread_tls_ptr = malloc(88);
	memset(thread_tls_ptr, 0, 88);
	sem_post(&ready);
	while (sem_wait(&never) != 0)
		;
	return NULL;
}

/* Overwrites what calls below this frame left on the stack. */
static void __attribute__((noinline)) scrub(void)
{
	volatile char junk[4096];
	memset((char *)junk, 0, sizeof(junk));
}

static void *plant_register(void *arg)
{
	(void)arg;
	register void *p __asm__("r12") = malloc(120);
	memset(p, 0, 120);
	scrub();
	sem_post(&ready);
	scrub();
	for (;;)
		__asm__ volatile("" : "+r"(p));
	return NULL;
}

int main(int argc, char **argv)
{
	sem_init(&ready, 0, 0);
	sem_init(&never, 0, 0);
	plant_definite();
	plant_list();
	plant_possible();
	plant_lost_interior();
	plant_global();
	plant_tls();
	pthread_t t;
	pthread_create(&t, NULL, plant_stack, NULL);
	sem_wait(&ready);
	pthread_create(&t, NULL, plant_thread_tls, NULL);
	sem_wait(&ready);
	pthread_create(&t, NULL, plant_register, NULL);
	sem_wait(&ready);
	scrub();
	const char *how = argc > 1 ? argv[1] : "exit";
	if (strcmp(how, "_exit") == 0)
		_exit(0);
	if (strcmp(how, "quick_exit") == 0)
		quick_exit(0);
	if (strcmp(how, "return") == 0)
		return 0;
	exit(0);
}
