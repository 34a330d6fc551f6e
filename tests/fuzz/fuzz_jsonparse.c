/* fuzz_jsonparse.c - drv_json_loadb (src/kube/jsonparse.c) against jansson's json_loadb on the
 * same bytes: both refuse, or both accept and give equal values; anything else aborts. The same
 * for drv_json_loadb_skip with a few paths, against jansson's value with those members deleted
 * (skipped members are checked, not built). And drv_jdoc_parse (the documents the pod and node
 * informers read) against drv_json_loadb_skip: the same answer, error and value. */
#include "json.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

static const char *const SKIP[] = {"a", "b.c", "metadata.managedFields", NULL};

/* v without SKIP's members (b.c: c in the object b, when both are objects). */
static void drop(json_t *v)
{
    json_object_del(v, "a");
    json_object_del(json_object_get(v, "b"), "c");
    json_object_del(json_object_get(v, "metadata"), "managedFields");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je, ours;
    json_t *want = json_loadb((const char *)data, size, 0, &je);
    json_t *got = drv_json_loadb((const char *)data, size, &ours);
    if (!want != !got || (want && !json_equal(want, got)))
        abort();
    if (!got && (ours.position < 0 || (size_t)ours.position > size))
        abort();
    json_decref(got);
    got = drv_json_loadb_skip((const char *)data, size, SKIP, NULL, &ours);
    if (want)
        drop(want);
    if (!want != !got || (want && !json_equal(want, got)))
        abort();
    drv_jdoc doc;
    drv_jdoc_init(&doc);
    int drc = drv_jdoc_parse(&doc, (const char *)data, size, SKIP, NULL, &je);
    json_t *dv = drc == 0 ? drv_jdoc_json(&doc, 0) : NULL;
    if ((drc == 0) != (got != NULL) || (got && !json_equal(got, dv)) ||
        (!got && (strcmp(je.text, ours.text) != 0 || je.position != ours.position)))
        abort();
    json_decref(dv);
    drv_jdoc_fini(&doc);
    json_decref(want);
    json_decref(got);
    return 0;
}
