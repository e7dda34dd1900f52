// SPDX-License-Identifier: GPL-2.0
/*
 * Superblock: format, the double copy, and every way attach must refuse
 * an image (foreign, corrupt, too new, wrong geometry, media errors).
 */
#include <linux/crc32.h>
#include <shim/pmem.h>
#include <shim/shim.h>
#include "core/super.h"
#include "harness.h"

#define SZ	UT_POOL_SIZE

static struct pmidx_sb *sb_at(void *img, unsigned int slot)
{
	return (struct pmidx_sb *)((char *)img + slot * PMIDX_SB_STRIDE);
}

/* re-seal a copy edited on purpose, as a well-formed but different sb */
static void sb_reseal(struct pmidx_sb *sb)
{
	sb->crc = cpu_to_le32(~__crc32c_le(~0U, (const u8 *)sb,
					   offsetof(struct pmidx_sb, crc)));
}

static int sb_read(void *img, struct pmidx_sb *sb, unsigned int *slot,
		   const char **why)
{
	struct pmidx_pmem pm = { .base = img, .size = SZ };

	return pmidx_sb_read(&pm, sb, slot, why);
}

static void *formatted(void)
{
	void *img = ut_img_alloc(SZ);
	const char *why = NULL;

	UT_EQ(pmidx_pool_format(img, SZ, false, &why), 0);
	return img;
}

static void sb_format_read(void)
{
	void *img = formatted();
	const char *why = NULL;
	struct pmidx_sb sb;
	unsigned int slot = 9;
	static const u8 zero[16];

	UT_EQ(sb_read(img, &sb, &slot, &why), 0);
	UT_EQ(slot, 1);			/* format writes copy 0, then copy 1 */
	UT_EQ(le64_to_cpu(sb.seq), 2);
	UT_EQ(le64_to_cpu(sb.magic), PMIDX_SB_MAGIC);
	UT_EQ(le32_to_cpu(sb.version), PMIDX_FORMAT_VERSION);
	UT_EQ(le64_to_cpu(sb.size), SZ);
	UT_EQ(le32_to_cpu(sb.clean), 1);
	UT_EQ(le32_to_cpu(sb.chunk_size), PMIDX_CHUNK_SIZE);
	UT_ASSERT(memcmp(sb.uuid, zero, 16));
	UT_EQ(sb.uuid[6] >> 4, 4);	/* v4 UUID */
	/* both copies carry the same pool */
	UT_ASSERT(!memcmp(sb_at(img, 0)->uuid, sb_at(img, 1)->uuid, 16));
	UT_EQ(le64_to_cpu(sb_at(img, 0)->seq), 1);
	ut_img_free(img, SZ);
}

static void sb_geometry_sizes(void)
{
	static const u64 sizes[] = {
		16ULL << 20, (16ULL << 20) + 4096, 17ULL << 20, 100ULL << 20,
		1ULL << 30, (1ULL << 30) - 1, 64ULL << 30, 3ULL << 40,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes) + 200; i++) {
		u64 size = i < ARRAY_SIZE(sizes) ? sizes[i] :
			   (16ULL << 20) + ut_rand64() % (8ULL << 30);
		struct pmidx_sb sb = {};
		u64 n, data_off;

		UT_EQ(pmidx_sb_geometry(&sb, size), 0);
		n = le32_to_cpu(sb.nr_chunks);
		data_off = le64_to_cpu(sb.data_off);
		UT_ASSERT(n > 0);
		UT_EQ(data_off % PMIDX_CHUNK_SIZE, 0);
		UT_ASSERT(PMIDX_CHUNK_HDR_OFF + n * PMIDX_CHUNK_HDR_SIZE <= data_off);
		UT_ASSERT(data_off + n * PMIDX_CHUNK_SIZE <= size);
		/* maximal: one more chunk would not fit */
		UT_ASSERT(ALIGN(PMIDX_CHUNK_HDR_OFF + (n + 1) * PMIDX_CHUNK_HDR_SIZE,
				(u64)PMIDX_CHUNK_SIZE) + (n + 1) * PMIDX_CHUNK_SIZE > size);
	}
	{
		struct pmidx_sb sb = {};

		UT_EQ(pmidx_sb_geometry(&sb, PMIDX_MIN_POOL_SIZE - 1), -ENOSPC);
	}
}

