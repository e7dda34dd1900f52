// SPDX-License-Identifier: GPL-2.0
/*
 * Pool lifecycle and admin-plane tests, run inside the VM as root with
 * pmidx.ko loaded and an fsdax namespace for the pool, plus optionally a
 * second one too small for a pool (see find_devs()).
 *
 * Every test starts from a freshly formatted, attached pool.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "pmidx_nl.h"

#define SB_CRC_OFF	132
#define SB_VERSION_OFF	8
#define ITABLE_OFF	8192

/*
 * The namespaces: the largest pmem device is the pool under test, the
 * smallest (when there are two) is the one too small for a pool. Their
 * numbering follows probe order, not the runner's --pmem order.
 */
static char big_dev[32], little_dev[32];

static void find_devs(void)
{
	unsigned long long size, big = 0, little = ~0ULL;
	char path[64];
	FILE *f;
	int i;

	if (big_dev[0])
		return;
	for (i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "/sys/block/pmem%d/size", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &size) == 1) {
			if (size > big) {
				big = size;
				snprintf(big_dev, sizeof(big_dev), "/dev/pmem%d", i);
			}
			if (size < little) {
				little = size;
				snprintf(little_dev, sizeof(little_dev), "/dev/pmem%d", i);
			}
		}
		fclose(f);
	}
	if (!strcmp(big_dev, little_dev))
		little_dev[0] = 0;
}

static const char *dev(void)
{
	find_devs();
	return getenv("PMIDX_DEV") ?: big_dev;
}

static const char *small_dev(void)
{
	find_devs();
	return getenv("PMIDX_SMALL_DEV") ?: little_dev;
}

static uint32_t crc32c(uint32_t crc, const void *p, size_t len)
{
	const uint8_t *b = p;
	int k;

	while (len--) {
		crc ^= *b++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78 : crc >> 1;
	}
	return crc;
}

/* O_DIRECT block I/O on the namespace: no stale page cache vs. DAX. */
static void *blk_read(const char *path, off_t off)
{
	void *buf;
	int fd = open(path, O_RDONLY | O_DIRECT);

	if (fd < 0 || posix_memalign(&buf, 4096, 4096))
		return NULL;
	if (pread(fd, buf, 4096, off) != 4096) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	return buf;
}

static int blk_write(const char *path, off_t off, void *buf)
{
	int fd = open(path, O_WRONLY | O_DIRECT);
	int ret;

	if (fd < 0)
		return -errno;
	ret = pwrite(fd, buf, 4096, off) == 4096 ? 0 : -errno;
	fsync(fd);
	close(fd);
	return ret;
}

/* Flip a byte at @off of the namespace. */
static int blk_flip(const char *path, off_t off)
{
	uint8_t *b = blk_read(path, off & ~4095L);
	int ret;

	if (!b)
		return -EIO;
	b[off & 4095] ^= 0x5a;
	ret = blk_write(path, off & ~4095L, b);
	free(b);
	return ret;
}

/* Patch a superblock copy's u32 at @field and re-seal its checksum. */
static int sb_patch_u32(const char *path, int copy, int field, uint32_t v)
{
	uint8_t *b = blk_read(path, copy * 4096);
	uint32_t crc;
	int ret;

	if (!b)
		return -EIO;
	memcpy(b + field, &v, 4);
	crc = ~crc32c(~0U, b, SB_CRC_OFF);
	memcpy(b + SB_CRC_OFF, &crc, 4);
	ret = blk_write(path, copy * 4096, b);
	free(b);
	return ret;
}

static void detach_all(struct nl *nl)
{
	struct pool_info p;

	while (!pm_stats(nl, NULL, &p) && p.id >= 0)
		if (pm_detach(nl, p.name))
			break;
}

FIXTURE(pool) {
	struct nl nl;
	struct pool_info p;
};

FIXTURE_SETUP(pool)
{
	ASSERT_EQ(0, nl_open(&self->nl));
	detach_all(&self->nl);
	ASSERT_EQ(0, pm_format(&self->nl, dev(), 1)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p)) TH_LOG("%s", self->nl.msg);
	ASSERT_LE(0, self->p.id);
}

