/* A program that closes every descriptor above 2 and opens a file of its own that may get the trace's
 * old number, as daemons do: the recorder must never write into it. Prints the file's size. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	int fd = open(argc > 1 ? argv[1] : "mine.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (write(fd, "mine\n", 5) != 5)
		return 1;
	for (int i = 0; i < 100000; i++)
		free(malloc(64)); /* enough events for several writer flushes */
	struct stat st;
	fstat(fd, &st);
	printf("%lld\n", (long long)st.st_size);
	return 0;
}
