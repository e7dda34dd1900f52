// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz target: attach (recovery) of corrupted pool images.
 *
 * The input is a mutation script applied to a prepared 16 MiB pool image
 * (three indexes, one dropped, a few hundred allocations of all sizes):
 *
 *   byte 0     flags: bit 0 attach in eADR mode; bit 1 start from the
 *              crashed image (attach traces) instead of the cleanly
 *              detached one; bits 2..7 seed the allocator storm
 *   records    u8 op, then by op & 7 (offsets little endian, taken modulo
 *              the region, "meta" = superblocks + index table + chunk
 *              headers):
 *     0 WRITE      u16 meta offset, u8 len (1..32), len bytes
 *     1 XOR        u16 meta offset, u8 mask
 *     2 SET64      u16 meta offset (8-aligned), u64 value
 *     3 RESEAL_SB  superblock copy (op >> 3) & 1 gets a valid crc32c
 *     4 RESEAL_IX  u8 slot: index table entry gets a valid crc32c
 *     5 RESEAL_CH  u8 chunk: chunk header gets a valid crc32c
 *     6 DATA       u32 data offset, u8 len (1..32), len bytes
 *     7 COPY_SB    copy one superblock copy over the other, u8 seq bump
 *
 * Reseals let mutations past the checksums, so the checks behind them
 * (geometry, descriptors, runs, roots, names) get exercised.
 *
 * Then pmidx_pool_open() must either refuse or attach. Attached, the pool
 * must stand an allocator storm, index create/drop, a clean detach and a
 * re-attach, with no WARN (fatal here), sanitizer report, leak or hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/crc32.h>
#include <shim/pmem.h>
#include <shim/shim.h>
#include "core/alloc_test.h"
#include "core/pool.h"

#define FZ_SIZE		PMIDX_MIN_POOL_SIZE

static int base_fd[2] = { -1, -1 };	/* clean, crashed */
static u64 meta_len, data_off;

static void die(const char *what)
{
	fprintf(stderr, "fuzz-pool: %s\n", what);
	abort();
}