FIXTURE_TEARDOWN(pool)
{
	detach_all(&self->nl);
	nl_close(&self->nl);
}

TEST_F(pool, attach_creates_char_device_and_lists)
{
	char path[64];
	struct stat st;
	struct pool_info s;

	snprintf(path, sizeof(path), "/dev/%s", self->p.name);
	ASSERT_EQ(0, stat(path, &st));
	ASSERT_TRUE(S_ISCHR(st.st_mode));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &s));
	ASSERT_EQ(self->p.id, s.id);
	ASSERT_STREQ(self->p.name, s.name);
	ASSERT_GE(s.size, 16ULL << 20);
	/* geometry: chunks fit inside the pool */
	ASSERT_LE(s.stats[PMIDX_STAT_ALLOC_TOTAL_CHUNKS] *
		  s.stats[PMIDX_STAT_CHUNK_SIZE], s.size);
	ASSERT_EQ(s.stats[PMIDX_STAT_ALLOC_TOTAL_CHUNKS],
		  s.stats[PMIDX_STAT_ALLOC_FREE_CHUNKS]);
	ASSERT_EQ(0, s.flags & PMIDX_POOL_F_RECOVERED);
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_NE(0, stat(path, &st));
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p));
}

TEST_F(pool, format_refuses_existing_pool_without_force)
{
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_EQ(-EEXIST, pm_format(&self->nl, dev(), 0));
	ASSERT_NE(NULL, strstr(self->nl.msg, "--force"));
	ASSERT_EQ(0, pm_format(&self->nl, dev(), 1));
}

TEST_F(pool, format_while_attached_is_busy)
{
	ASSERT_EQ(-EBUSY, pm_format(&self->nl, dev(), 1));
	ASSERT_NE(0, self->nl.msg[0]);
}

TEST_F(pool, attach_twice_is_busy)
{
	struct pool_info p;

	ASSERT_EQ(-EBUSY, pm_attach(&self->nl, dev(), &p));
	ASSERT_NE(NULL, strstr(self->nl.msg, "attached"));
}

TEST_F(pool, detach_with_open_handle_is_busy)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/%s", self->p.name);
	fd = open(path, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(-EBUSY, pm_detach(&self->nl, self->p.name));
	ASSERT_NE(NULL, strstr(self->nl.msg, "in use"));
	/* indexes are not pinned by the open file: the drop gets to the name */
	ASSERT_EQ(-ENOENT, pm_drop(&self->nl, "nothing"));
	close(fd);
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
}

TEST_F(pool, detach_unknown_pool)
{
	ASSERT_EQ(-ENODEV, pm_detach(&self->nl, "pmidx77"));
	ASSERT_EQ(-ENODEV, pm_detach(&self->nl, "/dev/nonexistent"));
}

