/* libFuzzer target over everything that reads a trace: the bytes become a file, and every command
 * that takes a trace reads it as a user would run it (report, leaks, peak, allocs, summary, ops,
 * dump, diff, export), with their output thrown away. Half the mutations are followed by recomputing the block
 * checksums, so that the fuzzer gets past them into the blocks' contents; the other half fuzz the
 * checksums too. `make fuzz` builds it with ASan and UBSan (build/fuzz/fuzz_trace); its corpus is
 * tests/fuzz/corpus, and `make test` runs 6000 inputs of it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cmd/cmds.h"
#include "tprof_trace.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* one thread, so that a finding replays the same way, unless the run asks for the decode
	 * thread (fuzz.bats runs the corpus both ways: TPROF_DECODE_THREAD=1) */
	setenv("TPROF_DECODE_THREAD", "0", 0);
	setenv("TPROF_SYMBOL_CACHE", "off", 1); /* nothing written to the home directory */
	setenv("TPROF_WAIT_MS", "0", 1);
	setenv("TPROF_PEAK_GFLOPS", "100", 1); /* ops never measures the machine */
	if (!freopen("/dev/null", "w", stdout))
		abort();
	return 0;
}

/* Puts right the checksum of every block whose header and payload are in the file. */
static void fix_crcs(uint8_t *d, size_t size)
{
	size_t off = TPROF_FILE_HEADER_LEN;
	while (off + TPROF_BLOCK_HEADER_LEN <= size) {
		uint32_t len = tprof_load_u32(d + off + 1);
		if (len > size - off - TPROF_BLOCK_HEADER_LEN)
			break;
		uint32_t crc = tprof_crc32c_update(0, d + off, 1);
		crc = tprof_crc32c_update(crc, d + off + TPROF_BLOCK_HEADER_LEN, len);
		tprof_put_u32(d + off + 5, crc);
		off += TPROF_BLOCK_HEADER_LEN + len;
	}
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	size = LLVMFuzzerMutate(data, size, max_size);
	if (seed & 1)
		fix_crcs(data, size);
	return size;
}

static void run(int (*cmd)(int, char **), const char *a0, const char *a1, const char *a2, const char *a3)
{
	char *argv[5] = {(char *)a0, (char *)a1, (char *)a2, (char *)a3, NULL};
	int argc = a3 ? 4 : a2 ? 3 : 2;
	cmd(argc, argv);
	fflush(stdout);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("trace", MFD_CLOEXEC);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	run(cmd_report, "report", path, NULL, NULL);
	run(cmd_report, "report", "--json", path, NULL);
	run(cmd_leaks, "leaks", "--json", path, NULL);
	run(cmd_peak, "peak", path, NULL, NULL);
	run(cmd_allocs, "allocs", "--csv", path, NULL);
	run(cmd_summary, "summary", "--json", path, NULL);
	run(cmd_ops, "ops", path, NULL, NULL);
	run(cmd_ops, "ops", "--by", "range", path);
	run(cmd_dump, "dump", path, NULL, NULL);
	run(cmd_diff, "diff", path, path, NULL);
	run(cmd_export, "export", path, "--folded", "/dev/null");
	run(cmd_export, "export", path, "--chrome", "/dev/null");
	close(fd);
	return 0;
}
