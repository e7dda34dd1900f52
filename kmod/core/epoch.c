// SPDX-License-Identifier: GPL-2.0
/*
 * Epoch-based reclamation.
 *
 * Each CPU announces the global epoch it entered (or 0 when quiescent)
 * in its slot; sections do not nest and do not sleep (preemption is off
 * inside, as for RCU-sched). The global epoch advances when every
 * announcing CPU has caught up with it. Retired objects wait on their
 * CPU's limbo list tagged with the epoch of retirement and are handed to
 * @free_fn once the global epoch is two ahead: no section that could
 * still see them is running then.
 *
 * Locking: a CPU's limbo list is touched by that CPU with preemption off
 * and by barrier/destroy and the grow worker, under its lock.
 *
 * Memory: a limbo list grows once it is half full, with GFP_ATOMIC where
 * the retire runs. If that fails, @grow_work grows it with GFP_KERNEL
 * (an unbound worker) while its other half takes the retirees. A full
 * list outside a section waits for a barrier; inside one (where waiting
 * for the epochs could wait for ourselves) it frees what the epochs allow
 * and waits a while for the worker, once per section. Only if that fails
 * too is the object abandoned (pmidx_epoch_retire_fn()) and counted in
 * @abandoned: the owner of a pool object makes the next attach trace
 * (pmidx_pool_close(), ccl's own epoch). A DRAM object's memory would be
 * lost, so a section that retires one makes sure of its room first
 * (pmidx_epoch_room()), while it can still back off; the engines' sections
 * that retire pool objects do the same.
 */
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/log2.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>
#include "epoch.h"

#define LIMBO_BATCH	64	/* try to advance after this many retires */
#define LIMBO_FIRST	16	/* slots each CPU's list starts with */
#define LIMBO_WAIT_NS	NSEC_PER_MSEC	/* a full list's wait for room */

struct limbo {
	u64		obj;
	u64		epoch;
	void		(*fn)(void *ctx, u64 obj);	/* NULL: e->free_fn */
	void		*ctx;
};

static void limbo_free(struct pmidx_epoch *e, const struct limbo *l)
{
	if (l->fn)
		l->fn(l->ctx, l->obj);
	else
		e->free_fn(e->ctx, l->obj);
}

struct pmidx_epoch_cpu {
	u64		active;		/* epoch entered, 0 = quiescent */
	u64		waited;		/* @active of a section whose wait failed */
	spinlock_t	lock;		/* protects the limbo array */
	struct limbo	*items;
	unsigned int	nr, cap;	/* also read unlocked, by this CPU */
	unsigned int	want;		/* slots pmidx_epoch_room() lacked */
};

/* Put @n (@cap slots) in place of @c's list. Context: @c->lock held. */
static void limbo_install(struct pmidx_epoch_cpu *c, struct limbo *n,
			  unsigned int cap)
{
	if (c->nr)
		memcpy(n, c->items, c->nr * sizeof(*n));
	kfree(c->items);
	c->items = n;
	WRITE_ONCE(c->cap, cap);	/* pmidx_epoch_room() reads unlocked */
}

/* A grown list's size: double, or what @need slots take. */
static unsigned int limbo_next_cap(const struct pmidx_epoch_cpu *c,
				   unsigned int need)
{
	return max_t(unsigned int, 2 * c->cap,
		     need ? roundup_pow_of_two(need) : 0);
}

/* Grow @c to hold @need (0: double it). Context: @c->lock held. */
static int limbo_grow(struct pmidx_epoch_cpu *c, unsigned int need)
{
	unsigned int cap = limbo_next_cap(c, need);
	/* the worker tries again where it may sleep: no warning */
	struct limbo *n = kmalloc_array(cap, sizeof(*n),
					GFP_ATOMIC | __GFP_NOWARN);

	if (!n)
		return -ENOMEM;
	limbo_install(c, n, cap);
	return 0;
}

/*
 * @grow_work: grow every list that is half full, or that a room request
 * found short (@want), sleeping for memory.
 */
static void limbo_grow_work(struct work_struct *work)
{
	struct pmidx_epoch *e = container_of(work, struct pmidx_epoch,
					     grow_work);
	int cpu;

	for_each_possible_cpu(cpu) {
		struct pmidx_epoch_cpu *c = per_cpu_ptr(e->pcpu, cpu);
		unsigned int cap, size;
		struct limbo *n;

		spin_lock(&c->lock);
		cap = c->cap;
		if (c->nr < cap / 2 && c->want <= cap) {
			spin_unlock(&c->lock);
			continue;
		}
		size = limbo_next_cap(c, c->want);
		spin_unlock(&c->lock);
		/* a long list may want a high order: fail, do not warn */
		n = kmalloc_array(size, sizeof(*n), GFP_KERNEL | __GFP_NOWARN);
		if (!n)
			continue;
		spin_lock(&c->lock);
		/* grown meanwhile by a retire: keep its list */
		if (c->cap == cap) {
			limbo_install(c, n, size);
			n = NULL;
		}
		if (c->want <= c->cap)
			c->want = 0;
		spin_unlock(&c->lock);
		kfree(n);
	}
}

