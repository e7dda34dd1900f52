/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: the kernel's ctype semantics (lib/ctype.c), which are
 * ISO-8859-1, not the C locale: bytes 0xc0..0xff (except 0xd7, 0xf7) are
 * letters. Kept faithful so that tests see what the kernel would do.
 * Do not include together with libc's <ctype.h>.
 */
#ifndef _SHIM_LINUX_CTYPE_H
#define _SHIM_LINUX_CTYPE_H

#include <linux/types.h>

#define _U	0x01	/* upper */
#define _L	0x02	/* lower */
#define _D	0x04	/* digit */
#define _C	0x08	/* cntrl */
#define _P	0x10	/* punct */
#define _S	0x20	/* white space (space/lf/tab) */
#define _X	0x40	/* hex digit */
#define _SP	0x80	/* hard space (0x20) */

static inline u8 shim_ctype(unsigned char c)
{
	if (c < 0x20)
		return (c >= 9 && c <= 13) ? (_C | _S) : _C;
	if (c == 0x20)
		return _S | _SP;
	if (c >= '0' && c <= '9')
		return _D;
	if (c >= 'A' && c <= 'F')
		return _U | _X;
	if (c >= 'G' && c <= 'Z')
		return _U;
	if (c >= 'a' && c <= 'f')
		return _L | _X;
	if (c >= 'g' && c <= 'z')
		return _L;
	if (c < 0x7f)
		return _P;
	if (c == 0x7f)
		return _C;
	if (c < 0xa0)
		return 0;
	if (c == 0xa0)
		return _S | _SP;
	if (c < 0xc0 || c == 0xd7 || c == 0xf7)
		return _P;
	return c < 0xdf ? _U : _L;
}

#define __ismask(x)	(shim_ctype((unsigned char)(x)))
#define isalnum(c)	((__ismask(c) & (_U | _L | _D)) != 0)
#define isalpha(c)	((__ismask(c) & (_U | _L)) != 0)
#define iscntrl(c)	((__ismask(c) & (_C)) != 0)
#define isgraph(c)	((__ismask(c) & (_P | _U | _L | _D)) != 0)
#define islower(c)	((__ismask(c) & (_L)) != 0)
#define isprint(c)	((__ismask(c) & (_P | _U | _L | _D | _SP)) != 0)
#define ispunct(c)	((__ismask(c) & (_P)) != 0)
#define isspace(c)	((__ismask(c) & (_S)) != 0)
#define isupper(c)	((__ismask(c) & (_U)) != 0)
#define isxdigit(c)	((__ismask(c) & (_D | _X)) != 0)
#define isdigit(c)	({ int __c = (c); '0' <= __c && __c <= '9'; })
#define isascii(c)	(((unsigned char)(c)) <= 0x7f)
#define toascii(c)	(((unsigned char)(c)) & 0x7f)

static inline unsigned char __tolower(unsigned char c)
{
	return isupper(c) ? c - 'A' + 'a' : c;
}

static inline unsigned char __toupper(unsigned char c)
{
	return islower(c) ? c - 'a' + 'A' : c;
}

#define tolower(c)	__tolower(c)
#define toupper(c)	__toupper(c)

#endif
