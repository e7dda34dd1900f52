/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PMIDX_SUPER_H
#define _PMIDX_SUPER_H

#include "pmem.h"
#include "pmidx_format.h"

int pmidx_sb_geometry(struct pmidx_sb *sb, u64 size);
int pmidx_sb_read(struct pmidx_pmem *pm, struct pmidx_sb *sb,
		  unsigned int *slot, const char **why);
void pmidx_sb_write(struct pmidx_pmem *pm, struct pmidx_sb *sb,
		    unsigned int *slot);
bool pmidx_sb_present(struct pmidx_pmem *pm);

#endif /* _PMIDX_SUPER_H */
