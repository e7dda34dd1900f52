// SPDX-License-Identifier: GPL-2.0
/*
 * The dispatcher's access to the calling task's memory, for the ioctl and
 * io_uring paths (struct pmidx_uaccess, core/dispatch.h).
 *
 * Short copies (a key, a value that fits the dispatcher's stack buffer, a
 * short BATCH's entry array) run as a loop of word-sized accesses inside
 * one user-access window rather than through copy_{from,to}_user():
 * - no hardened-usercopy check: every length is bounded before the copy
 *   by the dispatcher (check_shape(), the entry count), and the kernel
 *   side is one of its own buffers of at least that size;
 * - no call into the string-copy routine, whose rep movsb costs more to
 *   start than a few loads on hardware, and which TCG emulates a byte at
 *   a time (issue 15's item-5 profile: a BATCH 16 of gets spent 17 % of
 *   its samples there).
 * Longer copies (large values, long BATCHes) keep copy_{from,to}_user().
 */
#include <linux/uaccess.h>
#include "core/dispatch.h"
#include "user_access.h"

/* Up to this many bytes: the word loop. A BATCH of 16 entries fits. */
#define UACCESS_LOOP_MAX	2048

#define copy_in_loop(dst, src, len, type, label)			\
	while (len >= sizeof(type)) {					\
		unsafe_get_user(*(type *)(dst), (type __user *)(src),	\
				label);					\
		dst += sizeof(type);					\
		src += sizeof(type);					\
		len -= sizeof(type);					\
	}

/* Is every one of @n segments short, and all but the first accessible? */
static bool one_window(const struct pmidx_useg *seg, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (seg[i].len > UACCESS_LOOP_MAX)
			return false;
	/* the first segment's check is user_*_access_begin()'s */
	for (i = 1; i < n; i++)
		if (!access_ok(u64_to_user_ptr(seg[i].uptr), seg[i].len))
			return false;
	return true;
}

/*
 * All of @n segments in one window when each is short: a window's STAC,
 * CLAC and speculation barrier cost more than copying a key (and under
 * TCG each STAC or CLAC ends a translation block: 88 % of this function's
 * samples in a BATCH of updates). Otherwise, or when a segment is not
 * accessible, one copy_from_user() each, which sorts out the -EFAULT.
 */
static int uaccess_from(const struct pmidx_useg *seg, unsigned int n)
{
	const char __user *u;
	unsigned int i;
	u32 len;
	char *d;

	if (!n || !one_window(seg, n) ||
	    !user_read_access_begin(u64_to_user_ptr(seg[0].uptr), seg[0].len))
		goto one_by_one;
	for (i = 0; i < n; i++) {
		u = u64_to_user_ptr(seg[i].uptr);
		d = seg[i].kbuf;
		len = seg[i].len;
		copy_in_loop(d, u, len, u64, fault);
		copy_in_loop(d, u, len, u32, fault);
		copy_in_loop(d, u, len, u16, fault);
		copy_in_loop(d, u, len, u8, fault);
	}
	user_read_access_end();
	return 0;
fault:
	user_read_access_end();
	return -EFAULT;
one_by_one:
	for (i = 0; i < n; i++)
		if (copy_from_user(seg[i].kbuf, u64_to_user_ptr(seg[i].uptr),
				   seg[i].len))
			return -EFAULT;
	return 0;
}

static int uaccess_to(const struct pmidx_useg *seg, unsigned int n)
{
	char __user *u;
	unsigned int i;

	if (!n || !one_window(seg, n) ||
	    !user_write_access_begin(u64_to_user_ptr(seg[0].uptr), seg[0].len))
		goto one_by_one;
	for (i = 0; i < n; i++) {
		u = u64_to_user_ptr(seg[i].uptr);
		unsafe_copy_to_user(u, seg[i].kbuf, seg[i].len, fault);
	}
	user_write_access_end();
	return 0;
fault:
	user_write_access_end();
	return -EFAULT;
one_by_one:
	for (i = 0; i < n; i++)
		if (copy_to_user(u64_to_user_ptr(seg[i].uptr), seg[i].kbuf,
				 seg[i].len))
			return -EFAULT;
	return 0;
}

/* The outputs of @n BATCH entries: one user access window, four stores each. */
static int uaccess_batch_out(u64 dst, const struct pmidx_cmd *ents, u32 n)
{
	struct pmidx_cmd __user *u = u64_to_user_ptr(dst);
	u32 i;

	if (!user_write_access_begin(u, array_size(n, sizeof(*u))))
		return -EFAULT;
	for (i = 0; i < n; i++) {
		unsafe_put_user(ents[i].flags, &u[i].flags, fault);
		unsafe_put_user(ents[i].val_len, &u[i].val_len, fault);
		unsafe_put_user(ents[i].count, &u[i].count, fault);
		unsafe_put_user(ents[i].result, &u[i].result, fault);
	}
	user_write_access_end();
	return 0;
fault:
	user_write_access_end();
	return -EFAULT;
}

/* user memory of the calling task, for the ioctl and io_uring paths */
const struct pmidx_uaccess pmidx_user_access = {
	.from		= uaccess_from,
	.to		= uaccess_to,
	.batch_out	= uaccess_batch_out,
};
