/*
 * jsonparse.c - drv_json_loadb (json.h): JSON text in memory parsed into jansson values, about
 * four times as fast as jansson's json_loadb.
 *
 * Why: the informers decode every listed object and every watch event with jansson (the
 * decoders in objects.c read jansson values). json_loadb reads its input through a stream
 * abstraction one byte at a time (a get and unget per byte, a UTF-8 check and a buffer append
 * per byte of every string): on the test API server's 500-byte pods it took ~8.5 us per
 * object, 9,300 per second of one core, and was the largest part of `drover run`'s CPU while
 * the caches sync (bench/e2e_bind: 0.12 s of the pod informer's 0.24 s for 16,000 pods). The
 * values themselves cost ~2 us (jansson's own json_deep_copy of the same pod): here only the
 * reading is ours, the values are jansson's, built with its public constructors (so the
 * decoders, the allocator and json_decref are unchanged).
 *
 * How: recursive descent over the buffer. A string is scanned once; without escapes its bytes
 * are handed to json_stringn_nocheck (validated here, so the check is not repeated), keys to
 * json_object_setn_new_nocheck; numbers are checked against the JSON grammar, then converted
 * with strtoll / strtod. Nesting is bounded (DRV_JSON_MAX_DEPTH, as jansson's parser bounds
 * it), so the recursion's stack is too: a few hundred kB at most.
 *
 * What it accepts is what json_loadb(buf, n, 0, err) accepts (tests/kube/test_jsonparse.c and
 * the jsonparse fuzz target compare the two): an object or array at the top, RFC 8259 values,
 * valid UTF-8, \u escapes with paired surrogates and no \u0000, integers that fit json_int_t
 * (else an error, as jansson), reals that do not overflow, nothing but whitespace after the
 * value; a repeated key keeps its last value. Only the error texts differ; err->position is the
 * byte where the error was found.
 *
 * Example: {"a":[1,2.5,"x\u00e9"]} gives an object whose "a" is an array of the integer 1, the
 * real 2.5 and the string "xé".
 *
 * Documents (drv_jdoc_parse, json.h): the same descent, building no jansson value. Nodes go to
 * one array (children after their parent, linked by index: the array may move as it grows),
 * strings and keys, unescaped and terminated, to one text buffer (known by offset while it may
 * grow; the nodes get pointers into it at the end). Both are kept by the document for the
 * next parse: the pod and node informers parse thousands of items with no allocation after
 * the first ones, and the buffers stay the size of the largest item.
 */
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRV_JSON_MAX_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH */

enum { SKIP_PATHS = 16, SKIP_KEYS = 8 }; /* bounds of a skip list: paths, keys per path */

/* The member paths not to build (drv_json_loadb_skip), split into keys. */
typedef struct skipset {
    int n;                                  /* paths */
    int keys[SKIP_PATHS];                   /* keys in path i */
    const char *key[SKIP_PATHS][SKIP_KEYS]; /* key k of path i (not terminated: klen) */
    size_t klen[SKIP_PATHS][SKIP_KEYS];
} skipset;

typedef struct parser {
    const char *p, *begin, *end;
    int depth;
    const skipset *skip; /* NULL: everything is built */
    json_error_t *err;
    bool failed;   /* err filled (the first error wins) */
    drv_jdoc *doc; /* drv_jdoc_parse's document (NULL: jansson values are built) */
    size_t tlen;   /* bytes of doc->text used */
} parser;

static void *fail(parser *s, const char *at, const char *what)
{
    if (!s->failed && s->err) {
        s->err->line = -1;
        s->err->column = -1;
        s->err->position = (int)(at - s->begin);
        snprintf(s->err->source, sizeof s->err->source, "<buffer>");
        snprintf(s->err->text, sizeof s->err->text, "%s", what);
        /* the code where jansson keeps it (json_error_code): callers tell memory from syntax */
        s->err->text[JSON_ERROR_TEXT_LENGTH - 1] =
            (char)(strcmp(what, "out of memory") == 0 ? json_error_out_of_memory
                                                      : json_error_invalid_syntax);
    }
    s->failed = true;
    return NULL;
}

static void skip_ws(parser *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0 (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len = c < 0x80                 ? 1
                 : c >= 0xC2 && c <= 0xDF ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F) || (c == 0xF0 && p[1] < 0x90) ||
        (c == 0xF4 && p[1] > 0x8F))
        return 0;
    return len;
}

