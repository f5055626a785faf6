/* A private anonymous mapping of 4 MiB holds the only pointer to a block; the mapping is then
 * write-protected through userfaultfd, as an incremental-snapshot or garbage-collecting program does.
 * The leak scan must still read the page (present, though no longer "written"): the block is still
 * reachable. Exits 2 when userfaultfd is not available. */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void)
{
	size_t len = 4 << 20;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *kept = malloc(48);
	memcpy(m + 8192 + 16, &kept, sizeof(kept));
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (fd < 0) { perror("userfaultfd"); return 2; }
	struct uffdio_api api = {.api = UFFD_API, .features = 0};
	if (ioctl(fd, UFFDIO_API, &api)) { perror("UFFDIO_API"); return 2; }
	struct uffdio_register reg = {.range = {(unsigned long)m, len}, .mode = UFFDIO_REGISTER_MODE_WP};
	if (ioctl(fd, UFFDIO_REGISTER, &reg)) { perror("REGISTER"); return 2; }
	struct uffdio_writeprotect wp = {.range = {(unsigned long)m, len}, .mode = UFFDIO_WRITEPROTECT_MODE_WP};
	if (ioctl(fd, UFFDIO_WRITEPROTECT, &wp)) { perror("WRITEPROTECT"); return 2; }
	kept = NULL;
	puts("ok");
	return 0;
}
