// SPDX-License-Identifier: GPL-2.0
/*
 * Media errors known before a pool is mapped: the namespace's bad blocks.
 *
 * The pmem driver keeps the bad sectors of its namespace in the disk's
 * badblocks list (disk->bb): what the platform's address range scrub
 * found at boot, what machine checks found since, and what an
 * administrator wrote to /sys/block/pmemN/badblocks. Reads of them through
 * the block layer fail with -EIO; 6.1's pmem_dax_direct_access() answers
 * -EIO for any range that holds one (only DAX_RECOVERY_WRITE maps past
 * them), so a pool on such a device cannot be mapped in one piece, and
 * pmidx does not map around bad blocks: the engines load their metadata
 * in place and a load of poison is a machine check.
 *
 * So before mapping, pmidx_badblocks_check() lists every bad range inside
 * the device in the kernel log with the pool structure it falls in (from
 * the layout, a pure function of the size: the superblock itself may be
 * unreadable) and refuses the attach (or format) with a reason that says
 * whether pool metadata is hit. Clearing them (ndctl clear-errors, or
 * writing the sectors through the block device where the platform can
 * clear poison) loses the bytes under them: metadata then fails its
 * checks, a value reads as zeros.
 */
#include <linux/badblocks.h>
#include <linux/blkdev.h>
#include <linux/errno.h>
#include <linux/printk.h>
#include "core/super.h"
#include "badblocks.h"

/* ranges named in the log, per device; the rest are counted */
#define BB_LOG_MAX	16

static const char *bb_region(u64 off, u64 data_off, u64 data_end)
{
	if (off < PMIDX_INDEX_TABLE_OFF)
		return "superblock";
	if (off < PMIDX_CHUNK_HDR_OFF)
		return "index table";
	if (off < data_off)
		return "chunk headers (allocator metadata)";
	if (off < data_end)
		return "data area";
	return "past the last chunk (unused)";
}

/**
 * pmidx_badblocks_check - refuse a device with bad blocks in its range
 * @bdev:  the (exclusively opened) block device
 * @start: byte offset of the device on its disk (a partition's start)
 * @size:  bytes of the device, all of which the pool maps
 * @path:  for the log
 *
 * Return: 0 when no sector of the range is bad, else -EIO with *@why set
 * (every bad range is in the kernel log).
 */
int pmidx_badblocks_check(struct block_device *bdev, u64 start, u64 size,
			  const char *path, const char **why)
{
	struct badblocks *bb = bdev->bd_disk->bb;
	sector_t base = start >> SECTOR_SHIFT, s = base;
	sector_t end = base + (size >> SECTOR_SHIFT), first;
	u64 data_off = PMIDX_CHUNK_HDR_OFF, data_end = size, bad = 0;
	struct pmidx_sb geo = {};
	unsigned int ranges = 0;
	bool meta = false;
	int len;

	if (!bb)
		return 0;
	if (!pmidx_sb_geometry(&geo, size)) {
		data_off = le64_to_cpu(geo.data_off);
		data_end = data_off + ((u64)le32_to_cpu(geo.nr_chunks) <<
				       PMIDX_CHUNK_SHIFT);
	}
	while (s < end) {
		sector_t n = min_t(sector_t, end - s, 1U << 30), lo, hi;
		u64 off;

		/* the first bad range overlapping [s, s + n) */
		if (!badblocks_check(bb, s, n, &first, &len)) {
			s += n;
			continue;
		}
		lo = max(first, s);
		hi = min_t(sector_t, first + max(len, 1), end);
		if (hi <= lo)
			hi = lo + 1;
		off = (u64)(lo - base) << SECTOR_SHIFT;
		meta |= off < data_off;
		bad += hi - lo;
		if (ranges++ < BB_LOG_MAX)
			pr_err("pmidx: %s: media error: disk sectors %llu+%llu, pool bytes %#llx-%#llx: %s\n",
			       path, (unsigned long long)lo,
			       (unsigned long long)(hi - lo), off,
			       ((u64)(hi - base) << SECTOR_SHIFT) - 1,
			       bb_region(off, data_off, data_end));
		s = hi;
	}
	if (!ranges)
		return 0;
	pr_err("pmidx: %s: %u bad range%s, %llu bad sectors (%s); not mapped: clear them first (ndctl clear-errors) or restore the pool\n",
	       path, ranges, ranges == 1 ? "" : "s", bad,
	       meta ? "pool metadata hit" : "data area only");
	*why = meta ? "media errors in pool metadata (superblock, index table or chunk headers): bad blocks listed in the kernel log"
		    : "media errors in the pool's data area: bad blocks listed in the kernel log; clear them or restore the pool before attaching";
	return -EIO;
}