bool drv_json_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    for (size_t k; p < end; p += k)
        if ((k = utf8_len(p, (size_t)(end - p))) == 0)
            return false;
    return true;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The escapes of a string's bytes from .. end (its closing quote) decoded into out (room for
 * end - from bytes: decoding never lengthens; NULL: only checked); returns the decoded length,
 * or -1 (err set). */
static long unescape(parser *s, const char *from, const char *end, char *out)
{
    static const char names[] = "\"\\/bfnrt", codes[] = "\"\\/\b\f\n\r\t";
    size_t w = 0;
    for (const char *p = from; p < end;) {
        if (*p != '\\') {
            if (out)
                out[w] = *p;
            w++, p++;
            continue;
        }
        const char *simple = p[1] ? strchr(names, p[1]) : NULL;
        if (simple) {
            if (out)
                out[w] = codes[simple - names];
            w++, p += 2;
            continue;
        }
        const char *at = p;
        int cp = p[1] == 'u' && end - p >= 6 ? hex4(p + 2) : -1;
        p += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) { /* a high surrogate: its low one must follow */
            int lo = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2) : -1;
            cp =
                lo >= 0xDC00 && lo <= 0xDFFF ? 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00) : -2;
            p += 6;
        }
        if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF) || cp == 0) {
            fail(s, at,
                 cp == 0    ? "\\u0000 is not allowed in a string"
                 : cp == -1 ? "invalid escape in a string"
                            : "invalid Unicode escape: an unpaired surrogate");
            return -1;
        }
        char tmp[4];
        w += put_utf8(out ? out + w : tmp, (unsigned)cp);
    }
    return (long)w;
}

/* The string at s->p (its opening quote), scanned and checked: *b .. *q its raw bytes (q at the
 * closing quote), *escaped whether it has escapes; s->p moves past it. 0, or -1 (err set). */
static int scan_string(parser *s, const char **b, const char **q, bool *escaped)
{
    const char *p = ++s->p;
    *b = p;
    *escaped = false;
    for (;; p++) {
        if (p >= s->end) {
            fail(s, *b - 1, "a string without its closing quote");
            return -1;
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            break;
        if (c == '\\') {
            *escaped = true;
            p++; /* the escaped byte cannot end the string (unescape checks what it is) */
        } else if (c < 0x20) {
            fail(s, p, "a control character in a string");
            return -1;
        } else if (c >= 0x80) {
            size_t k = utf8_len((const unsigned char *)p, (size_t)(s->end - p));
            if (k == 0) {
                fail(s, p, "invalid UTF-8 in a string");
                return -1;
            }
            p += k - 1;
        }
    }
    *q = p;
    s->p = p + 1;
    return 0;
}

/* A string value. */
static json_t *string(parser *s)
{
    const char *b, *q;
    bool escaped;
    if (scan_string(s, &b, &q, &escaped) != 0)
        return NULL;
    if (!escaped) {
        json_t *v = json_stringn_nocheck(b, (size_t)(q - b));
        return v ? v : fail(s, b, "out of memory");
    }
    char small[256], *buf = (size_t)(q - b) <= sizeof small ? small : drv_malloc((size_t)(q - b));
    if (!buf)
        return fail(s, b, "out of memory");
    long n = unescape(s, b, q, buf);
    json_t *v = n < 0 ? NULL : json_stringn_nocheck(buf, (size_t)n);
    if (buf != small)
        drv_free(buf);
    return v || s->failed ? v : fail(s, b, "out of memory");
}

/* A number at s->p: checked against the JSON grammar, then converted as jansson does (an
 * integer unless it has a fraction or an exponent): *real says which of *i, *r holds it. 0, or
 * -1 (err set). */
static int number_scan(parser *s, bool *real, json_int_t *i, double *r)
{
    const char *b = s->p, *p = b;
    *real = false;
    if (p < s->end && *p == '-')
        p++;
    if (p < s->end && *p == '0')
        p++;
    else if (p < s->end && *p >= '1' && *p <= '9')
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
    else
        return fail(s, b, "invalid token"), -1;
    if (p < s->end && *p == '.') {
        *real = true;
        if (++p >= s->end || *p < '0' || *p > '9')
            return fail(s, b, "invalid number: no digit after the point"), -1;
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        *real = true;
        if (++p < s->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= s->end || *p < '0' || *p > '9')
            return fail(s, b, "invalid number: no digit in the exponent"), -1;
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
    }
    char tmp[64], *text = tmp;
    size_t len = (size_t)(p - b);
    if (len >= sizeof tmp && !(text = drv_malloc(len + 1)))
        return fail(s, b, "out of memory"), -1;
    memcpy(text, b, len);
    text[len] = 0; /* (strtoll and strtod need a terminated copy: the buffer may go on) */
    int rc = 0;
    errno = 0;
    if (!*real) {
        long long x = strtoll(text, NULL, 10);
        if (errno == ERANGE)
            rc = -1, fail(s, b, "too big an integer");
        *i = (json_int_t)x;
    } else {
        double x = strtod(text, NULL);
        if (errno == ERANGE && (x > 1 || x < -1))
            rc = -1, fail(s, b, "real number overflow");
        *r = x;
    }
    if (text != tmp)
        drv_free(text);
    s->p = p;
    return rc;
}

static json_t *number(parser *s)
{
    const char *b = s->p;
    bool real;
    json_int_t i = 0;
    double r = 0;
    if (number_scan(s, &real, &i, &r) != 0)
        return NULL;
    json_t *v = real ? json_real(r) : json_integer(i);
    return v ? v : fail(s, b, "out of memory");
}

static json_t *value(parser *s, unsigned mask, int level);
static int skip_value(parser *s);

/* The paths of mask that the member key (len bytes) at level continues: *whole when one ends
 * there (the member is skipped); returns those that go on below it. */
static unsigned skip_next(const parser *s, unsigned mask, int level, const char *key, size_t len,
                          bool *whole)
{
    unsigned next = 0;
    for (int i = 0; mask && i < s->skip->n; i++)
        if (mask >> i & 1 && s->skip->klen[i][level] == len &&
            memcmp(s->skip->key[i][level], key, len) == 0) {
            if (level + 1 == s->skip->keys[i])
                *whole = true;
            else
                next |= 1u << i;
        }
    return next;
}

/* A container's grammar, shared by the three parsers below (a jansson value, a skip, a
 * document). opened: past the opening bracket at s->p; true when `close` follows at once (an
 * empty container, consumed). */
static bool opened_empty(parser *s, char close)
{
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return true;
    }
    return false;
}

