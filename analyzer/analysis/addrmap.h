/* A hash map from block address to block size for the heap analyses: open addressing with linear
 * probing and backward-shift deletion (no tombstones), so it stays fast through millions of
 * malloc/free pairs. Address 0 is never stored. */
#ifndef TPROF_ADDRMAP_H
#define TPROF_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

struct addrmap {
	uint64_t *keys;
	uint64_t *vals;
	size_t cap; /* power of two */
	size_t len;
};

void addrmap_init(struct addrmap *m);
void addrmap_free(struct addrmap *m);
/* Inserts or replaces; returns 1 when key was already present (old value in *old). */
int addrmap_put(struct addrmap *m, uint64_t key, uint64_t val, uint64_t *old);
/* Looks key up; returns 1 and its value in *val (may be NULL) when present, else 0. */
int addrmap_get(const struct addrmap *m, uint64_t key, uint64_t *val);
/* Removes key; returns 1 and its value in *val when it was present, else 0. */
int addrmap_del(struct addrmap *m, uint64_t key, uint64_t *val);
/* Iteration: for (size_t i = 0; i < m->cap; i++) if (m->keys[i]) ... */

#endif