static void sb_newest_copy_wins(void)
{
	void *img = formatted();
	struct pmidx_pmem pm = { .base = img, .size = SZ };
	const char *why = NULL;
	struct pmidx_sb sb;
	unsigned int slot, i;

	pm.stats = alloc_percpu(struct pmidx_pmem_stats);
	UT_ASSERT(pm.stats);
	UT_EQ(sb_read(img, &sb, &slot, &why), 0);
	for (i = 0; i < 5; i++) {
		unsigned int prev = slot;
		struct pmidx_sb got;

		sb.attach_count = cpu_to_le64(100 + i);
		pmidx_sb_write(&pm, &sb, &slot);
		UT_EQ(slot, 1 - prev);		/* alternates */
		UT_EQ(sb_read(img, &got, &slot, &why), 0);
		UT_EQ(slot, 1 - prev);
		UT_EQ(le64_to_cpu(got.attach_count), 100 + i);
		UT_EQ(le64_to_cpu(got.seq), 3 + i);
	}
	/* selection is by sequence, not by slot */
	sb_at(img, 0)->seq = cpu_to_le64(50);
	sb_reseal(sb_at(img, 0));
	sb_at(img, 1)->seq = cpu_to_le64(49);
	sb_reseal(sb_at(img, 1));
	UT_EQ(sb_read(img, &sb, &slot, &why), 0);
	UT_EQ(slot, 0);
	sb_at(img, 1)->seq = cpu_to_le64(51);
	sb_reseal(sb_at(img, 1));
	UT_EQ(sb_read(img, &sb, &slot, &why), 0);
	UT_EQ(slot, 1);
	free_percpu(pm.stats);
	ut_img_free(img, SZ);
}

/* A torn or corrupt newest copy: attach falls back to the other one. */
static void sb_torn_copy_falls_back(void)
{
	unsigned int victim, off;

	for (victim = 0; victim < 2; victim++) {
		for (off = 0; off < offsetof(struct pmidx_sb, crc) + 4; off += 7) {
			void *img = formatted();
			const char *why = NULL;
			unsigned long warns = shim_printk_count(4);
			struct pmidx_sb sb;
			unsigned int slot;
			struct pmidx_pool *pool;

			((u8 *)sb_at(img, victim))[off] ^= 0x10;
			UT_EQ(sb_read(img, &sb, &slot, &why), 0);
			UT_EQ(slot, 1 - victim);
			UT_ASSERT(shim_printk_count(4) > warns);
			/* and the pool opens from it */
			pool = ut_pool_open(img, SZ);
			pmidx_pool_close(pool);
			ut_img_free(img, SZ);
		}
	}
}

static void sb_both_corrupt(void)
{
	void *img = formatted();
	const char *why = NULL;

	sb_at(img, 0)->size ^= cpu_to_le64(1);
	sb_at(img, 1)->chunk_size ^= cpu_to_le32(1);
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EUCLEAN);
	UT_ASSERT(why && strstr(why, "checksum"));
	ut_img_free(img, SZ);
}

static void sb_foreign(void)
{
	void *img = ut_img_alloc(SZ);
	const char *why = NULL;
	unsigned int i;

	/* never formatted */
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EINVAL);
	UT_ASSERT(why && strstr(why, "foreign"));
	/* some other data, e.g. a file system */
	for (i = 0; i < 2 * PMIDX_SB_STRIDE; i++)
		((u8 *)img)[i] = ut_rand(256);
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EINVAL);
	ut_img_free(img, SZ);
	/* one copy foreign, the other corrupt: corrupt is the better story */
	img = formatted();
	sb_at(img, 0)->magic = 0;
	sb_at(img, 1)->seq ^= cpu_to_le64(4);
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EUCLEAN);
	ut_img_free(img, SZ);
}

static void sb_future_version(void)
{
	void *img = formatted();
	const char *why = NULL;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		sb_at(img, i)->version = cpu_to_le32(PMIDX_FORMAT_VERSION + 1);
		sb_reseal(sb_at(img, i));
	}
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EOPNOTSUPP);
	UT_ASSERT(why && strstr(why, "newer"));
	/* an unknown incompatible feature is refused the same way */
	for (i = 0; i < 2; i++) {
		sb_at(img, i)->version = cpu_to_le32(PMIDX_FORMAT_VERSION);
		sb_at(img, i)->feat_incompat = cpu_to_le64(1ULL << 17);
		sb_reseal(sb_at(img, i));
	}
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EOPNOTSUPP);
	UT_ASSERT(why && strstr(why, "incompatible"));
	/* version 0 is corrupt, not "old" */
	for (i = 0; i < 2; i++) {
		sb_at(img, i)->feat_incompat = 0;
		sb_at(img, i)->version = 0;
		sb_reseal(sb_at(img, i));
	}
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EUCLEAN);
	ut_img_free(img, SZ);
}

