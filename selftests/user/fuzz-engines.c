// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz target: engine recovery (ccl leaf walk and log replay, the uTree
 * list walk and saved image, lodge's leaf list and log records) and, on
 * what an attach accepts, the engines' checks and data paths, on mutated
 * engine images.
 *
 * Base images, built once at startup with the real engines: per engine of
 * the table below a minimum-size pool with two indexes of that engine,
 * and one pool with an index of every engine; mixed 1..40-byte keys and
 * 0..300-byte values, puts, updates and deletes (ccl with its log GC held
 * off, so the log keeps every entry). Each comes as a crash image (copied
 * while attached: the attach traces) and a clean one (after a detach).
 * The base image is attached once (on a copy) to list its objects: every
 * live allocator object, typed by the engine's walk of its own structures
 * (roots, leaves, the log directory and chunks, list nodes, node chunk
 * headers, trackers, saved images, b3 pages and BST nodes, lodge leaves,
 * log directory and logs) or generically (blobs, others).
 *
 * The input (little endian, records cut short are ignored):
 *
 *   byte 0   base image (modulo their number; image = base * 2 + crash)
 *   byte 1   bit 0 attach in eADR mode; bit 1 run the engine's own
 *            maintenance after attach (ccl: a log GC); bit 7 end with a
 *            recovery trace of the final state; bits 2..7 seed the
 *            operations
 *   records  u8 op, then by op & 7 (OBJ = u8 kind, u8 index: the index-th
 *            object of that kind, or of the next kind present; OFF = u16,
 *            modulo the object's length):
 *     0 XOR     OBJ OFF u8 mask
 *     1 SET64   OBJ OFF (8-aligned) value by (op >> 3) & 3: 0 u64;
 *               1 OBJ u8 delta: an object's offset; 2 u8; 3 s8 added
 *     2 COPY    OBJ OFF OBJ OFF u8 len (1..64): duplicates valid entries,
 *               nodes and pointers without knowing their format
 *     3 ZERO    OBJ OFF u8 len (1..64)
 *     4 RAW     u32 pool offset, u8 mask (anywhere at all)
 *     5 RESEAL  OBJ: the object's check words are recomputed (blob
 *               headers; the engine's own: uTree nodes, chunks, images;
 *               pfart nodes and leaves; b3 pages and nodes; lodge log
 *               records)
 *     6 FORGE   OBJ u16 entry WORD WORD u16 ts u8 flags: a log entry with
 *               a valid check, written by the core's own log code, into
 *               a log chunk of the core's log (ccl's: another engine's
 *               logs are skipped); WORD = u8 mode, then by mode & 3: 0 u64,
 *               1 OBJ (its offset), 2 u8, 3 u8 (a key of exactly 8 bytes
 *               of the base image); flags: bits 0..3 the entry's, bit 7
 *               a timestamp just below 2^48 (else one of the image's)
 *     7 FLIP    OBJ OFF u8 bit: flips a bit of an 8-byte word
 *
 * Then pmidx_pool_open() must refuse with a negative errno and a reason,
 * or attach. Attached: every index passes its engine's check (else a
 * check gap, see check_gap()), scans in strictly ascending order as many
 * keys as the check counted, finds what the scan returned, stands a put
 * and a delete, and a clean detach re-attaches with the same contents
 * (and so does a recovery trace, when byte 1 asks). No WARN (fatal),
 * sanitizer report, leak or hang is allowed.
 *
 *   fuzz-engines --make-seeds DIR    writes the seed corpus
 *   fuzz-engines --list-objects      prints the base images' objects
 *
 * Statistics are printed at exit: executions in total and per engine.
 * The environment variables: see LLVMFuzzerInitialize().
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sanitizer/common_interface_defs.h>

#include <linux/crc32.h>
#include <linux/crc32c.h>
#include <shim/pmem.h>
#include <shim/shim.h>
#include "core/blob.h"
#include "core/engine.h"
#include "core/wal.h"
#include "engines/ccl/ccl.h"
#include "engines/utree/utree.h"
#include "engines/pfart/pfart.h"
#include "engines/b3/b3.h"
#include "engines/lodge/format.h"

#define FE_SIZE		PMIDX_MIN_POOL_SIZE
/*
 * Keys per index: in an engine's own pool 1000 (over 64 ccl leaves, over
 * 1024 log entries per recovery worker) and 60; in the pool of all, 300.
 */
#define FE_KEYS		1000
#define FE_HANG_S	10
#define FE_MAX_ENGINES	8

/*
 * The kinds are part of the input format (OBJ): existing inputs keep
 * their meaning only while these keep their numbers, so a new engine's
 * objects take the kind nearest to what they are.
 */
enum fe_kind {
	FK_ROOT,	/* an index root */
	FK_LEAF,	/* ccl leaf, pfart leaf array, b3 leaf page, lodge leaf */
	FK_LOGDIR,	/* log directory (core/wal.h, lodge's) */
	FK_LOG,		/* log chunk (ccl), log (lodge), the part written so far */
	FK_NODE,	/* uTree list node, pfart inner node, b3 BST node */
	FK_CHUNK,	/* uTree node chunk header, b3 internal page */
	FK_TRACKERS,	/* uTree tracker table */
	FK_IMAGE,	/* uTree saved tree image */
	FK_BLOB,	/* any object with a valid blob header */
	FK_OTHER,	/* any other allocator object */
	FK_NR
};

static const char *const kind_name[FK_NR] = {
	"root", "leaf", "logdir", "log", "node", "chunk", "trackers", "image",
	"blob", "other",
};

struct fe_obj {
	u64	off;
	u32	len;		/* bytes worth patching */
	u32	cap;		/* allocated bytes from @off */
	u8	kind;
	u8	eng;		/* engines[] index, 0xff: none */
};

struct fe_image {
	char		name[24];
	int		fd;
	u32		engines;	/* engines[] indexes present, bitmask */
	struct fe_obj	*obj;		/* sorted by kind */
	u32		nobj;
	u32		first[FK_NR], count[FK_NR];
	u8		keys8[64][8];	/* 8-byte keys written (inline words) */
	u32		nkeys8;
	u64		writes;		/* upper bound of the timestamps */
};

struct fe_ctx {
	struct fe_image		*im;
	struct pmidx_pool	*pool;
	u8			*img;
	u8			eng;
	u64			*aoff;		/* allocator objects, sorted */
	u32			*asize;
	bool			*claimed;
	u32			na;
};

/*
 * An engine of the table: its id and optional hooks. Adding an engine is
 * one line; without hooks its objects are typed generically.
 * @setup:    module parameters for the fuzz images (once, at startup)
 * @classify: walk the engine's structures from its root, fe_add() them
 * @reseal:   recompute the check words of an object of the engine
 * @extra:    the engine's own maintenance, right after an attach
 * @wal:      its FK_LOG objects are chunks of the core's log (core/wal.h),
 *            the only ones FORGE's entries mean anything in
 */
struct fe_engine {
	u32	id;
	void	(*setup)(void);
	void	(*classify)(struct fe_ctx *c, u64 root);
	void	(*reseal)(u8 *img, const struct fe_obj *o);
	void	(*extra)(struct pmidx_index *idx);
	bool	wal;
};

static void ccl_fe_setup(void);
static void ccl_fe_classify(struct fe_ctx *c, u64 root);
static void ccl_fe_extra(struct pmidx_index *idx);
static void ut_fe_classify(struct fe_ctx *c, u64 root);
static void ut_fe_reseal(u8 *img, const struct fe_obj *o);
static void pfart_fe_classify(struct fe_ctx *c, u64 root);
static void pfart_fe_reseal(u8 *img, const struct fe_obj *o);
static void b3_fe_classify(struct fe_ctx *c, u64 root);
static void b3_fe_reseal(u8 *img, const struct fe_obj *o);
static void lodge_fe_classify(struct fe_ctx *c, u64 root);
static void lodge_fe_reseal(u8 *img, const struct fe_obj *o);

static const struct fe_engine engines[] = {
	{ PMIDX_ENGINE_CCL, ccl_fe_setup, ccl_fe_classify, NULL, ccl_fe_extra, true },
	{ PMIDX_ENGINE_UTREE, NULL, ut_fe_classify, ut_fe_reseal, NULL },
	/* b3: pages and BST nodes typed, page crcs and node checks resealed */
	{ PMIDX_ENGINE_B3, NULL, b3_fe_classify, b3_fe_reseal, NULL },
	/* lodge: leaves, the log directory and logs typed, record crcs resealed */
	{ PMIDX_ENGINE_LODGE, NULL, lodge_fe_classify, lodge_fe_reseal, NULL },
	/* pfart: inner nodes and leaf arrays typed, their check words resealed */
	{ PMIDX_ENGINE_PFART, NULL, pfart_fe_classify, pfart_fe_reseal, NULL },
};

#define FE_NENG		ARRAY_SIZE(engines)
#define FE_NBASE	(FE_NENG + 1)	/* one per engine, one with all */
#define FE_NIMG		(2 * FE_NBASE)

static struct fe_image images[FE_NIMG];
static bool prepared;
/* images in play: all, or those of PMIDX_FUZZ_ENGINES (inputs then differ) */
static u8 pick[FE_NIMG], npick;

static struct {
	unsigned long	execs, eng[FE_MAX_ENGINES], attached, refused, forged;
	unsigned long	gaps, leaks;
	unsigned long	img[FE_NIMG];
} st;

