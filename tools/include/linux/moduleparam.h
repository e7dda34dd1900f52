/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: module parameters are plain variables with their
 * defaults (tests set them directly).
 */
#ifndef _SHIM_LINUX_MODULEPARAM_H
#define _SHIM_LINUX_MODULEPARAM_H

#include <linux/types.h>

#define module_param(name, type, perm)
#define module_param_named(name, value, type, perm)
#define module_param_unsafe(name, type, perm)
#define module_param_cb(name, ops, arg, perm)
#define MODULE_PARM_DESC(name, desc)
#define __MODULE_PARM_TYPE(name, _type)

#endif
