// SPDX-License-Identifier: GPL-2.0
/*
 * Superblock: two copies at 0 and 4 KiB. A write goes to the copy not
 * holding the newest state, with the next sequence number and a crc32c,
 * and is persisted before the caller continues; a read takes the valid
 * copy with the highest sequence. A torn write thus damages at most the
 * copy being replaced, never the last good one.
 */
#include <linux/crc32.h>
#include <linux/errno.h>
#include <linux/printk.h>
#include "super.h"

static u32 sb_crc(const struct pmidx_sb *sb)
{
	return ~__crc32c_le(~0U, (const u8 *)sb, offsetof(struct pmidx_sb, crc));
}

static struct pmidx_sb *sb_copy(struct pmidx_pmem *pm, unsigned int slot)
{
	return pmidx_ptr(pm, (u64)slot * PMIDX_SB_STRIDE);
}

/**
 * pmidx_sb_geometry - lay out a pool of @size bytes into @sb
 *
 * Fills the geometry fields only. The layout is a pure function of the
 * size, so attach can recompute it and reject any superblock whose
 * offsets disagree.
 */
int pmidx_sb_geometry(struct pmidx_sb *sb, u64 size)
{
	u64 n, data_off;

	if (size < PMIDX_MIN_POOL_SIZE)
		return -ENOSPC;
	n = (size - PMIDX_CHUNK_HDR_OFF) /
	    (PMIDX_CHUNK_SIZE + PMIDX_CHUNK_HDR_SIZE);
	if (n > U32_MAX)
		n = U32_MAX;
	for (;;) {
		data_off = ALIGN(PMIDX_CHUNK_HDR_OFF + n * PMIDX_CHUNK_HDR_SIZE,
				 (u64)PMIDX_CHUNK_SIZE);
		if (data_off + n * PMIDX_CHUNK_SIZE <= size)
			break;
		n--;
	}
	sb->size = cpu_to_le64(size);
	sb->chunk_size = cpu_to_le32(PMIDX_CHUNK_SIZE);
	sb->nr_chunks = cpu_to_le32(n);
	sb->index_table_off = cpu_to_le64(PMIDX_INDEX_TABLE_OFF);
	sb->index_slots = cpu_to_le32(PMIDX_MAX_INDEXES);
	sb->index_entry_size = cpu_to_le32(PMIDX_INDEX_ENTRY_SIZE);
	sb->chunk_hdr_off = cpu_to_le64(PMIDX_CHUNK_HDR_OFF);
	sb->data_off = cpu_to_le64(data_off);
	return 0;
}

/** pmidx_sb_present - does either copy carry our magic? (format guard) */
bool pmidx_sb_present(struct pmidx_pmem *pm)
{
	unsigned int i;
	__le64 magic;

	for (i = 0; i < PMIDX_SB_COPIES; i++) {
		if (pmidx_read_media(&magic, sb_copy(pm, i), sizeof(magic)))
			continue;
		if (le64_to_cpu(magic) == PMIDX_SB_MAGIC)
			return true;
	}
	return false;
}

/* Check one copy; set *why and return an errno when it is unusable. */
static int sb_check(struct pmidx_pmem *pm, const struct pmidx_sb *sb,
		    const char **why)
{
	struct pmidx_sb geo = {};
	u64 size = le64_to_cpu(sb->size);

	if (le64_to_cpu(sb->magic) != PMIDX_SB_MAGIC) {
		*why = "no pmidx superblock (foreign or unformatted device)";
		return -EINVAL;
	}
	if (le32_to_cpu(sb->sb_size) != sizeof(*sb) ||
	    sb_crc(sb) != le32_to_cpu(sb->crc)) {
		*why = "superblock checksum mismatch";
		return -EUCLEAN;
	}
	if (le32_to_cpu(sb->version) > PMIDX_FORMAT_VERSION) {
		*why = "pool format version is newer than this module supports";
		return -EOPNOTSUPP;
	}
	if (le32_to_cpu(sb->version) < 1) {
		*why = "pool format version invalid";
		return -EUCLEAN;
	}
	if (le64_to_cpu(sb->feat_incompat) & ~PMIDX_FEAT_INCOMPAT_SUPP) {
		/* a later module made the pool: say which features it needs */
		pr_err("pmidx: pool needs incompatible features %#llx this module lacks; attach it with a newer module\n",
		       le64_to_cpu(sb->feat_incompat) & ~PMIDX_FEAT_INCOMPAT_SUPP);
		*why = "pool uses incompatible features this module lacks";
		return -EOPNOTSUPP;
	}
	if (size > pm->size) {
		*why = "superblock size exceeds the device";
		return -EUCLEAN;
	}
	if (pmidx_sb_geometry(&geo, size) ||
	    geo.nr_chunks != sb->nr_chunks || geo.data_off != sb->data_off ||
	    geo.chunk_size != sb->chunk_size ||
	    geo.index_table_off != sb->index_table_off ||
	    geo.index_slots != sb->index_slots ||
	    geo.index_entry_size != sb->index_entry_size ||
	    geo.chunk_hdr_off != sb->chunk_hdr_off) {
		*why = "superblock geometry inconsistent";
		return -EUCLEAN;
	}
	return 0;
}

/**
 * pmidx_sb_read - find the newest valid superblock copy
 * @slot: set to the copy it came from
 *
 * Return: 0, or the error of the most telling copy with *why set:
 * -EINVAL foreign, -EUCLEAN corrupt, -EOPNOTSUPP too new, -EIO media error.
 */
static int err_rank(int err)
{
	switch (err) {
	case -EOPNOTSUPP:
		return 4;
	case -EUCLEAN:
		return 3;
	case -EIO:
		return 2;
	}
	return 1;
}

int pmidx_sb_read(struct pmidx_pmem *pm, struct pmidx_sb *sb,
		  unsigned int *slot, const char **why)
{
	const char *msg = NULL;
	struct pmidx_sb copy;
	int best = -1, ret = 0;
	unsigned int i;
	int err;

	for (i = 0; i < PMIDX_SB_COPIES; i++) {
		err = pmidx_read_media(&copy, sb_copy(pm, i), sizeof(copy));
		if (err)
			msg = "media error reading the superblock";
		else
			err = sb_check(pm, &copy, &msg);
		if (err) {
			if (!ret || err_rank(err) > err_rank(ret)) {
				ret = err;
				*why = msg;
			}
			continue;
		}
		if (best < 0 || le64_to_cpu(copy.seq) > le64_to_cpu(sb->seq)) {
			*sb = copy;
			best = i;
		}
	}
	if (best < 0)
		return ret;
	if (ret)
		pr_warn("pmidx: superblock copy damaged (%s), using copy %d\n",
			*why, best);
	*slot = best;
	return 0;
}

/**
 * pmidx_sb_write - persist @sb into the older copy, as the newest state
 *
 * Context: caller serialises superblock updates (pool lock).
 */
void pmidx_sb_write(struct pmidx_pmem *pm, struct pmidx_sb *sb,
		    unsigned int *slot)
{
	unsigned int next = (*slot + 1) % PMIDX_SB_COPIES;
	struct pmidx_sb *dst = sb_copy(pm, next);

	sb->seq = cpu_to_le64(le64_to_cpu(sb->seq) + 1);
	sb->sb_size = cpu_to_le32(sizeof(*sb));
	sb->crc = cpu_to_le32(sb_crc(sb));
	pmidx_memcpy_persist(pm, dst, sb, sizeof(*sb));
	*slot = next;
}
