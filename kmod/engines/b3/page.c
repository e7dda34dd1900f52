// SPDX-License-Identifier: GPL-2.0
/*
 * B^3-tree: one page (paper §3.1, §3.2).
 *
 * The BST inside a page is walked with bounded loops (a corrupt image
 * may hold a cycle): no walk visits more than B3_SLOTS nodes.
 *
 * Slots are handed out in order (@used in the lock word) and never
 * reused while the page is live: a deleted node stays where it is until
 * the page is copied (lazy defragmentation, smo.c), so a lock-free reader
 * standing on a node that was just unlinked still reads the old node.
 * Slot counts are DRAM (b3.h): after an attach @used is counted the first
 * time a writer locks the page (the highest reachable slot + 1): the
 * slots above it were never linked, or linked only before the detach or
 * crash, and no reader of this open can stand on them. That is the paper's lazy garbage collection of dead
 * nodes, done per page when first written instead of by a scan.
 */
#include <linux/crc32.h>
#include <linux/errno.h>
#include <linux/lockdep.h>
#include <linux/preempt.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "core/blob.h"
#include "b3.h"

/*
 * A page offset worth following: inside the allocator's data area (not
 * just the device: the lock table covers the data area only), aligned,
 * ours.
 */
bool b3_page_ok(const struct b3 *t, u64 off)
{
	const struct pmidx_alloc *a = &t->pool->alloc;
	const struct b3_page *p;

	if (off < a->data_off || (off - a->data_off) & (B3_PAGE_SIZE - 1) ||
	    off - a->data_off > ((u64)a->nr_chunks << PMIDX_CHUNK_SHIFT) -
				B3_PAGE_SIZE)
		return false;
	p = b3_pg(t, off);
	return le32_to_cpu(p->magic) == B3_PAGE_MAGIC &&
	       le64_to_cpu(p->owner) == t->root_off &&
	       p->level < B3_MAX_LEVEL;
}

/* crc32c of the fields that never change after the page is built */
u32 b3_page_crc(const struct b3_page *p)
{
	u32 crc = __crc32c_le(~0U, (const u8 *)&p->magic, 6);

	crc = __crc32c_le(crc, (const u8 *)&p->owner, sizeof(p->owner));
	return __crc32c_le(crc, p->low, B3_LOW_MAX);
}

/* The key of a node word (inline bytes or a blob); read in place. */
struct b3_key b3_node_key(const struct b3 *t, const __le64 *kw, u32 meta)
{
	struct b3_key k;

	if (meta & B3_M_KBLOB) {
		u64 off = le64_to_cpu(READ_ONCE(*kw));

		/*
		 * A clean attach validates no node: a corrupt blob word must
		 * not take a search out of the pool. It reads as the empty
		 * key (wrong answers on a corrupt index, which the checker
		 * reports, never a wild access).
		 */
		if (off < t->pool->alloc.data_off || off & (PMIDX_MIN_OBJ - 1) ||
		    off > t->pm->size - sizeof(struct pmidx_blob) - PMIDX_KEY_MAX) {
			k.p = (const u8 *)"";
			k.len = 0;
			return k;
		}
		k.p = pmidx_blob_data(t->pool, off, &k.len);
		if (k.len > PMIDX_KEY_MAX)
			k.len = 0;
	} else {
		k.p = (const u8 *)kw;
		k.len = b3_meta_klen(meta);
		/* a corrupt meta word: never read past the 8-byte key word */
		if (k.len > B3_INLINE_MAX)
			k.len = 0;
	}
	return k;
}

/**
 * b3_blob_read - copy the blob a node word names, machine-check safe,
 *                after checking the word stays inside the pool (a clean
 *                attach validated no node)
 *
 * Return: as pmidx_blob_read(); -EUCLEAN for a word naming no blob.
 */
