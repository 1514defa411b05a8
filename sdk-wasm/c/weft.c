/*
 * weft.c - the C guest SDK of weft ABI v1 (docs/abi.md); see weft.h.
 *
 * Sections: host imports, values, encoder, decoder, registry and guest
 * exports, call dispatch and errors, host services, workflows.
 */
#define _POSIX_C_SOURCE 200809L

#include "weft.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ----------------------------------------------------------------------
 * Host imports (docs/abi.md, "Host imports")
 * -------------------------------------------------------------------- */

#define WEFT_IMPORT(mod, name) __attribute__((import_module(mod), import_name(name)))
#define WEFT_EXPORT(name) __attribute__((export_name(name)))

WEFT_IMPORT("weft:env/v1", "log") void weft__log(int32_t level, uint64_t msg);
WEFT_IMPORT("weft:env/v1", "set_output") void weft__set_output(uint64_t frame);
WEFT_IMPORT("weft:env/v1", "set_error") void weft__set_error(uint64_t frame);
WEFT_IMPORT("weft:env/v1", "blob_read") void weft__blob_read(uint64_t dst);
WEFT_IMPORT("weft:activity/v1", "checkpoint") void weft__checkpoint(uint64_t frame);
WEFT_IMPORT("weft:activity/v1", "last_checkpoint") int64_t weft__last_checkpoint(void);
WEFT_IMPORT("weft:activity/v1", "cancelled") int32_t weft__cancelled(void);
WEFT_IMPORT("weft:activity/v1", "heartbeat") int32_t weft__heartbeat(void);
WEFT_IMPORT("weft:activity/v1", "progress") int32_t weft__progress(int64_t done, int64_t total, uint64_t msg);
WEFT_IMPORT("weft:workflow/v1", "schedule_activity")
int64_t weft__schedule_activity(uint64_t module, uint64_t function, uint64_t input, uint64_t options);
WEFT_IMPORT("weft:workflow/v1", "start_timer") int64_t weft__start_timer(int64_t duration_ms);
WEFT_IMPORT("weft:workflow/v1", "wait_signal") int64_t weft__wait_signal(uint64_t name, int64_t timeout_ms);
WEFT_IMPORT("weft:workflow/v1", "await") int32_t weft__await(uint64_t ids, int32_t mode);
WEFT_IMPORT("weft:workflow/v1", "future_result") int64_t weft__future_result(int64_t id);
WEFT_IMPORT("weft:workflow/v1", "now") int64_t weft__now(void);
WEFT_IMPORT("weft:workflow/v1", "random") void weft__random(uint64_t dst);
WEFT_IMPORT("weft:workflow/v1", "query_request") int64_t weft__query_request(void);
WEFT_IMPORT("weft:workflow/v1", "continue_as_new") void weft__continue_as_new(uint64_t input);
WEFT_IMPORT("weft:workflow/v1", "history_length") int64_t weft__history_length(void);
WEFT_IMPORT("weft:workflow/v1", "history_size") int64_t weft__history_size(void);
WEFT_IMPORT("weft:workflow/v1", "watch_cancel") int64_t weft__watch_cancel(void);

/* pack packs a guest pointer and a length: ptr << 32 | n
 * (docs/abi.md, "Pointers and lengths"). */
static uint64_t pack(const void *p, size_t n) {
    if (n == 0) return 0;
    return (uint64_t)(uint32_t)(uintptr_t)p << 32 | (uint32_t)n;
}

/* Out of memory traps; the host reports it as memory_limit. */
static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) __builtin_trap();
    return p;
}

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) __builtin_trap();
    return p;
}

static char *dupn(const char *s, size_t n) {
    char *d = xmalloc(n + 1);
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* utf8_valid accepts exactly what Go's utf8.Valid accepts: no overlong
 * forms, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint8_t lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) need = 1;
        else if (c == 0xe0) need = 2, lo = 0xa0;
        else if (c == 0xed) need = 2, hi = 0x9f;
        else if (c >= 0xe1 && c <= 0xef) need = 2;
        else if (c == 0xf0) need = 3, lo = 0x90;
        else if (c == 0xf4) need = 3, hi = 0x8f;
        else if (c >= 0xf1 && c <= 0xf3) need = 3;
        else return false;
        if (n - i - 1 < need || s[i + 1] < lo || s[i + 1] > hi) return false;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xc0) != 0x80) return false;
        i += need + 1;
    }
    return true;
}

/* ----------------------------------------------------------------------
 * Values
 * -------------------------------------------------------------------- */

typedef struct entry {
    char *key;
    size_t key_len;
    weft_value *value;
} entry;

struct weft_value {
    weft_kind kind;
    union {
        bool b;
        int64_t l;
        double d;
        struct { uint8_t *p; size_t n; } s; /* bytes, string (NUL-terminated) */
        struct { weft_value **items; size_t n, cap; } list;
        struct { entry *e; size_t n, cap; } map;
    } u;
};

static weft_value *node(weft_kind k) {
    weft_value *v = xmalloc(sizeof *v);
    memset(v, 0, sizeof *v);
    v->kind = k;
    return v;
}

weft_value *weft_null(void) { return node(WEFT_KIND_NULL); }
weft_value *weft_bool(bool b) { weft_value *v = node(WEFT_KIND_BOOL); v->u.b = b; return v; }
weft_value *weft_long(int64_t i) { weft_value *v = node(WEFT_KIND_LONG); v->u.l = i; return v; }
weft_value *weft_double(double d) { weft_value *v = node(WEFT_KIND_DOUBLE); v->u.d = d; return v; }
weft_value *weft_list(void) { return node(WEFT_KIND_LIST); }
weft_value *weft_map(void) { return node(WEFT_KIND_MAP); }

static weft_value *blob(weft_kind k, const void *p, size_t n) {
    weft_value *v = node(k);
    v->u.s.p = (uint8_t *)dupn(p, n);
    v->u.s.n = n;
    return v;
}

weft_value *weft_bytes(const void *p, size_t n) { return blob(WEFT_KIND_BYTES, p, n); }
weft_value *weft_string(const char *s) { return blob(WEFT_KIND_STRING, s, s ? strlen(s) : 0); }
weft_value *weft_string_n(const char *s, size_t n) { return blob(WEFT_KIND_STRING, s, n); }

static void list_reserve(weft_value *l, size_t extra) {
    if (l->u.list.cap - l->u.list.n >= extra) return;
    size_t c = l->u.list.cap ? l->u.list.cap * 2 : 4;
    if (c < l->u.list.n + extra) c = l->u.list.n + extra;
    l->u.list.items = xrealloc(l->u.list.items, c * sizeof *l->u.list.items);
    l->u.list.cap = c;
}

static void map_reserve(weft_value *m, size_t extra) {
    if (m->u.map.cap - m->u.map.n >= extra) return;
    size_t c = m->u.map.cap ? m->u.map.cap * 2 : 4;
    if (c < m->u.map.n + extra) c = m->u.map.n + extra;
    m->u.map.e = xrealloc(m->u.map.e, c * sizeof *m->u.map.e);
    m->u.map.cap = c;
}

weft_value *weft_list_push(weft_value *list, weft_value *item) {
    if (!item) item = weft_null();
    if (!list || list->kind != WEFT_KIND_LIST) {
        weft_value_free(item);
        return list;
    }
    list_reserve(list, 1);
    list->u.list.items[list->u.list.n++] = item;
    return list;
}

/* map_append adds an entry without looking for an existing key, as the
 * decoder does: the wire order and any repeated key are kept. */