/* After an element or member: 1 when ',' follows (another comes), 0 when `close` does (the
 * container ends, consumed), -1 otherwise (failed). */
static int after_element(parser *s, char close)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == ',') {
        s->p++;
        return 1;
    }
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
    }
    fail(s, s->p,
         close == '}' ? "',' or '}' expected in an object" : "',' or ']' expected in an array");
    return -1;
}

/* One member of an object, at s->p (its key's opening quote): parsed and set in o, or checked
 * and left out when a skip path ends at it (mask, level: the paths its object continues). 0 or
 * -1. */
static int member(parser *s, json_t *o, unsigned mask, int level)
{
    const char *b, *q;
    bool escaped;
    if (scan_string(s, &b, &q, &escaped) != 0)
        return -1;
    /* An escaped key is decoded into a buffer of its own (rare: keys are plain names), so that
     * no buffer is held on the stack while the value, maybe deeply nested, is parsed. */
    char *key = NULL;
    long len = (long)(q - b);
    if (escaped) {
        if (!(key = drv_malloc((size_t)len + 1))) {
            fail(s, b, "out of memory");
            return -1;
        }
        if ((len = unescape(s, b, q, key)) < 0) {
            drv_free(key);
            return -1;
        }
    }
    skip_ws(s);
    json_t *v = NULL;
    if (s->p >= s->end || *s->p != ':') {
        fail(s, s->p, "':' expected after an object key");
    } else {
        s->p++;
        bool whole = false;
        unsigned next = mask ? skip_next(s, mask, level, key ? key : b, (size_t)len, &whole) : 0;
        if (whole) {
            drv_free(key);
            return skip_value(s);
        }
        v = value(s, next, level + 1);
        if (v && json_object_setn_new_nocheck(o, key ? key : b, (size_t)len, v) != 0)
            fail(s, s->p, "out of memory");
    }
    drv_free(key);
    return v && !s->failed ? 0 : -1;
}

static json_t *object(parser *s, unsigned mask, int level)
{
    json_t *o = json_object();
    if (!o)
        return fail(s, s->p, "out of memory");
    if (opened_empty(s, '}'))
        return o;
    for (int more = 1; more > 0;) {
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"') {
            fail(s, s->p, "a string expected as an object key");
            break;
        }
        if (member(s, o, mask, level) != 0)
            break;
        if ((more = after_element(s, '}')) == 0)
            return o;
    }
    json_decref(o);
    return NULL;
}

