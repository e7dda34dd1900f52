/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PMIDX_URING_H
#define _PMIDX_URING_H

struct io_uring_cmd;

int pmidx_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);

#endif /* _PMIDX_URING_H */