static void map_append(weft_value *m, char *key, size_t key_len, weft_value *value) {
    map_reserve(m, 1);
    m->u.map.e[m->u.map.n++] = (entry){key, key_len, value};
}

weft_value *weft_map_put_n(weft_value *map, const char *key, size_t key_len, weft_value *value) {
    if (!value) value = weft_null();
    if (!map || map->kind != WEFT_KIND_MAP) {
        weft_value_free(value);
        return map;
    }
    for (size_t i = 0; i < map->u.map.n; i++) {
        entry *e = &map->u.map.e[i];
        if (e->key_len == key_len && memcmp(e->key, key, key_len) == 0) {
            weft_value_free(e->value);
            e->value = value;
            return map;
        }
    }
    map_append(map, dupn(key, key_len), key_len, value);
    return map;
}

weft_value *weft_map_put(weft_value *map, const char *key, weft_value *value) {
    return weft_map_put_n(map, key, key ? strlen(key) : 0, value);
}

void weft_value_free(weft_value *v) {
    if (!v) return;
    switch (v->kind) {
    case WEFT_KIND_BYTES:
    case WEFT_KIND_STRING:
        free(v->u.s.p);
        break;
    case WEFT_KIND_LIST:
        for (size_t i = 0; i < v->u.list.n; i++) weft_value_free(v->u.list.items[i]);
        free(v->u.list.items);
        break;
    case WEFT_KIND_MAP:
        for (size_t i = 0; i < v->u.map.n; i++) {
            free(v->u.map.e[i].key);
            weft_value_free(v->u.map.e[i].value);
        }
        free(v->u.map.e);
        break;
    default:
        break;
    }
    free(v);
}

weft_value *weft_value_clone(const weft_value *v) {
    if (!v) return weft_null();
    weft_value *c;
    switch (v->kind) {
    case WEFT_KIND_BYTES:
    case WEFT_KIND_STRING:
        return blob(v->kind, v->u.s.p, v->u.s.n);
    case WEFT_KIND_LIST:
        c = weft_list();
        list_reserve(c, v->u.list.n);
        for (size_t i = 0; i < v->u.list.n; i++) c->u.list.items[c->u.list.n++] = weft_value_clone(v->u.list.items[i]);
        return c;
    case WEFT_KIND_MAP:
        c = weft_map();
        map_reserve(c, v->u.map.n);
        for (size_t i = 0; i < v->u.map.n; i++) {
            const entry *e = &v->u.map.e[i];
            map_append(c, dupn(e->key, e->key_len), e->key_len, weft_value_clone(e->value));
        }
        return c;
    default:
        c = node(v->kind);
        c->u = v->u;
        return c;
    }
}

weft_kind weft_kind_of(const weft_value *v) { return v ? v->kind : WEFT_KIND_NULL; }

const char *weft_kind_name(weft_kind k) {
    static const char *const names[] = {"null", "boolean", "long", "double", "bytes", "string", "list", "map"};
    return (unsigned)k < 8 ? names[k] : "invalid";
}

bool weft_is_null(const weft_value *v) { return weft_kind_of(v) == WEFT_KIND_NULL; }

bool weft_as_bool(const weft_value *v, bool *out) {
    if (weft_kind_of(v) != WEFT_KIND_BOOL) return false;
    *out = v->u.b;
    return true;
}

bool weft_as_long(const weft_value *v, int64_t *out) {
    if (weft_kind_of(v) != WEFT_KIND_LONG) return false;
    *out = v->u.l;
    return true;
}

bool weft_as_double(const weft_value *v, double *out) {
    if (weft_kind_of(v) != WEFT_KIND_DOUBLE) return false;
    *out = v->u.d;
    return true;
}

bool weft_as_bytes(const weft_value *v, const uint8_t **p, size_t *n) {
    if (weft_kind_of(v) != WEFT_KIND_BYTES) return false;
    *p = v->u.s.p;
    *n = v->u.s.n;
    return true;
}

bool weft_as_string(const weft_value *v, const char **s, size_t *n) {
    if (weft_kind_of(v) != WEFT_KIND_STRING) return false;
    *s = (const char *)v->u.s.p;
    if (n) *n = v->u.s.n;
    return true;
}

size_t weft_len(const weft_value *v) {
    switch (weft_kind_of(v)) {
    case WEFT_KIND_LIST: return v->u.list.n;
    case WEFT_KIND_MAP: return v->u.map.n;
    default: return 0;
    }
}

const weft_value *weft_list_at(const weft_value *v, size_t i) {
    return weft_kind_of(v) == WEFT_KIND_LIST && i < v->u.list.n ? v->u.list.items[i] : NULL;
}

const char *weft_map_key_at(const weft_value *v, size_t i, size_t *key_len) {
    if (weft_kind_of(v) != WEFT_KIND_MAP || i >= v->u.map.n) return NULL;
    if (key_len) *key_len = v->u.map.e[i].key_len;
    return v->u.map.e[i].key;
}

const weft_value *weft_map_value_at(const weft_value *v, size_t i) {
    return weft_kind_of(v) == WEFT_KIND_MAP && i < v->u.map.n ? v->u.map.e[i].value : NULL;
}

const weft_value *weft_map_get_n(const weft_value *v, const char *key, size_t key_len) {
    if (weft_kind_of(v) != WEFT_KIND_MAP) return NULL;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const entry *e = &v->u.map.e[i];
        if (e->key_len == key_len && memcmp(e->key, key, key_len) == 0) return e->value;
    }
    return NULL;
}

const weft_value *weft_map_get(const weft_value *v, const char *key) {
    return weft_map_get_n(v, key, strlen(key));
}

/* ----------------------------------------------------------------------
 * Codec messages and buffers
 * -------------------------------------------------------------------- */

static char msg[256];
static size_t msg_len;

/* The message helpers are kept out of line: they run only on failures,
 * and inlined they would triple the size of the decoder. */
#define COLD __attribute__((noinline, cold))

const char *weft_codec_message(void) { return msg; }

const char *weft_code_name(weft_code c) {
    switch (c) {
    case WEFT_OK: return "ok";
    case WEFT_INVALID_PAYLOAD_FRAMING: return "invalid_payload_framing";
    case WEFT_UNSUPPORTED_PAYLOAD_SCHEMA: return "unsupported_payload_schema";
    case WEFT_INVALID_MAP_KEY: return "invalid_map_key";
    case WEFT_NON_FINITE_FLOAT: return "non_finite_float";
    case WEFT_PAYLOAD_LIMIT: return "payload_limit_exceeded";
    }
    return "unknown";
}

COLD static void m_str(const char *s) {
    while (*s && msg_len < sizeof msg - 1) msg[msg_len++] = *s++;
    msg[msg_len] = 0;
}

COLD static void m_num(int64_t n) {
    char d[24];
    int i = 0;
    uint64_t u = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
    do d[i++] = (char)('0' + u % 10); while ((u /= 10) != 0);
    if (n < 0) d[i++] = '-';
    char s[24];
    for (int k = 0; k < i; k++) s[k] = d[i - 1 - k];
    s[i] = 0;
    m_str(s);
}

COLD static void m_hex(const uint8_t *p, size_t n) {
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        char s[3] = {hex[p[i] >> 4], hex[p[i] & 15], 0};
        m_str(s);
    }
}

/* fail starts the message of a failure with code c and text s. */
COLD static weft_code fail(weft_code c, const char *s) {
    msg_len = 0;
    m_str(weft_code_name(c));
    m_str(": ");
    m_str(s);
    return c;
}