static json_t *array(parser *s)
{
    json_t *a = json_array();
    if (!a)
        return fail(s, s->p, "out of memory");
    if (opened_empty(s, ']'))
        return a;
    for (int more = 1; more > 0;) {
        json_t *v = value(s, 0, 0); /* (skip paths go through objects only) */
        if (!v)
            break;
        if (json_array_append_new(a, v) != 0) {
            fail(s, s->p, "out of memory");
            break;
        }
        if ((more = after_element(s, ']')) == 0)
            return a;
    }
    json_decref(a);
    return NULL;
}

/* A literal word at s->p (true, false or null), checked. 0 or -1. */
static int skip_literal(parser *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return fail(s, s->p, "invalid token"), -1;
    s->p += n;
    return 0;
}

/* A literal word: true, false or null. */
static json_t *literal(parser *s, const char *word, json_t *(*make)(void))
{
    return skip_literal(s, word) == 0 ? make() : NULL;
}

static json_t *value(parser *s, unsigned mask, int level)
{
    skip_ws(s);
    if (s->p >= s->end)
        return fail(s, s->p, "a value expected, the text ended");
    switch (*s->p) {
    case '{':
    case '[': {
        if (++s->depth > DRV_JSON_MAX_DEPTH)
            return fail(s, s->p, "maximum parsing depth reached");
        json_t *v = *s->p == '{' ? object(s, mask, level) : array(s);
        s->depth--;
        return v;
    }
    case '"':
        return string(s);
    case 't':
        return literal(s, "true", json_true);
    case 'f':
        return literal(s, "false", json_false);
    case 'n':
        return literal(s, "null", json_null);
    default:
        return number(s);
    }
}

/* ---- skipped members: checked as value() checks them, nothing built ------------------------ */

/* A string at s->p: its bytes and escapes checked. 0 or -1. */
static int skip_string(parser *s)
{
    const char *b, *q;
    bool escaped;
    if (scan_string(s, &b, &q, &escaped) != 0)
        return -1;
    return escaped && unescape(s, b, q, NULL) < 0 ? -1 : 0;
}

/* The members or elements of an object or array at s->p, to its closing bracket. 0 or -1. */
static int skip_container(parser *s)
{
    bool obj = *s->p == '{';
    char close = obj ? '}' : ']';
    if (opened_empty(s, close))
        return 0;
    for (;;) {
        if (obj) {
            skip_ws(s);
            if (s->p >= s->end || *s->p != '"')
                return fail(s, s->p, "a string expected as an object key"), -1;
            if (skip_string(s) != 0)
                return -1;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':')
                return fail(s, s->p, "':' expected after an object key"), -1;
            s->p++;
        }
        if (skip_value(s) != 0)
            return -1;
        int more = after_element(s, close);
        if (more <= 0)
            return more;
    }
}

static int skip_value(parser *s)
{
    skip_ws(s);
    if (s->p >= s->end)
        return fail(s, s->p, "a value expected, the text ended"), -1;
    switch (*s->p) {
    case '{':
    case '[': {
        if (++s->depth > DRV_JSON_MAX_DEPTH)
            return fail(s, s->p, "maximum parsing depth reached"), -1;
        int rc = skip_container(s);
        s->depth--;
        return rc;
    }
    case '"':
        return skip_string(s);
    case 't':
        return skip_literal(s, "true");
    case 'f':
        return skip_literal(s, "false");
    case 'n':
        return skip_literal(s, "null");
    default: { /* (a number is converted: jansson refuses those out of range) */
        bool real;
        json_int_t i;
        double r;
        return number_scan(s, &real, &i, &r);
    }
    }
}

/* paths (and root) split into s's keys; false when beyond SKIP_PATHS or SKIP_KEYS. */
static bool skipset_init(skipset *k, const char *const *paths, const char *root)
{
    k->n = 0;
    for (; paths && *paths; paths++) {
        if (k->n == SKIP_PATHS)
            return false;
        int i = k->n++, j = 0;
        if (root) {
            k->key[i][0] = root;
            k->klen[i][0] = strlen(root);
            j = 1;
        }
        for (const char *p = *paths;; j++) {
            size_t len = strcspn(p, ".");
            if (j == SKIP_KEYS)
                return false;
            k->key[i][j] = p;
            k->klen[i][j] = len;
            if (!p[len])
                break;
            p += len + 1;
        }
        k->keys[i] = j + 1;
    }
    return true;
}

