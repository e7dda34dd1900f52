/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_MODULE_H
#define _SHIM_LINUX_MODULE_H

#include <linux/export.h>

#define MODULE_LICENSE(x)
#define MODULE_AUTHOR(x)
#define MODULE_DESCRIPTION(x)
#define MODULE_VERSION(x)
#define MODULE_ALIAS(x)
#define module_init(fn)
#define module_exit(fn)
#include <linux/moduleparam.h>

#endif