void weft_buf_free(weft_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static void buf_reserve(weft_buf *b, size_t extra) {
    if (b->cap - b->len >= extra) return;
    size_t c = b->cap ? b->cap : 64;
    while (c - b->len < extra) c *= 2;
    b->data = xrealloc(b->data, c);
    b->cap = c;
}

static void buf_put(weft_buf *b, const void *p, size_t n) {
    buf_reserve(b, n);
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void buf_byte(weft_buf *b, uint8_t c) { buf_put(b, &c, 1); }

/* buf_long writes the zig-zag varint of i. */
static void buf_long(weft_buf *b, int64_t i) {
    uint64_t u = (uint64_t)i << 1 ^ (uint64_t)(i >> 63);
    uint8_t d[10];
    size_t n = 0;
    while (u >= 0x80) {
        d[n++] = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    d[n++] = (uint8_t)u;
    buf_put(b, d, n);
}

/* ----------------------------------------------------------------------
 * Encoder (Avro Value protocol: wire format)
 * -------------------------------------------------------------------- */

static const uint8_t header[WEFT_HEADER_SIZE] = {0xc3, 0x01, 0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37};

static weft_code encode(weft_buf *b, const weft_value *v, int depth) {
    weft_kind k = weft_kind_of(v);
    uint64_t bits;
    weft_code c;
    switch (k) {
    case WEFT_KIND_NULL:
        buf_byte(b, 0);
        return WEFT_OK;
    case WEFT_KIND_BOOL:
        buf_byte(b, 2);
        buf_byte(b, v->u.b ? 1 : 0);
        return WEFT_OK;
    case WEFT_KIND_LONG:
        buf_byte(b, 4);
        buf_long(b, v->u.l);
        return WEFT_OK;
    case WEFT_KIND_DOUBLE:
        memcpy(&bits, &v->u.d, 8);
        if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) return fail(WEFT_NON_FINITE_FLOAT, "double is not finite");
        buf_byte(b, 6);
        buf_put(b, &bits, 8); /* wasm is little-endian */
        return WEFT_OK;
    case WEFT_KIND_BYTES:
    case WEFT_KIND_STRING:
        if (k == WEFT_KIND_STRING && !utf8_valid(v->u.s.p, v->u.s.n)) return fail(WEFT_INVALID_PAYLOAD_FRAMING, "string is not valid UTF-8");
        buf_byte(b, (uint8_t)(2 * k));
        buf_long(b, (int64_t)v->u.s.n);
        buf_put(b, v->u.s.p, v->u.s.n);
        return WEFT_OK;
    case WEFT_KIND_LIST:
    case WEFT_KIND_MAP:
        if (depth >= WEFT_MAX_DEPTH) {
            fail(WEFT_PAYLOAD_LIMIT, "value nests lists and maps deeper than the limit of ");
            m_num(WEFT_MAX_DEPTH);
            m_str(" levels");
            return WEFT_PAYLOAD_LIMIT;
        }
        buf_byte(b, (uint8_t)(2 * k));
        if (weft_len(v) > 0) buf_long(b, (int64_t)weft_len(v));
        if (k == WEFT_KIND_LIST) {
            for (size_t i = 0; i < v->u.list.n; i++)
                if ((c = encode(b, v->u.list.items[i], depth + 1)) != WEFT_OK) return c;
        } else {
            for (size_t i = 0; i < v->u.map.n; i++) {
                const entry *e = &v->u.map.e[i];
                if (!utf8_valid((const uint8_t *)e->key, e->key_len)) return fail(WEFT_INVALID_MAP_KEY, "map key is not valid UTF-8");
                buf_long(b, (int64_t)e->key_len);
                buf_put(b, e->key, e->key_len);
                if ((c = encode(b, e->value, depth + 1)) != WEFT_OK) return c;
            }
        }
        buf_byte(b, 0);
        return WEFT_OK;
    }
    return fail(WEFT_INVALID_PAYLOAD_FRAMING, "value has no union branch");
}

weft_code weft_append_datum(weft_buf *dst, const weft_value *v) {
    size_t n = dst->len;
    weft_code c = encode(dst, v, 0);
    if (c != WEFT_OK) dst->len = n;
    return c;
}

weft_code weft_append_frame(weft_buf *dst, const weft_value *v) {
    size_t n = dst->len;
    buf_put(dst, header, WEFT_HEADER_SIZE);
    weft_code c = encode(dst, v, 0);
    if (c != WEFT_OK) dst->len = n;
    return c;
}

/* ----------------------------------------------------------------------
 * Decoder: scan checks everything without allocating, build then trusts
 * the bytes (Avro Value protocol: wire format; the Go codec's rules)
 * -------------------------------------------------------------------- */

typedef struct reader {
    const uint8_t *d;
    size_t n, pos;
} reader;

#define NO_END ((size_t)-1)

COLD static weft_code truncated(const char *what, size_t pos) {
    fail(WEFT_INVALID_PAYLOAD_FRAMING, "truncated datum: ");
    m_str(what);
    m_str(" at datum offset ");
    m_num((int64_t)pos);
    m_str(" runs past the end");
    return WEFT_INVALID_PAYLOAD_FRAMING;
}

/* read_long reads a zig-zag varint of at most 10 bytes within int64. */
static weft_code read_long(reader *r, const char *what, int64_t *out) {
    size_t start = r->pos;
    uint64_t u = 0;
    for (int i = 0; i < 10; i++) {
        if (r->pos >= r->n) return truncated(what, start);
        uint8_t b = r->d[r->pos++];
        if (i == 9 && b > 1) {
            fail(WEFT_INVALID_PAYLOAD_FRAMING, what);
            m_str(" at datum offset ");
            m_num((int64_t)start);
            m_str(" is longer than 10 bytes or overflows int64");
            return WEFT_INVALID_PAYLOAD_FRAMING;
        }
        u |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) {
            *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
            return WEFT_OK;
        }
    }
    return truncated(what, start); /* unreachable: the tenth byte ends it */
}

/* read_len reads the length of bytes, a string or a key, and checks that
 * that many bytes remain. */
static weft_code read_len(reader *r, const char *what, size_t *out) {
    size_t start = r->pos;
    int64_t n;
    weft_code c = read_long(r, what, &n);
    if (c != WEFT_OK) return c;
    if (n < 0 || (uint64_t)n > r->n - r->pos) {
        fail(WEFT_INVALID_PAYLOAD_FRAMING, n < 0 ? "negative " : "truncated datum: ");
        m_str(what);
        m_str(" length at datum offset ");
        m_num((int64_t)start);
        if (n >= 0) {
            m_str(" claims ");
            m_num(n);
            m_str(" bytes, ");
            m_num((int64_t)(r->n - r->pos));
            m_str(" remain");
        }
        return WEFT_INVALID_PAYLOAD_FRAMING;
    }
    *out = (size_t)n;
    return WEFT_OK;
}

/* read_block reads a block header of a list or map: the count (0 ends the
 * container) and, for a negative count, the block's size in bytes. The
 * count must fit the bytes that remain: every item takes at least one
 * byte, every map entry at least two. */
static weft_code read_block(reader *r, bool is_map, size_t *count, size_t *end) {
    size_t start = r->pos;
    int64_t n;
    weft_code c = read_long(r, "block count", &n);
    if (c != WEFT_OK) return c;
    *count = 0;
    *end = NO_END;
    if (n == 0) return WEFT_OK;
    uint64_t avail = r->n - r->pos;
    if (n < 0) {
        if (n == INT64_MIN) {
            fail(WEFT_INVALID_PAYLOAD_FRAMING, "block count at datum offset ");
            m_num((int64_t)start);
            m_str(" overflows");
            return WEFT_INVALID_PAYLOAD_FRAMING;
        }
        n = -n;
        size_t at = r->pos;
        int64_t size;
        if ((c = read_long(r, "block size", &size)) != WEFT_OK) return c;
        if (size < 0 || (uint64_t)size > r->n - r->pos) {
            fail(WEFT_INVALID_PAYLOAD_FRAMING, "block size ");
            m_num(size);
            m_str(" at datum offset ");
            m_num((int64_t)at);
            m_str(" does not fit the remaining bytes");
            return WEFT_INVALID_PAYLOAD_FRAMING;
        }
        avail = (uint64_t)size;
        *end = r->pos + (size_t)size;
    }
    if ((uint64_t)n > avail / (is_map ? 2 : 1)) {
        fail(WEFT_INVALID_PAYLOAD_FRAMING, "truncated datum: block at datum offset ");
        m_num((int64_t)start);
        m_str(" claims ");
        m_num(n);
        m_str(" items, only ");
        m_num((int64_t)avail);
        m_str(" bytes remain");
        return WEFT_INVALID_PAYLOAD_FRAMING;
    }
    *count = (size_t)n;
    return WEFT_OK;
}

typedef struct level {
    bool is_map;
    size_t remaining; /* items left in the current block */
    size_t end;       /* where the current block must end, or NO_END */
} level;

/* scan walks the datum with an explicit stack of at most WEFT_MAX_DEPTH
 * open containers, so hostile nesting costs no native stack. */
static weft_code scan(const uint8_t *d, size_t n) {
    level stack[WEFT_MAX_DEPTH];
    int sp = 0;
    reader r = {d, n, 0};
    weft_code c;
    for (;;) {
        int64_t idx, l;
        size_t at = r.pos, len;
        uint64_t bits;
        if ((c = read_long(&r, "union index", &idx)) != WEFT_OK) return c;
        switch (idx) {
        case WEFT_KIND_NULL:
            break;
        case WEFT_KIND_BOOL:
            if (r.pos >= n) return truncated("boolean", r.pos);
            if (d[r.pos] > 1) {
                fail(WEFT_INVALID_PAYLOAD_FRAMING, "boolean byte at datum offset ");
                m_num((int64_t)r.pos);
                m_str(" is not 00 or 01");
                return WEFT_INVALID_PAYLOAD_FRAMING;
            }
            r.pos++;
            break;
        case WEFT_KIND_LONG:
            if ((c = read_long(&r, "long", &l)) != WEFT_OK) return c;
            break;
        case WEFT_KIND_DOUBLE:
            if (n - r.pos < 8) return truncated("double", r.pos);
            memcpy(&bits, d + r.pos, 8);
            if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) {
                fail(WEFT_INVALID_PAYLOAD_FRAMING, "double at datum offset ");
                m_num((int64_t)r.pos);
                m_str(" is not finite");
                return WEFT_INVALID_PAYLOAD_FRAMING;
            }
            r.pos += 8;
            break;
        case WEFT_KIND_BYTES:
        case WEFT_KIND_STRING:
            if ((c = read_len(&r, idx == WEFT_KIND_BYTES ? "bytes" : "string", &len)) != WEFT_OK) return c;
            if (idx == WEFT_KIND_STRING && !utf8_valid(d + r.pos, len)) {
                fail(WEFT_INVALID_PAYLOAD_FRAMING, "string at datum offset ");
                m_num((int64_t)r.pos);
                m_str(" is not valid UTF-8");
                return WEFT_INVALID_PAYLOAD_FRAMING;
            }
            r.pos += len;
            break;
        case WEFT_KIND_LIST:
        case WEFT_KIND_MAP:
            if (sp >= WEFT_MAX_DEPTH) {
                fail(WEFT_PAYLOAD_LIMIT, "value nests lists and maps deeper than the limit of ");
                m_num(WEFT_MAX_DEPTH);
                m_str(" levels");
                return WEFT_PAYLOAD_LIMIT;
            }
            stack[sp++] = (level){idx == WEFT_KIND_MAP, 0, NO_END};
            break;
        default:
            fail(WEFT_INVALID_PAYLOAD_FRAMING, "union index ");
            m_num(idx);
            m_str(" at datum offset ");
            m_num((int64_t)at);
            m_str(" is outside 0..7");
            return WEFT_INVALID_PAYLOAD_FRAMING;
        }
        /* Find the next value: the next item of the innermost open
         * container, reading block headers and closing finished ones. */
        for (;;) {
            if (sp == 0) {
                if (r.pos != n) {
                    fail(WEFT_INVALID_PAYLOAD_FRAMING, "");
                    m_num((int64_t)(n - r.pos));
                    m_str(" trailing bytes after the datum at offset ");
                    m_num((int64_t)r.pos);
                    return WEFT_INVALID_PAYLOAD_FRAMING;
                }
                return WEFT_OK;
            }
            level *top = &stack[sp - 1];
            if (top->remaining > 0) break;
            if (top->end != NO_END && r.pos != top->end) {
                fail(WEFT_INVALID_PAYLOAD_FRAMING, "block ends at datum offset ");
                m_num((int64_t)r.pos);
                m_str(", not at its declared end ");
                m_num((int64_t)top->end);
                return WEFT_INVALID_PAYLOAD_FRAMING;
            }
            size_t count, end;
            if ((c = read_block(&r, top->is_map, &count, &end)) != WEFT_OK) return c;
            if (count == 0) {
                sp--;
                continue;
            }
            top->remaining = count;
            top->end = end;
            break;
        }
        level *top = &stack[sp - 1];
        top->remaining--;
        if (top->is_map) {
            if ((c = read_len(&r, "map key", &len)) != WEFT_OK) return c;
            if (!utf8_valid(d + r.pos, len)) {
                fail(WEFT_INVALID_PAYLOAD_FRAMING, "map key at datum offset ");
                m_num((int64_t)r.pos);
                m_str(" is not valid UTF-8");
                return WEFT_INVALID_PAYLOAD_FRAMING;
            }
            r.pos += len;
        }
    }
}

