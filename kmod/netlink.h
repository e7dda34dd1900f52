/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PMIDX_NETLINK_H
#define _PMIDX_NETLINK_H

int pmidx_genl_init(void);
void pmidx_genl_exit(void);

#endif /* _PMIDX_NETLINK_H */