int pmidx_epoch_init(struct pmidx_epoch *e, void (*free_fn)(void *ctx, u64 obj),
		     void *ctx)
{
	int cpu;

	atomic64_set(&e->global, 1);
	e->free_fn = free_fn;
	e->ctx = ctx;
	spin_lock_init(&e->advance_lock);
	INIT_WORK(&e->grow_work, limbo_grow_work);
	e->pcpu = alloc_percpu(struct pmidx_epoch_cpu);
	if (!e->pcpu)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		spin_lock_init(&per_cpu_ptr(e->pcpu, cpu)->lock);
	for_each_possible_cpu(cpu) {
		struct pmidx_epoch_cpu *c = per_cpu_ptr(e->pcpu, cpu);

		/* a first retire needs no memory (see Memory above) */
		c->items = kmalloc_array(LIMBO_FIRST, sizeof(*c->items),
					 GFP_KERNEL);
		if (!c->items) {
			pmidx_epoch_destroy(e);
			return -ENOMEM;
		}
		c->cap = LIMBO_FIRST;
	}
	return 0;
}

void pmidx_epoch_enter(struct pmidx_epoch *e)
{
	struct pmidx_epoch_cpu *c;

	preempt_disable();
	c = this_cpu_ptr(e->pcpu);
	WRITE_ONCE(c->active, atomic64_read(&e->global));
	/* announce before reading shared structures */
	smp_mb();
}

void pmidx_epoch_exit(struct pmidx_epoch *e)
{
	struct pmidx_epoch_cpu *c = this_cpu_ptr(e->pcpu);

	/* all reads of the section complete before we look quiescent */
	smp_store_release(&c->active, 0);
	preempt_enable();
}

/*
 * Advance the global epoch if every active CPU has caught up. Return:
 * the epoch now, with every section that ended before it happened before
 * our return, whether this call advanced it or, its trylock failing,
 * read another CPU's advance: the advancer's acquire of each @active and
 * its release of @global carry the sections' accesses to our acquire
 * (a freeze reads what those writers wrote; collect() frees after them).
 */
static u64 try_advance(struct pmidx_epoch *e)
{
	u64 g = atomic64_read_acquire(&e->global);
	int cpu;

	if (!spin_trylock(&e->advance_lock))
		return g;
	g = atomic64_read(&e->global);
	for_each_possible_cpu(cpu) {
		/* pairs with the release in pmidx_epoch_exit() */
		u64 a = smp_load_acquire(&per_cpu_ptr(e->pcpu, cpu)->active);

		if (a && a != g)
			goto out;
	}
	g++;
	atomic64_set_release(&e->global, g);
out:
	spin_unlock(&e->advance_lock);
	return g;
}

/* Free what @c retired at least two epochs before @g. */
static void collect(struct pmidx_epoch *e, struct pmidx_epoch_cpu *c, u64 g)
{
	unsigned int i, kept = 0;

	spin_lock(&c->lock);
	for (i = 0; i < c->nr; i++) {
		if (c->items[i].epoch + 2 <= g)
			limbo_free(e, &c->items[i]);
		else
			c->items[kept++] = c->items[i];
	}
	WRITE_ONCE(c->nr, kept);	/* pmidx_epoch_room() reads unlocked */
	spin_unlock(&c->lock);
}

/**
 * pmidx_epoch_room - make sure this CPU's list takes @n more retirees
 *
 * For a section about to retire objects that should not be abandoned
 * (DRAM, whose memory would be lost; a pool object, which would stay
 * allocated until the next attach): asked before the change, a false answer
 * lets the caller back off, leave the section and make room where it may
 * sleep (pmidx_epoch_barrier()). No other section runs on this CPU until
 * ours ends, and no interrupt retires, so the room stays ours: it is for
 * the section's next @n retires into @e, whatever else it retires there
 * in between included (answers do not add up).
 *
 * Context: inside a section; may not sleep.
 */
bool pmidx_epoch_room(struct pmidx_epoch *e, unsigned int n)
{
	struct pmidx_epoch_cpu *c = this_cpu_ptr(e->pcpu);
	unsigned int nr;
	bool room;

	/*
	 * Unlocked first (no-wait writes ask before every change): while we
	 * are in a section only others touch the list, and they only free
	 * (@nr down) or grow it (@cap up), so values read in either order
	 * can only understate the room; then the locked path decides.
	 */
	nr = READ_ONCE(c->nr);
	if (READ_ONCE(c->cap) - nr >= n)
		return true;
	collect(e, c, try_advance(e));
	spin_lock(&c->lock);
	/* @n may be more than a doubling adds (an SMO's many retirees) */
	room = c->cap - c->nr >= n || !limbo_grow(c, c->nr + n);
	if (!room)
		c->want = max(c->want, c->nr + n);
	spin_unlock(&c->lock);
	if (!room)
		queue_work(system_unbound_wq, &e->grow_work);
	return room;
}

