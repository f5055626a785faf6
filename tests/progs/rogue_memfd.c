/* A process that registers with a recorder the way libtprof.so does, but with a memory file of its
 * own making, then cuts that file to nothing under the recorder's mapping (which would kill the
 * recorder with SIGBUS, and every trace it writes with it). usage: rogue_memfd NAME TRACE plain|sealable:
 * NAME the recorder's abstract socket name, TRACE a file to create for the trace; plain makes the
 * memfd unsealable (the recorder must refuse it), sealable lets the recorder seal it (the cut must
 * then fail). Prints "answer N" (0: refused) and "truncate ok" or "truncate refused".
 * rogue_memfd NAME TEXT say: sends TEXT as a line for the recorder's stderr (TPROF_HELLO_SAY), as a
 * process that is not traced says why, and prints "answer N". */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "shm.h"

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t l = strlen(argv[1]);
	if (l + 2 > sizeof(a.sun_path))
		return 2;
	memcpy(a.sun_path + 1, argv[1], l);
	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + l))) {
		perror("connect");
		return 1;
	}
	if (strcmp(argv[3], "say") == 0) {
		char buf[sizeof(struct tprof_hello) + 1024];
		size_t n = strlen(argv[2]) < 1024 ? strlen(argv[2]) : 1024;
		struct tprof_hello h = {.magic = TPROF_SHM_MAGIC, .version = TPROF_SHM_VERSION, .pid = getpid(),
					.flags = TPROF_HELLO_SAY};
		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), argv[2], n);
		char answer = 0;
		if (send(sock, buf, sizeof(h) + n, MSG_NOSIGNAL) < 0 || recv(sock, &answer, 1, 0) != 1)
			answer = 0;
		printf("answer %d\n", answer);
		return 0;
	}
	int memfd = memfd_create("rogue", strcmp(argv[3], "sealable") == 0 ? MFD_ALLOW_SEALING : 0);
	int tracefd = open(argv[2], O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (memfd < 0 || tracefd < 0) {
		perror("memfd or trace");
		return 1;
	}
	struct tprof_hello h = {.magic = TPROF_SHM_MAGIC, .version = TPROF_SHM_VERSION, .pid = getpid()};
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	struct iovec io = {&h, sizeof(h)};
	struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(2 * sizeof(int));
	int fds[2] = {memfd, tracefd};
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	if (sendmsg(sock, &m, MSG_NOSIGNAL) < 0) {
		perror("sendmsg");
		return 1;
	}
	char answer = 0;
	if (recv(sock, &answer, 1, 0) != 1)
		answer = 0;
	printf("answer %d\n", answer);
	usleep(200000); /* the recorder maps the file meanwhile */
	printf("truncate %s\n", ftruncate(memfd, 0) == 0 ? "ok" : "refused");
	fflush(stdout);
	usleep(300000); /* and would touch it */
	return 0;
}