/* build decodes a datum scan accepted; it recurses at most WEFT_MAX_DEPTH
 * levels and every read succeeds. */
static weft_value *build(reader *r) {
    int64_t idx, l;
    size_t len, count, end;
    weft_value *v;
    read_long(r, "union index", &idx);
    switch (idx) {
    case WEFT_KIND_BOOL:
        return weft_bool(r->d[r->pos++] != 0);
    case WEFT_KIND_LONG:
        read_long(r, "long", &l);
        return weft_long(l);
    case WEFT_KIND_DOUBLE:
        v = node(WEFT_KIND_DOUBLE);
        memcpy(&v->u.d, r->d + r->pos, 8);
        r->pos += 8;
        return v;
    case WEFT_KIND_BYTES:
    case WEFT_KIND_STRING:
        read_len(r, "bytes", &len);
        v = blob((weft_kind)idx, r->d + r->pos, len);
        r->pos += len;
        return v;
    case WEFT_KIND_LIST:
        v = weft_list();
        while (read_block(r, false, &count, &end), count > 0) {
            list_reserve(v, count);
            while (count--) v->u.list.items[v->u.list.n++] = build(r);
        }
        return v;
    case WEFT_KIND_MAP:
        v = weft_map();
        while (read_block(r, true, &count, &end), count > 0) {
            map_reserve(v, count);
            while (count--) {
                read_len(r, "map key", &len);
                char *key = dupn((const char *)r->d + r->pos, len);
                r->pos += len;
                map_append(v, key, len, build(r));
            }
        }
        return v;
    default:
        return weft_null();
    }
}