TEST_F(pool, create_list_drop_index)
{
	struct pool_info base, s, again;
	int b3, ret;

	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &base));
	/* utree allocates nothing until used: its index is just its root */
	ASSERT_EQ(0, pm_create(&self->nl, "dentries", PMIDX_ENGINE_UTREE));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &s));
	ASSERT_EQ(base.stats[PMIDX_STAT_ALLOC_USED_BYTES] + 256,
		  s.stats[PMIDX_STAT_ALLOC_USED_BYTES]);
	/*
	 * b3 neither (its first page comes with the first put), when the
	 * module builds it; else the create is refused and persists nothing
	 */
	ret = pm_create(&self->nl, "pages", PMIDX_ENGINE_B3);
	ASSERT_TRUE(!ret || ret == -EOPNOTSUPP) TH_LOG("%s", self->nl.msg);
	b3 = !ret;
	if (!b3)
		TH_LOG("engine b3 is not built into pmidx.ko: %s", self->nl.msg);
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &again));
	ASSERT_EQ(1 + b3, again.nr_indexes);
	ASSERT_EQ(s.stats[PMIDX_STAT_ALLOC_USED_BYTES] + b3 * 256,
		  again.stats[PMIDX_STAT_ALLOC_USED_BYTES]);
	/* engines may allocate at creation (ccl: logs, first leaf) */
	ASSERT_EQ(0, pm_create(&self->nl, "inodes", PMIDX_ENGINE_CCL));
	ASSERT_EQ(0, pm_create(&self->nl, "default-engine", 0));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &s));
	ASSERT_EQ(3 + b3, s.nr_indexes);
	ASSERT_LE(base.stats[PMIDX_STAT_ALLOC_USED_BYTES] + (3 + b3) * 256,
		  s.stats[PMIDX_STAT_ALLOC_USED_BYTES]);
	ASSERT_EQ(0, pm_drop(&self->nl, "inodes"));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &s));
	ASSERT_EQ(2 + b3, s.nr_indexes);
	/* survives detach + attach, and a second round trip changes nothing */
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &s));
	ASSERT_EQ(2 + b3, s.nr_indexes);
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &again));
	ASSERT_EQ(s.stats[PMIDX_STAT_ALLOC_USED_BYTES],
		  again.stats[PMIDX_STAT_ALLOC_USED_BYTES]);
	ASSERT_EQ(s.stats[PMIDX_STAT_ALLOC_OBJECTS],
		  again.stats[PMIDX_STAT_ALLOC_OBJECTS]);
	ASSERT_EQ(-EEXIST, pm_create(&self->nl, "dentries", PMIDX_ENGINE_CCL));
	/* dropping everything gives every byte back */
	ASSERT_EQ(0, pm_drop(&self->nl, "dentries"));
	ASSERT_EQ(0, pm_drop(&self->nl, "default-engine"));
	if (b3)
		ASSERT_EQ(0, pm_drop(&self->nl, "pages"));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &s));
	ASSERT_EQ(base.stats[PMIDX_STAT_ALLOC_USED_BYTES],
		  s.stats[PMIDX_STAT_ALLOC_USED_BYTES]);
	ASSERT_EQ(base.stats[PMIDX_STAT_ALLOC_OBJECTS],
		  s.stats[PMIDX_STAT_ALLOC_OBJECTS]);
}

TEST_F(pool, index_name_errors)
{
	char name[300];
	struct pool_info s;

	memset(name, 'a', sizeof(name));
	name[64] = 0;
	ASSERT_EQ(-ENAMETOOLONG, pm_create(&self->nl, name, 0));
	ASSERT_NE(NULL, strstr(self->nl.msg, "longer"));
	name[63] = 0;
	ASSERT_EQ(0, pm_create(&self->nl, name, 0));
	ASSERT_EQ(-EINVAL, pm_create(&self->nl, "", 0));
	ASSERT_EQ(-EINVAL, pm_create(&self->nl, "has/slash", 0));
	ASSERT_EQ(-EINVAL, pm_create(&self->nl, "sp ace", 0));
	/* beyond the policy's length: rejected by validation */
	memset(name, 'b', sizeof(name));
	name[sizeof(name) - 1] = 0;
	ASSERT_GT(0, pm_create(&self->nl, name, 0));
	ASSERT_EQ(-ENOENT, pm_drop(&self->nl, "missing"));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &s));
	ASSERT_EQ(1, s.nr_indexes);
}

TEST_F(pool, index_table_full)
{
	char name[16];
	int i;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		snprintf(name, sizeof(name), "ix%d", i);
		ASSERT_EQ(0, pm_create(&self->nl, name, 1 + i % 2));
	}
	ASSERT_EQ(-ENOSPC, pm_create(&self->nl, "one-too-many", 0));
	ASSERT_EQ(0, pm_drop(&self->nl, "ix7"));
	ASSERT_EQ(0, pm_create(&self->nl, "one-too-many", 0));
}

/*
 * An engine id the uapi does not name is refused and leaves nothing
 * behind: the name stays free and no table slot is taken. (Every engine
 * the uapi names is served by every module; the userspace test-itable
 * covers the refusal of one a build leaves out.)
 */