/* Prepare the two base images once, in memfds the runs map privately. */
static void prepare(void)
{
	void *img = mmap(NULL, FZ_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	unsigned int i;
	int k;

	if (img == MAP_FAILED)
		die("mmap");
	shim_pmem_set_hw(SHIM_PMEM_HW_NONE);
	shim_random_seed(1);
	if (pmidx_pool_format(img, FZ_SIZE, false, &why))
		die(why);
	pool = pmidx_pool_open(img, FZ_SIZE, false, &why);
	if (IS_ERR(pool))
		die(why);
	if (pmidx_index_create(pool, "alpha", PMIDX_ENGINE_CCL, &idx, &why) ||
	    pmidx_index_create(pool, "beta", PMIDX_ENGINE_UTREE, &idx, &why) ||
	    pmidx_index_create(pool, "gamma", PMIDX_ENGINE_UTREE, &idx, &why) ||
	    pmidx_index_drop(pool, "beta", &why))
		die(why);
	/* objects of every class and a run, some freed again */
	for (i = 0; i < 300; i++) {
		u64 off = pmidx_alloc(&pool->alloc, 200 + (i % 10) * 1500 +
				      (i == 7 ? 400000 : 0));

		if (off && i % 4 == 0)
			pmidx_free(&pool->alloc, off);
	}
	data_off = le64_to_cpu(pool->sb.data_off);
	meta_len = le64_to_cpu(pool->sb.chunk_hdr_off) +
		   (u64)le32_to_cpu(pool->sb.nr_chunks) * PMIDX_CHUNK_HDR_SIZE;
	for (k = 1; k >= 0; k--) {
		base_fd[k] = memfd_create(k ? "pmidx-crashed" : "pmidx-clean", 0);
		if (base_fd[k] < 0)
			die("memfd");
		if (!k)
			pmidx_pool_close(pool);	/* clean detach */
		if (pwrite(base_fd[k], img, FZ_SIZE, 0) != FZ_SIZE)
			die("pwrite");
	}
	munmap(img, FZ_SIZE);
}

static void reseal_sb(u8 *img, unsigned int copy)
{
	struct pmidx_sb *sb = (void *)(img + copy * PMIDX_SB_STRIDE);

	sb->crc = cpu_to_le32(~__crc32c_le(~0U, (const u8 *)sb,
					   offsetof(struct pmidx_sb, crc)));
}

static void reseal_entry(u8 *img, unsigned int slot)
{
	struct pmidx_index_entry *e = (void *)(img + PMIDX_INDEX_TABLE_OFF +
					       slot * PMIDX_INDEX_ENTRY_SIZE);

	e->crc = cpu_to_le32(~__crc32c_le(~0U, (const u8 *)e,
					  offsetof(struct pmidx_index_entry, crc)));
}

static void reseal_chunk(u8 *img, unsigned int chunk)
{
	struct pmidx_chunk_hdr *h = (void *)(img + PMIDX_CHUNK_HDR_OFF +
					     chunk * PMIDX_CHUNK_HDR_SIZE);
	u32 crc = __crc32c_le(~0U, (const u8 *)&h->desc, sizeof(h->desc));

	crc = __crc32c_le(crc, (const u8 *)&h->live, sizeof(h->live));
	h->crc = cpu_to_le32(~__crc32c_le(crc, (const u8 *)h->bitmap,
					  sizeof(h->bitmap)));
}

/* Apply the script; returns the flags byte. */
static u8 apply(u8 *img, const u8 *d, size_t n)
{
	u32 nr_chunks = (meta_len - PMIDX_CHUNK_HDR_OFF) / PMIDX_CHUNK_HDR_SIZE;
	size_t i = 1;

	while (i < n) {
		u8 op = d[i++];
		u64 off, v;
		u8 len;

		switch (op & 7) {
		case 0:
		case 6:
			if (op & 7 ? i + 5 > n : i + 3 > n)
				return d[0];
			if (op & 7) {
				off = data_off + (d[i] | d[i + 1] << 8 | d[i + 2] << 16 |
						  (u64)d[i + 3] << 24) % (FZ_SIZE - data_off - 32);
				i += 4;
			} else {
				off = (d[i] | d[i + 1] << 8) % meta_len;
				i += 2;
			}
			len = 1 + d[i++] % 32;
			len = min_t(size_t, len, n - i);
			if (!(op & 7))
				len = min_t(u64, len, meta_len - off);
			memcpy(img + off, d + i, len);
			i += len;
			break;
		case 1:
			if (i + 3 > n)
				return d[0];
			off = (d[i] | d[i + 1] << 8) % meta_len;
			img[off] ^= d[i + 2];
			i += 3;
			break;
		case 2:
			if (i + 10 > n)
				return d[0];
			off = ((d[i] | d[i + 1] << 8) % meta_len) & ~7ULL;
			memcpy(&v, d + i + 2, 8);
			memcpy(img + off, &v, 8);
			i += 10;
			break;
		case 3:
			reseal_sb(img, (op >> 3) & 1);
			break;
		case 4:
			if (i >= n)
				return d[0];
			reseal_entry(img, d[i++] % PMIDX_MAX_INDEXES);
			break;
		case 5:
			if (i >= n)
				return d[0];
			reseal_chunk(img, d[i++] % nr_chunks);
			break;
		case 7: {
			unsigned int from = (op >> 3) & 1;
			struct pmidx_sb *dst = (void *)(img + (1 - from) * PMIDX_SB_STRIDE);

			if (i >= n)
				return d[0];
			memcpy(dst, img + from * PMIDX_SB_STRIDE, sizeof(*dst));
			le64_add_cpu(&dst->seq, d[i++]);
			reseal_sb(img, 1 - from);
			break;
		}
		}
	}
	return d[0];
}

/* The attached pool must work and detach into something attachable. */
static void exercise(u8 *img, struct pmidx_pool *pool, bool eadr, u8 seed)
{
	struct pmidx_alloc_test t = {
		.mode = PMIDX_ALLOC_TEST_STORM, .threads = 1, .ops = 300,
		.seed = seed,
	};
	struct pmidx_index *idx;
	const char *why = NULL;
	unsigned int i, n = 0;
	char names[PMIDX_MAX_INDEXES][PMIDX_NAME_MAX + 1];
	int ret;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		idx = pool->indexes[i];
		if (!idx)
			continue;
		if (!pmidx_alloc_valid(&pool->alloc, idx->root, PMIDX_INDEX_ROOT_SIZE))
			die("attached with an index root that is no live object");
		strcpy(names[n++], idx->name);
	}
	ret = pmidx_alloc_test_run(pool, &t, &why);
	if (ret && ret != -ENOSPC)
		die(why);
	ret = pmidx_index_create(pool, "fz", PMIDX_ENGINE_UTREE, &idx, &why);
	if (ret && ret != -ENOSPC && ret != -EEXIST)
		die(why);
	if (!ret && pmidx_index_drop(pool, "fz", &why))
		die(why);
	if (n && pmidx_index_drop(pool, names[0], &why))
		die(why);
	pmidx_pool_close(pool);
	pool = pmidx_pool_open(img, FZ_SIZE, eadr, &why);
	if (IS_ERR(pool)) {
		fprintf(stderr, "re-attach: %s\n", why);
		die("a pool detached cleanly does not attach again");
	}
	if (pool->flags & PMIDX_POOL_F_RECOVERED)
		die("a clean detach did not stick");
	pmidx_pool_close(pool);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	prepare();
	return 0;
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	long km = shim_kmalloc_live(), pc = shim_percpu_live();
	struct pmidx_pool *pool;
	const char *why = NULL;
	bool eadr;
	u8 flags;
	u8 *img;

	if (base_fd[0] < 0)
		prepare();
	if (!size)
		return 0;
	img = mmap(NULL, FZ_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		   base_fd[(data[0] >> 1) & 1], 0);
	if (img == MAP_FAILED)
		die("mmap");
	flags = apply(img, data, size);
	eadr = flags & 1;
	pool = pmidx_pool_open(img, FZ_SIZE, eadr, &why);
	if (!IS_ERR(pool))
		exercise(img, pool, eadr, flags >> 2);
	shim_workqueue_drain();
	munmap(img, FZ_SIZE);
	if (shim_kmalloc_live() != km || shim_percpu_live() != pc)
		die("kernel memory leaked");
	return 0;
}