static const u8 *cur_data;	/* the input being run, for artifacts */
static size_t cur_size;
static const char *artifact_dir;

/* the libFuzzer build (user.mk): libFuzzer keeps artifacts, times out */
#ifdef PMIDX_LIBFUZZER
static const bool libfuzzer = true;
#else
static const bool libfuzzer;
#endif

/* ---- findings -------------------------------------------------------- */

/* Keep the current input as @name in PMIDX_FUZZ_ARTIFACTS, if set. */
static void save_input(const char *name, bool loud)
{
	char path[4096];
	int fd;

	if (!artifact_dir || !cur_data)
		return;
	snprintf(path, sizeof(path), "%s/%s", artifact_dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	if (write(fd, cur_data, cur_size) != (ssize_t)cur_size)
		fprintf(stderr, "fuzz-engines: short write to %s\n", path);
	close(fd);
	if (loud)
		fprintf(stderr, "fuzz-engines: input saved as %s\n", path);
}

static void print_stats(void);

/* The plain driver's crashes (libFuzzer keeps its own artifacts). */
static void save_crash(void)
{
	print_stats();
	if (!libfuzzer)
		save_input("crash-fuzz-engines", true);
	cur_data = NULL;
}

static void on_signal(int sig)
{
	if (sig == SIGALRM)
		fprintf(stderr, "fuzz-engines: FINDING: hang (over %d s)\n",
			FE_HANG_S);
	save_crash();
	signal(sig, SIG_DFL);
	raise(sig == SIGALRM ? SIGABRT : sig);
}

static void fe_death(void)
{
	save_crash();
}

static __printf(2, 3) __noreturn
void finding(const struct fe_image *im, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz-engines: FINDING (image %s): ", im ? im->name : "-");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	save_crash();
	abort();
}

static __noreturn void die(const char *what, const char *why)
{
	fprintf(stderr, "fuzz-engines: %s%s%s\n", what, why ? ": " : "",
		why ? why : "");
	abort();
}

/* ---- deterministic randomness ---------------------------------------- */

static u64 rnd_state;

static u64 rnd(void)
{
	u64 x = rnd_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rnd_state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static u32 rnd_n(u32 n)
{
	return n ? (u32)((rnd() >> 32) * n >> 32) : 0;
}

/* ---- log entries with valid checks ----------------------------------- */

/*
 * FORGE has the core's own encoder write its entries
 * (pmidx_wal_ent_encode(), which every append uses), in the generation
 * of the chunk they go into, so the harness knows nothing of the entry
 * format but PMIDX_WAL_ENT_SIZE and that entries start at offset 0 of a
 * chunk. forge_init() proves the method on a scratch ccl index.
 */
static struct {
	bool			ok;
} forge;

static const u8 *forge_entry(u64 w0, u64 w1, u64 ts, u8 flags, u16 gen)
{
	static struct pmidx_wal_ent e;

	if (!forge.ok)
		return NULL;
	pmidx_wal_ent_encode(&e, w0, w1, ts, flags, gen);
	return (const u8 *)&e;
}

/* The directory slot word naming the log chunk at @off, 0: none. */
static u64 wal_slot_of(const struct pmidx_wal_dir *d, u64 off)
{
	u32 i;

	for (i = 0; i < PMIDX_WAL_NSLOTS; i++) {
		u64 s = le64_to_cpu(d->slot[i]);

		if (s && pmidx_wal_slot_off(s) == off)
			return s;
	}
	return 0;
}

static u64 word_of(const char *s)
{
	u64 w;

	memcpy(&w, s, 8);
	return w;
}

/*
 * Set the scratch index up and prove the method: a forged put of a new
 * key (inline key and value words) is found after crash recovery.
 */
static void forge_init(void)
{
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	struct pmidx_wal *wal;
	const char *why = NULL;
	u32 vlen = 8, i;
	u8 v[8], *img, *copy;
	const u8 *e = NULL;
	unsigned int side;
	int ret;

	img = mmap(NULL, FE_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	copy = mmap(NULL, FE_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (img == MAP_FAILED || copy == MAP_FAILED)
		die("mmap", NULL);
	if (pmidx_pool_format(img, FE_SIZE, true, &why))
		die("scratch pool", why);
	pool = pmidx_pool_open(img, FE_SIZE, false, &why);
	if (IS_ERR(pool))
		die("scratch pool", why);
	if (pmidx_index_create(pool, "forge", PMIDX_ENGINE_CCL, &idx, &why) ||
	    idx->ops->put(idx, (const u8 *)"anchor!!", 8, (const u8 *)"x", 1, 0))
		die("scratch index", why);
	/* an append into the spare side, then the same entry forged */
	wal = ((struct ccl_tree *)idx->priv)->wal;
	side = !((struct ccl_tree *)idx->priv)->side;
	forge.ok = !pmidx_wal_append(wal, side, word_of("forged!!"),
				     word_of("value!!!"), 1 << 20, 0);
	for (i = 0; i < PMIDX_WAL_NSLOTS && forge.ok && !e; i++) {
		u64 s = le64_to_cpu(wal->dir->slot[i]);

		if ((s & PMIDX_WAL_SLOT_STATE) == PMIDX_WAL_SLOT_SIDE0 + side)
			e = forge_entry(word_of("forged!!"), word_of("value!!!"),
					1 << 20, 0, s >> PMIDX_WAL_GEN_SHIFT);
		if (e && memcmp(e, img + pmidx_wal_slot_off(s),
				PMIDX_WAL_ENT_SIZE))
			forge.ok = false;
	}
	forge.ok &= !!e;
	memcpy(copy, img, FE_SIZE);
	pmidx_pool_close(pool);
	pool = pmidx_pool_open(copy, FE_SIZE, false, &why);
	if (IS_ERR(pool))
		die("scratch pool copy", why);
	idx = pmidx_index_lookup(pool, "forge");
	ret = idx->ops->get(idx, (const u8 *)"forged!!", 8, v, &vlen);
	forge.ok &= !ret && vlen == 8 && !memcmp(v, "value!!!", 8);
	pmidx_pool_close(pool);
	munmap(copy, FE_SIZE);
	munmap(img, FE_SIZE);
	if (!forge.ok)
		fprintf(stderr, "fuzz-engines: a forged log entry does not replay: FORGE disabled\n");
}

/* ---- object lists ----------------------------------------------------- */

static void fe_add(struct fe_ctx *c, u8 kind, u64 off, u32 len)
{
	struct fe_image *im = c->im;
	u32 lo = 0, hi = c->na, cap;

	/* the allocator object holding @off is typed now */
	while (lo < hi) {
		u32 mid = (lo + hi) / 2;

		if (c->aoff[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || off >= c->aoff[lo - 1] + c->asize[lo - 1])
		return;		/* not inside a live object: not ours */
	c->claimed[lo - 1] = true;
	cap = c->aoff[lo - 1] + c->asize[lo - 1] - off;
	if (!(im->nobj & 255)) {
		im->obj = realloc(im->obj, (im->nobj + 256) * sizeof(*im->obj));
		if (!im->obj)
			die("realloc", NULL);
	}
	im->obj[im->nobj++] = (struct fe_obj){ .off = off, .kind = kind,
		.len = clamp_t(u32, len, 1, cap), .cap = cap, .eng = c->eng };
}

/* Up to the last non-zero 64 bytes of [off, off + cap), plus a line. */
static u32 used_len(const u8 *img, u64 off, u32 cap)
{
	u32 n = cap;

	while (n && !img[off + n - 1])
		n--;
	return min_t(u32, round_up(n, 64) + 64, cap);
}

/*
 * The part of a core log chunk worth patching: its current use's entries
 * (generation @gen; a clean chunk's older uses lie beyond) and a line.
 */
static u32 wal_used_len(const u8 *img, u64 off, u32 cap, u16 gen)
{
	const struct pmidx_wal_ent *e = (const void *)(img + off);
	u32 n = 0;

	while ((n + 1) * PMIDX_WAL_ENT_SIZE <= cap && e[n].meta &&
	       le64_to_cpu(e[n].meta) >> PMIDX_WAL_GEN_SHIFT == gen)
		n++;
	return min_t(u32, n * PMIDX_WAL_ENT_SIZE + 64, cap);
}

static int kind_cmp(const void *a, const void *b)
{
	const struct fe_obj *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind - y->kind;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* List the objects of @pool (attached from the base image). */
static void list_objects(struct fe_image *im, struct pmidx_pool *pool, u8 *img)
{
	struct pmidx_alloc *a = &pool->alloc;
	struct fe_ctx c = { .im = im, .pool = pool, .img = img };
	u64 end = a->data_off + ((u64)a->nr_chunks << PMIDX_CHUNK_SHIFT), off;
	unsigned int i, e;
	u32 k;

	c.aoff = calloc(FE_SIZE / PMIDX_MIN_OBJ, sizeof(*c.aoff));
	c.asize = calloc(FE_SIZE / PMIDX_MIN_OBJ, sizeof(*c.asize));
	c.claimed = calloc(FE_SIZE / PMIDX_MIN_OBJ, sizeof(*c.claimed));
	if (!c.aoff || !c.asize || !c.claimed)
		die("calloc", NULL);
	for (off = a->data_off; off < end; ) {
		size_t size = pmidx_alloc_size(a, off);

		if (size && pmidx_alloc_valid(a, off, size)) {
			c.aoff[c.na] = off;
			c.asize[c.na++] = size;
			off += size;
		} else {
			off += PMIDX_MIN_OBJ;
		}
	}
	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		struct pmidx_index *idx = pool->indexes[i];

		if (!idx)
			continue;
		c.eng = 0xff;
		for (e = 0; e < FE_NENG; e++)
			if (engines[e].id == idx->engine)
				c.eng = e;
		fe_add(&c, FK_ROOT, idx->root, 64);
		if (c.eng != 0xff && engines[c.eng].classify)
			engines[c.eng].classify(&c, idx->root);
	}
	c.eng = 0xff;
	for (k = 0; k < c.na; k++) {
		const struct pmidx_blob *b = (const void *)(img + c.aoff[k]);
		u32 len = le32_to_cpu(b->len);

		if (c.claimed[k])
			continue;
		if (le32_to_cpu(b->len_check) == ~len && sizeof(*b) + len <= c.asize[k])
			fe_add(&c, FK_BLOB, c.aoff[k], sizeof(*b) + len);
		else
			fe_add(&c, FK_OTHER, c.aoff[k], used_len(img, c.aoff[k],
							     min_t(u32, c.asize[k], 4096)));
	}
	qsort(im->obj, im->nobj, sizeof(*im->obj), kind_cmp);
	for (k = im->nobj; k--; ) {
		im->first[im->obj[k].kind] = k;
		im->count[im->obj[k].kind]++;
	}
	free(c.aoff);
	free(c.asize);
	free(c.claimed);
}

/* ---- pfart ------------------------------------------------------------ */

/* Inner nodes and leaf arrays, from root->top (blobs: typed generically). */
static void pfart_fe_classify(struct fe_ctx *c, u64 root)
{
	const struct pfart_root *r = (const void *)(c->img + root);
	u64 stack[1024], child[256];
	u8 keys[256];
	u32 n = 0, i, cnt;

	if (le64_to_cpu(r->magic) != PFART_ROOT_MAGIC || !r->top)
		return;
	stack[n++] = le64_to_cpu(r->top);
	while (n) {
		u64 off = stack[--n];
		const struct pfart_inner *x = (const void *)(c->img + off);

		if (off + PFART_LEAF_MIN > FE_SIZE)
			continue;
		if (x->type == PFART_LEAF) {
			fe_add(c, FK_LEAF, off, pfart_leaf_size(
			       min_t(u8, ((const struct pfart_leaf *)x)->klass,
				     PFART_NR_CLASSES - 1)));
			continue;
		}
		if (x->type < PFART_N4 || x->type > PFART_N256)
			continue;
		fe_add(c, FK_NODE, off, pfart_inner_obj(x->type));
		cnt = pfart_inner_entries(x, keys, child);
		if (x->end && n < ARRAY_SIZE(stack))
			stack[n++] = le64_to_cpu(x->end);
		for (i = 0; i < cnt && n < ARRAY_SIZE(stack); i++)
			stack[n++] = child[i];
	}
}

static void pfart_fe_reseal(u8 *img, const struct fe_obj *o)
{
	struct pfart_leaf *h = (void *)(img + o->off);

	if (o->kind == FK_NODE || o->kind == FK_LEAF)
		h->check = cpu_to_le32(pfart_check_word(h, le64_to_cpu(h->owner)));
}

/* ---- b3 --------------------------------------------------------------- */

/* A page of the index at @off (b3_page_ok() without a struct b3). */
static const struct b3_page *b3_fe_page(const struct fe_ctx *c, u64 root, u64 off)
{
	const struct b3_page *p = (const void *)(c->img + off);

	if (off < c->pool->alloc.data_off || off % B3_PAGE_SIZE ||
	    off > FE_SIZE - B3_PAGE_SIZE ||
	    le32_to_cpu(p->magic) != B3_PAGE_MAGIC ||
	    le64_to_cpu(p->owner) != root || p->level >= B3_MAX_LEVEL)
		return NULL;
	return p;
}

/* A child word of slot @s: leaves keep 32-bit slot words, inner pages 64 */
static u64 b3_fe_child(const struct b3_page *p, u32 s, bool right)
{
	if (!p->level)
		return le32_to_cpu(right ? p->l[s].right : p->l[s].left);
	return le64_to_cpu(right ? p->i[s].right : p->i[s].left);
}

/*
 * Every page the way b3's walk (walk.c) reaches them: each level's
 * sibling chain from its first page, the next level's first page being
 * the leftmost child of this one's. Leaf pages are FK_LEAF, internal
 * pages FK_CHUNK (a page of separators), both up to their last slot in
 * use (slots fill in order); every BST node reachable from a page's
 * root is FK_NODE on its own (32 bytes, its check word at 28), so that
 * patches aim at one key, value, meta or child word. Blobs: generic.
 */
static void b3_fe_classify(struct fe_ctx *c, u64 root)
{
	const struct b3_root *r = (const void *)(c->img + root);
	const struct b3_page *p;
	u64 head, off, next, w, stack[B3_SLOTS], n = 0;
	bool seen[B3_SLOTS];
	int level = B3_MAX_LEVEL;
	u32 sp, s;

	if (le64_to_cpu(r->magic) != B3_ROOT_MAGIC)
		return;
	for (head = le64_to_cpu(r->top); head; head = next) {
		next = 0;
		p = b3_fe_page(c, root, head);
		if (!p || p->level >= level)
			return;
		level = p->level;
		for (off = head; off && n++ < FE_SIZE / B3_PAGE_SIZE;
		     off = le64_to_cpu(p->sibling)) {
			p = b3_fe_page(c, root, off);
			if (!p || p->level != level)
				break;
			fe_add(c, level ? FK_CHUNK : FK_LEAF, off,
			       used_len(c->img, off, B3_PAGE_SIZE));
			/* the BST, each node once */
			memset(seen, 0, sizeof(seen));
			sp = 0;
			w = le64_to_cpu(p->root);
			if (b3_w_is_slot(w))
				stack[sp++] = w - 1;
			while (sp) {
				s = stack[--sp];
				if (seen[s])
					continue;
				seen[s] = true;
				fe_add(c, FK_NODE, off + B3_NODES_OFF +
				       (u64)s * B3_NODE_SIZE, B3_NODE_SIZE);
				w = b3_fe_child(p, s, false);
				if (b3_w_is_slot(w) && sp < B3_SLOTS)
					stack[sp++] = w - 1;
				w = b3_fe_child(p, s, true);
				if (b3_w_is_slot(w) && sp < B3_SLOTS)
					stack[sp++] = w - 1;
			}
			/* the next level starts at the leftmost child */
			if (level && off == head) {
				w = le64_to_cpu(p->root);
				s = 0;
				while (b3_w_is_slot(w) && s++ < B3_SLOTS)
					w = b3_fe_child(p, w - 1, false);
				next = b3_w_is_page(w) ? w : 0;
			}
		}
		if (!level)
			return;
	}
}

static void b3_fe_reseal_node(struct b3_lnode *n)
{
	/* b3_inode has key, meta and check at the same places */
	n->check = cpu_to_le32(b3_node_check(le64_to_cpu(n->key),
					     le32_to_cpu(n->meta)));
}

/*
 * A node: its check word. A page: every slot with a meta word (a free
 * slot is all zero; a zero meta is invalid whatever its check) and the
 * header's crc, so that a patch anywhere in the page gets past both.
 */
static void b3_fe_reseal(u8 *img, const struct fe_obj *o)
{
	struct b3_page *p = (void *)(img + o->off);
	u32 s;

	switch (o->kind) {
	case FK_NODE:
		b3_fe_reseal_node((void *)p);
		break;
	case FK_LEAF:
	case FK_CHUNK:
		if (o->cap < B3_PAGE_SIZE)
			break;
		for (s = 0; s < B3_SLOTS; s++)
			if (p->l[s].meta)
				b3_fe_reseal_node(&p->l[s]);
		p->crc = cpu_to_le32(b3_page_crc(p));
		break;
	}
}

/* ---- lodge -------------------------------------------------------------- */

/*
 * Walk the records of lodge log @l of @size bytes as recovery reads them
 * (recovery.c read_log()): up to the first one of another version, with
 * no key, a length out of range or past the end. With @reseal each
 * record's crc is recomputed on the way (the walk then goes as far as
 * the lengths and versions say, whatever the crcs were).
 * Return: the offset of the end of the last record taken.
 */
static u32 lodge_fe_records(struct lodge_log *l, u32 size, bool reseal)
{
	u64 version = le64_to_cpu(l->version);
	struct lodge_rec *r, h;
	u32 pos, rsz, crc;

	for (pos = LODGE_LOG_HDR; pos + sizeof(h) <= size; pos += rsz) {
		r = (void *)((u8 *)l + pos);
		memcpy(&h, r, sizeof(h));
		if (le64_to_cpu(h.version) != version || !h.klen ||
		    le32_to_cpu(h.vlen) > PMIDX_VALUE_MAX)
			break;
		rsz = lodge_rec_size(h.klen, le32_to_cpu(h.vlen));
		if (pos + rsz > size)
			break;
		h.crc = 0;
		crc = crc32c(~0U, &h, sizeof(h));
		crc = crc32c(crc, r->data, h.klen + le32_to_cpu(h.vlen));
		if (reseal)
			r->crc = cpu_to_le32(crc);
		else if (crc != le32_to_cpu(r->crc))
			break;
	}
	return pos;
}

/*
 * The leaf list from the head (next[use], the way recovery walks it),
 * the log directory up to its last slot in use, and every log it names
 * up to a line past its last valid record. Fence and slot blobs: generic.
 */
static void lodge_fe_classify(struct fe_ctx *c, u64 root)
{
	const struct lodge_root *r = (const void *)(c->img + root);
	const struct lodge_leaf *l;
	const struct lodge_dir *d;
	u32 ls = le32_to_cpu(r->leaf_size), i, last = 0;
	u64 off, n = 0;
	size_t size;

	if (le64_to_cpu(r->magic) != LODGE_ROOT_MAGIC ||
	    (ls != 256 && ls != 512 && ls != 1024))
		return;
	off = le64_to_cpu(r->head);
	while (off && off + ls <= FE_SIZE && n++ < FE_SIZE / ls) {
		l = (const void *)(c->img + off);
		fe_add(c, FK_LEAF, off, ls);
		off = le64_to_cpu(l->next[!!(le64_to_cpu(l->bitmap) &
					     LODGE_USE_BIT)]);
	}
	off = le64_to_cpu(r->dir);
	if (!off || off + LODGE_DIR_SIZE > FE_SIZE)
		return;
	d = (const void *)(c->img + off);
	for (i = 0; i < LODGE_DIR_SLOTS; i++) {
		u64 loff = le64_to_cpu(d->slot[i]);
		struct lodge_log *lg;

		if (!loff || loff + LODGE_LOG_HDR > FE_SIZE)
			continue;
		lg = (void *)(c->img + loff);
		last = i;
		size = pmidx_alloc_size(&c->pool->alloc, loff);
		if (size >= LODGE_LOG_HDR)
			fe_add(c, FK_LOG, loff, lodge_fe_records(lg,
			       min_t(u32, size, le32_to_cpu(lg->size)), false) + 64);
	}
	fe_add(c, FK_LOGDIR, off, 64 + 8 * (last + 2));
}

/* Logs: every record's crc (leaves and the directory have no check word) */
static void lodge_fe_reseal(u8 *img, const struct fe_obj *o)
{
	struct lodge_log *l = (void *)(img + o->off);

	if (o->kind == FK_LOG && o->cap >= LODGE_LOG_HDR)
		lodge_fe_records(l, min_t(u32, o->cap, le32_to_cpu(l->size)), true);
}

/* ---- ccl --------------------------------------------------------------- */

static void ccl_fe_setup(void)
{
	/* GC held off: the log keeps every entry of the base workloads */
	ccl_th_log = UINT_MAX;
	ccl_gc_interval_ms = 3600 * 1000;
	ccl_log_chunk_kb = 256;
}

static void ccl_fe_classify(struct fe_ctx *c, u64 root_off)
{
	const struct ccl_root *r = (const void *)(c->img + root_off);
	const struct pmidx_wal_dir *d;
	u64 off = le64_to_cpu(r->head), n = 0;
	u32 i, last = 0;

	if (le64_to_cpu(r->magic) != CCL_ROOT_MAGIC)
		return;
	while (off && off < FE_SIZE && n++ < FE_SIZE / 256) {
		const struct ccl_leaf *l = (const void *)(c->img + off);

		fe_add(c, FK_LEAF, off, sizeof(*l));
		off = ccl_meta_next(le64_to_cpu(l->meta));
	}
	off = le64_to_cpu(r->wal_dir);
	if (!off || off >= FE_SIZE)
		return;
	d = (const void *)(c->img + off);
	for (i = 0; i < PMIDX_WAL_NSLOTS; i++) {
		u64 s = le64_to_cpu(d->slot[i]), co = pmidx_wal_slot_off(s);
		size_t size;

		if (!s)
			continue;
		last = i;
		size = pmidx_alloc_size(&c->pool->alloc, co);
		if (size)
			fe_add(c, FK_LOG, co, wal_used_len(c->img, co, size,
							   s >> PMIDX_WAL_GEN_SHIFT));
	}
	fe_add(c, FK_LOGDIR, off, PMIDX_WAL_DIR_HDR + 8 * (last + 2));
}

/* The first collection after an attach moves the replayed entries. */
static void ccl_fe_extra(struct pmidx_index *idx)
{
	struct ccl_tree *t = idx->priv;

	if (t && ccl_ready(t))
		ccl_gc_run(t);
}

/* ---- uTree ------------------------------------------------------------ */

static void ut_fe_classify(struct fe_ctx *c, u64 root_off)
{
	const struct ut_root *r = (const void *)(c->img + root_off);
	u64 off = le64_to_cpu(r->chunks), n = 0;
	u32 i;

	if (le64_to_cpu(r->magic) != UT_ROOT_MAGIC)
		return;
	while (off && off + UT_CHUNK_SIZE <= FE_SIZE && n++ < FE_SIZE / UT_CHUNK_SIZE) {
		const struct ut_chunk_hdr *h = (const void *)(c->img + off);

		fe_add(c, FK_CHUNK, off, sizeof(*h));
		for (i = 0; i < UT_CHUNK_NODES; i++) {
			u64 no = off + UT_CHUNK_HDR + (u64)i * UT_NODE_SIZE;
			static const u8 zero[UT_NODE_SIZE];

			if (memcmp(c->img + no, zero, UT_NODE_SIZE))
				fe_add(c, FK_NODE, no, UT_NODE_SIZE);
		}
		off = le64_to_cpu(h->prev);
	}
	off = le64_to_cpu(r->trackers);
	if (off && off < FE_SIZE)
		fe_add(c, FK_TRACKERS, off, sizeof(struct ut_trackers));
	off = le64_to_cpu(r->image);
	if (off && off < FE_SIZE) {
		const struct ut_image_hdr *h = (const void *)(c->img + off);

		fe_add(c, FK_IMAGE, off, sizeof(*h) +
		       min_t(u64, le64_to_cpu(h->count), 4096) * sizeof(h->e[0]));
	}
}

static void ut_fe_reseal(u8 *img, const struct fe_obj *o)
{
	switch (o->kind) {
	case FK_NODE: {
		struct ut_lnode *n = (void *)(img + o->off);

		n->check = cpu_to_le32(ut_node_check(o->off, le64_to_cpu(n->key),
						     le32_to_cpu(n->meta)));
		break;
	}
	case FK_CHUNK: {
		struct ut_chunk_hdr *h = (void *)(img + o->off);

		h->crc = cpu_to_le32(ut_chunk_hdr_crc(h));
		break;
	}
	case FK_IMAGE: {
		struct ut_image_hdr *h = (void *)(img + o->off);
		u64 count = min_t(u64, le64_to_cpu(h->count),
				  (o->cap - sizeof(*h)) / sizeof(h->e[0]));

		h->crc = cpu_to_le32(~__crc32c_le(~0U, (const u8 *)h->e,
						  count * sizeof(h->e[0])));
		h->hdr_crc = cpu_to_le32(~__crc32c_le(~0U, (const u8 *)h,
						      offsetof(struct ut_image_hdr, hdr_crc)));
		break;
	}
	}
}

/* ---- base images -------------------------------------------------------- */

struct fe_kv {
	u8	key[40];
	u8	klen;
	bool	live;
};

static u32 make_val(u8 *v, u64 seed)
{
	u32 len = seed % 7 == 0 ? 8 : seed % 301, i;

	for (i = 0; i < len; i++)
		v[i] = (u8)(seed >> (8 * (i % 8))) ^ i;
	return len;
}

/* A distinct key of 1..40 bytes (lengths 8 and 1..7 are frequent). */
static void make_key(struct fe_kv *kv, const struct fe_kv *all, u32 n)
{
	u32 i;

again:
	kv->klen = rnd_n(3) ? 1 + rnd_n(40) : (rnd_n(2) ? 8 : 1 + rnd_n(7));
	for (i = 0; i < kv->klen; i++)
		kv->key[i] = rnd_n(4) ? 'a' + rnd_n(26) : (u8)rnd();
	for (i = 0; i < n; i++)
		if (all[i].klen == kv->klen && !memcmp(all[i].key, kv->key, kv->klen))
			goto again;
}

/* Puts, updates and deletes on @idx; the 8-byte keys go to @im. */
static void workload(struct fe_image *im, struct pmidx_index *idx, u32 nkeys)
{
	struct fe_kv *kv = calloc(nkeys, sizeof(*kv));
	u8 val[512];
	u32 i, k, vl;
	int ret;

	if (!kv)
		die("calloc", NULL);
	for (i = 0; i < nkeys; i++)
		make_key(&kv[i], kv, i);
	for (i = 0; i < 3 * nkeys; i++) {
		/* first every key once, then updates (2 in 3) and deletes */
		k = i < nkeys ? i : rnd_n(nkeys);
		if (i >= nkeys && !rnd_n(3)) {
			ret = idx->ops->del(idx, kv[k].key, kv[k].klen, 0);
			if (ret && ret != -ENOENT)
				die("base image: a delete failed", NULL);
			kv[k].live = false;
		} else {
			vl = make_val(val, rnd());
			if (idx->ops->put(idx, kv[k].key, kv[k].klen, val, vl, 0))
				die("base image: a put failed", NULL);
			kv[k].live = true;
		}
		im->writes++;
	}
	for (i = 0; i < nkeys && im->nkeys8 < ARRAY_SIZE(im->keys8); i++)
		if (kv[i].klen == 8)
			memcpy(im->keys8[im->nkeys8++], kv[i].key, 8);
	free(kv);
}

/* Base @b: its crash image (attached) and its clean image (detached). */
static void build_base(unsigned int b)
{
	struct fe_image *crash = &images[2 * b + 1], *clean = &images[2 * b];
	unsigned int e, lo = b < FE_NENG ? b : 0, hi = b < FE_NENG ? b + 1 : FE_NENG;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	char name[PMIDX_NAME_MAX + 1];
	u8 *img;

	img = mmap(NULL, FE_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (img == MAP_FAILED)
		die("mmap", NULL);
	shim_random_seed(b + 1);
	rnd_state = 0x9e3779b97f4a7c15ULL * (b + 1);
	if (pmidx_pool_format(img, FE_SIZE, true, &why))
		die("format", why);
	pool = pmidx_pool_open(img, FE_SIZE, false, &why);
	if (IS_ERR(pool))
		die("open", why);
	for (e = lo; e < hi; e++) {
		const char *en = pmidx_engine_name(engines[e].id);
		unsigned int n, nidx = b < FE_NENG ? 2 : 1;

		crash->engines |= 1U << e;
		for (n = 0; n < nidx; n++) {
			snprintf(name, sizeof(name), "%s%u", en, n);
			if (pmidx_index_create(pool, name, engines[e].id, &idx, &why))
				die("index create", why);
			workload(crash, idx, b < FE_NENG ? (n ? 60 : FE_KEYS) : 300);
		}
	}
	snprintf(crash->name, sizeof(crash->name), "%s-crash",
		 b < FE_NENG ? pmidx_engine_name(engines[b].id) : "all");
	snprintf(clean->name, sizeof(clean->name), "%s-clean",
		 b < FE_NENG ? pmidx_engine_name(engines[b].id) : "all");
	clean->engines = crash->engines;
	clean->writes = crash->writes;
	clean->nkeys8 = crash->nkeys8;
	memcpy(clean->keys8, crash->keys8, sizeof(clean->keys8));

	crash->fd = memfd_create("pmidx-fe-crash", 0);
	if (crash->fd < 0 || pwrite(crash->fd, img, FE_SIZE, 0) != FE_SIZE)
		die("memfd", NULL);
	pmidx_pool_close(pool);
	clean->fd = memfd_create("pmidx-fe-clean", 0);
	if (clean->fd < 0 || pwrite(clean->fd, img, FE_SIZE, 0) != FE_SIZE)
		die("memfd", NULL);
	munmap(img, FE_SIZE);
}

/* The objects of image @im: attach a copy, walk it. */
static void objects_of(struct fe_image *im)
{
	u8 *img = mmap(NULL, FE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		       im->fd, 0);
	struct pmidx_pool *pool;
	const char *why = NULL;

	if (img == MAP_FAILED)
		die("mmap", NULL);
	pool = pmidx_pool_open(img, FE_SIZE, false, &why);
	if (IS_ERR(pool))
		die("base image does not attach", why);
	list_objects(im, pool, img);
	pmidx_pool_close(pool);
	shim_workqueue_drain();
	munmap(img, FE_SIZE);
}

static void prepare(void)
{
	const char *only;
	unsigned int b, e;
	u32 mask = 0;

	/*
	 * Every parallel step starts a thread per worker: two CPUs keep
	 * recovery parallel at three times the speed of the shim's 16.
	 */
	if (!getenv("PMIDX_SHIM_NR_CPUS"))
		nr_cpu_ids = 2;
	shim_pmem_set_hw(SHIM_PMEM_HW_NONE);
	for (e = 0; e < FE_NENG; e++) {
		if (!pmidx_engine_ops(engines[e].id))
			die("engine not built in", pmidx_engine_name(engines[e].id));
		if (engines[e].setup)
			engines[e].setup();
	}
	for (b = 0; b < FE_NBASE; b++)
		build_base(b);
	for (b = 0; b < FE_NIMG; b++)
		objects_of(&images[b]);
	/* PMIDX_FUZZ_ENGINES=ccl,...: only the images of those engines */
	only = getenv("PMIDX_FUZZ_ENGINES");
	if (only && !*only)
		only = NULL;
	for (e = 0; e < FE_NENG; e++)
		if (!only || strstr(only, pmidx_engine_name(engines[e].id)))
			mask |= BIT(e);
	for (b = 0; b < FE_NIMG; b++)
		if (!(images[b].engines & ~mask))
			pick[npick++] = b;
	if (!npick)
		die("PMIDX_FUZZ_ENGINES selects no image", only);
	forge_init();
	shim_workqueue_drain();
	prepared = true;
}

/* ---- applying the input ------------------------------------------------- */

struct rd {
	const u8	*d;
	size_t		n, i;
	bool		eof;
};

static u64 get(struct rd *r, unsigned int bytes)
{
	u64 v = 0;
	unsigned int k;

	if (r->i + bytes > r->n) {
		r->eof = true;
		r->i = r->n;
		return 0;
	}
	for (k = 0; k < bytes; k++)
		v |= (u64)r->d[r->i++] << (8 * k);
	return v;
}

/* OBJ: a kind (the next one present if absent), then an index in it. */
static const struct fe_obj *get_obj(struct rd *r, const struct fe_image *im)
{
	unsigned int k = get(r, 1), i = get(r, 1), n;

	if (r->eof)
		return NULL;
	for (n = 0; n < FK_NR; n++, k++)
		if (im->count[k % FK_NR])
			break;
	k %= FK_NR;
	return &im->obj[im->first[k] + i % im->count[k]];
}

static u64 get_word(struct rd *r, const struct fe_image *im)
{
	u8 mode = get(r, 1);
	const struct fe_obj *o;
	u64 v;

	switch (mode & 3) {
	case 0:
		return get(r, 8);
	case 1:
		o = get_obj(r, im);
		return o ? o->off : 0;
	case 2:
		return get(r, 1);
	default:
		if (!im->nkeys8)
			return 0;
		memcpy(&v, im->keys8[get(r, 1) % im->nkeys8], 8);
		return v;
	}
}

/* A chunk of the core's log: where FORGE's entries mean something. */
static bool wal_log(const struct fe_obj *o)
{
	return o->kind == FK_LOG && o->eng != 0xff && engines[o->eng].wal;
}

/* The @n-th log of @im, or the next one of the core's log; NULL: none */
static const struct fe_obj *wal_log_of(const struct fe_image *im, u32 n)
{
	u32 i, cnt = im->count[FK_LOG];
	const struct fe_obj *o;

	for (i = 0; i < cnt; i++) {
		o = &im->obj[im->first[FK_LOG] + (n + i) % cnt];
		if (wal_log(o))
			return o;
	}
	return NULL;
}

/* The generation of the core log chunk @o (its directory's slot word). */
static u16 wal_chunk_gen(const struct fe_image *im, const u8 *img,
			 const struct fe_obj *o)
{
	u32 i, cnt = im->count[FK_LOGDIR];
	u64 s;

	for (i = 0; i < cnt; i++) {
		const struct fe_obj *d = &im->obj[im->first[FK_LOGDIR] + i];

		if (d->eng != o->eng || d->cap < PMIDX_WAL_DIR_SIZE)
			continue;
		s = wal_slot_of((const void *)(img + d->off), o->off);
		if (s)
			return s >> PMIDX_WAL_GEN_SHIFT;
	}
	return 0;
}

static bool verbose;
static unsigned long patch_mask = ~0UL;	/* PMIDX_FUZZ_PATCHES: bisecting */
static unsigned int patch_no;

static void note(const char *op, const struct fe_obj *o, u64 off, u64 v)
{
	if (verbose)
		fprintf(stderr, "fuzz-engines: %2u %-6s %-8s %#llx+%#llx (%#llx)\n",
			patch_no, op, o ? kind_name[o->kind] : "pool",
			o ? (unsigned long long)o->off : 0ULL,
			(unsigned long long)off, (unsigned long long)v);
}

static void apply(u8 *img_in, const struct fe_image *im, struct rd *r)
{
	static u8 *sink;
	u8 *img;

	for (patch_no = 0; !r->eof && r->i < r->n; patch_no++) {
		/* a patch left out by PMIDX_FUZZ_PATCHES goes to a scratch copy */
		img = img_in;
		if (patch_no < BITS_PER_LONG && !(patch_mask & BIT(patch_no))) {
			if (!sink)
				sink = calloc(1, FE_SIZE);
			if (!sink)
				die("calloc", NULL);
			img = sink;
		}
		u8 op = get(r, 1), len, mask;
		const struct fe_obj *o, *o2 = NULL;
		u32 off = 0, off2 = 0;
		u64 v;

		if ((op & 7) == 4) {
			/* RAW: anywhere at all */
			off = get(r, 4) % FE_SIZE;
			mask = get(r, 1);
			if (!r->eof)
				img[off] ^= mask;
			note("raw", NULL, off, mask);
			continue;
		}
		o = get_obj(r, im);
		if (!o)
			return;
		if ((op & 7) != 5 && (op & 7) != 6)
			off = get(r, 2) % o->len;
		switch (op & 7) {
		case 0:
			mask = get(r, 1);
			if (!r->eof)
				img[o->off + off] ^= mask;
			note("xor", o, off, mask);
			break;
		case 1:
			off = min_t(u32, off & ~7U, o->cap - 8);
			memcpy(&v, img + o->off + off, 8);
			switch ((op >> 3) & 3) {
			case 0:
				v = get(r, 8);
				break;
			case 1:
				o2 = get_obj(r, im);
				mask = get(r, 1);
				v = o2 ? o2->off : 0;
				if (mask >= 224)
					v += (s64)(mask - 240) * 32;
				break;
			case 2:
				v = get(r, 1);
				break;
			case 3:
				v += (s8)get(r, 1);
				break;
			}
			if (!r->eof)
				memcpy(img + o->off + off, &v, 8);
			note("set64", o, off, v);
			break;
		case 2:
		case 3:
			if ((op & 7) == 2) {
				o2 = get_obj(r, im);
				off2 = get(r, 2);
			}
			len = 1 + get(r, 1) % 64;
			if (r->eof)
				return;
			len = min_t(u32, len, o->cap - off);
			if ((op & 7) == 3) {
				memset(img + o->off + off, 0, len);
				note("zero", o, off, len);
				break;
			}
			off2 %= o2->len;
			len = min_t(u32, len, o2->cap - off2);
			memmove(img + o2->off + off2, img + o->off + off, len);
			note("copy", o, off, len);
			note("  to", o2, off2, len);
			break;
		case 5:
			if (o->kind == FK_BLOB) {
				/* the core's blob header: len_check = ~len */
				struct pmidx_blob *b = (void *)(img + o->off);

				b->len_check = cpu_to_le32(~le32_to_cpu(b->len));
			} else if (o->eng != 0xff && engines[o->eng].reseal) {
				engines[o->eng].reseal(img, o);
			}
			note("reseal", o, 0, 0);
			break;
		case 6: {
			u64 w0, w1, ts, ent;
			u8 flags;
			const u8 *e;

			ent = get(r, 2);
			w0 = get_word(r, im);
			w1 = get_word(r, im);
			ts = get(r, 2);
			flags = get(r, 1);
			if (r->eof)
				return;
			/* timestamps in the images' range, or at the top */
			ts = flags & 0x80 ? PMIDX_WAL_TS_MAX - ts % 256 :
			     1 + ts % (im->writes + 64);
			if (!wal_log(o))
				o = wal_log_of(im, ent);
			if (!o)
				break;
			ent %= o->len / PMIDX_WAL_ENT_SIZE + 2;
			if ((ent + 1) * PMIDX_WAL_ENT_SIZE > o->cap)
				break;
			e = forge_entry(w0, w1, ts, flags & 0xf,
					wal_chunk_gen(im, img, o));
			if (e) {
				memcpy(img + o->off + ent * PMIDX_WAL_ENT_SIZE, e,
				       PMIDX_WAL_ENT_SIZE);
				st.forged++;
				note("forge", o, ent * PMIDX_WAL_ENT_SIZE, w0);
				note("  w1", o, ts, w1);
			}
			break;
		}
		case 7:
			mask = get(r, 1);
			if (r->eof)
				return;
			off = min_t(u32, off & ~7U, o->cap - 8);
			img[o->off + off + (mask & 63) / 8] ^= 1 << (mask & 7);
			note("flip", o, off, mask & 63);
			break;
		}
	}
}

/* ---- exercising an attached pool ------------------------------------------ */

static u64 alloc_objects(struct pmidx_pool *pool)
{
	struct pmidx_alloc_stats as;

	pmidx_alloc_get_stats(&pool->alloc, &as);
	return as.objects;
}

#define FE_PICKS	4

struct fe_sink {
	struct pmidx_scan_sink	sink;
	const struct fe_image	*im;
	u64			n, hash;
	u8			last[PMIDX_KEY_MAX];
	u32			last_len;
	/* keys picked for gets: positions 0, 3, 17 and the last one */
	u8			pk[FE_PICKS][PMIDX_KEY_MAX];
	u32			pklen[FE_PICKS];
	u64			pvh[FE_PICKS];
	unsigned long		picked;		/* valid entries */
	bool			lax;		/* the index failed its check */
};

static u64 fnv(u64 h, const u8 *p, u32 n)
{
	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

static int sink_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		     const u8 *val, u32 vlen)
{
	struct fe_sink *s = container_of(sink, struct fe_sink, sink);
	u64 vh = fnv(0xcbf29ce484222325ULL, val, vlen) ^ vlen;
	unsigned int p;

	if ((!klen && !s->lax) || klen > PMIDX_KEY_MAX || vlen > PMIDX_VALUE_MAX)
		finding(s->im, "scan emitted a %u-byte key, a %u-byte value", klen, vlen);
	if (s->n && !s->lax && pmidx_key_cmp(s->last, s->last_len, key, klen) >= 0)
		finding(s->im, "scan out of order at record %llu",
			(unsigned long long)s->n);
	memcpy(s->last, key, klen);
	s->last_len = klen;
	s->hash = fnv(s->hash, key, klen) ^ vh;
	s->hash *= 0x9e3779b97f4a7c15ULL;
	p = s->n == 0 ? 0 : s->n == 3 ? 1 : s->n == 17 ? 2 : FE_PICKS - 1;
	memcpy(s->pk[p], key, klen);
	s->pklen[p] = klen;
	s->pvh[p] = vh;
	s->picked |= BIT(p);
	s->n++;
	return 0;
}

/*
 * Check gaps: an attach accepted an index that its engine's check then
 * refuses. Recovery is meant to refuse what is corrupt, so each is worth
 * a look, but some are by design (a uTree clean attach trusts its saved
 * image and reads no list node): counted, the first input of each
 * reason kept, not fatal unless PMIDX_FUZZ_STRICT is set. The index is
 * still scanned and written (nothing may crash), without the oracles.
 */
#define FE_GAP_REASONS	32

static struct {
	const char	*why;
	const char	*engine;
	unsigned long	n;
} gaps[FE_GAP_REASONS];
static bool strict;

static void check_gap(const struct fe_image *im, struct pmidx_index *idx,
		const char *when, int ret, const char *why)
{
	unsigned int i;
	char name[64];

	if (strict)
		finding(im, "%s: index %s (%s): check failed: %d (%s)", when,
			idx->name, idx->ops->name, ret, why ? why : "no reason");
	st.gaps++;
	for (i = 0; i < FE_GAP_REASONS && gaps[i].why; i++)
		if (gaps[i].why == why && gaps[i].engine == idx->ops->name)
			break;
	if (i == FE_GAP_REASONS)
		return;
	if (!gaps[i].n++) {
		gaps[i].why = why ? why : "no reason";
		gaps[i].engine = idx->ops->name;
		snprintf(name, sizeof(name), "gap-%s-%u", idx->ops->name, i);
		save_input(name, false);
	}
}

/* check + full scan; returns the scan's digest, *bad when check failed */
static u64 verify(const struct fe_image *im, struct pmidx_index *idx,
		  struct fe_sink *s, const char *when, bool *bad)
{
	const char *why = NULL;
	u64 keys = 0;
	int ret;

	memset(s, 0, sizeof(*s));
	s->sink.emit = sink_emit;
	s->im = im;
	s->hash = 0xcbf29ce484222325ULL;
	s->lax = *bad;
	if (idx->ops->check) {
		ret = idx->ops->check(idx, &keys, &why);
		if (ret) {
			if (!*bad)
				check_gap(im, idx, when, ret, why);
			*bad = s->lax = true;
		}
	}
	ret = idx->ops->scan(idx, NULL, 0, false, NULL, 0, &s->sink);
	if (ret && !*bad)
		finding(im, "%s: index %s: scan failed: %d", when, idx->name, ret);
	if (idx->ops->check && keys != s->n && !*bad)
		finding(im, "%s: index %s: check counts %llu keys, scan %llu", when,
			idx->name, (unsigned long long)keys, (unsigned long long)s->n);
	return s->hash ^ s->n;
}

static void get_expect(const struct fe_image *im, struct pmidx_index *idx,
		       const u8 *k, u32 klen, int want, u64 vh, const char *when,
		       bool bad)
{
	static u8 buf[PMIDX_VALUE_MAX];
	u32 vlen = sizeof(buf);
	int ret = idx->ops->get(idx, k, klen, buf, &vlen);

	if (bad) {
		if (ret > 0 || ret < -MAX_ERRNO)
			finding(im, "index %s: get returns %d", idx->name, ret);
		return;
	}
	if (ret != want)
		finding(im, "%s: index %s: get of a %u-byte key: %d, expected %d",
			when, idx->name, klen, ret, want);
	if (!ret && (fnv(0xcbf29ce484222325ULL, buf, vlen) ^ vlen) != vh)
		finding(im, "%s: index %s: get returns another value than %s",
			when, idx->name, when);
}

static int count_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		      const u8 *val, u32 vlen)
{
	struct fe_sink *s = container_of(sink, struct fe_sink, sink);

	return ++s->n >= 5;
}

/* Reads, a bounded scan, a put and a delete; returns the digest after. */
static u64 exercise_index(const struct fe_image *im, struct pmidx_index *idx,
			  u64 seed, bool *bad)
{
	struct fe_sink *s = malloc(sizeof(*s));
	u8 key[40], val[512];
	u32 klen, vlen, i;
	u64 digest;
	int ret;

	if (!s)
		die("malloc", NULL);
	rnd_state = seed | 1;
	verify(im, idx, s, "after attach", bad);
	for_each_set_bit(i, &s->picked, FE_PICKS)
		get_expect(im, idx, s->pk[i], s->pklen[i], 0, s->pvh[i], "the scan",
			   *bad);
	/* a bounded scan after the first key, below the last */
	if (s->picked & BIT(FE_PICKS - 1)) {
		struct fe_sink c = { .sink.emit = count_emit };

		ret = idx->ops->scan(idx, s->pk[0], s->pklen[0], true,
				     s->pk[FE_PICKS - 1], s->pklen[FE_PICKS - 1],
				     &c.sink);
		if (ret < 0 && !*bad)
			finding(im, "index %s: bounded scan failed: %d", idx->name, ret);
	}
	/* a put of a picked (update) or a new key, then a delete */
	i = rnd_n(FE_PICKS);
	if ((s->picked & BIT(i)) && s->pklen[i] <= sizeof(key) && rnd_n(2)) {
		klen = s->pklen[i];
		memcpy(key, s->pk[i], klen);
	} else {
		klen = 1 + rnd_n(40);
		for (i = 0; i < klen; i++)
			key[i] = 'a' + rnd_n(26);
	}
	vlen = make_val(val, rnd());
	ret = idx->ops->put(idx, key, klen, val, vlen, 0);
	if (!ret)
		get_expect(im, idx, key, klen, 0,
			   fnv(0xcbf29ce484222325ULL, val, vlen) ^ vlen, "the put",
			   *bad);
	else if (ret > 0 || ret < -MAX_ERRNO)
		finding(im, "index %s: put returns %d", idx->name, ret);
	i = rnd_n(FE_PICKS);
	if (s->picked & BIT(i)) {
		ret = idx->ops->del(idx, s->pk[i], s->pklen[i], 0);
		if (!ret)
			get_expect(im, idx, s->pk[i], s->pklen[i], -ENOENT, 0,
				   "the delete", *bad);
		else if (ret > 0 || ret < -MAX_ERRNO)
			finding(im, "index %s: delete returns %d", idx->name, ret);
	}
	digest = verify(im, idx, s, "after the put and delete", bad);
	free(s);
	return digest;
}

static void run_one(const struct fe_image *im, u8 *img, bool eadr, bool extra,
		    bool trace, u64 seed)
{
	u64 digest[PMIDX_MAX_INDEXES] = {};
	bool bad[PMIDX_MAX_INDEXES] = {}, any_bad = false, was_bad;
	struct pmidx_pool *pool;
	u64 objects;
	struct fe_sink *s;
	const char *why = NULL;
	unsigned int i, e;

	pool = pmidx_pool_open(img, FE_SIZE, eadr, &why);
	if (IS_ERR(pool)) {
		if (PTR_ERR(pool) >= 0 || PTR_ERR(pool) < -MAX_ERRNO || !why || !*why)
			finding(im, "attach failed with %ld and no reason", PTR_ERR(pool));
		st.refused++;
		return;
	}
	st.attached++;
	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		struct pmidx_index *idx = pool->indexes[i];

		if (!idx || !idx->opened)
			continue;
		for (e = 0; e < FE_NENG; e++)
			if (extra && engines[e].id == idx->engine && engines[e].extra)
				engines[e].extra(idx);
		digest[i] = exercise_index(im, idx, seed + i, &bad[i]);
		any_bad |= bad[i];
	}
	pmidx_pool_close(pool);
	/* what passed its check must come back from a clean detach as it was */
	pool = pmidx_pool_open(img, FE_SIZE, eadr, &why);
	if (IS_ERR(pool)) {
		if (any_bad)
			return;
		finding(im, "a clean detach does not attach again: %ld (%s)",
			PTR_ERR(pool), why ? why : "no reason");
	}
	s = malloc(sizeof(*s));
	if (!s)
		die("malloc", NULL);
	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		struct pmidx_index *idx = pool->indexes[i];

		if (!idx || !idx->opened)
			continue;
		was_bad = bad[i];
		if (verify(im, idx, s, "after re-attach", &bad[i]) != digest[i] &&
		    !was_bad)
			finding(im, "index %s: %s by a clean detach and attach",
				idx->name, bad[i] ? "broken" : "contents changed");
		any_bad |= bad[i];
	}
	/*
	 * The same state after a crash (when the input asks: a trace costs
	 * as much as the rest): a recovery trace must take what passed the
	 * check, with the same contents. It catches what a clean attach
	 * cannot see (objects owned twice, a clean attach trusting what the
	 * trace checks), and counts what only the trace frees.
	 */
	if (!trace) {
		free(s);
		pmidx_pool_close(pool);
		return;
	}
	objects = alloc_objects(pool);
	pool->needs_trace = true;
	pmidx_pool_close(pool);
	pool = pmidx_pool_open(img, FE_SIZE, eadr, &why);
	if (IS_ERR(pool)) {
		if (!any_bad)
			finding(im, "a recovery trace refuses what passed the check: %ld (%s)",
				PTR_ERR(pool), why ? why : "no reason");
		free(s);
		return;
	}
	if (alloc_objects(pool) < objects)
		st.leaks++;
	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		struct pmidx_index *idx = pool->indexes[i];

		if (!idx || !idx->opened || bad[i])
			continue;
		if (verify(im, idx, s, "after a recovery trace", &bad[i]) != digest[i])
			finding(im, "index %s: %s by a recovery trace", idx->name,
				bad[i] ? "broken" : "contents changed");
	}
	free(s);
	pmidx_pool_close(pool);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	long km, pc;
	struct rd r = { .d = data, .n = size };
	const struct fe_image *im;
	unsigned int e;
	u8 flags, *img;

	if (!prepared)
		prepare();
	if (size < 2)
		return 0;
	cur_data = data;
	cur_size = size;
	if (!libfuzzer)
		alarm(FE_HANG_S);
	im = &images[pick[get(&r, 1) % npick]];
	flags = get(&r, 1);
	img = mmap(NULL, FE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, im->fd, 0);
	if (img == MAP_FAILED)
		die("mmap", NULL);
	if (verbose)
		fprintf(stderr, "fuzz-engines: image %s, flags %#x\n", im->name, flags);
	apply(img, im, &r);
	/* after apply(): forging may allocate in the scratch log */
	km = shim_kmalloc_live();
	pc = shim_percpu_live();
	run_one(im, img, flags & 1, flags & 2, flags & 0x80, (u64)flags << 32 | size);
	shim_workqueue_drain();
	munmap(img, FE_SIZE);
	if (shim_kmalloc_live() != km || shim_percpu_live() != pc)
		finding(im, "kernel memory leaked: %ld kmalloc, %ld per-CPU",
			shim_kmalloc_live() - km, shim_percpu_live() - pc);
	st.execs++;
	st.img[im - images]++;
	for (e = 0; e < FE_NENG; e++)
		if (im->engines & BIT(e))
			st.eng[e]++;
	if (!libfuzzer)
		alarm(0);
	cur_data = NULL;
	return 0;
}

/* ---- modes, statistics ------------------------------------------------ */

/* at exit; the first line also goes to PMIDX_FUZZ_STATS (run-user-suite) */
static void print_stats(void)
{
	const char *path = getenv("PMIDX_FUZZ_STATS");
	char line[512];
	unsigned int e;
	int n;
	FILE *f;

	static bool done;

	if (!st.execs || done)
		return;
	done = true;
	n = snprintf(line, sizeof(line), "# fuzz-engines: %lu executions (", st.execs);
	for (e = 0; e < FE_NENG && n < (int)sizeof(line); e++)
		n += snprintf(line + n, sizeof(line) - n, "%s%s %lu", e ? ", " : "",
			      pmidx_engine_name(engines[e].id), st.eng[e]);
	if (n < (int)sizeof(line))
		snprintf(line + n, sizeof(line) - n,
			 "), %lu attached, %lu refused, %lu forged log entries, %lu space leaks, %lu check gaps\n",
			 st.attached, st.refused, st.forged, st.leaks, st.gaps);
	fputs(line, stderr);
	for (e = 0; e < FE_GAP_REASONS && gaps[e].why; e++)
		fprintf(stderr, "# fuzz-engines: check gap: %s: %s (%lu times%s)\n",
			gaps[e].engine, gaps[e].why, gaps[e].n,
			artifact_dir ? ", first input kept as gap-*" : "");
	f = path ? fopen(path, "a") : NULL;
	if (f) {
		fputs(line, f);
		fclose(f);
	}
}

static void list_all(void)
{
	unsigned int i, k;
	u32 j;

	for (i = 0; i < FE_NIMG; i++) {
		const struct fe_image *im = &images[i];

		printf("image %u %s: %u objects, %llu writes\n", i, im->name,
		       im->nobj, (unsigned long long)im->writes);
		for (k = 0; k < FK_NR; k++) {
			if (!im->count[k])
				continue;
			printf("  %-8s %5u:", kind_name[k], im->count[k]);
			for (j = 0; j < (verbose ? im->count[k] : min_t(u32, im->count[k], 4)); j++) {
				const struct fe_obj *o = &im->obj[im->first[k] + j];

				printf(" %#llx+%u/%u", (unsigned long long)o->off,
				       o->len, o->cap);
			}
			printf("%s\n", im->count[k] > 4 && !verbose ? " ..." : "");
		}
	}
}

struct seedbuf {
	u8	d[256];
	size_t	n;
};

static void put_bytes(struct seedbuf *s, u64 v, unsigned int bytes)
{
	while (bytes--) {
		s->d[s->n++] = v;
		v >>= 8;
	}
}

static void write_seed(const char *dir, const char *name, const struct seedbuf *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->d, 1, s->n, f) != s->n || fclose(f))
		die("cannot write", path);
}

/* The kinds with more structure than bytes: they get more seeds. */
static bool structural(unsigned int k)
{
	return k == FK_LEAF || k == FK_LOGDIR || k == FK_LOG || k == FK_NODE ||
	       k == FK_CHUNK || k == FK_IMAGE;
}

/*
 * The seed corpus, a few dozen inputs: per image a plain attach; in the
 * images of one engine, per kind of object an XOR (plus a SET64 of a
 * blob's offset), FLIP and ZERO for the structural kinds, RESEAL behind
 * a change where the engine has check words; forged and copied log
 * entries where there is a core log; a RAW write. Those with flags 0x80
 * end with a recovery trace.
 */
static void make_seeds(const char *dir)
{
	unsigned int i, k, n = 0;
	struct seedbuf s;
	char name[96];

	if (mkdir(dir, 0755) && errno != EEXIST)
		die("mkdir", dir);
	for (i = 0; i < FE_NIMG; i++) {
		const struct fe_image *im = &images[i];
		bool one = hweight32(im->engines) == 1;
		/* the engine of a one-engine image has a reseal hook */
		bool seals = one && engines[__ffs(im->engines)].reseal;
		const struct fe_obj *wl = wal_log_of(im, 0);

#define SEED(fmt, ...) do {						\
			snprintf(name, sizeof(name), "%s-" fmt, im->name, ##__VA_ARGS__); \
			write_seed(dir, name, &s);			\
			n++;						\
		} while (0)
#define START(fl) do { s.n = 0; put_bytes(&s, i, 1); put_bytes(&s, fl, 1); } while (0)

		START(0x82);
		SEED("attach");
		for (k = 0; k < FK_NR && one; k++) {
			u32 idx = im->count[k] / 2, len;

			if (!im->count[k])
				continue;
			len = im->obj[im->first[k] + idx].len;
			START(0x80 | (4 * k + 2));
			put_bytes(&s, 0, 1);		/* XOR */
			put_bytes(&s, k, 1);
			put_bytes(&s, idx, 1);
			put_bytes(&s, (len / 3) & ~7U, 2);
			put_bytes(&s, 0x40, 1);
			if (im->count[FK_BLOB] && k != FK_BLOB) {
				put_bytes(&s, 1 | 1 << 3, 1);	/* SET64 := a blob */
				put_bytes(&s, k, 1);
				put_bytes(&s, idx, 1);
				put_bytes(&s, 8, 2);
				put_bytes(&s, FK_BLOB, 1);
				put_bytes(&s, 1, 1);
				put_bytes(&s, 0, 1);
			}
			SEED("%s-xor", kind_name[k]);
			if (structural(k)) {
				START(4 * k + 1);
				put_bytes(&s, 7, 1);		/* FLIP */
				put_bytes(&s, k, 1);
				put_bytes(&s, idx, 1);
				put_bytes(&s, 0, 2);
				put_bytes(&s, 17, 1);
				put_bytes(&s, 3, 1);		/* ZERO */
				put_bytes(&s, k, 1);
				put_bytes(&s, idx + 1, 1);
				put_bytes(&s, len / 2, 2);
				put_bytes(&s, 15, 1);
				SEED("%s-flip-zero", kind_name[k]);
			}
			if (k == FK_NODE || k == FK_CHUNK || k == FK_IMAGE || k == FK_BLOB ||
			    (k == FK_LOG && seals)) {
				/*
				 * node: key length (b3: meta, key length);
				 * chunk: id; image: count; blob: length; log
				 * (lodge): the first record's value length
				 */
				START(0);
				put_bytes(&s, 1 | 3 << 3, 1);	/* SET64 += */
				put_bytes(&s, k, 1);
				put_bytes(&s, idx, 1);
				put_bytes(&s, k == FK_NODE || k == FK_CHUNK ? 24 :
					  k == FK_IMAGE ? 8 : k == FK_LOG ? 80 : 0, 2);
				put_bytes(&s, 1, 1);
				put_bytes(&s, 5, 1);		/* RESEAL */
				put_bytes(&s, k, 1);
				put_bytes(&s, idx, 1);
				SEED("%s-reseal", kind_name[k]);
			}
		}
		if (wl) {
			u32 ents = wl->len / PMIDX_WAL_ENT_SIZE;
			u32 wi = wl - &im->obj[im->first[FK_LOG]];

			/* a put of a blob key and value, a tombstone of a key */
			START(0x82);
			put_bytes(&s, 6, 1);
			put_bytes(&s, FK_LOG, 1);
			put_bytes(&s, wi, 1);
			put_bytes(&s, ents / 2, 2);
			put_bytes(&s, 1, 1);
			put_bytes(&s, FK_BLOB, 1);
			put_bytes(&s, 3, 1);
			put_bytes(&s, 1, 1);
			put_bytes(&s, FK_BLOB, 1);
			put_bytes(&s, 4, 1);
			put_bytes(&s, im->writes + 5, 2);
			put_bytes(&s, CCL_F_KIND | CCL_F_VIND, 1);
			put_bytes(&s, 6, 1);
			put_bytes(&s, FK_LOG, 1);
			put_bytes(&s, wi, 1);
			put_bytes(&s, ents, 2);
			put_bytes(&s, 3, 1);
			put_bytes(&s, 2, 1);
			put_bytes(&s, 2, 1);
			put_bytes(&s, 9, 1);
			put_bytes(&s, 3, 2);
			put_bytes(&s, CCL_F_TOMB, 1);
			SEED("log-forge");
			/* a newer value (a blob) for an 8-byte key, twice */
			START(0x80);
			for (k = 0; k < 2; k++) {
				put_bytes(&s, 6, 1);
				put_bytes(&s, FK_LOG, 1);
				put_bytes(&s, wi, 1);
				put_bytes(&s, ents + k, 2);
				put_bytes(&s, 3, 1);
				put_bytes(&s, 1, 1);
				put_bytes(&s, 1, 1);
				put_bytes(&s, FK_BLOB, 1);
				put_bytes(&s, 5, 1);
				put_bytes(&s, im->writes + 10, 2);
				put_bytes(&s, CCL_F_VIND, 1);
			}
			SEED("log-forge-update");
			if (one) {
				/* a valid entry copied over a later one */
				START(0);
				put_bytes(&s, 2, 1);
				put_bytes(&s, FK_LOG, 1);
				put_bytes(&s, wi, 1);
				put_bytes(&s, PMIDX_WAL_ENT_SIZE, 2);
				put_bytes(&s, FK_LOG, 1);
				put_bytes(&s, wi, 1);
				put_bytes(&s, ents / 3 * PMIDX_WAL_ENT_SIZE, 2);
				put_bytes(&s, PMIDX_WAL_ENT_SIZE - 1, 1);
				SEED("log-copy");
			}
		}
		if (one) {
			START(0);
			put_bytes(&s, 4, 1);		/* RAW into the data area */
			put_bytes(&s, FE_SIZE / 2 + 4096 * i, 4);
			put_bytes(&s, 0x10, 1);
			SEED("raw");
		}
#undef SEED
#undef START
	}
	printf("fuzz-engines: %u seeds in %s\n", n, dir);
}

/*
 * Environment: PMIDX_FUZZ_ARTIFACTS=DIR keeps inputs (the first of each
 * check gap reason; the plain driver's crashes), PMIDX_FUZZ_STATS=FILE
 * gets the statistics line, PMIDX_FUZZ_STRICT makes check gaps findings,
 * PMIDX_FUZZ_VERBOSE prints the patches (and --list-objects every
 * object), PMIDX_FUZZ_PATCHES=MASK applies only those patches (for
 * bisecting a finding), PMIDX_FUZZ_ENGINES=NAME,... fuzzes only the
 * images of those engines (the same input then selects another image).
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int i;

	artifact_dir = getenv("PMIDX_FUZZ_ARTIFACTS");
	strict = getenv("PMIDX_FUZZ_STRICT");
	verbose = getenv("PMIDX_FUZZ_VERBOSE");
	if (getenv("PMIDX_FUZZ_PATCHES"))
		patch_mask = strtoul(getenv("PMIDX_FUZZ_PATCHES"), NULL, 0);
	prepare();
	for (i = 1; i < *argc; i++) {
		if (!strcmp((*argv)[i], "--make-seeds") && i + 1 < *argc) {
			make_seeds((*argv)[i + 1]);
			exit(0);
		}
		if (!strcmp((*argv)[i], "--list-objects")) {
			list_all();
			exit(0);
		}
	}
	atexit(print_stats);
	if (!libfuzzer) {
		signal(SIGABRT, on_signal);
		signal(SIGSEGV, on_signal);
		signal(SIGBUS, on_signal);
		signal(SIGALRM, on_signal);
		/* ASan and UBSan call it before they end the process */
		__sanitizer_set_death_callback(fe_death);
	}
	return 0;
}