TEST_F(pool, engine_refused_leaves_nothing)
{
	char name[16];
	int i;

	ASSERT_GT(0, pm_create(&self->nl, "later", __PMIDX_ENGINE_MAX));
	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		snprintf(name, sizeof(name), "ix%d", i);
		ASSERT_EQ(0, pm_create(&self->nl, name, PMIDX_ENGINE_UTREE));
	}
	ASSERT_EQ(-ENOSPC, pm_create(&self->nl, "later", PMIDX_ENGINE_CCL));
	ASSERT_EQ(0, pm_drop(&self->nl, "ix0"));
	ASSERT_EQ(0, pm_create(&self->nl, "later", PMIDX_ENGINE_CCL));
}

TEST_F(pool, engine_out_of_range)
{
	ASSERT_GT(0, pm_create(&self->nl, "x", 99));
	ASSERT_GT(0, pm_create(&self->nl, "x", __PMIDX_ENGINE_MAX));
}

TEST_F(pool, malformed_requests)
{
	struct req r;
	uint8_t uuid[16] = {};

	/* unknown attribute type */
	req_init(&r, self->nl.family, PMIDX_CMD_CREATE_INDEX, 0);
	req_str(&r, PMIDX_ATTR_INDEX_NAME, "x");
	req_u32(&r, 200, 1);
	ASSERT_EQ(-EINVAL, nl_call(&self->nl, &r, NULL, NULL));
	/* output-only attribute in a request */
	req_init(&r, self->nl.family, PMIDX_CMD_CREATE_INDEX, 0);
	req_str(&r, PMIDX_ATTR_INDEX_NAME, "x");
	req_put(&r, PMIDX_ATTR_POOL_UUID, uuid, sizeof(uuid));
	ASSERT_GT(0, nl_call(&self->nl, &r, NULL, NULL));
	/* wrong attribute size */
	req_init(&r, self->nl.family, PMIDX_CMD_CREATE_INDEX, 0);
	req_str(&r, PMIDX_ATTR_INDEX_NAME, "x");
	req_put(&r, PMIDX_ATTR_ENGINE, "ab", 2);
	ASSERT_GT(0, nl_call(&self->nl, &r, NULL, NULL));
	/* missing required attribute */
	req_init(&r, self->nl.family, PMIDX_CMD_ATTACH, 0);
	ASSERT_EQ(-EINVAL, nl_call(&self->nl, &r, NULL, NULL));
	/* unknown command */
	req_init(&r, self->nl.family, 77, 0);
	ASSERT_EQ(-EOPNOTSUPP, nl_call(&self->nl, &r, NULL, NULL));
	/* two pool selectors */
	req_init(&r, self->nl.family, PMIDX_CMD_DETACH, 0);
	req_u32(&r, PMIDX_ATTR_POOL_ID, self->p.id);
	req_str(&r, PMIDX_ATTR_POOL_NAME, self->p.name);
	ASSERT_EQ(-EINVAL, nl_call(&self->nl, &r, NULL, NULL));
	ASSERT_NE(NULL, strstr(self->nl.msg, "one way"));
	/* nothing above created anything */
	req_init(&r, self->nl.family, PMIDX_CMD_DROP_INDEX, 0);
	req_str(&r, PMIDX_ATTR_INDEX_NAME, "x");
	ASSERT_EQ(-ENOENT, nl_call(&self->nl, &r, NULL, NULL));
}

