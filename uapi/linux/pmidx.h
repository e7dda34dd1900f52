/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * pmidx: crash-consistent ordered key-value indexes on persistent memory.
 *
 * This header is the only ABI shared by the kernel module and userspace:
 * the generic-netlink admin family and the per-pool char device commands.
 *
 * Conventions:
 *  - Every struct has explicit sizes and no implicit padding; reserved
 *    fields must be zero or the kernel answers -EINVAL, so the ABI can grow.
 *  - Errors are negative errno values; netlink errors carry an extack
 *    message naming the offending attribute.
 */
#ifndef _UAPI_LINUX_PMIDX_H
#define _UAPI_LINUX_PMIDX_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* ---- Limits ---------------------------------------------------------- */

#define PMIDX_NAME_MAX		63	/* index name, without the NUL */
#define PMIDX_PATH_MAX		255	/* device path, without the NUL */
#define PMIDX_KEY_MAX		255	/* key bytes (keys are 1..255 bytes) */
#define PMIDX_VALUE_MAX		65536	/* value bytes (0..65536) */
#define PMIDX_MAX_INDEXES	64	/* index table slots per pool */

/* ---- Engines --------------------------------------------------------- */

enum pmidx_engine_id {
	PMIDX_ENGINE_NONE = 0,
	PMIDX_ENGINE_CCL = 1,		/* CCL-BTree (default) */
	PMIDX_ENGINE_UTREE = 2,		/* uTree */
	PMIDX_ENGINE_B3 = 3,		/* B^3-tree */
	PMIDX_ENGINE_LODGE = 4,		/* LodgeTree */
	PMIDX_ENGINE_PFART = 5,		/* PFtree (persistent-leaf ART) */
	__PMIDX_ENGINE_MAX,
};

/* ---- Generic netlink admin family ------------------------------------ */

#define PMIDX_GENL_NAME		"pmidx"
#define PMIDX_GENL_VERSION	1
#define PMIDX_GENL_MCGRP_EVENTS	"events"

enum pmidx_cmd_id {
	PMIDX_CMD_UNSPEC,
	PMIDX_CMD_FORMAT,	/* DEV_PATH, [FORCE] */
	PMIDX_CMD_ATTACH,	/* DEV_PATH -> POOL nest */
	PMIDX_CMD_DETACH,	/* POOL_ID or POOL_NAME or DEV_PATH */
	PMIDX_CMD_LIST,		/* dump: a POOL message per pool, then an INDEX
				 * message (INDEX nest with POOL_ID) per index */
	PMIDX_CMD_CREATE_INDEX,	/* INDEX_NAME, [ENGINE], [pool selector] -> INDEX nest */
	PMIDX_CMD_DROP_INDEX,	/* INDEX_NAME, [pool selector] */
	PMIDX_CMD_STATS,	/* dump: [INDEX_NAME], [pool selector] -> as LIST,
				 * each nest with a STATS nest; -ENOENT if
				 * INDEX_NAME matches nothing */
	__PMIDX_CMD_TEST0,	/* test builds only: linux/pmidx_test.h */
	/* multicast notifications on the "events" group */
	PMIDX_CMD_EVENT_ATTACHED,
	PMIDX_CMD_EVENT_DETACHED,
	__PMIDX_CMD_MAX,
};
#define PMIDX_CMD_MAX (__PMIDX_CMD_MAX - 1)

enum pmidx_attr {
	PMIDX_ATTR_UNSPEC,
	PMIDX_ATTR_DEV_PATH,		/* string: /dev/pmemN */
	PMIDX_ATTR_FORCE,		/* flag: format over an existing pool */
	PMIDX_ATTR_POOL_ID,		/* u32: N of /dev/pmidxN */
	PMIDX_ATTR_POOL_NAME,		/* string: "pmidxN" */
	PMIDX_ATTR_POOL_UUID,		/* binary, 16 bytes */
	PMIDX_ATTR_POOL_SIZE,		/* u64: bytes managed by the pool */
	PMIDX_ATTR_POOL_FLAGS,		/* u32: PMIDX_POOL_F_* */
	PMIDX_ATTR_POOL,		/* nest: one pool */
	PMIDX_ATTR_INDEX,		/* nest: one index */
	PMIDX_ATTR_INDEX_NAME,		/* string */
	PMIDX_ATTR_INDEX_ID,		/* u32: slot in the pool's index table */
	PMIDX_ATTR_ENGINE,		/* u32: enum pmidx_engine_id */
	PMIDX_ATTR_ENGINE_NAME,		/* string: "ccl", "utree", ... */
	PMIDX_ATTR_STATS,		/* nest: u64 attributes keyed by enum pmidx_stat */
	/* five attributes of test builds only: linux/pmidx_test.h */
	__PMIDX_ATTR_TEST0,
	__PMIDX_ATTR_TEST1,
	__PMIDX_ATTR_TEST2,
	__PMIDX_ATTR_TEST3,
	__PMIDX_ATTR_TEST4,
	PMIDX_ATTR_PAD,
	__PMIDX_ATTR_MAX,
};
#define PMIDX_ATTR_MAX (__PMIDX_ATTR_MAX - 1)