int b3_blob_read(struct b3 *t, u64 off, void *dst, u32 cap, u32 *len)
{
	int ret;

	if (off < t->pool->alloc.data_off || off & (PMIDX_MIN_OBJ - 1) ||
	    off > t->pm->size - sizeof(struct pmidx_blob))
		return -EUCLEAN;
	ret = pmidx_blob_read_len(t->pool, off, len);
	if (ret)
		return ret;
	if (off + sizeof(struct pmidx_blob) + *len > t->pm->size)
		return -EUCLEAN;
	return *len > cap ? 0 : pmidx_blob_read_data(t->pool, off, dst, *len);
}

/*
 * ---- blobs ----------------------------------------------------------------
 *
 * The index's blob bytes are those of the blobs it links: counted when a
 * txn takes a blob in or out (b3_txn_blob_in(), b3_txn_blob_out()), that
 * is inside the section of the link store, never at write or retire,
 * which run outside sections. So a CHECK that sets the counters while
 * writers are frozen (no section runs) sees them exact (committed-mode
 * review L1).
 */

/* A pending blob (committed mode): a txn that links it commits it. */
u64 b3_blob_write(struct b3 *t, const void *data, u32 len)
{
	return pmidx_blob_write_committed(t->pool, data, len);
}

/* A blob nothing persistent names yet (a failed write): still pending. */
void b3_blob_free(struct b3 *t, u64 off)
{
	pmidx_free(&t->pool->alloc, off);
}

/*
 * A blob just unlinked by a link store (whose txn cleared its commit bit):
 * readers may still hold it.
 */
void b3_blob_retire(struct b3 *t, u64 off)
{
	pmidx_blob_retire(t->pool, off);
}

/* ---- page states (DRAM, b3.h) --------------------------------------------- */

int b3_locks_init(struct b3 *t)
{
	u64 pages = ((u64)t->pool->alloc.nr_chunks << PMIDX_CHUNK_SHIFT) /
		    B3_PAGE_SIZE;

	t->nlocks = DIV_ROUND_UP(pages, B3_LT_LEAF);
	t->locks = kvcalloc(t->nlocks, sizeof(*t->locks), GFP_KERNEL);
	if (!t->locks)
		return -ENOMEM;
	atomic64_add(t->nlocks * sizeof(*t->locks), &t->dram_bytes);
	return 0;
}

void b3_locks_free(struct b3 *t)
{
	u64 i;

	for (i = 0; t->locks && i < t->nlocks; i++)
		kfree(t->locks[i]);
	kvfree(t->locks);
}

/* Publish a zeroed leaf for lock-table slot @i. Return: the leaf. */
static u64 *lt_publish(struct b3 *t, u64 i, u64 *leaf)
{
	u64 *old = cmpxchg(&t->locks[i], NULL, leaf);

	if (old) {
		kfree(leaf);
		return old;
	}
	atomic64_add(B3_LT_LEAF * sizeof(*leaf), &t->dram_bytes);
	return leaf;
}

/*
 * The state word of page @p; NULL when there is no memory for its leaf
 * (GFP_ATOMIC: inside an epoch section). The leaf is then noted in
 * @lt_want for b3_lt_fill(), which the operation runs outside its section
 * before it tries again.
 */
static u64 *lk_word(struct b3 *t, const struct b3_page *p)
{
	u64 n = (b3_pgoff(t, p) - t->pool->alloc.data_off) / B3_PAGE_SIZE;
	u64 *leaf;

	if (WARN_ON_ONCE(n >> B3_LT_SHIFT >= t->nlocks))
		return NULL;
	/* acquire: pairs with the cmpxchg that published the zeroed leaf */
	leaf = smp_load_acquire(&t->locks[n >> B3_LT_SHIFT]);
	if (!leaf) {
		leaf = kcalloc(B3_LT_LEAF, sizeof(*leaf),
			       GFP_ATOMIC | __GFP_NOWARN);
		if (!leaf) {
			WRITE_ONCE(t->lt_want, (n >> B3_LT_SHIFT) + 1);
			atomic64_inc(&t->lt_misses);
			return NULL;
		}
		leaf = lt_publish(t, n >> B3_LT_SHIFT, leaf);
	}
	return &leaf[n & (B3_LT_LEAF - 1)];
}