/**
 * pmidx_epoch_retire_fn - free @obj with @fn(@ctx, @obj) once no epoch
 *                         section can still see it
 *
 * For objects the pool allocator's free_fn cannot free (an engine's own
 * sub-allocations). @ctx must stay valid until the object is freed: an
 * engine calls pmidx_epoch_barrier() before tearing its state down.
 *
 * Context: inside or outside a section; may not sleep. Falls back to a
 * synchronous barrier when memory for the limbo list is short, which
 * needs the caller outside its own section.
 */
void pmidx_epoch_retire_fn(struct pmidx_epoch *e, u64 obj,
			   void (*fn)(void *ctx, u64 obj), void *ctx)
{
	struct pmidx_epoch_cpu *c;
	bool reclaim = false, grow = false;
	u64 deadline;
	struct limbo *l;
	u64 g;

	preempt_disable();
	c = this_cpu_ptr(e->pcpu);
	spin_lock(&c->lock);
	/*
	 * The caller's unlink before our read of @global (the tag below):
	 * a section that could still see @obj entered at an epoch no later
	 * than the tag, so it has ended once @global is two past the tag.
	 * Pairs with the barrier in pmidx_epoch_enter().
	 */
	smp_mb__after_spinlock();
	/* ahead: a failure leaves room, and the worker grows it meanwhile */
	if (c->nr >= c->cap / 2 && limbo_grow(c, 0)) {
		reclaim = true;
		grow = true;
	}
	/*
	 * Inside a section: make room with what the epochs allow. What was
	 * retired before this section is freed once the other CPUs' sections
	 * (short, preemption is off in them) let the epoch advance twice;
	 * the worker may grow the list meanwhile. Wait for either, a while:
	 * a time, not a count, as the worker has to be scheduled; and once
	 * per section (preemption is off), not once per retiree. What this
	 * section retired waits for its end.
	 */
	for (deadline = 0; c->nr == c->cap && READ_ONCE(c->active) &&
	     c->waited != READ_ONCE(c->active);) {
		u64 now = ktime_get_ns();

		if (!deadline)
			deadline = now + LIMBO_WAIT_NS;
		else if (now > deadline)
			break;
		spin_unlock(&c->lock);
		queue_work(system_unbound_wq, &e->grow_work);
		collect(e, c, try_advance(e));
		cpu_relax();
		spin_lock(&c->lock);
	}
	if (c->nr == c->cap) {
		struct limbo now = { .obj = obj, .fn = fn, .ctx = ctx };
		bool in_section = READ_ONCE(c->active);

		c->waited = READ_ONCE(c->active);
		spin_unlock(&c->lock);
		preempt_enable();
		if (!in_section) {
			pmidx_epoch_barrier(e);
			limbo_free(e, &now);
			return;
		}
		/*
		 * Out of memory inside a section, the worker too late, and
		 * every retiree still visible: waiting longer could wait for
		 * ourselves, and freeing now is unsafe. Abandon the object;
		 * the pool then skips its clean detach so the next attach
		 * traces and reclaims it (see pmidx_pool_close()).
		 */
		atomic_long_inc(&e->abandoned);
		return;
	}
	l = &c->items[c->nr++];
	l->obj = obj;
	l->epoch = atomic64_read(&e->global);
	l->fn = fn;
	l->ctx = ctx;
	/* read under the lock: a barrier's collect() may change it */
	if (c->nr % LIMBO_BATCH == 0)
		reclaim = true;
	spin_unlock(&c->lock);
	if (grow)
		queue_work(system_unbound_wq, &e->grow_work);
	/* a list that cannot grow is emptied as soon as the epochs allow */
	if (reclaim) {
		g = try_advance(e);
		collect(e, c, g);
	}
	preempt_enable();
}

/**
 * pmidx_epoch_retire - free @obj through the pool's free_fn once no epoch
 *                      section can still see it
 *
 * Context: as pmidx_epoch_retire_fn().
 */
void pmidx_epoch_retire(struct pmidx_epoch *e, u64 obj)
{
	pmidx_epoch_retire_fn(e, obj, NULL, NULL);
}

/**
 * pmidx_epoch_barrier - wait until everything retired so far is freed
 *
 * Context: process context, outside any section; sleeps.
 */
void pmidx_epoch_barrier(struct pmidx_epoch *e)
{
	u64 target = atomic64_read(&e->global) + 2;
	int cpu;

	while (try_advance(e) < target)
		cond_resched();
	for_each_possible_cpu(cpu)
		collect(e, per_cpu_ptr(e->pcpu, cpu), target);
}

/* Context: process context; no section runs any more. */
void pmidx_epoch_destroy(struct pmidx_epoch *e)
{
	int cpu;

	if (!e->pcpu)
		return;
	cancel_work_sync(&e->grow_work);
	for_each_possible_cpu(cpu) {
		struct pmidx_epoch_cpu *c = per_cpu_ptr(e->pcpu, cpu);

		collect(e, c, U64_MAX);
		kfree(c->items);
	}
	free_percpu(e->pcpu);
	e->pcpu = NULL;
}
