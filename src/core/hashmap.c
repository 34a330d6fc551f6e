/*
 * hashmap.c - chained hash table with a type table (hashmap.h).
 *
 * Buckets are a power-of-two array of singly linked chains; an entry's bucket is its hash's low
 * bits. A new entry goes to the end of its chain. When entries outnumber buckets after an
 * insertion the array doubles and every chain is relinked (each entry moved to the front of its
 * new chain), so the mean chain stays under 2 and a lookup visits O(1) entries on average.
 * The table never shrinks: tables here follow a working set that returns to its size.
 *
 * Worked example: 64 buckets, the 65th put doubles the array to 128 and relinks all 65 entries
 * once; a get then walks the one chain hash(key) & 127.
 */
#include "drover/hashmap.h"

#include <string.h>

#define INITIAL_BUCKETS 64

typedef struct entry {
    void *key;
    void *val;
    uint64_t hash; /* kept so that doubling never calls the hash hook again */
    struct entry *next;
} entry;

struct drv_hashmap {
    const drv_hashmap_type *type;
    entry **b; /* nb chains */
    size_t nb; /* a power of two */
    size_t n;  /* entries */
};

/* FNV-1a with the offset basis the informer and work queue always used (its last digit lost, so
 * not the published 14695981039346656037; any odd basis hashes as well), kept so that the
 * informer iterates its cache in the same order as before. */
uint64_t drv_hashmap_hash_str(const void *key)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = key; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

bool drv_hashmap_equal_str(const void *a, const void *b)
{
    return strcmp(a, b) == 0;
}

static void *dup_str(const void *k)
{
    return drv_strdup(k);
}

/* Knuth's multiplicative hash: consecutive integers land in different buckets. */
uint64_t drv_hashmap_hash_int(const void *key)
{
    return (uint64_t)(uint32_t)(intptr_t)key * 2654435761u;
}

bool drv_hashmap_equal_int(const void *a, const void *b)
{
    return a == b;
}

const drv_hashmap_type drv_hashmap_strings = {.hash = drv_hashmap_hash_str,
                                              .equal = drv_hashmap_equal_str,
                                              .key_dup = dup_str,
                                              .key_free = drv_free};
const drv_hashmap_type drv_hashmap_borrowed_strings = {.hash = drv_hashmap_hash_str,
                                                       .equal = drv_hashmap_equal_str};
const drv_hashmap_type drv_hashmap_ints = {.hash = drv_hashmap_hash_int,
                                           .equal = drv_hashmap_equal_int};

drv_hashmap *drv_hashmap_new(const drv_hashmap_type *type)
{
    drv_hashmap *m = drv_calloc(1, sizeof *m);
    if (!m || !(m->b = drv_calloc(INITIAL_BUCKETS, sizeof *m->b))) {
        drv_free(m);
        return NULL;
    }
    m->type = type;
    m->nb = INITIAL_BUCKETS;
    return m;
}

static void free_entry(const drv_hashmap_type *t, entry *e)
{
    if (t->key_free)
        t->key_free(e->key);
    if (t->val_free)
        t->val_free(e->val);
    drv_free(e);
}

void drv_hashmap_free(drv_hashmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nb; i++)
        for (entry *e = m->b[i], *next; e; e = next) {
            next = e->next;
            free_entry(m->type, e);
        }
    drv_free(m->b);
    drv_free(m);
}

/* The link that points at key's entry, or the chain's terminating NULL link. */
static entry **find(const drv_hashmap *m, const void *key, uint64_t h)
{
    entry **s = &m->b[h & (m->nb - 1)];
    while (*s && !((*s)->hash == h && m->type->equal((*s)->key, key)))
        s = &(*s)->next;
    return s;
}

void *drv_hashmap_get(const drv_hashmap *m, const void *key)
{
    entry *e = *find(m, key, m->type->hash(key));
    return e ? e->val : NULL;
}

bool drv_hashmap_has(const drv_hashmap *m, const void *key)
{
    return *find(m, key, m->type->hash(key)) != NULL;
}

/* Doubles the bucket array; on failure the table is left as it was. */
static void grow(drv_hashmap *m)
{
    size_t nb = m->nb * 2;
    entry **b = drv_calloc(nb, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < m->nb; i++)
        for (entry *e = m->b[i], *next; e; e = next) {
            next = e->next;
            entry **s = &b[e->hash & (nb - 1)];
            e->next = *s;
            *s = e;
        }
    drv_free(m->b);
    m->b = b;
    m->nb = nb;
}

int drv_hashmap_put(drv_hashmap *m, const void *key, void *val)
{
    uint64_t h = m->type->hash(key);
    entry **s = find(m, key, h);
    if (*s) {
        if (m->type->val_free && (*s)->val != val)
            m->type->val_free((*s)->val);
        (*s)->val = val;
        return 0;
    }
    entry *e = drv_malloc(sizeof *e);
    if (!e)
        return DRV_ENOMEM;
    e->key = m->type->key_dup ? m->type->key_dup(key) : (void *)(uintptr_t)key;
    if (m->type->key_dup && !e->key) {
        drv_free(e);
        return DRV_ENOMEM;
    }
    e->val = val;
    e->hash = h;
    e->next = NULL;
    *s = e;
    if (++m->n > m->nb)
        grow(m);
    return 0;
}

int drv_hashmap_remove(drv_hashmap *m, const void *key)
{
    entry **s = find(m, key, m->type->hash(key));
    if (!*s)
        return DRV_ENOENT;
    entry *e = *s;
    *s = e->next;
    m->n--;
    free_entry(m->type, e);
    return 0;
}

size_t drv_hashmap_len(const drv_hashmap *m)
{
    return m->n;
}

void drv_hashmap_iter_init(drv_hashmap_iter *it, const drv_hashmap *m)
{
    it->m = m;
    it->bucket = 0;
    it->next = NULL;
}

bool drv_hashmap_next(drv_hashmap_iter *it, const void **key, void **val)
{
    entry *e = it->next;
    while (!e && it->bucket < it->m->nb)
        e = it->m->b[it->bucket++];
    if (!e)
        return false;
    it->next = e->next; /* read before the caller may remove e */
    if (key)
        *key = e->key;
    if (val)
        *val = e->val;
    return true;
}