/**
 * b3_lt_fill - allocate the lock-table leaf a section could not
 *
 * Context: process context, outside an epoch section (may sleep).
 * Return: 1 a leaf was wanted and is there now (try again), 0 none was
 * wanted, -ENOMEM.
 */
int b3_lt_fill(struct b3 *t)
{
	u64 i = xchg(&t->lt_want, 0), *leaf;

	if (!i--)
		return 0;
	if (READ_ONCE(t->locks[i]))
		return 1;
	leaf = kcalloc(B3_LT_LEAF, sizeof(*leaf), GFP_KERNEL);
	if (!leaf)
		return -ENOMEM;
	lt_publish(t, i, leaf);
	return 1;
}

#ifdef PMIDX_TEST_ENGINES
unsigned int b3_test_slots = B3_SLOTS;	/* b3.h B3_CAP */
void (*b3_test_store_hook)(void);
void (*b3_test_arm_hook)(void);
#endif

static inline u64 lk_load(struct b3 *t, const struct b3_page *p)
{
	u64 *w = lk_word(t, p);

	return w ? READ_ONCE(*w) : 0;
}

u32 b3_used(struct b3 *t, const struct b3_page *p)
{
	return (lk_load(t, p) >> B3_LK_USED_SHIFT) & B3_LK_CNT_MASK;
}

u32 b3_live(struct b3 *t, const struct b3_page *p)
{
	return (lk_load(t, p) >> B3_LK_LIVE_SHIFT) & B3_LK_CNT_MASK;
}

/* Context: the page's lock held (or the page not published yet). */
void b3_set_cnt(struct b3 *t, struct b3_page *p, u32 used, u32 live)
{
	u64 *lw = lk_word(t, p), w;

	if (!lw)
		return;		/* only after b3_lock() or b3_page_new() */
	w = READ_ONCE(*lw) & ~((B3_LK_CNT_MASK << B3_LK_USED_SHIFT) |
			       (B3_LK_CNT_MASK << B3_LK_LIVE_SHIFT));
	WRITE_ONCE(*lw, w | B3_LK_VALID | (u64)used << B3_LK_USED_SHIFT |
			(u64)live << B3_LK_LIVE_SHIFT);
}

/*
 * Hysteresis of merge attempts (b3.c b3_del()): a merge of @p refused
 * when it had @live nodes. Advisory: a lock holder's b3_set_cnt() or
 * b3_unlock() racing this may drop the mark (one more attempt, no harm),
 * so it is set with cmpxchg and never needs the lock. A new page (same
 * lock word after a free) starts unmarked (page_init()).
 * Return: 0 never refused, else the live count then + 1.
 */
u32 b3_tried(struct b3 *t, const struct b3_page *p)
{
	return (lk_load(t, p) >> B3_LK_TRIED_SHIFT) & B3_LK_CNT_MASK;
}

void b3_set_tried(struct b3 *t, struct b3_page *p, u32 live)
{
	u64 *lw = lk_word(t, p), old, w;

	if (!lw)
		return;
	old = READ_ONCE(*lw);
	w = (old & ~(B3_LK_CNT_MASK << B3_LK_TRIED_SHIFT)) |
	    (u64)(min(live, 0xfeU) + 1) << B3_LK_TRIED_SHIFT;
	cmpxchg(lw, old, w);
}

/**
 * b3_lock - take the write lock of a page
 *
 * Spins: the holder runs with preemption off and waits for no other lock
 * while it holds this one. The first lock of a page in this open counts
 * its slots (page.c file comment).
 *
 * Return: 0 locked; -EAGAIN the page was replaced (DEAD): go back to the
 * root; -EUCLEAN its BST is corrupt or the page is not committed (a
 * freed page a corrupt word names), -ENOMEM (not locked).
 */
