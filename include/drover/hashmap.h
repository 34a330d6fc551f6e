/*
 * hashmap.h - a chained hash table from keys to values, with a type table in the style of
 * Redis's dict: the table knows how to hash, compare, copy and free keys and values only through
 * the hooks of its drv_hashmap_type, so one implementation serves string keys, integer keys
 * and keys that live inside the caller's records.
 *
 * Ownership: with key_dup set the table stores its own copy of each key and frees it with
 * key_free; without, it borrows the caller's key pointer, which must stay valid (and unchanged)
 * while the entry exists. Values are borrowed unless val_free is set, in which case the table
 * frees a value when its entry is removed, replaced or the table is freed.
 *
 * Not thread-safe: callers that share a table hold their own lock.
 */
#ifndef DROVER_HASHMAP_H
#define DROVER_HASHMAP_H

#include "drover/base.h"

typedef struct drv_hashmap_type {
    uint64_t (*hash)(const void *key);           /* required */
    bool (*equal)(const void *a, const void *b); /* required */
    void *(*key_dup)(const void *key);           /* NULL: borrow the key */
    void (*key_free)(void *key);                 /* NULL: nothing to free */
    void (*val_free)(void *val);                 /* NULL: values are borrowed */
} drv_hashmap_type;

/* NUL-terminated string keys the table copies (drv_strdup) and frees; values borrowed. */
extern const drv_hashmap_type drv_hashmap_strings;
/* NUL-terminated string keys borrowed from the caller (e.g. a record's own name field). */
extern const drv_hashmap_type drv_hashmap_borrowed_strings;
/* Integer keys stored in the key pointer itself: use DRV_HASHMAP_INT(v) as the key. */
extern const drv_hashmap_type drv_hashmap_ints;
#define DRV_HASHMAP_INT(v) ((const void *)(intptr_t)(v))

/* The hooks of the types above, for composing others (e.g. integer keys owning their values):
 * an FNV-1a style hash and strcmp equality of NUL-terminated strings; Knuth's multiplicative
 * hash and identity of DRV_HASHMAP_INT keys. */
uint64_t drv_hashmap_hash_str(const void *key);
bool drv_hashmap_equal_str(const void *a, const void *b);
uint64_t drv_hashmap_hash_int(const void *key);
bool drv_hashmap_equal_int(const void *a, const void *b);

typedef struct drv_hashmap drv_hashmap;

/* A new empty table (64 buckets); NULL when out of memory. type is borrowed (static). */
drv_hashmap *drv_hashmap_new(const drv_hashmap_type *type);
/* Frees every entry (through the hooks) and the table; accepts NULL. */
void drv_hashmap_free(drv_hashmap *m);

/* The value stored under key, or NULL when there is none. */
void *drv_hashmap_get(const drv_hashmap *m, const void *key);
/* Whether key is present (for tables that store NULL values). */
bool drv_hashmap_has(const drv_hashmap *m, const void *key);
/*
 * Stores val under key, replacing (and val_free-ing) a value already there; the stored key is
 * then kept. 0, or DRV_ENOMEM with the table unchanged. The table doubles its buckets when
 * entries outnumber them; a failed doubling is not an error (chains just grow longer).
 */
int drv_hashmap_put(drv_hashmap *m, const void *key, void *val);
/* Removes key's entry, freeing key and value through the hooks. 0, or DRV_ENOENT. */
int drv_hashmap_remove(drv_hashmap *m, const void *key);
/* Entries stored. */
size_t drv_hashmap_len(const drv_hashmap *m);

/*
 * Iteration in bucket order (unspecified, but the same for the same sequence of operations).
 * Removing the entry just returned is allowed; any other put or remove during iteration is not.
 *
 *     drv_hashmap_iter it;
 *     drv_hashmap_iter_init(&it, m);
 *     for (const void *k; drv_hashmap_next(&it, &k, &v);) ...
 */
typedef struct drv_hashmap_iter {
    const drv_hashmap *m;
    size_t bucket; /* next bucket to visit */
    void *next;    /* next entry in the current chain, or NULL */
} drv_hashmap_iter;
void drv_hashmap_iter_init(drv_hashmap_iter *it, const drv_hashmap *m);
/* Fills key and val (either may be NULL) with the next entry; false after the last one. */
bool drv_hashmap_next(drv_hashmap_iter *it, const void **key, void **val);

#endif