/* PMIDX_ATTR_POOL_FLAGS */
#define PMIDX_POOL_F_RECOVERED	(1U << 0)	/* last attach ran crash recovery */
#define PMIDX_POOL_F_EADR	(1U << 1)	/* flushes elided: eADR domain */

/*
 * Keys of the u64 attributes inside PMIDX_ATTR_STATS. A source sends only
 * the statistics it keeps; type 0 (PMIDX_STAT_UNSPEC) is alignment padding.
 */
enum pmidx_stat {
	PMIDX_STAT_UNSPEC,
	/* pool */
	PMIDX_STAT_ALLOC_USED_BYTES,	/* bytes in allocated objects */
	PMIDX_STAT_ALLOC_OBJECTS,	/* allocated objects */
	PMIDX_STAT_ALLOC_FREE_CHUNKS,	/* chunks not assigned to any class */
	PMIDX_STAT_ALLOC_TOTAL_CHUNKS,
	PMIDX_STAT_CHUNK_SIZE,
	PMIDX_STAT_RECOVERY_NS,		/* time spent in attach-time recovery */
	PMIDX_STAT_RECOVERED_OBJECTS,	/* live objects found by recovery */
	PMIDX_STAT_FLUSHES,		/* cache lines written back */
	PMIDX_STAT_FENCES,
	PMIDX_STAT_PM_BYTES,		/* pool or index bytes on pmem */
	PMIDX_STAT_DRAM_BYTES,		/* DRAM used by volatile structures */
	/* index (data path, filled in by engines) */
	PMIDX_STAT_OPS_GET,
	PMIDX_STAT_OPS_PUT,
	PMIDX_STAT_OPS_DEL,
	PMIDX_STAT_OPS_SCAN,
	PMIDX_STAT_KEYS,
	PMIDX_STAT_LOG_BYTES,
	PMIDX_STAT_GC_RUNS,
	PMIDX_STAT_BUFFER_HITS,
	PMIDX_STAT_LEAF_FLUSHES,
	/* pool, continued */
	PMIDX_STAT_MEDIA_ERRORS,	/* data reads answered -EIO (poisoned pmem) */
	__PMIDX_STAT_MAX,
};
#define PMIDX_STAT_MAX (__PMIDX_STAT_MAX - 1)

/* ---- Data path: /dev/pmidxN ioctl and io_uring passthrough ------------ */