int b3_lock(struct b3 *t, struct b3_page *p)
{
	u64 *lw = lk_word(t, p), old;
	u32 used, live;
	int ret;

	/* a preempted holder would leave its spinners spinning for good */
	lockdep_assert_preemption_disabled();
	if (!lw)
		return -ENOMEM;
	for (;;) {
		old = READ_ONCE(*lw);
		if (old & B3_LK_DEAD)
			return -EAGAIN;
		if (old & B3_LK_LOCKED) {
			cpu_relax();
			continue;
		}
		if (cmpxchg(lw, old, old | B3_LK_LOCKED) == old)
			break;
	}
	if (old & B3_LK_VALID)
		return 0;
	ret = b3_reach(t, p, &used, &live);
	/*
	 * A page from before this attach (every page built since got its
	 * state in page_init()) must be a committed one: a corrupt word may
	 * name a freed page, whose stale nodes a writer would unlink.
	 */
	if (!ret && !pmidx_alloc_media_committed(&t->pool->alloc,
						 b3_pgoff(t, p))) {
		pr_err_ratelimited("pmidx: index %s: b3 page %llx is not committed (corrupt index)\n",
				   t->idx->name, b3_pgoff(t, p));
		ret = -EUCLEAN;
	}
	if (ret) {
		/* release: unlock, uncounted; nothing was written */
		smp_store_release(lw, old);
		return ret;
	}
	b3_set_cnt(t, p, used, live);
	return 0;
}

void b3_unlock(struct b3 *t, struct b3_page *p)
{
	u64 *lw = lk_word(t, p);

	/* release: our node and child word stores before the next holder */
	smp_store_release(lw, READ_ONCE(*lw) & ~B3_LK_LOCKED);
}

/* Unlock a page an SMO replaced: its waiters go back to the root. */
void b3_kill(struct b3 *t, struct b3_page *p)
{
	u64 *lw = lk_word(t, p);

	/* release: the SMO's stores before a waiter sees DEAD */
	smp_store_release(lw, (READ_ONCE(*lw) & ~B3_LK_LOCKED) | B3_LK_DEAD);
}

/* ---- BST walks ---------------------------------------------------------- */

static inline u64 child_of(const struct b3_page *p, u32 s, bool right)
{
	if (!p->level)
		return b3_ld32(right ? &p->l[s].right : &p->l[s].left);
	return b3_ld(right ? &p->i[s].right : &p->i[s].left);
}

/**
 * b3_leaf_find - BST search for @k in leaf page @p (paper Algorithm 2)
 * @pos: the node (slot, or -1) and the word that names it or would
 *
 * Return: 0, or -EUCLEAN for a corrupt BST.
 */
int b3_leaf_find(const struct b3 *t, const struct b3_page *p,
		 const struct b3_key *k, struct b3_lpos *pos)
{
	u64 w = b3_ld(&p->root);
	unsigned int n = 0;
	struct b3_key nk;
	int c;

	pos->parent = -1;
	pos->right = false;
	while (w) {
		if (!b3_w_is_slot(w) || ++n > B3_SLOTS)
			return -EUCLEAN;
		nk = b3_node_key(t, &p->l[w - 1].key,
				 le32_to_cpu(READ_ONCE(p->l[w - 1].meta)));
		c = b3_cmp(k, &nk);
		if (!c) {
			pos->slot = w - 1;
			return 0;
		}
		pos->parent = w - 1;
		pos->right = c > 0;
		w = child_of(p, w - 1, c > 0);
	}
	pos->slot = -1;
	return 0;
}

/**
 * b3_leaf_inorder - the live nodes of a leaf page in key order
 * @slots: B3_SLOTS entries
 *
 * Every reachable node, equal keys included: no operation leaves two
 * (a delete of a node with two children links in a copy of the path to
 * its successor, or copies the page), so two equal keys are corruption,
 * which the checker reports (walk.c).
 *
 * Return: the number of slots, or -EUCLEAN.
 */
