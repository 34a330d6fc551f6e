/*
 * arena.c - bump allocation in chained blocks. Reset keeps the first (largest used) block so a
 * steady-state cycle allocates nothing from the system.
 */
#include "drover/arena.h"

#include <string.h>

struct drv_arena_block {
    drv_arena_block *next;
    size_t size, used;
    _Alignas(16) unsigned char mem[];
};

void drv_arena_init(drv_arena *a, size_t block_size)
{
    a->head = NULL;
    a->block_size = block_size ? block_size : 64 * 1024;
    a->failed = false;
}

void drv_arena_fini(drv_arena *a)
{
    drv_arena_block *b = a->head;
    while (b) {
        drv_arena_block *n = b->next;
        drv_free(b);
        b = n;
    }
    a->head = NULL;
}

void *drv_arena_alloc(drv_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    drv_arena_block *b = a->head;
    if (drv_alloc_injected_failure()) {
        a->failed = true;
        return NULL;
    }
    if (!b || b->size - b->used < n) {
        size_t size = n > a->block_size ? n : a->block_size;
        b = drv_malloc(sizeof *b + size);
        if (!b) {
            a->failed = true;
            return NULL;
        }
        b->size = size;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->mem + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

void drv_arena_reset(drv_arena *a)
{
    a->failed = false;
    if (!a->head)
        return;
    /* Keep the largest block: after a few cycles it is big enough for a whole cycle. */
    drv_arena_block *keep = a->head, *b = a->head->next;
    for (drv_arena_block *x = b; x; x = x->next)
        if (x->size > keep->size)
            keep = x;
    b = a->head;
    while (b) {
        drv_arena_block *n = b->next;
        if (b != keep)
            drv_free(b);
        b = n;
    }
    keep->next = NULL;
    keep->used = 0;
    a->head = keep;
}
