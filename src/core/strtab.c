/*
 * strtab.c - string interning with an open-addressing hash table (linear probing, FNV-1a,
 * load factor <= 1/2). Strings are copied once; ids are dense and stable.
 */
#include "drover/strtab.h"

#include <string.h>

/* A hash slot: id + 1 (0 when empty) and the string's full hash, so that probing compares
 * strings only on equal hashes and a deletion moves entries without hashing them again. */
struct slot {
    int32_t id1;
    uint32_t h;
};

struct drv_strtab {
    char **strs; /* id -> string; NULL once forgotten */
    int32_t n, cap;
    int32_t nlive; /* ids not forgotten: what the slots hold */
    struct slot *slot;
    uint32_t nslot; /* power of two */
};

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

drv_strtab *drv_strtab_new(void)
{
    drv_strtab *t = drv_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    if (drv_strtab_intern(t, "") != 0) {
        drv_strtab_free(t);
        return NULL;
    }
    return t;
}

void drv_strtab_free(drv_strtab *t)
{
    if (!t)
        return;
    for (int32_t i = 0; i < t->n; i++)
        drv_free(t->strs[i]);
    drv_free(t->strs);
    drv_free(t->slot);
    drv_free(t);
}

static int rehash(drv_strtab *t, uint32_t nslot)
{
    struct slot *slot = drv_calloc(nslot, sizeof *slot);
    if (!slot)
        return DRV_ENOMEM;
    for (uint32_t k = 0; k < t->nslot; k++) {
        if (!t->slot[k].id1)
            continue;
        uint32_t h = t->slot[k].h & (nslot - 1);
        while (slot[h].id1)
            h = (h + 1) & (nslot - 1);
        slot[h] = t->slot[k];
    }
    drv_free(t->slot);
    t->slot = slot;
    t->nslot = nslot;
    return 0;
}

int32_t drv_strtab_find(const drv_strtab *t, const char *s)
{
    if (!t->nslot)
        return -1;
    uint32_t full = fnv1a(s), h = full & (t->nslot - 1);
    while (t->slot[h].id1) {
        int32_t id = t->slot[h].id1 - 1;
        if (t->slot[h].h == full && strcmp(t->strs[id], s) == 0)
            return id;
        h = (h + 1) & (t->nslot - 1);
    }
    return -1;
}

int32_t drv_strtab_intern(drv_strtab *t, const char *s)
{
    int32_t id = drv_strtab_find(t, s);
    if (id >= 0)
        return id;
    if ((uint32_t)(t->nlive + 1) * 2 > t->nslot && rehash(t, t->nslot ? t->nslot * 2 : 64) != 0)
        return DRV_ENOMEM;
    if (drv_grow(&t->strs, sizeof *t->strs, &t->cap, t->n + 1) != 0)
        return DRV_ENOMEM;
    char *copy = drv_strdup(s);
    if (!copy)
        return DRV_ENOMEM;
    id = t->n++;
    t->nlive++;
    t->strs[id] = copy;
    uint32_t full = fnv1a(s), h = full & (t->nslot - 1);
    while (t->slot[h].id1)
        h = (h + 1) & (t->nslot - 1);
    t->slot[h] = (struct slot){id + 1, full};
    return id;
}

const char *drv_strtab_str(const drv_strtab *t, int32_t id)
{
    return (id >= 0 && id < t->n && t->strs[id]) ? t->strs[id] : "";
}

/* Whether hash slot k lies cyclically in (i, j]. */
static bool between(uint32_t i, uint32_t k, uint32_t j)
{
    return i <= j ? (i < k && k <= j) : (i < k || k <= j);
}

void drv_strtab_forget(drv_strtab *t, int32_t id)
{
    if (id <= 0 || id >= t->n || !t->strs[id])
        return;
    uint32_t mask = t->nslot - 1, i = fnv1a(t->strs[id]) & mask;
    while (t->slot[i].id1 != id + 1)
        i = (i + 1) & mask;
    /* Deletion from linear probing without tombstones: each later entry of the run moves
     * back into the hole unless its home slot lies after the hole (Knuth 6.4, algorithm R),
     * so every remaining string is still found from its home slot. */
    t->slot[i].id1 = 0;
    for (uint32_t j = (i + 1) & mask; t->slot[j].id1; j = (j + 1) & mask) {
        uint32_t home = t->slot[j].h & mask;
        if (between(i, home, j))
            continue;
        t->slot[i] = t->slot[j];
        t->slot[j].id1 = 0;
        i = j;
    }
    drv_free(t->strs[id]);
    t->strs[id] = NULL;
    t->nlive--;
}

int32_t drv_strtab_count(const drv_strtab *t)
{
    return t->n;
}