int b3_leaf_inorder(const struct b3 *t, const struct b3_page *p, u8 *slots)
{
	u8 stack[B3_SLOTS];
	int sp = 0, n = 0, seen = 0;
	u64 w = b3_ld(&p->root);
	u32 s;

	for (;;) {
		while (w) {
			if (!b3_w_is_slot(w) || ++seen > B3_SLOTS)
				return -EUCLEAN;
			stack[sp++] = w - 1;
			w = child_of(p, w - 1, false);
		}
		if (!sp)
			return n;
		s = stack[--sp];
		slots[n++] = s;
		w = child_of(p, s, true);
	}
}

/**
 * b3_inner_inorder - the children and separators of an internal page
 * @child: B3_SLOTS + 1 entries, the page words in key order
 * @sep:   B3_SLOTS entries, the separator slots between them
 *
 * Return: the number of separators (children: one more), or -EUCLEAN.
 */
int b3_inner_inorder(const struct b3 *t, const struct b3_page *p,
		     u64 *child, u8 *sep)
{
	u8 stack[B3_SLOTS];
	int sp = 0, n = 0, seen = 0;
	u64 w = b3_ld(&p->root);
	u32 s;

	for (;;) {
		while (b3_w_is_slot(w)) {
			if (++seen > B3_SLOTS)
				return -EUCLEAN;
			stack[sp++] = w - 1;
			w = child_of(p, w - 1, false);
		}
		if (!b3_w_is_page(w))
			return -EUCLEAN;
		child[n] = w;
		if (!sp)
			return n;
		s = stack[--sp];
		sep[n++] = s;
		w = child_of(p, s, true);
	}
}

/**
 * b3_reach - count the reachable nodes of a page
 * @used: highest reachable slot + 1
 * @live: reachable nodes
 */
int b3_reach(const struct b3 *t, const struct b3_page *p, u32 *used,
	     u32 *live)
{
	u8 stack[B3_SLOTS];
	int sp = 0, seen = 0;
	u64 w = b3_ld(&p->root);
	u32 s, max = 0;

	if (b3_w_is_slot(w))
		stack[sp++] = w - 1;
	else if (p->level ? !b3_w_is_page(w) : w != 0)
		return -EUCLEAN;
	while (sp) {
		s = stack[--sp];
		if (++seen > B3_SLOTS)
			return -EUCLEAN;
		max = max(max, s + 1);
		w = child_of(p, s, false);
		if (b3_w_is_slot(w))
			stack[sp++] = w - 1;
		else if (p->level ? !b3_w_is_page(w) : w != 0)
			return -EUCLEAN;
		w = child_of(p, s, true);
		if (b3_w_is_slot(w))
			stack[sp++] = w - 1;
		else if (p->level ? !b3_w_is_page(w) : w != 0)
			return -EUCLEAN;
	}
	*used = max;
	*live = seen;
	return 0;
}

/* ---- commit stores ------------------------------------------------------ */

/*
 * The 8-byte commit (paper §3.2.1): release, so that a lock-free reader
 * that loads the word (acquire) sees the node or page it names; then
 * flushed and fenced.
 */
void b3_commit(struct b3 *t, __le64 *w, u64 val)
{
	/* release: pairs with b3_ld() */
	smp_store_release(w, cpu_to_le64(val));
	pmidx_persist(t->pm, w, sizeof(*w));
	b3_test_store();
}

/*
 * Link stores in committed mode (README "Transactions"). A store that
 * links or unlinks a page or blob runs inside a pmidx_txn naming them;
 * the caller took the txn (b3_txn_begin()) under the lock that guards
 * the word, before its first store, and filled it. An empty txn costs
 * nothing: its record is given back and the store is a plain commit.
 */
int b3_txn_begin(struct b3 *t, struct pmidx_txn *x)
{
	/* core/alloc.h: no record can be waited for here; fail the op */
	if (WARN_ON_ONCE(pmidx_txn_begin(&t->pool->alloc, x)))
		return -EBUSY;
	return 0;
}

