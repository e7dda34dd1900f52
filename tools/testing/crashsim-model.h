/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The crash simulator's model of what was acknowledged (crashsim.h):
 * operations in the order they began, and per key its acknowledged state
 * and the operations still in flight, kept up to date as operations
 * begin and end so that a question about one key costs O(1), however
 * long the history. Not thread-safe: crashsim.c serialises the calls.
 */
#ifndef _PMIDX_CRASHSIM_MODEL_H
#define _PMIDX_CRASHSIM_MODEL_H

#include "crashsim.h"

struct cs_model;

struct cs_model *cs_model_new(void);
void cs_model_free(struct cs_model *m);
void cs_model_reset(struct cs_model *m);

unsigned int cs_model_begin(struct cs_model *m, u32 type, const char *tag,
			    const void *key, u32 klen, u64 value);
void cs_model_ack(struct cs_model *m, unsigned int op);

void cs_model_expect(struct cs_model *m, const void *key, u32 klen,
		     struct crashsim_expect *e);
const u8 *cs_model_key(struct cs_model *m, unsigned int n, u32 *klen);
/* the first NOTE op tagged @tag: -1 never begun, 0 in flight, 1 acked */
int cs_model_note(struct cs_model *m, const char *tag);

unsigned int cs_model_ops(struct cs_model *m);
unsigned int cs_model_acked(struct cs_model *m);

#endif