COLD static weft_code size_limit(size_t n) {
    fail(WEFT_PAYLOAD_LIMIT, "payload of ");
    m_num((int64_t)n);
    m_str(" bytes exceeds the limit of ");
    m_num(WEFT_MAX_FRAME_SIZE);
    m_str(" bytes");
    return WEFT_PAYLOAD_LIMIT;
}

weft_code weft_decode_datum(const void *datum, size_t n, weft_value **out) {
    *out = NULL;
    if (n > WEFT_MAX_FRAME_SIZE) return size_limit(n);
    weft_code c = scan(datum, n);
    if (c != WEFT_OK) return c;
    reader r = {datum, n, 0};
    *out = build(&r);
    return WEFT_OK;
}

weft_code weft_decode_frame(const void *frame, size_t n, weft_value **out) {
    const uint8_t *f = frame;
    *out = NULL;
    if (n < WEFT_HEADER_SIZE || f[0] != header[0] || f[1] != header[1]) {
        fail(WEFT_INVALID_PAYLOAD_FRAMING, "expected Avro single-object magic c301");
        if (n < WEFT_HEADER_SIZE) {
            m_str(" and a 10-byte header, got ");
            m_num((int64_t)n);
            m_str(" bytes");
        } else {
            m_str(", got ");
            m_hex(f, 2);
        }
        return WEFT_INVALID_PAYLOAD_FRAMING;
    }
    if (memcmp(f + 2, header + 2, 8) != 0) {
        fail(WEFT_UNSUPPORTED_PAYLOAD_SCHEMA, "unknown CRC-64-AVRO fingerprint ");
        m_hex(f + 2, 8);
        return WEFT_UNSUPPORTED_PAYLOAD_SCHEMA;
    }
    if (n > WEFT_MAX_FRAME_SIZE) return size_limit(n);
    return weft_decode_datum(f + WEFT_HEADER_SIZE, n - WEFT_HEADER_SIZE, out);
}

/* ----------------------------------------------------------------------
 * Registry, manifest and guest exports (docs/abi.md, "Guest exports")
 * -------------------------------------------------------------------- */

typedef struct function {
    char *name;
    size_t name_len;
    bool workflow;
    weft_activity_fn fn;
} function;

static function *registry;
static size_t registry_len;
static weft_buf manifest;
static bool manifest_read;

/* die writes "weft: <a><quoted name><b>" to stderr and exits with status
 * 2; during _initialize the host fails the deploy with that line. */