/*
 * One command struct for both paths. For ioctl(fd, PMIDX_IOC_CMD, &cmd)
 * it is read and written back; for IORING_OP_URING_CMD (IORING_SETUP_SQE128)
 * it sits in the SQE's 80-byte command area with cmd_op = PMIDX_IOC_CMD.
 *
 * Ops and their fields (all pointers are user addresses; unused fields
 * and every reserved byte must be zero):
 *
 *  LOOKUP  key = index name (key_len bytes, no NUL) -> index = id,
 *          result = engine id. @index must be 0 on input.
 *  GET     index, key -> value copied to val (val_len = buffer size);
 *          val_len := value length. -ENOENT if absent; -ENOSPC if the
 *          buffer is too small (val_len := the length needed).
 *  PUT     index, key, val/val_len; flags PMIDX_PUT_INSERT: -EEXIST if
 *          present (upsert otherwise). Durable when it returns.
 *  DEL     index, key. -ENOENT if absent. Durable when it returns.
 *  SCAN    index, key = start (key_len 0: from the first key), end_key
 *          (end_key_len 0: unbounded; the end is exclusive), count = max
 *          records, val = output buffer of val_len bytes. Records are
 *          packed struct pmidx_rec + key + value, each padded to 8 bytes.
 *          Out: count := records returned, val_len := bytes used,
 *          flags |= PMIDX_SCAN_MORE when the scan stopped early (count or
 *          buffer); resume with key = the last key returned and
 *          PMIDX_SCAN_AFTER set. -ENOSPC with val_len := needed when not
 *          even one record fits.
 *  CHECK   index -> run the engine's structural checker; result := keys.
 *          -EUCLEAN if it finds damage (details in the kernel log).
 *          It may run while the index is being written: -EAGAIN when
 *          writes went on throughout and it could not get one consistent
 *          view of the index in a few passes (nothing wrong was seen;
 *          result := 0; try again, best when writes are quieter).
 *          Concurrent writes never make it report -EUCLEAN for a healthy
 *          index.
 *  BATCH   many GET/PUT/DEL/SCAN ops in one command, so that one syscall
 *          (or one SQE) does real work for many keys. val = user array of
 *          count struct pmidx_cmd entries (1..PMIDX_BATCH_MAX), val_len =
 *          count * sizeof(struct pmidx_cmd); index, key, end_key and
 *          flags zero. Every entry is checked first: if one is malformed
 *          (the checks of a single command, or a nested BATCH, LOOKUP or
 *          CHECK) nothing runs, the command fails with that entry's error
 *          and result := its position (0 when the BATCH itself is bad). Otherwise the entries run in
 *          order, each with its own index, and each entry's outputs are
 *          written back into the array with entry.result := its return
 *          value as a signed 64-bit number (0 or -errno). Out: result :=
 *          entries that failed. Entries are not atomic as a group: each
 *          PUT/DEL is durable once it has run, so a crash inside a batch
 *          keeps a prefix of it; all of them are durable when it returns.
 *          The output buffers of a batch's GET and SCAN entries (val_len,
 *          SCAN's counted up to its 1 MiB cap) may total at most
 *          PMIDX_BATCH_OUT_MAX bytes: -E2BIG otherwise, with nothing run.
 *          A fatal signal stops a batch between entries (-EINTR).
 *
 * A file opened without write access (O_RDONLY) may LOOKUP, GET, SCAN and
 * CHECK; PUT, DEL and a BATCH holding one fail with -EBADF.
 * The id LOOKUP returns names that index only: once it is dropped the id
 * answers -ENXIO, also after another index takes its table slot.
 */
enum pmidx_op {
	PMIDX_OP_LOOKUP = 1,
	PMIDX_OP_GET,
	PMIDX_OP_PUT,
	PMIDX_OP_DEL,
	PMIDX_OP_SCAN,
	PMIDX_OP_CHECK,
	PMIDX_OP_BATCH,
	__PMIDX_OP_MAX,
};

#define PMIDX_BATCH_MAX		1024	/* entries in one BATCH */
#define PMIDX_BATCH_OUT_MAX	(16U << 20)	/* output bytes of one BATCH */

#define PMIDX_PUT_INSERT	(1U << 0)	/* PUT: fail with -EEXIST if present */
#define PMIDX_SCAN_AFTER	(1U << 1)	/* SCAN: start strictly after key */
#define PMIDX_SCAN_MORE		(1U << 15)	/* SCAN out: more records follow */
#define PMIDX_CMD_FLAGS_IN	(PMIDX_PUT_INSERT | PMIDX_SCAN_AFTER)

struct pmidx_cmd {
	__u8	op;		/* enum pmidx_op */
	__u8	reserved0;
	__u16	flags;
	__u32	index;		/* index id (see LOOKUP) */
	__u64	key;		/* user pointer */
	__u64	val;		/* user pointer */
	__u32	key_len;
	__u32	val_len;
	__u64	end_key;	/* SCAN: user pointer */
	__u32	end_key_len;
	__u32	count;		/* SCAN: max records in, records out */
	__u64	result;
	__u64	reserved[3];
};

/* A SCAN record; key and value follow, the whole padded to 8 bytes. */
struct pmidx_rec {
	__u32	key_len;
	__u32	val_len;
};

/*
 * io_uring passthrough: IORING_OP_URING_CMD with cmd_op = PMIDX_IOC_CMD and
 * the struct pmidx_cmd in the command area (rings need IORING_SETUP_SQE128;
 * IORING_SETUP_CQE32 adds the second output word in big_cqe[0]):
 *   res:        the return value; on success GET: value length, SCAN:
 *               records, LOOKUP: index id, others 0
 *   big_cqe[0]: GET: value length (needed length on -ENOSPC); SCAN: bytes
 *               used | PMIDX_URING_SCAN_MORE (needed length on -ENOSPC);
 *               LOOKUP: engine id; CHECK: keys; BATCH: entries that
 *               failed (res is 0 on success for BATCH: the per-entry
 *               results are in the array), on failure the position of
 *               the malformed entry (0 when the batch itself is bad)
 */
#define PMIDX_URING_SCAN_MORE	(1ULL << 63)

#define PMIDX_IOC_MAGIC		0xb7
#define PMIDX_IOC_CMD		_IOWR(PMIDX_IOC_MAGIC, 1, struct pmidx_cmd)

#endif /* _UAPI_LINUX_PMIDX_H */
