/*
 * jsontext.h - JSON text written by hand, byte for byte as jansson's json_dumps would write it,
 * for the request bodies rendered once per pod (podbody.c, peers.c), where building a jansson
 * tree and dumping it was most of the client's CPU per request. Private to src/kube.
 */
#ifndef DROVER_KUBE_JSONTEXT_H
#define DROVER_KUBE_JSONTEXT_H

#include "kbuf.h"

#include <stdbool.h>

/*
 * The bytes of s escaped as json_dumps (without JSON_ENSURE_ASCII or JSON_ESCAPE_SLASH) writes
 * a string's contents, without the quotes: '"' and '\\' and the control characters escaped
 * (\b \f \n \r \t, the others \u00XX), every other byte as it is. Writes them to out unless
 * NULL; returns how many. ascii: a byte outside ASCII returns -1 instead (jansson checks UTF-8
 * there and may refuse the string: the caller decides). O(strlen(s)), one table look-up a byte.
 */
long drv_json_escaped(const char *s, bool ascii, char *out);

/* Appends s escaped (drv_json_escaped, bytes outside ASCII as they are; no quotes); false when
 * out of memory. */
bool drv_kbuf_put_escaped(drv_kbuf *b, const char *s);

#endif
