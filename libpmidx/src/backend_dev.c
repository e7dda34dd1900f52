// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The device backend: a pool attached in the kernel, reached through
 * its char device /dev/pmidxN and the PMIDX_IOC_CMD ioctl.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "internal.h"

static bool dev_probe(const char *path, const struct stat *st)
{
	(void)path;
	return S_ISCHR(st->st_mode);
}

/*
 * A probe command tells a pmidx device from any other char device: a
 * zeroed LOOKUP fails shape validation with -EINVAL on a pmidx device,
 * while other drivers answer -ENOTTY (or something else) to our ioctl.
 */
static int dev_identify(int fd)
{
	struct pmidx_cmd c = { .op = PMIDX_OP_LOOKUP };

	if (!ioctl(fd, PMIDX_IOC_CMD, &c))
		return -ENOTTY;
	return errno == EINVAL ? 0 : -ENOTTY;
}

static int dev_open(struct pmidx_pool *pool, const char *path)
{
	int fd, ret;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = dev_identify(fd);
	if (ret) {
		close(fd);
		return ret;
	}
	pool->fd = fd;
	return 0;
}

static int dev_cmd(struct pmidx_pool *pool, struct pmidx_cmd *c)
{
	return ioctl(pool->fd, PMIDX_IOC_CMD, c) ? -errno : 0;
}

static void dev_close(struct pmidx_pool *pool)
{
	close(pool->fd);
	pool->fd = -1;
}

const struct pmidx_backend pmidx_backend_dev = {
	.name	= "dev",
	.probe	= dev_probe,
	.open	= dev_open,
	.cmd	= dev_cmd,
	.close	= dev_close,
};
