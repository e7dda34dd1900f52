/* SPDX-License-Identifier: GPL-2.0 */
/* 6.12 name of <asm/unaligned.h> */
#include <asm/unaligned.h>