static _Noreturn void die(const char *a, const char *name, const char *b) {
    const char *parts[] = {"weft: ", a, "\"", name, "\"", b, "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (write(2, parts[i], strlen(parts[i])) < 0) break;
    _Exit(2);
}

static void register_function(const char *name, weft_activity_fn fn, bool workflow) {
    size_t n = name ? strlen(name) : 0;
    if (!name) name = "";
    if (manifest_read) die("register ", name, " after the manifest was read; register in a constructor (WEFT_INIT)");
    if (n == 0 || n > WEFT_MAX_NAME_LEN || !utf8_valid((const uint8_t *)name, n))
        die("invalid function name ", name, " (1 to 256 bytes of UTF-8)");
    if (!fn) die("function ", name, " has a NULL handler");
    if (registry_len >= WEFT_MAX_FUNCTIONS) die("too many functions at ", name, "; the most is 1024");
    for (size_t i = 0; i < registry_len; i++)
        if (registry[i].name_len == n && memcmp(registry[i].name, name, n) == 0) die("function ", name, " registered twice");
    registry = xrealloc(registry, (registry_len + 1) * sizeof *registry);
    registry[registry_len++] = (function){dupn(name, n), n, workflow, fn};
}

void weft_register_activity(const char *name, weft_activity_fn fn) { register_function(name, fn, false); }
void weft_register_workflow(const char *name, weft_workflow_fn fn) { register_function(name, fn, true); }

/* build_manifest encodes {abi_version, functions: [{name, kind}]} in
 * registration order (docs/abi.md, "Manifest"). */
static void build_manifest(void) {
    weft_value *fns = weft_list();
    for (size_t i = 0; i < registry_len; i++) {
        weft_value *f = weft_map();
        weft_map_put(f, "name", weft_string_n(registry[i].name, registry[i].name_len));
        weft_map_put(f, "kind", weft_string(registry[i].workflow ? "workflow" : "activity"));
        weft_list_push(fns, f);
    }
    weft_value *m = weft_map();
    weft_map_put(m, "abi_version", weft_long(WEFT_ABI_VERSION));
    weft_map_put(m, "functions", fns);
    weft_append_frame(&manifest, m); /* names were checked at registration */
    weft_value_free(m);
    manifest_read = true;
}

WEFT_EXPORT("weft_abi_version") int32_t weft__export_abi_version(void) { return WEFT_ABI_VERSION; }

/* weft_alloc: a buffer of size bytes the host may write into; 0 for 0. */
WEFT_EXPORT("weft_alloc") uint32_t weft__export_alloc(uint32_t size) {
    return size == 0 ? 0 : (uint32_t)(uintptr_t)xmalloc(size);
}

/* weft_free: the release of a weft_alloc buffer. */
WEFT_EXPORT("weft_free") void weft__export_free(uint32_t ptr, uint32_t size) {
    (void)size;
    free((void *)(uintptr_t)ptr);
}

WEFT_EXPORT("weft_manifest") uint64_t weft__export_manifest(void) {
    if (!manifest_read) build_manifest();
    return pack(manifest.data, manifest.len);
}

/* ----------------------------------------------------------------------
 * Call dispatch and errors (docs/abi.md, "weft_call", "Error value")
 * -------------------------------------------------------------------- */

static struct {
    bool active;
    const function *fn;
    weft_value *error;
    bool suspended;
    weft_future *futures;
} call;

static weft_buf out;

/* keep_max is the largest output buffer kept between calls. */
#define KEEP_MAX (1u << 20)

const char *weft_function_name(void) { return call.active ? call.fn->name : ""; }

weft_value *weft_error_value(const char *type, const char *message, bool non_retryable, weft_value *details) {
    weft_value *e = weft_map();
    weft_map_put(e, "type", weft_string(type && *type ? type : "error"));
    weft_map_put(e, "message", weft_string(message ? message : ""));
    weft_map_put(e, "non_retryable", weft_bool(non_retryable));
    if (details && !weft_is_null(details)) weft_map_put(e, "details", details);
    else weft_value_free(details);
    return e;
}

weft_value *weft_error(const char *type, const char *message, bool non_retryable, weft_value *details) {
    weft_value *e = weft_error_value(type, message, non_retryable, details);
    if (!call.active) {
        weft_value_free(e);
        return NULL;
    }
    weft_value_free(call.error);
    call.error = e;
    return NULL;
}

static void trim(void) {
    if (out.cap > KEEP_MAX) weft_buf_free(&out);
}

/* send_error hands the error Value e (consumed) to the host. Details that
 * do not encode are dropped; an error whose type or message does not
 * encode becomes a weft.invalid_error. */
static int32_t send_error(weft_value *e) {
    out.len = 0;
    if (weft_append_frame(&out, e) != WEFT_OK) {
        const char *type = "error", *message = "";
        bool nr = false;
        weft_as_string(weft_map_get(e, "type"), &type, NULL);
        weft_as_string(weft_map_get(e, "message"), &message, NULL);
        weft_as_bool(weft_map_get(e, "non_retryable"), &nr);
        weft_buf text = WEFT_BUF_INIT;
        buf_put(&text, message, strlen(message));
        const char *why = " (details dropped: ";
        buf_put(&text, why, strlen(why));
        buf_put(&text, msg, msg_len);
        buf_put(&text, ")", 2); /* with the NUL */
        weft_value *retry = weft_error_value(type, (const char *)text.data, nr, NULL);
        weft_buf_free(&text);
        if (weft_append_frame(&out, retry) != WEFT_OK) {
            weft_value_free(retry);
            retry = weft_error_value("weft.invalid_error", msg, nr, NULL);
            weft_append_frame(&out, retry);
        }
        weft_value_free(retry);
    }
    weft_value_free(e);
    weft__set_error(pack(out.data, out.len));
    trim();
    return WEFT_STATUS_ERROR;
}

static void end_call(void);

/* query_answer is answer_query once a query handler was registered, and
 * NULL before. It is volatile so that the compiler cannot call
 * answer_query directly: a module that never registers a handler then
 * links neither it nor the query_request import. */
static int32_t (*volatile query_answer)(bool *answered);

/* continue_run is send_continue once a workflow asked to continue as new,
 * and NULL before, volatile for the same reason: a module that never
 * continues as new does not import continue_as_new. */
static int32_t (*volatile continue_run)(void);
static weft_value *continue_input;

WEFT_EXPORT("weft_call") int32_t weft__export_call(uint64_t name_packed, uint64_t input_packed) {
    uint64_t mem = (uint64_t)__builtin_wasm_memory_size(0) * 65536;
    uint32_t np = (uint32_t)(name_packed >> 32), nl = (uint32_t)name_packed;
    uint32_t ip = (uint32_t)(input_packed >> 32), il = (uint32_t)input_packed;
    if ((uint64_t)np + nl > mem || (uint64_t)ip + il > mem)
        return send_error(weft_error_value("weft.bad_call", "weft_call arguments are outside the guest's memory", true, NULL));
    const char *name = (const char *)(uintptr_t)np;
    const function *fn = NULL;
    for (size_t i = 0; i < registry_len && !fn; i++)
        if (registry[i].name_len == nl && memcmp(registry[i].name, name, nl) == 0) fn = &registry[i];
    if (!fn) {
        weft_buf text = WEFT_BUF_INIT;
        buf_put(&text, "no function \"", 13);
        buf_put(&text, name, nl);
        buf_put(&text, "\" is registered", 16); /* with the NUL */
        weft_value *e = weft_error_value("weft.function_not_found", (const char *)text.data, true, NULL);
        weft_buf_free(&text);
        return send_error(e);
    }
    weft_value *in;
    if (weft_decode_frame((const void *)(uintptr_t)ip, il, &in) != WEFT_OK)
        return send_error(weft_error_value("weft.invalid_input", msg, true, NULL));

    call.active = true;
    call.fn = fn;
    weft_value *result = fn->fn(in);
    int32_t (*answer)(bool *) = query_answer;
    if (fn->workflow && answer) {
        bool answered = false;
        int32_t status = answer(&answered);
        if (answered) {
            if (result != in) weft_value_free(result);
            weft_value_free(in);
            weft_value_free(continue_input); /* a query never continues */
            continue_input = NULL;
            end_call();
            return status;
        }
    }
    weft_value *err = call.error;
    bool suspended = call.suspended;
    int32_t (*cont)(void) = continue_run;
    if (fn->workflow && cont && continue_input) {
        call.error = NULL;
        end_call();
        if (result != in) weft_value_free(result);
        weft_value_free(in);
        weft_value_free(err);
        if (suspended) {
            weft_value_free(continue_input);
            continue_input = NULL;
            return WEFT_STATUS_SUSPENDED;
        }
        return cont();
    }
    call.error = NULL;
    end_call();
    if (result != in) weft_value_free(in);

    if (suspended) {
        weft_value_free(result);
        weft_value_free(err);
        return WEFT_STATUS_SUSPENDED;
    }
    if (err) {
        weft_value_free(result);
        return send_error(err);
    }
    out.len = 0;
    weft_code c = weft_append_frame(&out, result);
    weft_value_free(result);
    if (c != WEFT_OK) return send_error(weft_error_value("weft.invalid_output", msg, true, NULL));
    weft__set_output(pack(out.data, out.len));
    trim();
    return WEFT_STATUS_OK;
}

/* ----------------------------------------------------------------------
 * Host services
 * -------------------------------------------------------------------- */

void weft_host_log(int32_t level, const void *m, size_t n) { weft__log(level, pack(m, n)); }
void weft_host_set_output(const void *frame, size_t n) { weft__set_output(pack(frame, n)); }
void weft_host_set_error(const void *frame, size_t n) { weft__set_error(pack(frame, n)); }
void weft_host_blob_read(void *dst, size_t n) { weft__blob_read(pack(dst, n)); }
void weft_host_checkpoint(const void *frame, size_t n) { weft__checkpoint(pack(frame, n)); }
int64_t weft_host_last_checkpoint(void) { return weft__last_checkpoint(); }
int32_t weft_host_cancelled(void) { return weft__cancelled(); }
int32_t weft_host_heartbeat(void) { return weft__heartbeat(); }
int32_t weft_host_progress(int64_t done, int64_t total, const void *msg, size_t n) {
    return weft__progress(done, total, pack(msg, n));
}

int64_t weft_host_schedule_activity(const void *module, size_t module_len, const void *function, size_t function_len,
                                    const void *input, size_t input_len, const void *options, size_t options_len) {
    return weft__schedule_activity(pack(module, module_len), pack(function, function_len), pack(input, input_len),
                                   pack(options, options_len));
}

int64_t weft_host_start_timer(int64_t duration_ms) { return weft__start_timer(duration_ms); }
int64_t weft_host_wait_signal(const void *name, size_t n, int64_t timeout_ms) { return weft__wait_signal(pack(name, n), timeout_ms); }
int32_t weft_host_await(const int64_t *ids, size_t n, int32_t mode) { return weft__await(pack(ids, 8 * n), mode); }
int64_t weft_host_future_result(int64_t id) { return weft__future_result(id); }
int64_t weft_host_now(void) { return weft__now(); }
int64_t weft_host_query_request(void) { return weft__query_request(); }
void weft_host_continue_as_new(const void *frame, size_t n) { weft__continue_as_new(pack(frame, n)); }
int64_t weft_host_history_length(void) { return weft__history_length(); }
int64_t weft_host_history_size(void) { return weft__history_size(); }
int64_t weft_host_watch_cancel(void) { return weft__watch_cancel(); }
void weft_host_random(void *dst, size_t n) { weft__random(pack(dst, n)); }

void weft_log_n(weft_level level, const char *m, size_t n) { weft__log((int32_t)level, pack(m, n)); }
void weft_log(weft_level level, const char *m) { weft_log_n(level, m, strlen(m)); }

weft_code weft_checkpoint(const weft_value *v) {
    weft_buf b = WEFT_BUF_INIT;
    weft_code c = weft_append_frame(&b, v);
    if (c == WEFT_OK) weft__checkpoint(pack(b.data, b.len));
    weft_buf_free(&b);
    return c;
}

/* read_blob copies the pending host blob of n bytes. */
static uint8_t *read_blob(size_t n) {
    uint8_t *b = xmalloc(n);
    weft__blob_read(pack(b, n));
    return b;
}

weft_code weft_last_checkpoint(weft_value **v) {
    *v = NULL;
    int64_t n = weft__last_checkpoint();
    if (n < 0) return WEFT_OK;
    uint8_t *b = read_blob((size_t)n);
    weft_code c = weft_decode_frame(b, (size_t)n, v);
    free(b);
    return c;
}

bool weft_cancelled(void) { return weft__cancelled() != 0; }
bool weft_heartbeat(void) { return weft__heartbeat() != 0; }

bool weft_progress(int64_t done, int64_t total, const char *msg) {
    size_t n = msg ? strlen(msg) : 0;
    return weft__progress(done, total, pack(msg, n)) == WEFT_PROGRESS_OK;
}

/* ----------------------------------------------------------------------
 * Workflows (docs/abi.md, "weft:workflow/v1")
 * -------------------------------------------------------------------- */

struct weft_future {
    int64_t id;
    bool done;
    weft_outcome outcome;
    uint8_t *blob;
    size_t blob_len;
    weft_value *early; /* an error before anything was scheduled */
    weft_future *next;
};

static weft_future *new_future(void) {
    weft_future *f = xmalloc(sizeof *f);
    memset(f, 0, sizeof *f);
    f->next = call.futures;
    call.futures = f;
    return f;
}

/* The query handlers of the running workflow call. */
typedef struct query_handler {
    char *name;
    size_t name_len;
    weft_query_fn fn;
    void *data;
} query_handler;

static query_handler queries[WEFT_MAX_QUERY_HANDLERS];
static size_t queries_len;

static void end_call(void) {
    for (size_t i = 0; i < queries_len; i++) free(queries[i].name);
    queries_len = 0;
    while (call.futures) {
        weft_future *f = call.futures;
        call.futures = f->next;
        free(f->blob);
        weft_value_free(f->early);
        free(f);
    }
    call.active = false;
    call.fn = NULL;
    call.suspended = false;
}

bool weft_suspended(void) { return call.suspended; }

/* options_value is the options Value of schedule_activity: only the
 * fields that are set, null when none is (docs/abi.md,
 * "schedule_activity"). */
static weft_value *options_value(const weft_activity_options *o) {
    if (!o || (o->timeout_ms <= 0 && !o->retry && o->schedule_to_start_timeout_ms <= 0 && o->heartbeat_timeout_ms <= 0))
        return weft_null();
    weft_value *m = weft_map();
    if (o->timeout_ms > 0) weft_map_put(m, "timeout_ms", weft_long(o->timeout_ms));
    if (o->schedule_to_start_timeout_ms > 0)
        weft_map_put(m, "schedule_to_start_timeout_ms", weft_long(o->schedule_to_start_timeout_ms));
    if (o->heartbeat_timeout_ms > 0) weft_map_put(m, "heartbeat_timeout_ms", weft_long(o->heartbeat_timeout_ms));
    if (o->retry) {
        const weft_retry_policy *r = o->retry;
        weft_value *rm = weft_map();
        if (r->max_attempts > 0) weft_map_put(rm, "max_attempts", weft_long(r->max_attempts));
        if (r->initial_interval_ms > 0) weft_map_put(rm, "initial_interval_ms", weft_long(r->initial_interval_ms));
        if (r->backoff_coefficient > 0) weft_map_put(rm, "backoff_coefficient", weft_double(r->backoff_coefficient));
        if (r->max_interval_ms > 0) weft_map_put(rm, "max_interval_ms", weft_long(r->max_interval_ms));
        if (r->non_retryable_error_types_len > 0) {
            weft_value *types = weft_list();
            for (size_t i = 0; i < r->non_retryable_error_types_len; i++)
                weft_list_push(types, weft_string(r->non_retryable_error_types[i]));
            weft_map_put(rm, "non_retryable_error_types", types);
        }
        weft_map_put(m, "retry", rm);
    }
    return m;
}

/* schedule sends schedule_activity with the options Value ov (consumed). */
static weft_future *schedule(const char *module, const char *name, const weft_value *input, weft_value *ov) {
    weft_future *f = new_future();
    if (call.suspended) {
        weft_value_free(ov);
        return f;
    }
    weft_buf in = WEFT_BUF_INIT, of = WEFT_BUF_INIT;
    if (weft_append_frame(&in, input) != WEFT_OK || weft_append_frame(&of, ov) != WEFT_OK) {
        f->early = weft_error_value("weft.invalid_input", msg, true, NULL);
    } else {
        if (!module) module = "";
        f->id = weft__schedule_activity(pack(module, strlen(module)), pack(name, strlen(name)), pack(in.data, in.len),
                                        pack(of.data, of.len));
    }
    weft_value_free(ov);
    weft_buf_free(&in);
    weft_buf_free(&of);
    return f;
}

weft_future *weft_execute_activity(const char *name, const weft_value *input, const weft_activity_options *opts) {
    return schedule(opts ? opts->module : NULL, name, input, options_value(opts));
}

weft_future *weft_execute_child_workflow(const char *name, const weft_value *input, const weft_child_workflow_options *opts) {
    weft_activity_options ao = {0};
    if (opts) ao.timeout_ms = opts->timeout_ms, ao.retry = opts->retry;
    weft_value *ov = options_value(&ao);
    if (weft_is_null(ov)) {
        weft_value_free(ov);
        ov = weft_map();
    }
    weft_value *child = weft_map();
    if (opts && opts->workflow_id && *opts->workflow_id) weft_map_put(child, "workflow_id", weft_string(opts->workflow_id));
    if (opts && opts->parent_close_policy && *opts->parent_close_policy)
        weft_map_put(child, "parent_close_policy", weft_string(opts->parent_close_policy));
    weft_map_put(ov, "child_workflow", child);
    return schedule(opts ? opts->module : NULL, name, input, ov);
}

weft_future *weft_start_timer(int64_t ms) {
    weft_future *f = new_future();
    if (!call.suspended) f->id = weft__start_timer(ms < 0 ? 0 : ms);
    return f;
}

weft_future *weft_cancel_future(void) {
    weft_future *f = new_future();
    if (!call.suspended) f->id = weft__watch_cancel();
    return f;
}

weft_future *weft_wait_signal(const char *name, int64_t timeout_ms) {
    weft_future *f = new_future();
    if (!call.suspended) f->id = weft__wait_signal(pack(name, strlen(name)), timeout_ms < 0 ? WEFT_NO_TIMEOUT : timeout_ms);
    return f;
}

/* fetch reads the outcome of a future the host reported resolved. */
static void fetch(weft_future *f) {
    int64_t r = weft__future_result(f->id);
    f->outcome = (weft_outcome)(int32_t)((uint64_t)r >> 32);
    f->blob_len = (uint32_t)r;
    if (f->outcome != WEFT_OUTCOME_TIMEOUT) f->blob = read_blob(f->blob_len);
    f->done = true;
}

weft_outcome weft_future_get(weft_future *f, weft_value **v) {
    weft_value *discard;
    if (!v) v = &discard;
    *v = NULL;
    if (f->early) {
        *v = weft_value_clone(f->early);
        if (v == &discard) weft_value_free(*v);
        return WEFT_OUTCOME_ERROR;
    }
    if (!f->done) {
        if (call.suspended) return WEFT_OUTCOME_SUSPENDED;
        if (weft__await(pack(&f->id, 8), WEFT_AWAIT_ANY) == WEFT_AWAIT_SUSPENDED) {
            call.suspended = true;
            return WEFT_OUTCOME_SUSPENDED;
        }
        fetch(f);
    }
    if (f->outcome == WEFT_OUTCOME_TIMEOUT) return WEFT_OUTCOME_TIMEOUT;
    weft_outcome o = f->outcome;
    if (weft_decode_frame(f->blob, f->blob_len, v) != WEFT_OK) {
        *v = weft_error_value("weft.invalid_result", msg, true, NULL);
        o = WEFT_OUTCOME_ERROR;
    }
    if (v == &discard) weft_value_free(*v);
    return o;
}

int weft_await_any(weft_future *const *fs, size_t n) {
    if (n == 0 || call.suspended) return -1;
    int64_t *ids = xmalloc(n * sizeof *ids);
    size_t *idx = xmalloc(n * sizeof *idx), k = 0;
    int result = -1;
    for (size_t i = 0; i < n; i++) {
        if (fs[i]->early) {
            result = (int)i;
            goto done;
        }
        ids[k] = fs[i]->id;
        idx[k++] = i;
    }
    int32_t r = weft__await(pack(ids, 8 * k), WEFT_AWAIT_ANY);
    if (r == WEFT_AWAIT_SUSPENDED) {
        call.suspended = true;
        goto done;
    }
    result = (int)idx[r];
    if (!fs[result]->done) fetch(fs[result]);
done:
    free(ids);
    free(idx);
    return result;
}

bool weft_await_all(weft_future *const *fs, size_t n) {
    if (call.suspended) return false;
    int64_t *ids = xmalloc((n ? n : 1) * sizeof *ids);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!fs[i]->early && !fs[i]->done) ids[k++] = fs[i]->id;
    bool ok = true;
    if (k > 0) {
        if (weft__await(pack(ids, 8 * k), WEFT_AWAIT_ALL) == WEFT_AWAIT_SUSPENDED) {
            call.suspended = true;
            ok = false;
        } else {
            for (size_t i = 0; i < n; i++)
                if (!fs[i]->early && !fs[i]->done) fetch(fs[i]);
        }
    }
    free(ids);
    return ok;
}

