// SPDX-License-Identifier: GPL-2.0
/*
 * Engine names. The index table stores engine ids; names are what users
 * type and see.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include "pool.h"

static const char *const engine_names[__PMIDX_ENGINE_MAX] = {
	[PMIDX_ENGINE_CCL]	= "ccl",
	[PMIDX_ENGINE_UTREE]	= "utree",
	[PMIDX_ENGINE_B3]	= "b3",
	[PMIDX_ENGINE_LODGE]	= "lodge",
	[PMIDX_ENGINE_PFART]	= "pfart",
};

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