json_t *drv_json_loadb(const char *buf, size_t n, json_error_t *err)
{
    return drv_json_loadb_skip(buf, n, NULL, NULL, err);
}

json_t *drv_json_loadb_skip(const char *buf, size_t n, const char *const *paths, const char *root,
                            json_error_t *err)
{
    skipset k;
    parser s = {.p = buf, .begin = buf, .end = buf + n, .err = err};
    if (paths && !skipset_init(&k, paths, root))
        return fail(&s, buf, "too many skip paths or keys in one"); /* (a caller's bug) */
    s.skip = paths && k.n ? &k : NULL;
    skip_ws(&s);
    if (s.p >= s.end || (*s.p != '{' && *s.p != '['))
        return fail(&s, s.p, "'[' or '{' expected");
    json_t *v = value(&s, s.skip ? (1u << k.n) - 1 : 0, 0);
    if (!v)
        return NULL;
    skip_ws(&s);
    if (s.p < s.end) {
        json_decref(v);
        return fail(&s, s.p, "end of text expected after the value");
    }
    return v;
}

/* ---- documents (json.h): the same grammar, nodes in an array, strings in one buffer -------- */

static int32_t dvalue(parser *s, unsigned mask, int level);

/* A new node of type at the end of the document, or -1 (err set). */
static int32_t new_node(parser *s, uint8_t type)
{
    drv_jdoc *doc = s->doc;
    if (doc->n == doc->cap && drv_grow(&doc->v, sizeof *doc->v, &doc->cap, doc->n + 1) != 0)
        return fail(s, s->p, "out of memory"), -1;
    /* (no key until dcontainer gives it one: the top value's stays NULL, and a document
     * without strings, whose text is NULL, makes no pointer from it) */
    doc->v[doc->n] = (drv_jnode){.type = type, .koff = UINT32_MAX, .child = -1, .next = -1};
    return doc->n++;
}

/* The string at s->p copied into the text, unescaped and terminated: *off where, *len its
 * bytes. The text grows as needed (a string of k bytes between quotes takes at most k + 1), so
 * what is in it is known by offset until the parse ends. 0, or -1 (err set). */
static int dstring(parser *s, uint32_t *off, uint32_t *len)
{
    const char *b, *q;
    bool escaped;
    if (scan_string(s, &b, &q, &escaped) != 0)
        return -1;
    drv_jdoc *doc = s->doc;
    size_t need = s->tlen + (size_t)(q - b) + 1;
    if (need > doc->tcap) {
        size_t cap = doc->tcap ? doc->tcap * 2 : 1024;
        cap = cap < need ? need : cap;
        char *t = drv_realloc(doc->text, cap);
        if (!t)
            return fail(s, b, "out of memory"), -1;
        doc->text = t;
        doc->tcap = cap;
    }
    char *o = doc->text + s->tlen;
    long n = (long)(q - b);
    if (!escaped)
        memcpy(o, b, (size_t)n);
    else if ((n = unescape(s, b, q, o)) < 0)
        return -1;
    o[n] = 0;
    *off = (uint32_t)s->tlen;
    *len = (uint32_t)n;
    s->tlen += (size_t)n + 1;
    return 0;
}

/* The members (obj) or elements of the container at s->p, linked under node c. 0 or -1. */
static int dcontainer(parser *s, int32_t c, bool obj, unsigned mask, int level)
{
    char close = obj ? '}' : ']';
    int32_t last = -1;
    if (opened_empty(s, close))
        return 0;
    for (;;) {
        uint32_t koff = 0, klen = 0;
        unsigned next = 0;
        bool whole = false;
        if (obj) {
            skip_ws(s);
            if (s->p >= s->end || *s->p != '"')
                return fail(s, s->p, "a string expected as an object key"), -1;
            if (dstring(s, &koff, &klen) != 0)
                return -1;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':')
                return fail(s, s->p, "':' expected after an object key"), -1;
            s->p++;
            next = mask ? skip_next(s, mask, level, s->doc->text + koff, klen, &whole) : 0;
        }
        if (whole) {
            if (skip_value(s) != 0)
                return -1;
        } else {
            int32_t v = dvalue(s, next, level + 1);
            if (v < 0)
                return -1;
            drv_jnode *x = s->doc->v; /* (not before: dvalue may move the nodes) */
            x[v].koff = obj ? koff : UINT32_MAX;
            x[v].klen = klen;
            if (last < 0)
                x[c].child = v;
            else
                x[last].next = v;
            last = v;
            x[c].len++;
        }
        int more = after_element(s, close);
        if (more <= 0)
            return more;
    }
}