TEST_F(pool, unprivileged_callers_get_eperm)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (!pid) {
		struct nl nl;
		struct pool_info p;

		if (setgid(65534) || setuid(65534) || nl_open(&nl))
			_exit(10);
		if (pm_create(&nl, "x", 0) != -EPERM)
			_exit(11);
		if (pm_detach(&nl, "pmidx0") != -EPERM)
			_exit(12);
		if (pm_format(&nl, dev(), 1) != -EPERM)
			_exit(13);
		if (pm_alloc_test(&nl, 1, 1, 10, 0, 1, &p) != -EPERM)
			_exit(14);
		if (pm_stats(&nl, NULL, &p) || p.id < 0)
			_exit(15);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

TEST_F(pool, non_dax_device_rejected)
{
	char loop[64] = "";
	FILE *f;

	ASSERT_EQ(0, system("modprobe loop && truncate -s 64M /tmp/pmidx-loop.img"));
	f = popen("losetup -f --show /tmp/pmidx-loop.img", "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(loop, sizeof(loop), f));
	pclose(f);
	loop[strcspn(loop, "\n")] = 0;
	ASSERT_EQ(-EOPNOTSUPP, pm_format(&self->nl, loop, 1));
	ASSERT_NE(NULL, strstr(self->nl.msg, "DAX"));
	ASSERT_EQ(-EOPNOTSUPP, pm_attach(&self->nl, loop, &self->p));
	ASSERT_EQ(-ENOENT, pm_attach(&self->nl, "/dev/does-not-exist", &self->p));
	ASSERT_GT(0, pm_attach(&self->nl, "/tmp/pmidx-loop.img", &self->p));
	snprintf(self->p.name, sizeof(self->p.name), "losetup -d %s", loop);
	system(self->p.name);
	unlink("/tmp/pmidx-loop.img");
}

TEST_F(pool, too_small_device_rejected)
{
	struct pool_info p;

	if (!small_dev()[0] || access(small_dev(), F_OK))
		SKIP(return, "no second, small namespace");
	ASSERT_EQ(-ENOSPC, pm_format(&self->nl, small_dev(), 1));
	ASSERT_NE(NULL, strstr(self->nl.msg, "small"));
	ASSERT_EQ(-ENOSPC, pm_attach(&self->nl, small_dev(), &p));
}

TEST_F(pool, one_damaged_superblock_copy_is_survived)
{
	struct pool_info s;

	ASSERT_EQ(0, pm_create(&self->nl, "keep", 0));
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_EQ(0, blk_flip(dev(), 40));		/* copy A, uuid */
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &s));
	ASSERT_EQ(1, s.nr_indexes);
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_EQ(0, blk_flip(dev(), 4096 + 40));	/* now copy B */
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p));
}

TEST_F(pool, corrupt_superblock_rejected)
{
	struct pool_info s;

	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_EQ(0, blk_flip(dev(), 50));
	ASSERT_EQ(0, blk_flip(dev(), 4096 + 50));
	ASSERT_EQ(-EUCLEAN, pm_attach(&self->nl, dev(), &s));
	ASSERT_NE(NULL, strstr(self->nl.msg, "checksum"));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &s));
	ASSERT_EQ(-1, s.id);
}

TEST_F(pool, foreign_magic_rejected)
{
	struct pool_info s;
	uint8_t *b;

	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	b = blk_read(dev(), 0);
	ASSERT_NE(NULL, b);
	memcpy(b, "XFSB\0\0\0\0", 8);
	ASSERT_EQ(0, blk_write(dev(), 0, b));
	ASSERT_EQ(0, blk_write(dev(), 4096, b));
	free(b);
	ASSERT_EQ(-EINVAL, pm_attach(&self->nl, dev(), &s));
	ASSERT_NE(NULL, strstr(self->nl.msg, "no pmidx superblock"));
	/* a foreign device can be formatted without --force */
	ASSERT_EQ(0, pm_format(&self->nl, dev(), 0));
}

TEST_F(pool, future_format_version_rejected)
{
	struct pool_info s;

	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_EQ(0, sb_patch_u32(dev(), 0, SB_VERSION_OFF, 2));
	ASSERT_EQ(0, sb_patch_u32(dev(), 1, SB_VERSION_OFF, 2));
	ASSERT_EQ(-EOPNOTSUPP, pm_attach(&self->nl, dev(), &s));
	ASSERT_NE(NULL, strstr(self->nl.msg, "newer"));
}

TEST_F(pool, corrupt_index_table_rejected)
{
	struct pool_info s;

	ASSERT_EQ(0, pm_create(&self->nl, "victim", 0));
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_EQ(0, blk_flip(dev(), ITABLE_OFF + 2));
	ASSERT_EQ(-EUCLEAN, pm_attach(&self->nl, dev(), &s));
	ASSERT_NE(NULL, strstr(self->nl.msg, "index table"));
}

