/* libFuzzer target over the reader of the symbolizer's cache files (analyzer/trace/symcache.c):
 * the bytes are parsed as a cache file of a fixed build-id, without the checksum (so that the
 * fuzzer gets into the structure) and with it, and every entry handed out is read whole. `make fuzz`
 * builds it (build/fuzz/fuzz_symcache); tests/integration/fuzz.bats runs it over a corpus it makes
 * from a real cache file. */
#include <stdint.h>
#include <string.h>

#include "trace/symcache.h"

static const uint8_t id[20] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};

static void entry(void *ctx, uint64_t vaddr, const struct symcache_frame *fr, uint32_t n)
{
	size_t *sum = ctx;
	*sum += (size_t)vaddr + n;
	for (uint32_t i = 0; i < n; i++)
		*sum += (fr[i].function ? strlen(fr[i].function) : 0) + (fr[i].file ? strlen(fr[i].file) : 0) +
			(size_t)fr[i].line + fr[i].inlined;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symcache_head h;
	size_t sum = 0;
	for (int crc = 0; crc < 2; crc++)
		symcache_parse(data, size, id, sizeof(id), crc, &h, entry, &sum);
	return sum == 1 ? 1 : 0; /* keep sum alive; libFuzzer ignores the value */
}
