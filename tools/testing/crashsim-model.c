// SPDX-License-Identifier: GPL-2.0
/*
 * The crash simulator's model of acknowledged operations: see
 * crashsim-model.h. Keys live in an open-addressing hash table (linear
 * probing, at most half full) over an array kept in first-seen order,
 * which is also the order crashsim_key() enumerates them in.
 *
 * A key's state: the outcome of its last acknowledged operation (in the
 * order acknowledgements arrive), and up to CS_INFLIGHT operations begun
 * and not acknowledged, oldest first, whose outcomes a crash may also
 * show. More in flight at once on one key than that is not modelled (the
 * extra ones are counted and left out, as crashsim.h allows only
 * CRASHSIM_MAX_ALT outcomes anyway).
 */
#include <stdlib.h>
#include <string.h>
#include <linux/bug.h>
#include <linux/kernel.h>
#include "crashsim-model.h"

#define CS_INFLIGHT	8

struct cs_op {
	u32		type;
	s32		key;		/* index in keys[], -1 for notes */
	u64		value;
	const char	*tag;
	bool		acked;
};

struct cs_key {
	u8		*bytes;
	u32		len;
	u32		hash;
	bool		present;
	u64		value;
	u32		ninfl;
	u32		infl[CS_INFLIGHT];
};

struct cs_model {
	struct cs_op	*ops;
	u32		nops, ops_cap, nacked;
	struct cs_key	*keys;
	u32		nkeys, keys_cap;
	u32		*slot;		/* key index + 1, 0 = empty */
	u32		nslots;		/* power of two */
	u64		dropped;	/* in-flight ops not modelled */
};

static u32 key_hash(const void *key, u32 len)
{
	const u8 *p = key;
	u32 h = 2166136261U ^ len;

	while (len--)
		h = (h ^ *p++) * 16777619U;
	return h ^ h >> 15;
}

static void *grow(void *v, u32 *cap, size_t size)
{
	*cap = *cap ? 2 * *cap : 64;
	v = realloc(v, *cap * size);
	BUG_ON(!v);
	return v;
}

/* The slot holding @key, or the empty slot where it would go. */
static u32 *find_slot(struct cs_model *m, const void *key, u32 len, u32 h)
{
	u32 i = h & (m->nslots - 1);

	for (;; i = (i + 1) & (m->nslots - 1)) {
		struct cs_key *k;

		if (!m->slot[i])
			return &m->slot[i];
		k = &m->keys[m->slot[i] - 1];
		if (k->hash == h && k->len == len && !memcmp(k->bytes, key, len))
			return &m->slot[i];
	}
}

static void rehash(struct cs_model *m)
{
	u32 i;

	m->nslots = m->nslots ? 2 * m->nslots : 256;
	free(m->slot);
	m->slot = calloc(m->nslots, sizeof(*m->slot));
	BUG_ON(!m->slot);
	for (i = 0; i < m->nkeys; i++)
		*find_slot(m, m->keys[i].bytes, m->keys[i].len,
			   m->keys[i].hash) = i + 1;
}

static struct cs_key *lookup(struct cs_model *m, const void *key, u32 len)
{
	u32 *s;

	if (!m->nslots)
		return NULL;
	s = find_slot(m, key, len, key_hash(key, len));
	return *s ? &m->keys[*s - 1] : NULL;
}

static s32 key_get(struct cs_model *m, const void *key, u32 len)
{
	u32 h = key_hash(key, len), *s;
	struct cs_key *k;

	if (2 * (m->nkeys + 1) > m->nslots)
		rehash(m);
	s = find_slot(m, key, len, h);
	if (*s)
		return *s - 1;
	if (m->nkeys == m->keys_cap)
		m->keys = grow(m->keys, &m->keys_cap, sizeof(*m->keys));
	k = &m->keys[m->nkeys];
	memset(k, 0, sizeof(*k));
	k->bytes = malloc(len ? len : 1);
	BUG_ON(!k->bytes);
	memcpy(k->bytes, key, len);
	k->len = len;
	k->hash = h;
	*s = ++m->nkeys;
	return m->nkeys - 1;
}

