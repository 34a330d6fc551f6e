/* fuzz_watch.c - the watch stream decoder (src/kube/watch.c) fed in small chunks: the first
 * byte seeds the chunk sizes (1 to 16 bytes), so lines split anywhere, as on the network. The
 * input is decoded twice, its events as jansson values and as documents (drv_watch_decoder.doc):
 * both must give the same events (type, resourceVersion, offset, object) and the same result. */
#include "drover/kube_watch.h"
#include "json.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A running digest of the events seen: their type, offset, resourceVersion and object as
 * compact JSON with sorted keys. */
typedef struct digest {
    uint64_t h;
    long events;
} digest;

static void mix(digest *g, const char *s)
{
    for (; *s; s++)
        g->h = (g->h ^ (unsigned char)*s) * 1099511628211ull;
    g->h = (g->h ^ 0xff) * 1099511628211ull;
}

static int on_event(const drv_watch_event *ev, void *arg)
{
    digest *g = arg;
    g->events++;
    json_t *o = ev->doc ? drv_jdoc_json(ev->doc, ev->obj) : json_incref(ev->object);
    char *t = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char head[96];
    snprintf(head, sizeof head, "%d@%llu%c:", ev->type, (unsigned long long)ev->offset,
             ev->more ? '+' : '.');
    mix(g, head);
    mix(g, ev->rv);
    mix(g, t ? t : "(out of memory)");
    free(t);
    json_decref(o);
    return 0;
}

static int decode(const uint8_t *data, size_t size, unsigned seed, bool docs, digest *g,
                  drv_diag *d)
{
    drv_watch_decoder w;
    drv_watch_decoder_init(&w, "pods");
    drv_jdoc doc;
    drv_jdoc_init(&doc);
    w.doc = docs ? &doc : NULL;
    w.skip = seed & 1 ? drv_kube_unread_pod : NULL;
    g->h = 14695981039346656037ull;
    g->events = 0;
    int rc = 0;
    for (size_t at = 0; at < size && rc == 0;) {
        seed = seed * 1103515245u + 12345u;
        size_t k = 1 + (seed >> 16) % 16;
        if (k > size - at)
            k = size - at;
        rc = drv_watch_decoder_feed(&w, (const char *)data + at, k, on_event, g, d);
        at += k;
    }
    if (rc == 0)
        rc = drv_watch_decoder_finish(&w, d);
    drv_watch_decoder_fini(&w);
    drv_jdoc_fini(&doc);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned seed = data[0];
    data++, size--;
    digest a, b;
    drv_diag da = {{0}}, db = {{0}};
    int ra = decode(data, size, seed, false, &a, &da);
    int rb = decode(data, size, seed, true, &b, &db);
    if (ra != rb || a.h != b.h || a.events != b.events || strcmp(da.msg, db.msg) != 0) {
        fprintf(stderr, "jansson: %d, %ld events (%s); documents: %d, %ld events (%s)\n", ra,
                a.events, da.msg, rb, b.events, db.msg);
        abort();
    }
    return 0;
}