TEST_F(pool, corrupt_chunk_descriptor_rejected)
{
	struct pool_info s;

	ASSERT_EQ(0, pm_create(&self->nl, "victim", 0));
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	/* chunk headers start at 16 KiB; chunk 0 holds the index root */
	ASSERT_EQ(0, blk_flip(dev(), 16384 + 6));
	ASSERT_EQ(-EUCLEAN, pm_attach(&self->nl, dev(), &s));
	ASSERT_NE(NULL, strstr(self->nl.msg, "descriptor"));
}

TEST_F(pool, allocator_storm_keeps_accounting)
{
	struct pool_info before, after;
	static const uint32_t sizes[] = { 0, 8, 256, 4096, 100000, 300000 };
	unsigned int i;

	ASSERT_EQ(0, pm_create(&self->nl, "baseline", 0));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &before));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ASSERT_EQ(0, pm_alloc_test(&self->nl, PMIDX_ALLOC_TEST_STORM, 4,
					   sizes[i] > 100000 ? 200 : 5000,
					   sizes[i], 42 + i, &after))
			TH_LOG("size %u: %s", sizes[i], self->nl.msg);
		ASSERT_EQ(before.stats[PMIDX_STAT_ALLOC_USED_BYTES],
			  after.stats[PMIDX_STAT_ALLOC_USED_BYTES]);
		ASSERT_EQ(before.stats[PMIDX_STAT_ALLOC_OBJECTS],
			  after.stats[PMIDX_STAT_ALLOC_OBJECTS]);
	}
	/* and the clean state written at detach reloads exactly */
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &after));
	ASSERT_EQ(0, after.flags & PMIDX_POOL_F_RECOVERED);
	ASSERT_EQ(before.stats[PMIDX_STAT_ALLOC_USED_BYTES],
		  after.stats[PMIDX_STAT_ALLOC_USED_BYTES]);
}

TEST_F(pool, abandoned_objects_reclaimed_by_recovery)
{
	struct pool_info before, leaked, after;

	ASSERT_EQ(0, pm_create(&self->nl, "keep", 0));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &before));
	ASSERT_EQ(0, pm_alloc_test(&self->nl, PMIDX_ALLOC_TEST_LEAK, 2, 300, 0,
				   7, &leaked));
	ASSERT_LT(before.stats[PMIDX_STAT_ALLOC_USED_BYTES],
		  leaked.stats[PMIDX_STAT_ALLOC_USED_BYTES]);
	ASSERT_EQ(before.stats[PMIDX_STAT_ALLOC_OBJECTS] + 600,
		  leaked.stats[PMIDX_STAT_ALLOC_OBJECTS]);
	ASSERT_EQ(0, pm_detach(&self->nl, self->p.name));
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p));
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &after));
	ASSERT_NE(0, after.flags & PMIDX_POOL_F_RECOVERED);
	ASSERT_EQ(1, after.nr_indexes);
	ASSERT_EQ(before.stats[PMIDX_STAT_ALLOC_USED_BYTES],
		  after.stats[PMIDX_STAT_ALLOC_USED_BYTES]);
	ASSERT_EQ(before.stats[PMIDX_STAT_ALLOC_OBJECTS],
		  after.stats[PMIDX_STAT_ALLOC_OBJECTS]);
}

TEST_F(pool, alloc_test_bad_arguments)
{
	struct pool_info p;

	ASSERT_GT(0, pm_alloc_test(&self->nl, 9, 1, 10, 0, 1, &p));
	ASSERT_GT(0, pm_alloc_test(&self->nl, 1, 0, 10, 0, 1, &p));
	ASSERT_GT(0, pm_alloc_test(&self->nl, 1, 65, 10, 0, 1, &p));
	ASSERT_GT(0, pm_alloc_test(&self->nl, 1, 1, 0, 0, 1, &p));
}

TEST_HARNESS_MAIN