/**
 * b3_txn_check - may the txns of one operation unlink what they name?
 * @x:     its txns, taken and filled, none armed yet
 * @n:     how many
 * @bytes: this CPU's blob byte counter before they were filled
 *
 * What a store unlinks comes from words of the media: on a corrupt image
 * they may name an object freed already (and maybe reused), or one
 * object twice. Every object unlinked must be committed on media and
 * named once (core pmidx_txn_check()). Otherwise the operation fails
 * before its first store: the records go back and the counter is reset.
 * Context: the section that filled them (the counter is this CPU's).
 * Return: 0, or -EUCLEAN.
 */
int b3_txn_check(struct b3 *t, struct pmidx_txn *const *x, unsigned int n,
		 s64 bytes)
{
	unsigned int i;
	u64 bad;

	if (likely(!pmidx_txn_check(&t->pool->alloc, x, n, &bad)))
		return 0;
	pr_err_ratelimited("pmidx: index %s: b3 object %llx to unlink is not a live one (corrupt index)\n",
			   t->idx->name, bad);
	for (i = 0; i < n; i++)
		pmidx_txn_cancel(&t->pool->alloc, x[i]);
	this_cpu_write(t->pcpu->blob_bytes, bytes);
	return -EUCLEAN;
}

/* A txn taken but not filled (an error before it): nothing was counted. */
void b3_txn_cancel(struct b3 *t, struct pmidx_txn *x)
{
	WARN_ON_ONCE(x && (x->nalloc || x->nfree));
	if (x && x->slot >= 0)
		pmidx_txn_cancel(&t->pool->alloc, x);
}

/*
 * The link store of txn @x links (unlinks) blob @off. Its bytes count
 * from here (blobs, above): a txn once filled always makes its store, in
 * this section.
 */
void b3_txn_blob_in(struct b3 *t, struct pmidx_txn *x, u64 off)
{
	pmidx_txn_alloc(x, off);
	this_cpu_add(t->pcpu->blob_bytes, pmidx_alloc_size(&t->pool->alloc, off));
}

void b3_txn_blob_out(struct b3 *t, struct pmidx_txn *x, u64 off)
{
	pmidx_txn_free(x, off);
	this_cpu_sub(t->pcpu->blob_bytes, pmidx_alloc_size(&t->pool->alloc, off));
}

/* *@w := @val (@width 4 or 8 bytes), persisted, inside txn @x (or none) */
static void link_store(struct b3 *t, struct pmidx_txn *x, void *w,
		       unsigned int width, u64 val)
{
	struct pmidx_alloc *a = &t->pool->alloc;

	if (x && !x->nalloc && !x->nfree) {
		pmidx_txn_cancel(a, x);
		x = NULL;
	}
	if (x) {
		pmidx_txn_arm(a, x, w, width, val);
		b3_test_armed();
	}
	if (width == 8)	/* release: pairs with b3_ld() */
		smp_store_release((__le64 *)w, cpu_to_le64(val));
	else		/* release: pairs with b3_ld32() */
		smp_store_release((__le32 *)w, cpu_to_le32(val));
	pmidx_persist(t->pm, w, width);
	if (x)
		pmidx_txn_end(a, x);
}

void b3_commit_txn(struct b3 *t, struct pmidx_txn *x, __le64 *w, u64 val)
{
	link_store(t, x, w, 8, val);
	b3_test_store();
}

/*
 * Link slot word @val (slot + 1, or 0) where @parent/@right says, inside
 * txn @x (NULL: the store publishes and unlinks no object).
 */
void b3_leaf_link(struct b3 *t, struct b3_page *p, int parent, bool right,
		  u32 val, struct pmidx_txn *x)
{
	if (parent < 0)
		link_store(t, x, &p->root, 8, val);
	else
		link_store(t, x, right ? &p->l[parent].right :
					 &p->l[parent].left, 4, val);
	b3_test_store();
}

