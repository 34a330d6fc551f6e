/*
 * arena.h - a bump allocator for per-cycle scratch. Everything a scheduling cycle allocates
 * lives here and is released at once by drv_arena_reset, so plugins never free.
 */
#ifndef DROVER_ARENA_H
#define DROVER_ARENA_H

#include "drover/base.h"

typedef struct drv_arena_block drv_arena_block;
typedef struct drv_arena {
    drv_arena_block *head; /* newest block first */
    size_t block_size;     /* size of ordinary blocks; larger requests get their own */
    bool failed;           /* an allocation returned NULL since the last reset (the cycle
                              fails a plugin's call that saw one: cycle.h, drv_ctx_arena) */
} drv_arena;

void drv_arena_init(drv_arena *a, size_t block_size);
void drv_arena_fini(drv_arena *a);
/* Zeroed, 16-byte aligned memory valid until the next reset; NULL when out of memory (and
 * failed set). Each call counts as an allocation for the failure hook (drv_alloc_fail_at),
 * whether or not it needs a new block, so a test can fail any of them. */
void *drv_arena_alloc(drv_arena *a, size_t n);
/* Frees all but the largest block and rewinds it; clears failed. */
void drv_arena_reset(drv_arena *a);

#endif
