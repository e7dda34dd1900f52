/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PMIDX_INDEX_TABLE_H
#define _PMIDX_INDEX_TABLE_H

#include "pool.h"

void pmidx_index_table_format(struct pmidx_pmem *pm);
int pmidx_index_table_load(struct pmidx_pool *pool, const char **why);
void pmidx_index_table_unload(struct pmidx_pool *pool, bool clean);
int pmidx_index_resume_drops(struct pmidx_pool *pool, bool clean,
			     const char **why);

#endif /* _PMIDX_INDEX_TABLE_H */