int64_t weft_now(void) { return call.suspended ? 0 : weft__now(); }

void weft_random(void *dst, size_t n) {
    uint8_t *p = dst;
    while (n > 0 && !call.suspended) {
        size_t k = n < WEFT_MAX_RANDOM_LEN ? n : WEFT_MAX_RANDOM_LEN;
        weft__random(pack(p, k));
        p += k;
        n -= k;
    }
}

/* ----------------------------------------------------------------------
 * Queries (docs/abi.md, "Queries")
 * -------------------------------------------------------------------- */

/* answer_query runs at the end of a workflow call once a handler was
 * registered: when the call answers a query, it drops what the workflow
 * returned, runs the query's handler, hands over its answer or error, sets
 * *answered and returns the status. */
static int32_t answer_query(bool *answered) {
    int64_t n = weft__query_request();
    if (n == WEFT_NO_QUERY) return 0;
    *answered = true;
    call.suspended = false;
    weft_value_free(call.error);
    call.error = NULL;
    uint8_t *b = read_blob((size_t)n);
    weft_value *q = NULL;
    weft_code c = weft_decode_frame(b, (size_t)n, &q);
    free(b);
    if (c != WEFT_OK) return send_error(weft_error_value("weft.invalid_input", msg, true, NULL));
    const char *name = "";
    size_t name_len = 0;
    weft_as_string(weft_map_get(q, "name"), &name, &name_len);
    const query_handler *h = NULL;
    for (size_t i = 0; i < queries_len && !h; i++)
        if (queries[i].name_len == name_len && memcmp(queries[i].name, name, name_len) == 0) h = &queries[i];
    if (!h) {
        weft_buf text = WEFT_BUF_INIT;
        const char *a = "the workflow has no query handler \"", *z = "\"; it has: ";
        buf_put(&text, a, strlen(a));
        buf_put(&text, name, name_len);
        buf_put(&text, z, strlen(z));
        for (size_t i = 0; i < queries_len; i++) {
            if (i) buf_put(&text, ", ", 2);
            buf_put(&text, queries[i].name, queries[i].name_len);
        }
        if (!queries_len) buf_put(&text, "none", 4);
        buf_put(&text, "", 1); /* the NUL */
        weft_value *e = weft_error_value("weft.query_not_found", (const char *)text.data, true, NULL);
        weft_buf_free(&text);
        weft_value_free(q);
        return send_error(e);
    }
    const weft_value *input = weft_map_get(q, "input");
    weft_value *r = h->fn(input, h->data);
    weft_value_free(q);
    if (call.suspended) {
        weft_value_free(r);
        weft_value_free(call.error);
        call.error = NULL;
        return send_error(weft_error_value("weft.query_suspended", "the query handler waited on a future", true, NULL));
    }
    if (call.error) {
        weft_value_free(r);
        weft_value *e = call.error;
        call.error = NULL;
        return send_error(e);
    }
    out.len = 0;
    c = weft_append_frame(&out, r);
    weft_value_free(r);
    if (c != WEFT_OK) return send_error(weft_error_value("weft.invalid_output", msg, true, NULL));
    weft__set_output(pack(out.data, out.len));
    trim();
    return WEFT_STATUS_OK;
}