/* The value at s->p as a node (and its children after it), or -1. */
static int32_t dvalue(parser *s, unsigned mask, int level)
{
    skip_ws(s);
    if (s->p >= s->end)
        return fail(s, s->p, "a value expected, the text ended"), -1;
    int32_t v;
    switch (*s->p) {
    case '{':
    case '[': {
        bool obj = *s->p == '{';
        if (++s->depth > DRV_JSON_MAX_DEPTH)
            return fail(s, s->p, "maximum parsing depth reached"), -1;
        if ((v = new_node(s, obj ? DRV_JOBJECT : DRV_JARRAY)) < 0 ||
            dcontainer(s, v, obj, obj ? mask : 0, level) != 0) /* (paths go through objects) */
            return -1;
        s->depth--;
        return v;
    }
    case '"': {
        uint32_t off, len;
        if (dstring(s, &off, &len) != 0 || (v = new_node(s, DRV_JSTRING)) < 0)
            return -1;
        s->doc->v[v].soff = off;
        s->doc->v[v].len = len;
        return v;
    }
    case 't':
        return skip_literal(s, "true") != 0 ? -1 : new_node(s, DRV_JTRUE);
    case 'f':
        return skip_literal(s, "false") != 0 ? -1 : new_node(s, DRV_JFALSE);
    case 'n':
        return skip_literal(s, "null") != 0 ? -1 : new_node(s, DRV_JNULL);
    default: {
        bool real;
        json_int_t i = 0;
        double r = 0;
        if (number_scan(s, &real, &i, &r) != 0 ||
            (v = new_node(s, real ? DRV_JREAL : DRV_JINT)) < 0)
            return -1;
        if (real)
            s->doc->v[v].r = r;
        else
            s->doc->v[v].i = i;
        return v;
    }
    }
}

void drv_jdoc_init(drv_jdoc *doc)
{
    memset(doc, 0, sizeof *doc);
}

void drv_jdoc_fini(drv_jdoc *doc)
{
    if (!doc)
        return;
    drv_free(doc->v);
    drv_free(doc->text);
    drv_jdoc_init(doc);
}

/* drv_jdoc_parse and drv_jdoc_parse_one: one value parsed from buf, *used the bytes it took
 * (with whole: all n but whitespace, else an error). */
static int parse(drv_jdoc *doc, const char *buf, size_t n, const char *const *paths,
                 const char *root, bool whole, size_t *used, json_error_t *err)
{
    skipset k;
    parser s = {.p = buf, .begin = buf, .end = buf + n, .err = err, .doc = doc};
    doc->n = 0;
    if (n >= INT32_MAX)
        return fail(&s, buf, "a text longer than 2 GB"), -1; /* (node indexes are int32_t) */
    if (paths && !skipset_init(&k, paths, root))
        return fail(&s, buf, "too many skip paths or keys in one"), -1;
    s.skip = paths && k.n ? &k : NULL;
    skip_ws(&s);
    if (s.p >= s.end || (*s.p != '{' && *s.p != '['))
        return fail(&s, s.p, "'[' or '{' expected"), -1;
    if (dvalue(&s, s.skip ? (1u << k.n) - 1 : 0, 0) < 0)
        return -1;
    for (int32_t i = 0; i < doc->n; i++) { /* (the text moves no more: offsets to pointers) */
        drv_jnode *x = &doc->v[i];
        x->key = x->koff != UINT32_MAX ? doc->text + x->koff : NULL;
        x->str = x->type == DRV_JSTRING ? doc->text + x->soff : NULL;
    }
    *used = (size_t)(s.p - buf);
    skip_ws(&s);
    if (whole && s.p < s.end)
        return fail(&s, s.p, "end of text expected after the value"), -1;
    return 0;
}

int drv_jdoc_parse(drv_jdoc *doc, const char *buf, size_t n, const char *const *paths,
                   const char *root, json_error_t *err)
{
    size_t used;
    return parse(doc, buf, n, paths, root, true, &used, err);
}

int drv_jdoc_parse_one(drv_jdoc *doc, const char *buf, size_t n, const char *const *paths,
                       size_t *used, json_error_t *err)
{
    return parse(doc, buf, n, paths, NULL, false, used, err);
}

char *drv_json_dump(const json_t *v, size_t flags)
{
    char *s = json_dumps(v, flags);
    char *out = s ? drv_strdup(s) : NULL;
    free(s);
    return out;
}
