/* A program whose exit is called by the C library itself: argp_parse with --help prints the help
 * and calls exit(0) from inside argp, while argp_parse's frame holds the only pointer to a block it
 * allocated. The leak scan must take the frames of the program's call chain above exit's caller (as
 * memcheck does): the block is still reachable, not definitely lost. */
#include <argp.h>

static struct argp parser = {0};

int main(int argc, char **argv)
{
	return argp_parse(&parser, argc, argv, 0, 0, 0);
}
