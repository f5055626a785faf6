/* A program with a destructor that frees a block, for the order of tprof's work at exit (checked with
 * gdb, lifecycle.bats): the program's destructors run first, then tprof's exit handler notes the
 * status, then __libc_freeres and the leak scan (last_exit_handler). */
#include <stdlib.h>

void *volatile kept;

__attribute__((noinline)) void exit_order_dtor_seen(void)
{
	__asm__ volatile("");
}

__attribute__((destructor)) static void dtor(void)
{
	exit_order_dtor_seen();
	free(kept);
}

int main(void)
{
	kept = malloc(32);
	return 0;
}