struct cs_model *cs_model_new(void)
{
	struct cs_model *m = calloc(1, sizeof(*m));

	BUG_ON(!m);
	return m;
}

void cs_model_reset(struct cs_model *m)
{
	while (m->nkeys)
		free(m->keys[--m->nkeys].bytes);
	if (m->slot)
		memset(m->slot, 0, m->nslots * sizeof(*m->slot));
	m->nops = 0;
	m->nacked = 0;
	m->dropped = 0;
}

void cs_model_free(struct cs_model *m)
{
	if (!m)
		return;
	cs_model_reset(m);
	free(m->ops);
	free(m->keys);
	free(m->slot);
	free(m);
}

unsigned int cs_model_begin(struct cs_model *m, u32 type, const char *tag,
			    const void *key, u32 klen, u64 value)
{
	struct cs_op *op;
	struct cs_key *k;
	u32 id;

	if (m->nops == m->ops_cap)
		m->ops = grow(m->ops, &m->ops_cap, sizeof(*m->ops));
	id = m->nops++;
	op = &m->ops[id];
	*op = (struct cs_op){ .type = type, .key = -1, .value = value,
			      .tag = tag };
	if (type == CRASHSIM_OP_NOTE)
		return id;
	op->key = key_get(m, key, klen);
	k = &m->keys[op->key];
	if (k->ninfl < CS_INFLIGHT)
		k->infl[k->ninfl++] = id;
	else
		m->dropped++;
	return id;
}

void cs_model_ack(struct cs_model *m, unsigned int id)
{
	struct cs_op *op;
	struct cs_key *k;
	u32 i;

	BUG_ON(id >= m->nops);
	op = &m->ops[id];
	BUG_ON(op->acked);
	op->acked = true;
	m->nacked++;
	if (op->key < 0)
		return;
	k = &m->keys[op->key];
	k->present = op->type == CRASHSIM_OP_PUT;
	k->value = k->present ? op->value : 0;
	for (i = 0; i < k->ninfl; i++) {
		if (k->infl[i] != id)
			continue;
		memmove(&k->infl[i], &k->infl[i + 1],
			(k->ninfl - i - 1) * sizeof(k->infl[0]));
		k->ninfl--;
		break;
	}
}

void cs_model_expect(struct cs_model *m, const void *key, u32 klen,
		     struct crashsim_expect *e)
{
	struct cs_key *k = lookup(m, key, klen);
	u32 i;

	e->n = 1;
	e->present[0] = k && k->present;
	e->value[0] = e->present[0] ? k->value : 0;
	/* in flight: their outcomes are allowed too */
	for (i = 0; k && i < k->ninfl && e->n < CRASHSIM_MAX_ALT; i++) {
		const struct cs_op *op = &m->ops[k->infl[i]];

		e->present[e->n] = op->type == CRASHSIM_OP_PUT;
		e->value[e->n] = e->present[e->n] ? op->value : 0;
		e->n++;
	}
}

const u8 *cs_model_key(struct cs_model *m, unsigned int n, u32 *klen)
{
	if (n >= m->nkeys)
		return NULL;
	*klen = m->keys[n].len;
	return m->keys[n].bytes;
}

int cs_model_note(struct cs_model *m, const char *tag)
{
	u32 i;

	for (i = 0; i < m->nops; i++)
		if (m->ops[i].type == CRASHSIM_OP_NOTE &&
		    !strcmp(m->ops[i].tag, tag))
			return m->ops[i].acked;
	return -1;
}

unsigned int cs_model_ops(struct cs_model *m)
{
	return m->nops;
}

unsigned int cs_model_acked(struct cs_model *m)
{
	return m->nacked;
}
