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
} drv_arena;

void drv_arena_init(drv_arena *a, size_t block_size);
void drv_arena_fini(drv_arena *a);
/* Zeroed, 16-byte aligned memory valid until the next reset; NULL when out of memory. */
void *drv_arena_alloc(drv_arena *a, size_t n);
/* Frees all but the first block and rewinds it. */
void drv_arena_reset(drv_arena *a);

#endif