bool weft_set_query_handler(const char *name, weft_query_fn fn, void *data) {
    size_t n = name ? strlen(name) : 0;
    if (!call.active || !call.fn->workflow || !fn || n == 0 || n > WEFT_MAX_NAME_LEN || !utf8_valid((const uint8_t *)name, n))
        return false;
    for (size_t i = 0; i < queries_len; i++)
        if (queries[i].name_len == n && memcmp(queries[i].name, name, n) == 0) {
            queries[i].fn = fn;
            queries[i].data = data;
            return true;
        }
    if (queries_len >= WEFT_MAX_QUERY_HANDLERS) return false;
    queries[queries_len++] = (query_handler){dupn(name, n), n, fn, data};
    query_answer = answer_query;
    return true;
}

/* ----------------------------------------------------------------------
 * Continue-as-new (docs/abi.md, "continue_as_new")
 * -------------------------------------------------------------------- */

/* send_continue hands the next run's input to the host and ends the call. */
static int32_t send_continue(void) {
    weft_value *v = continue_input;
    continue_input = NULL;
    out.len = 0;
    weft_code c = weft_append_frame(&out, v);
    weft_value_free(v);
    if (c != WEFT_OK) return send_error(weft_error_value("weft.invalid_input", msg, true, NULL));
    weft__continue_as_new(pack(out.data, out.len));
    trim();
    return WEFT_STATUS_OK;
}

weft_value *weft_continue_as_new(weft_value *input) {
    if (!call.active || !call.fn->workflow) {
        weft_value_free(input);
        return NULL;
    }
    weft_value_free(continue_input);
    continue_input = input ? input : weft_null();
    continue_run = send_continue;
    return NULL;
}

int64_t weft_history_length(void) { return call.suspended ? 0 : weft__history_length(); }
int64_t weft_history_size(void) { return call.suspended ? 0 : weft__history_size(); }
