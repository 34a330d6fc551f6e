/*
 * jsondoc.c - reading a document (json.h's drv_jdoc, parsed by jsonparse.c): a member by key,
 * a node's type and string, and a node as a jansson value.
 *
 * Why apart: jsonparse.c builds documents, this reads them; objects_doc.c's decoders and the
 * informer (keys and resourceVersions) only read. A member is found by a walk of its object's
 * members (a Kubernetes object's maps are small: ~10 members), the last of a repeated key
 * winning as in jansson's objects; drv_jdoc_json rebuilds jansson's value for the decoders'
 * rare cases and for the tests that compare documents with jansson.
 */
#include "json.h"

#include <string.h>

int32_t drv_jdoc_get(const drv_jdoc *doc, int32_t obj, const char *key)
{
    if (obj < 0 || doc->v[obj].type != DRV_JOBJECT)
        return -1;
    size_t len = strlen(key);
    int32_t found = -1;
    for (int32_t c = doc->v[obj].child; c >= 0; c = doc->v[c].next)
        if (doc->v[c].klen == len && memcmp(doc->v[c].key, key, len) == 0)
            found = c; /* (on: a repeated key's last member is its value) */
    return found;
}

int drv_jdoc_type(const drv_jdoc *doc, int32_t v)
{
    return v < 0 ? DRV_JNONE : doc->v[v].type;
}

const char *drv_jdoc_str(const drv_jdoc *doc, int32_t v)
{
    return v >= 0 && doc->v[v].type == DRV_JSTRING ? doc->v[v].str : NULL;
}

json_t *drv_jdoc_json(const drv_jdoc *doc, int32_t v)
{
    const drv_jnode *x = &doc->v[v];
    json_t *o = NULL;
    switch (x->type) {
    case DRV_JOBJECT:
    case DRV_JARRAY:
        o = x->type == DRV_JOBJECT ? json_object() : json_array();
        for (int32_t c = x->child; o && c >= 0; c = doc->v[c].next) {
            json_t *e = drv_jdoc_json(doc, c); /* (depth: DRV_JSON_MAX_DEPTH, as parsed) */
            int rc = !e ? -1
                     : x->type == DRV_JOBJECT
                         ? json_object_setn_new_nocheck(o, doc->v[c].key, doc->v[c].klen, e)
                         : json_array_append_new(o, e);
            if (rc != 0) {
                json_decref(o);
                o = NULL;
            }
        }
        return o;
    case DRV_JSTRING:
        return json_stringn_nocheck(x->str, x->len);
    case DRV_JINT:
        return json_integer(x->i);
    case DRV_JREAL:
        return json_real(x->r);
    case DRV_JTRUE:
        return json_true();
    case DRV_JFALSE:
        return json_false();
    default:
        return json_null();
    }
}
