/* A program that keeps a block and becomes a daemon (daemon(3)): the C library ends the parent with
 * the exit system call itself, past the _exit hook, so the parent's trace has no scan and must say
 * why; the daemon child keeps the block, and returns from main. */
#include <stdlib.h>
#include <unistd.h>

void *kept;

int main(void)
{
	kept = malloc(50);
	return daemon(1, 1) < 0;
}
