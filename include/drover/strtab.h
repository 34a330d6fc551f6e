/*
 * strtab.h - interned strings. Names (nodes, jobs, users, zones) are stored once and referred
 * to by a small integer id, so objects stay compact and comparisons are integer compares.
 * Id 0 is always the empty string.
 */
#ifndef DROVER_STRTAB_H
#define DROVER_STRTAB_H

#include "drover/base.h"

typedef struct drv_strtab drv_strtab;

drv_strtab *drv_strtab_new(void);
void drv_strtab_free(drv_strtab *t);
/* Returns the id of s, adding it if new; negative DRV_ENOMEM on failure. */
int32_t drv_strtab_intern(drv_strtab *t, const char *s);
/* Returns the id of s or -1 if it was never interned. */
int32_t drv_strtab_find(const drv_strtab *t, const char *s);
/* The string for an id ("" for a forgotten one); the pointer stays valid until the table is
 * freed or the id forgotten. */
const char *drv_strtab_str(const drv_strtab *t, int32_t id);
/*
 * Forgets an id for good (a streamed simulation's finished job's own name): its copy is freed,
 * find no longer sees it, str gives "", and a later intern of the same string gets a new id;
 * no id is ever handed out twice, so every other id stays what it was. Id 0 and unknown or
 * forgotten ids are ignored. Costs O(1) expected; what is left of the id is its slot in the
 * id array (a pointer), so a table of mostly forgotten strings costs 8 bytes an id.
 */
void drv_strtab_forget(drv_strtab *t, int32_t id);
int32_t drv_strtab_count(const drv_strtab *t);

#endif
