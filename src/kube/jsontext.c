/*
 * jsontext.c - JSON strings escaped as jansson escapes them (jsontext.h), for bodies written by
 * hand. The table below is jansson's dump_string (2.14) for ASCII: it escapes '"', '\\' and
 * every byte below 0x20 (the short forms where JSON has them, else \u00XX in upper-case hex) and
 * nothing else; tests/ctrl/test_peers.c and test_podbody.c compare whole bodies with jansson's.
 */
#include "jsontext.h"

#include <stdint.h>
#include <string.h>

/* How each ASCII byte is escaped: 0 not at all, 'u' as \u00XX, else a backslash and this. */
static const char ESCAPE[0x80] = {
    ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't', [0x01] = 'u',
    [0x02] = 'u', [0x03] = 'u', [0x04] = 'u', [0x05] = 'u', [0x06] = 'u', [0x07] = 'u',
    [0x0b] = 'u', [0x0e] = 'u', [0x0f] = 'u', [0x10] = 'u', [0x11] = 'u', [0x12] = 'u',
    [0x13] = 'u', [0x14] = 'u', [0x15] = 'u', [0x16] = 'u', [0x17] = 'u', [0x18] = 'u',
    [0x19] = 'u', [0x1a] = 'u', [0x1b] = 'u', [0x1c] = 'u', [0x1d] = 'u', [0x1e] = 'u',
    [0x1f] = 'u', ['"'] = '"',  ['\\'] = '\\'};

long drv_json_escaped(const char *s, bool ascii, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    const uint8_t *p = (const uint8_t *)s;
    long n = 0;
    for (; *p; p++) {
        if (*p >= 0x80 && ascii)
            return -1;
        char e = *p >= 0x80 ? 0 : ESCAPE[*p];
        long k = !e ? 1 : e == 'u' ? 6 : 2;
        if (out) { /* (else the length alone) */
            if (k == 1)
                out[n] = (char)*p;
            else if (k == 2)
                memcpy(out + n, (char[2]){'\\', e}, 2);
            else
                memcpy(out + n, (char[6]){'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]}, 6);
        }
        n += k;
    }
    return n;
}

bool drv_kbuf_put_escaped(drv_kbuf *b, const char *s)
{
    size_t n = (size_t)drv_json_escaped(s, false, NULL);
    if (!drv_kbuf_reserve(b, n))
        return false;
    drv_json_escaped(s, false, b->p + b->n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}