static void sb_geometry_mismatch(void)
{
	static const unsigned int fields[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	unsigned int f, i;

	for (f = 0; f < ARRAY_SIZE(fields); f++) {
		void *img = formatted();
		const char *why = NULL;

		for (i = 0; i < 2; i++) {
			struct pmidx_sb *sb = sb_at(img, i);

			switch (fields[f]) {
			case 0:
				le32_add_cpu(&sb->nr_chunks, 1);
				break;
			case 1:
				le64_add_cpu(&sb->data_off, PMIDX_CHUNK_SIZE);
				break;
			case 2:
				sb->chunk_size = cpu_to_le32(PMIDX_CHUNK_SIZE * 2);
				break;
			case 3:
				le64_add_cpu(&sb->index_table_off, 128);
				break;
			case 4:
				le32_add_cpu(&sb->index_slots, 1);
				break;
			case 5:	/* bigger than the device */
				sb->size = cpu_to_le64(SZ * 2);
				break;
			case 6:
				sb->sb_size = cpu_to_le32(sizeof(*sb) - 8);
				break;
			case 7:	/* smaller than any pool */
				sb->size = cpu_to_le64(4 << 20);
				break;
			}
			sb_reseal(sb);
		}
		UT_ASSERT_MSG(ut_pool_open_err(img, SZ, &why) == -EUCLEAN,
			      "field case %u: %s", fields[f], why);
		ut_img_free(img, SZ);
	}
}

/* A device larger than the pool it holds: the pool's own size rules. */
static void sb_device_larger(void)
{
	u64 dev = SZ + (3 << 20);
	void *img = ut_img_alloc(dev);
	const char *why = NULL;
	struct pmidx_pool *pool;

	UT_EQ(pmidx_pool_format(img, SZ, false, &why), 0);
	pool = ut_pool_open(img, dev);
	UT_EQ(le64_to_cpu(pool->sb.size), SZ);
	pmidx_pool_close(pool);
	/* the same image on a device too small for it is refused */
	UT_EQ(ut_pool_open_err(img, SZ - (1 << 20), &why), -EUCLEAN);
	ut_img_free(img, dev);
}

static void sb_media_error(void)
{
	void *img = formatted();
	const char *why = NULL;
	struct pmidx_pool *pool;

	/* newest copy unreadable: use the other */
	shim_pmem_poison(sb_at(img, 1), 64);
	pool = ut_pool_open(img, SZ);
	UT_EQ(le64_to_cpu(pool->sb.seq), 2);	/* copy 0 (seq 1), rewritten as 2 */
	pmidx_pool_close(pool);
	shim_pmem_clear_poison();
	/* both unreadable: -EIO */
	shim_pmem_poison(sb_at(img, 0), 8);
	shim_pmem_poison((u8 *)sb_at(img, 1) + 100, 8);
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EIO);
	UT_ASSERT(why && strstr(why, "media"));
	shim_pmem_clear_poison();
	ut_img_free(img, SZ);
}

static void format_guards(void)
{
	void *img = formatted();
	const char *why = NULL;

	UT_EQ(pmidx_pool_format(img, SZ, false, &why), -EEXIST);
	UT_EQ(pmidx_pool_format(img, SZ, true, &why), 0);
	UT_EQ(pmidx_pool_format(img, PMIDX_MIN_POOL_SIZE - 4096, true, &why),
	      -ENOSPC);
	ut_img_free(img, SZ);
}

/* attach bumps the sequence and marks the pool dirty until detach */
static void sb_clean_flag_cycle(void)
{
	void *img = formatted();
	struct pmidx_pool *pool;
	const char *why = NULL;
	struct pmidx_sb sb;
	unsigned int slot, i;

	for (i = 0; i < 3; i++) {
		pool = ut_pool_open(img, SZ);
		UT_EQ(sb_read(img, &sb, &slot, &why), 0);
		UT_EQ(le32_to_cpu(sb.clean), 0);
		UT_EQ(le64_to_cpu(sb.attach_count), i + 1);
		UT_ASSERT(!(pool->flags & PMIDX_POOL_F_RECOVERED));
		pmidx_pool_close(pool);
		UT_EQ(sb_read(img, &sb, &slot, &why), 0);
		UT_EQ(le32_to_cpu(sb.clean), 1);
	}
	ut_img_free(img, SZ);
}

static const struct ut_test tests[] = {
	UT_TEST(sb_format_read),
	UT_TEST(sb_geometry_sizes),
	UT_TEST(sb_newest_copy_wins),
	UT_TEST(sb_torn_copy_falls_back),
	UT_TEST(sb_both_corrupt),
	UT_TEST(sb_foreign),
	UT_TEST(sb_future_version),
	UT_TEST(sb_geometry_mismatch),
	UT_TEST(sb_device_larger),
	UT_TEST(sb_media_error),
	UT_TEST(format_guards),
	UT_TEST(sb_clean_flag_cycle),
};

int main(int argc, char **argv)
{
	return ut_main(argc, argv, "superblock", tests, ARRAY_SIZE(tests));
}
