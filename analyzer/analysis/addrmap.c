/* Implementation of analysis/addrmap.h. */
#include "analysis/addrmap.h"

#include <stdlib.h>

#include "base/util.h"

static size_t slot_of(const struct addrmap *m, uint64_t key)
{
	key ^= key >> 33; /* fmix64 from MurmurHash3: addresses share low and high bits */
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	key *= 0xc4ceb9fe1a85ec53ull;
	key ^= key >> 33;
	return (size_t)key & (m->cap - 1);
}

void addrmap_init(struct addrmap *m)
{
	m->cap = 1024;
	m->len = 0;
	m->keys = xzalloc(m->cap, sizeof(uint64_t)); /* probes read every page first (util.h) */
	m->vals = xzalloc(m->cap, sizeof(uint64_t));
}

void addrmap_free(struct addrmap *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = m->vals = NULL;
	m->cap = m->len = 0;
}

static void grow(struct addrmap *m)
{
	struct addrmap n = {xzalloc(m->cap * 2, sizeof(uint64_t)), xzalloc(m->cap * 2, sizeof(uint64_t)), m->cap * 2,
			    0};
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			addrmap_put(&n, m->keys[i], m->vals[i], NULL);
	addrmap_free(m);
	*m = n;
}

int addrmap_put(struct addrmap *m, uint64_t key, uint64_t val, uint64_t *old)
{
	if ((m->len + 1) * 4 > m->cap * 3)
		grow(m);
	size_t i = slot_of(m, key);
	while (m->keys[i]) {
		if (m->keys[i] == key) {
			if (old)
				*old = m->vals[i];
			m->vals[i] = val;
			return 1;
		}
		i = (i + 1) & (m->cap - 1);
	}
	m->keys[i] = key;
	m->vals[i] = val;
	m->len++;
	return 0;
}

int addrmap_get(const struct addrmap *m, uint64_t key, uint64_t *val)
{
	for (size_t i = slot_of(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			if (val)
				*val = m->vals[i];
			return 1;
		}
	}
	return 0;
}

int addrmap_del(struct addrmap *m, uint64_t key, uint64_t *val)
{
	size_t i = slot_of(m, key);
	while (m->keys[i] != key) {
		if (!m->keys[i])
			return 0;
		i = (i + 1) & (m->cap - 1);
	}
	if (val)
		*val = m->vals[i];
	/* backward-shift: pull later entries of the probe run into the hole */
	size_t hole = i;
	for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		size_t home = slot_of(m, m->keys[j]);
		if (((j - home) & (m->cap - 1)) >= ((j - hole) & (m->cap - 1))) {
			m->keys[hole] = m->keys[j];
			m->vals[hole] = m->vals[j];
			hole = j;
		}
	}
	m->keys[hole] = 0;
	m->vals[hole] = 0;
	m->len--;
	return 1;
}