__le64 *b3_ref_word(struct b3 *t, const struct b3_ref *r)
{
	if (!r->pg)
		return &t->root->top;
	if (r->slot < 0)
		return &r->pg->root;
	return r->right ? &r->pg->i[r->slot].right : &r->pg->i[r->slot].left;
}

/* ---- new pages (copy-on-write, paper §3.2.4, §3.3.5) -------------------- */

/**
 * b3_page_new - allocate a page and write its header (not persisted:
 *               the builder persists the page once it is filled)
 *
 * Return: its offset, 0 when the pool is full (or there was no memory
 * for its lock-table leaf: then t->lt_want is set, lk_word()).
 */
static u64 page_init(struct b3 *t, u64 off, u8 level, const struct b3_key *low)
{
	struct b3_page *p;
	u64 *lw;

	p = b3_pg(t, off);
	lw = lk_word(t, p);
	if (!lw) {
		pmidx_free(&t->pool->alloc, off);
		return 0;
	}
	/* a new page (a freed one's state may linger): counted, empty */
	WRITE_ONCE(*lw, B3_LK_VALID);
	memset(p, 0, B3_NODES_OFF);
	p->magic = cpu_to_le32(B3_PAGE_MAGIC);
	p->level = level;
	p->lowlen = low->len;
	memcpy(p->low, low->p, low->len);
	p->owner = cpu_to_le64(t->root_off);
	p->crc = cpu_to_le32(b3_page_crc(p));
	this_cpu_inc(t->pcpu->pages);
	return off;
}

/* A pending page (committed mode): the txn that links it commits it. */
u64 b3_page_new(struct b3 *t, u8 level, const struct b3_key *low)
{
	u64 off = pmidx_alloc_committed(&t->pool->alloc, B3_PAGE_SIZE);

	return off ? page_init(t, off, level, low) : 0;
}

/*
 * The reserve page (review M2): a delete whose node has two children
 * copies its page when the page has no free slots for succ_copy()
 * (b3.c), and must not fail with -ENOSPC on a full pool (a user frees
 * space by deleting). So each index holds one pending page
 * that only b3_page_new_reserve() takes when the pool has none. Pending:
 * a crash frees it, nothing on media names it; b3_teardown() frees it.
 * Context: the SMO's (a section, under t->smo).
 */
u64 b3_page_new_reserve(struct b3 *t, u8 level, const struct b3_key *low)
{
	u64 off = pmidx_alloc_committed(&t->pool->alloc, B3_PAGE_SIZE);

	if (!off)
		off = xchg(&t->reserve, 0);
	return off ? page_init(t, off, level, low) : 0;
}

/**
 * b3_reserve_fill - allocate the reserve page if the index has none
 * @wait: the pool may be full: wait for the epochs to free what was
 *        retired (the page the reserve replaced) and try again
 *
 * Context: process context, outside any section (may sleep with @wait).
 */
void b3_reserve_fill(struct b3 *t, bool wait)
{
	u64 off;

	if (READ_ONCE(t->reserve))
		return;
	off = pmidx_alloc_committed(&t->pool->alloc, B3_PAGE_SIZE);
	if (!off && wait) {
		pmidx_epoch_barrier(&t->pool->epoch);
		off = pmidx_alloc_committed(&t->pool->alloc, B3_PAGE_SIZE);
	}
	if (off && cmpxchg(&t->reserve, 0, off))
		pmidx_free(&t->pool->alloc, off);	/* never linked */
}

/* An unlinked page: freed once no epoch reader can stand on it. */
void b3_page_retire(struct b3 *t, u64 off)
{
	u64 *lw = lk_word(t, b3_pg(t, off));

	/* a corrupt image can name one page twice: never free it twice */
	if (lw && xchg(lw, READ_ONCE(*lw) | B3_LK_GONE | B3_LK_DEAD) & B3_LK_GONE) {
		pr_err_ratelimited("pmidx: index %s: b3 page %llx retired twice (corrupt index)\n",
				   t->idx->name, off);
		return;
	}
	this_cpu_dec(t->pcpu->pages);
	pmidx_epoch_retire(&t->pool->epoch, off);
}

