// SPDX-License-Identifier: GPL-2.0
/*
 * Engine names. The index table stores engine ids; names are what users
 * type and see.
 */
#include <linux/bug.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include "engine.h"
#include "pool.h"

static const char *const engine_names[__PMIDX_ENGINE_MAX] = {
	[PMIDX_ENGINE_CCL]	= "ccl",
	[PMIDX_ENGINE_UTREE]	= "utree",
	[PMIDX_ENGINE_B3]	= "b3",
	[PMIDX_ENGINE_LODGE]	= "lodge",
	[PMIDX_ENGINE_PFART]	= "pfart",
};

/* Engines built into this module, by id. */
static const struct pmidx_engine_ops *const engine_table[__PMIDX_ENGINE_MAX] = {
	[PMIDX_ENGINE_CCL]	= &pmidx_ccl_ops,
	[PMIDX_ENGINE_UTREE]	= &pmidx_utree_ops,
	[PMIDX_ENGINE_B3]	= &pmidx_b3_ops,
	[PMIDX_ENGINE_LODGE]	= &pmidx_lodge_ops,
	[PMIDX_ENGINE_PFART]	= &pmidx_pfart_ops,
};

#ifdef PMIDX_TEST_ENGINES
/*
 * The userspace tests only (user.mk defines PMIDX_TEST_ENGINES, the
 * module never does): serve an id with a test engine
 * (selftests/user/toy-engine.c: a committed-mode one, for the core).
 */
const struct pmidx_engine_ops *pmidx_test_engines[__PMIDX_ENGINE_MAX];
const struct pmidx_engine_ops pmidx_test_engine_absent;
#endif

/* Return: the engine's operations, or NULL when it is not built in. */
const struct pmidx_engine_ops *pmidx_engine_ops(u32 engine)
{
	if (engine >= ARRAY_SIZE(engine_table))
		return NULL;
#ifdef PMIDX_TEST_ENGINES
	if (pmidx_test_engines[engine] == &pmidx_test_engine_absent)
		return NULL;
	if (pmidx_test_engines[engine])
		return pmidx_test_engines[engine];
#endif
	return engine_table[engine];
}

static void engine_exit(const struct pmidx_engine_ops *e)
{
	if (e && e->global_exit)
		e->global_exit();
}

/**
 * pmidx_engines_init - set up every built-in engine's module-wide state
 *
 * Context: module load, before any pool can attach (in the userspace
 * build, process start: see below).
 * Return: 0, or the first engine's error (the others are undone).
 */
int pmidx_engines_init(void)
{
	const struct pmidx_engine_ops *e;
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(engine_table); i++) {
		e = engine_table[i];
		if (!e || !e->global_init)
			continue;
		ret = e->global_init();
		if (ret)
			goto unwind;
	}
	return 0;

unwind:
	while (i--)
		engine_exit(engine_table[i]);
	return ret;
}

/* Context: module unload, after every pool has detached. */
void pmidx_engines_exit(void)
{
	int i;

	for (i = ARRAY_SIZE(engine_table); i--; )
		engine_exit(engine_table[i]);
}

#ifdef PMIDX_TEST_ENGINES
/*
 * The userspace build has no module load: the engines' state comes up
 * with the process. It is never torn down, since a test may abandon a
 * pool (a simulated crash) whose objects are still in the caches.
 */
static void __attribute__((constructor)) pmidx_engines_ctor(void)
{
	BUG_ON(pmidx_engines_init());
}
#endif

const char *pmidx_engine_name(u32 engine)
{
	if (engine >= ARRAY_SIZE(engine_names) || !engine_names[engine])
		return NULL;
	return engine_names[engine];
}

/* Return: the engine id, or PMIDX_ENGINE_NONE for an unknown name. */
u32 pmidx_engine_by_name(const char *name)
{
	u32 i;

	for (i = 1; i < ARRAY_SIZE(engine_names); i++)
		if (engine_names[i] && !strcmp(engine_names[i], name))
			return i;
	return PMIDX_ENGINE_NONE;
}
