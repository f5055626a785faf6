/* Ends by _exit, _Exit or quick_exit (argument "_", "E" or "q") after the C library has cached
 * state that its __libc_freeres would free (a locale, the time zone, an error string), with a
 * line left unflushed in stdout's buffer: bare, the line is never written and that state stays in
 * use at exit. memcheck runs __libc_freeres at any end (and so writes the line) unless told
 * --run-libc-freeres=no; tprof runs it only after exit() (docs/FORMAT.md). */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char how = argc > 1 ? argv[1][0] : '_';
	setlocale(LC_ALL, "C.UTF-8");
	time_t t = 0;
	char b[64];
	strftime(b, sizeof(b), "%c", localtime(&t));
	printf("%s %s\n", b, strerror(2));
	fflush(stdout);
	printf("never written\n"); /* left in the buffer */
	if (how == 'q')
		quick_exit(0);
	if (how == 'E')
		_Exit(0);
	_exit(0);
}