/* complete BST over leaf nodes [lo, hi): the word naming its root */
static u32 build_leaf(struct b3_page *p, u32 lo, u32 hi)
{
	u32 mid;

	if (lo >= hi)
		return 0;
	mid = lo + (hi - lo) / 2;
	p->l[mid].left = cpu_to_le32(build_leaf(p, lo, mid));
	p->l[mid].right = cpu_to_le32(build_leaf(p, mid + 1, hi));
	return mid + 1;
}

/**
 * b3_build_leaf - fill new leaf page @dst with @n nodes in key order as a
 *                 complete BST (the rebalancing of §3.3.5)
 *
 * Key and value words move with the nodes: so do the blobs they name.
 * Not persisted here: the SMO persists the page after its sibling word.
 */
void b3_build_leaf(struct b3 *t, struct b3_page *dst, const struct b3_lnode *src,
		   u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		dst->l[i].key = src[i].key;
		dst->l[i].val = src[i].val;
		dst->l[i].meta = src[i].meta;
		dst->l[i].check = src[i].check;
	}
	dst->root = cpu_to_le64(build_leaf(dst, 0, n));
	b3_set_cnt(t, dst, n, n);
}

/* complete BST over children [lo, hi] (separator j between j and j + 1) */
static u64 build_inner(struct b3_page *p, const u64 *child, u32 lo, u32 hi)
{
	u32 mid;

	if (lo == hi)
		return child[lo];
	mid = lo + (hi - lo + 1) / 2;		/* separator mid - 1 */
	p->i[mid - 1].left = cpu_to_le64(build_inner(p, child, lo, mid - 1));
	p->i[mid - 1].right = cpu_to_le64(build_inner(p, child, mid, hi));
	return mid;
}

/**
 * b3_build_inner - fill new internal page @dst with children @child[0..n]
 *                  and the @n separators between them, as a complete BST
 */
void b3_build_inner(struct b3 *t, struct b3_page *dst, const u64 *child,
		    const struct b3_inode *sep, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		dst->i[i].key = sep[i].key;
		dst->i[i].meta = sep[i].meta;
		dst->i[i].check = sep[i].check;
	}
	dst->root = cpu_to_le64(build_inner(dst, child, 0, n));
	b3_set_cnt(t, dst, n, n);
}

/**
 * b3_sep_make - write separator node @n for key @k (a copy: a blob of its
 *               own when longer than 8 bytes) between @left and @right
 *
 * Not persisted. Return: 0 or -ENOSPC.
 */
int b3_sep_make(struct b3 *t, struct b3_inode *n, const struct b3_key *k,
		u64 left, u64 right)
{
	__le64 kw = 0;
	u64 blob;
	u32 meta;

	if (k->len > B3_INLINE_MAX) {
		blob = b3_blob_write(t, k->p, k->len);
		if (!blob)
			return -ENOSPC;
		kw = cpu_to_le64(blob);
	} else {
		memcpy(&kw, k->p, k->len);
	}
	meta = b3_meta_make(k->len, 0, k->len > B3_INLINE_MAX, false);
	n->key = kw;
	n->meta = cpu_to_le32(meta);
	n->check = cpu_to_le32(b3_node_check(le64_to_cpu(kw), meta));
	n->left = cpu_to_le64(left);
	n->right = cpu_to_le64(right);
	return 0;
}

/* The key blob of separator @n: at once (never linked) or via epochs. */
void b3_sep_free(struct b3 *t, const struct b3_inode *n, bool now)
{
	u64 off;

	if (!(le32_to_cpu(n->meta) & B3_M_KBLOB))
		return;
	off = le64_to_cpu(n->key);
	if (now)
		b3_blob_free(t, off);
	else
		b3_blob_retire(t, off);
}
