/* safetensors reader and writer (io/safetensors.h). The header is parsed by a small JSON parser
 * written for it (strings with every JSON escape, non-negative integers, objects, arrays; other
 * values skipped), so error messages can name the byte and the tensor. */
#include "io/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "core/wx_json.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c reads and writes little-endian data in place: a big-endian port needs swaps"
#endif

#define ST_MAX_HEADER (100u * 1000u * 1000u) /* the reference implementation's limit */

/* ---- JSON ------------------------------------------------------------------------------------ */

typedef struct {
    const char *p, *start, *end;
    const char *path;
} st_json;

static wx_status js_fail(const st_json *j, const char *what) {
    return wx_error_set(WX_ERR_RUN, "%s: bad safetensors header at byte %ld: %s", j->path,
                        (long)(j->p - j->start) + 8, what);
}

static void js_ws(st_json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int js_peek(st_json *j) {
    js_ws(j);
    return j->p < j->end ? (unsigned char)*j->p : -1;
}

static wx_status js_expect(st_json *j, char c) {
    if (js_peek(j) != (unsigned char)c) {
        char msg[32];
        snprintf(msg, sizeof msg, "expected '%c'", c);
        return js_fail(j, msg);
    }
    j->p++;
    return WX_OK;
}

static int js_hex4(const char *s, unsigned *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d > 15) return 0;
        *v = *v * 16 + d;
    }
    return 1;
}

static size_t utf8_put(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 63));
        o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)), o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

/* A JSON string into a new NUL-terminated UTF-8 buffer (escapes decoded; an embedded NUL is
 * refused, since names are C strings here). */
static wx_status js_string(st_json *j, char **out) {
    *out = NULL;
    WX_TRY(js_expect(j, '"'));
    /* Decoded text is never longer than its escaped form: size the buffer by the raw span. */
    const char *q = j->p;
    while (q < j->end && *q != '"') q += *q == '\\' ? 2 : 1;
    char *o = wx_malloc((size_t)(q - j->p) + 1);
    size_t n = 0;
    for (;;) {
        if (j->p >= j->end) { free(o); return js_fail(j, "unterminated string"); }
        unsigned char c = (unsigned char)*j->p++;
        if (c == '"') break;
        if (c < 0x20) { free(o); return js_fail(j, "control character in a string"); }
        if (c != '\\') { o[n++] = (char)c; continue; }
        if (j->p >= j->end) { free(o); return js_fail(j, "unterminated escape"); }
        char e = *j->p++;
        unsigned cp;
        switch (e) {
        case '"': o[n++] = '"'; break;
        case '\\': o[n++] = '\\'; break;
        case '/': o[n++] = '/'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'u':
            if (j->end - j->p < 4 || !js_hex4(j->p, &cp)) { free(o); return js_fail(j, "bad \\u escape"); }
            j->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00) { /* high surrogate: a low one must follow */
                unsigned lo;
                if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' || !js_hex4(j->p + 2, &lo) ||
                    lo < 0xDC00 || lo >= 0xE000) {
                    free(o);
                    return js_fail(j, "unpaired UTF-16 surrogate");
                }
                j->p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                free(o);
                return js_fail(j, "unpaired UTF-16 surrogate");
            }
            if (cp == 0) { free(o); return js_fail(j, "NUL character in a string"); }
            n += utf8_put(o + n, cp); /* ≤ 4 bytes out for ≥ 6 bytes in */
            break;
        default: free(o); return js_fail(j, "unknown escape");
        }
    }
    o[n] = 0;
    *out = o;
    return WX_OK;
}

/* A non-negative JSON integer (shapes and offsets). */
static wx_status js_uint(st_json *j, uint64_t *v) {
    js_ws(j);
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return js_fail(j, "expected a non-negative integer");
    uint64_t x = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p - '0');
        if (x > (UINT64_MAX - d) / 10) return js_fail(j, "integer too large");
        x = x * 10 + d;
        j->p++;
    }
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
        return js_fail(j, "expected an integer, found a fraction or exponent");
    *v = x;
    return WX_OK;
}

/* Skips any JSON value (keys of a tensor entry that safetensors does not define). */
static wx_status js_skip(st_json *j, int depth) {
    if (depth > 64) return js_fail(j, "nesting too deep");
    int c = js_peek(j);
    if (c == '"') {
        char *s;
        WX_TRY(js_string(j, &s));
        free(s);
        return WX_OK;
    }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->p++;
        if (js_peek(j) == close) { j->p++; return WX_OK; }
        for (;;) {
            if (c == '{') {
                char *k;
                WX_TRY(js_string(j, &k));
                free(k);
                WX_TRY(js_expect(j, ':'));
            }
            WX_TRY(js_skip(j, depth + 1));
            if (js_peek(j) == ',') { j->p++; continue; }
            return js_expect(j, close);
        }
    }
    const char *s = j->p; /* number, true, false, null */
    while (j->p < j->end && (strchr("+-.eE0123456789", *j->p) || (*j->p >= 'a' && *j->p <= 'z'))) j->p++;
    if (j->p == s) return js_fail(j, "expected a JSON value");
    return WX_OK;
}

/* ---- header ---------------------------------------------------------------------------------- */

static int dtype_size(const char *d) {
    static const struct { const char *name; int size; } k[] = {
        {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2},
        {"I8", 1}, {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1}, {"BOOL", 1},
        {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++)
        if (!strcmp(d, k[i].name)) return k[i].size;
    return 0;
}

static wx_status parse_metadata(st_json *j, wx_safetensors *st) {
    WX_TRY(js_expect(j, '{'));
    if (js_peek(j) == '}') { j->p++; return WX_OK; }
    for (;;) {
        char *k = NULL, *v = NULL;
        WX_TRY(js_string(j, &k));
        wx_status s = js_expect(j, ':');
        if (s == WX_OK && js_peek(j) != '"') s = js_fail(j, "__metadata__ values must be strings");
        if (s == WX_OK) s = js_string(j, &v);
        if (s != WX_OK) { free(k); return s; }
        st->meta_key = realloc(st->meta_key, sizeof(char *) * (size_t)(st->nmeta + 1));
        st->meta_val = realloc(st->meta_val, sizeof(char *) * (size_t)(st->nmeta + 1));
        WX_ASSERT(st->meta_key && st->meta_val);
        st->meta_key[st->nmeta] = k, st->meta_val[st->nmeta] = v, st->nmeta++;
        if (js_peek(j) == ',') { j->p++; continue; }
        return js_expect(j, '}');
    }
}

static wx_status parse_tensor(st_json *j, wx_st_tensor *t) {
    int have_dtype = 0, have_shape = 0, have_off = 0;
    WX_TRY(js_expect(j, '{'));
    if (js_peek(j) != '}')
        for (;;) {
            char *k;
            WX_TRY(js_string(j, &k));
            wx_status s = js_expect(j, ':');
            if (s == WX_OK && !strcmp(k, "dtype")) {
                char *d = NULL;
                s = js_string(j, &d);
                if (s == WX_OK && (strlen(d) >= sizeof t->dtype || !dtype_size(d)))
                    s = wx_error_set(WX_ERR_RUN, "%s: tensor '%s': unknown dtype '%s'", j->path,
                                     t->name, d);
                if (s == WX_OK) strcpy(t->dtype, d), t->elem_size = dtype_size(d), have_dtype = 1;
                free(d);
            } else if (s == WX_OK && (!strcmp(k, "shape") || !strcmp(k, "data_offsets"))) {
                int shape = k[0] == 's', n = 0;
                uint64_t v[WX_ST_MAX_DIMS];
                s = js_expect(j, '[');
                if (s == WX_OK && js_peek(j) == ']') j->p++;
                else
                    while (s == WX_OK) {
                        if (n == (shape ? WX_ST_MAX_DIMS : 2)) {
                            s = js_fail(j, shape ? "more than 8 dimensions" : "data_offsets has more "
                                        "than 2 entries");
                            break;
                        }
                        s = js_uint(j, &v[n++]);
                        if (s == WX_OK && js_peek(j) == ',') { j->p++; continue; }
                        if (s == WX_OK) s = js_expect(j, ']');
                        break;
                    }
                if (s == WX_OK && shape) {
                    t->ndim = n, t->numel = 1, have_shape = 1;
                    for (int i = 0; i < n; i++) {
                        if (v[i] > (uint64_t)INT64_MAX || (v[i] && (uint64_t)t->numel > (uint64_t)INT64_MAX / v[i]))
                            s = wx_error_set(WX_ERR_RUN, "%s: tensor '%s': shape too large", j->path, t->name);
                        t->dims[i] = (int64_t)v[i];
                        t->numel *= (int64_t)v[i];
                    }
                } else if (s == WX_OK) {
                    if (n != 2) s = js_fail(j, "data_offsets must be [begin, end]");
                    t->begin = v[0], t->end = n == 2 ? v[1] : 0, have_off = 1;
                }
            } else if (s == WX_OK) {
                s = js_skip(j, 0);
            }
            free(k);
            WX_TRY(s);
            if (js_peek(j) == ',') { j->p++; continue; }
            WX_TRY(js_expect(j, '}'));
            break;
        }
    else
        j->p++;
    if (!have_dtype || !have_shape || !have_off)
        return wx_error_set(WX_ERR_RUN, "%s: tensor '%s': header entry lacks '%s'", j->path, t->name,
                            !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return WX_OK;
}

static int cmp_begin(const void *a, const void *b) {
    const wx_st_tensor *x = *(wx_st_tensor *const *)a, *y = *(wx_st_tensor *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* Sizes match dtype×shape and the tensors tile [0, data_len) exactly. */
static wx_status check_layout(wx_safetensors *st) {
    for (int i = 0; i < st->count; i++) {
        const wx_st_tensor *t = &st->t[i];
        if (t->end < t->begin || t->end > st->data_len)
            return wx_error_set(WX_ERR_RUN, "%s: tensor '%s': data_offsets [%llu, %llu] outside the "
                                "%llu-byte data buffer (truncated file?)", st->path, t->name,
                                (unsigned long long)t->begin, (unsigned long long)t->end,
                                (unsigned long long)st->data_len);
        if ((uint64_t)t->numel > UINT64_MAX / (uint64_t)t->elem_size ||
            t->end - t->begin != (uint64_t)t->numel * (uint64_t)t->elem_size)
            return wx_error_set(WX_ERR_RUN, "%s: tensor '%s': %llu bytes for %lld %s values", st->path,
                                t->name, (unsigned long long)(t->end - t->begin),
                                (long long)t->numel, t->dtype);
        for (int k = 0; k < i; k++)
            if (!strcmp(st->t[k].name, t->name))
                return wx_error_set(WX_ERR_RUN, "%s: tensor '%s' appears twice in the header",
                                    st->path, t->name);
    }
    wx_st_tensor **order = wx_malloc(sizeof *order * (size_t)(st->count ? st->count : 1));
    for (int i = 0; i < st->count; i++) order[i] = &st->t[i];
    qsort(order, (size_t)st->count, sizeof *order, cmp_begin);
    uint64_t pos = 0;
    wx_status s = WX_OK;
    for (int i = 0; i < st->count && s == WX_OK; i++) {
        if (order[i]->begin != pos)
            s = wx_error_set(WX_ERR_RUN, "%s: tensor '%s' starts at byte %llu of the data buffer, "
                             "expected %llu (tensors must tile the buffer)", st->path, order[i]->name,
                             (unsigned long long)order[i]->begin, (unsigned long long)pos);
        pos = order[i]->end;
    }
    free(order);
    if (s == WX_OK && pos != st->data_len)
        s = wx_error_set(WX_ERR_RUN, "%s: %llu bytes after the last tensor (the header describes %llu "
                         "of %llu data bytes)", st->path, (unsigned long long)(st->data_len - pos),
                         (unsigned long long)pos, (unsigned long long)st->data_len);
    return s;
}

static wx_status parse(wx_safetensors *st, size_t len) {
    if (len < 8)
        return wx_error_set(WX_ERR_RUN, "%s: %zu bytes: too short for a safetensors file", st->path, len);
    uint64_t n;
    memcpy(&n, st->buf, 8);
    const char *kind = n > ST_MAX_HEADER || n > len - 8 ? wx_fs_known_kind_bytes(st->buf, len) : NULL;
    if (kind) return wx_error_set(WX_ERR_RUN, "%s: %s, expected a safetensors file", st->path, kind);
    if (n > ST_MAX_HEADER || n > len - 8)
        return wx_error_set(WX_ERR_RUN, "%s: safetensors header length %llu %s", st->path,
                            (unsigned long long)n, n > len - 8 ? "runs past the end of the file"
                                                               : "exceeds the 100 MB limit");
    st_json j = {(const char *)st->buf + 8, (const char *)st->buf + 8, (const char *)st->buf + 8 + n,
                 st->path};
    st->data = st->buf + 8 + n;
    st->data_len = len - 8 - n;
    WX_TRY(js_expect(&j, '{'));
    int cap = 0;
    if (js_peek(&j) == '}') j.p++;
    else
        for (;;) {
            char *k;
            WX_TRY(js_string(&j, &k));
            wx_status s = js_expect(&j, ':');
            if (s == WX_OK && !strcmp(k, "__metadata__")) {
                free(k);
                WX_TRY(parse_metadata(&j, st));
            } else {
                if (s != WX_OK) { free(k); return s; }
                if (st->count == cap) {
                    cap = cap ? 2 * cap : 64;
                    st->t = realloc(st->t, sizeof *st->t * (size_t)cap);
                    WX_ASSERT(st->t != NULL);
                }
                wx_st_tensor *t = &st->t[st->count++];
                memset(t, 0, sizeof *t);
                t->name = k;
                WX_TRY(parse_tensor(&j, t));
            }
            if (js_peek(&j) == ',') { j.p++; continue; }
            WX_TRY(js_expect(&j, '}'));
            break;
        }
    if (js_peek(&j) != -1) return js_fail(&j, "text after the header object");
    return check_layout(st);
}

wx_status wx_safetensors_read(const char *path, wx_safetensors *st) {
    memset(st, 0, sizeof *st);
    st->path = wx_strdup(path);
    char *buf;
    size_t len;
    wx_status s = wx_read_file(path, &buf, &len);
    if (s != WX_OK) return s;
    st->buf = (uint8_t *)buf;
    s = parse(st, len);
    if (s != WX_OK) {
        char *keep = wx_strdup(wx_error_message());
        wx_safetensors_free(st);
        wx_error_set(s, "%s", keep);
        free(keep);
    }
    return s;
}

void wx_safetensors_free(wx_safetensors *st) {
    for (int i = 0; i < st->count; i++) free(st->t[i].name);
    for (int i = 0; i < st->nmeta; i++) free(st->meta_key[i]), free(st->meta_val[i]);
    free(st->t);
    free(st->meta_key);
    free(st->meta_val);
    free(st->buf);
    free(st->path);
    memset(st, 0, sizeof *st);
}

int wx_safetensors_find(const wx_safetensors *st, const char *name) {
    for (int i = 0; i < st->count; i++)
        if (!strcmp(st->t[i].name, name)) return i;
    return -1;
}

const char *wx_safetensors_meta(const wx_safetensors *st, const char *key) {
    for (int i = 0; i < st->nmeta; i++)
        if (!strcmp(st->meta_key[i], key)) return st->meta_val[i];
    return NULL;
}

static float half_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023, bits;
    if (e == 31) bits = sign | 0x7F800000u | (m << 13); /* inf, NaN */
    else if (e) bits = sign | ((e + 112) << 23) | (m << 13);
    else if (!m) bits = sign;
    else { /* subnormal: normalise */
        e = 113;
        while (!(m & 1024)) m <<= 1, e--;
        bits = sign | (e << 23) | ((m & 1023) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

wx_status wx_safetensors_to_f32(const wx_safetensors *st, int i, float *dst) {
    const wx_st_tensor *t = &st->t[i];
    const uint8_t *src = st->data + t->begin;
    if (!strcmp(t->dtype, "F32")) {
        memcpy(dst, src, sizeof(float) * (size_t)t->numel);
    } else if (!strcmp(t->dtype, "F64")) {
        for (int64_t k = 0; k < t->numel; k++) {
            double v;
            memcpy(&v, src + 8 * k, 8);
            dst[k] = (float)v;
        }
    } else if (!strcmp(t->dtype, "F16") || !strcmp(t->dtype, "BF16")) {
        int bf = t->dtype[0] == 'B';
        for (int64_t k = 0; k < t->numel; k++) {
            uint16_t h;
            memcpy(&h, src + 2 * k, 2);
            if (bf) {
                uint32_t bits = (uint32_t)h << 16;
                memcpy(&dst[k], &bits, 4);
            } else {
                dst[k] = half_to_f32(h);
            }
        }
    } else {
        return wx_error_set(WX_ERR_RUN, "%s: tensor '%s' has dtype %s; expected a floating-point "
                            "type (F32, F64, F16, BF16)", st->path, t->name, t->dtype);
    }
    return WX_OK;
}

/* ---- writer ---------------------------------------------------------------------------------- */

wx_status wx_safetensors_write_f32(const char *path, const wx_st_entry *e, int n,
                                   const char *const *meta, int nmeta) {
    char *hdr = NULL;
    size_t hlen = 0;
    FILE *mem = open_memstream(&hdr, &hlen);
    if (!mem) return wx_error_set(WX_ERR_RUN, "%s: cannot build the safetensors header", path);
    wx_json j;
    wx_json_init(&j, mem);
    wx_json_object_begin(&j);
    if (nmeta > 0) {
        wx_json_key(&j, "__metadata__");
        wx_json_object_begin(&j);
        for (int k = 0; k < nmeta; k++) wx_json_kv_string(&j, meta[2 * k], meta[2 * k + 1]);
        wx_json_object_end(&j);
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        WX_ASSERT(e[i].ndim >= 0 && e[i].ndim <= WX_ST_MAX_DIMS && strcmp(e[i].name, "__metadata__"));
        int64_t numel = 1;
        wx_json_key(&j, e[i].name);
        wx_json_object_begin(&j);
        wx_json_kv_string(&j, "dtype", "F32");
        wx_json_key(&j, "shape");
        wx_json_array_begin(&j);
        for (int d = 0; d < e[i].ndim; d++) wx_json_int(&j, e[i].dims[d]), numel *= e[i].dims[d];
        wx_json_array_end(&j);
        wx_json_key(&j, "data_offsets");
        wx_json_array_begin(&j);
        wx_json_int(&j, (int64_t)off);
        off += 4 * (uint64_t)numel;
        wx_json_int(&j, (int64_t)off);
        wx_json_array_end(&j);
        wx_json_object_end(&j);
    }
    wx_json_object_end(&j);
    while ((8 + ftell(mem)) % 8) fputc(' ', mem); /* data 8-byte aligned, as the reference writer */
    if (fclose(mem) != 0) {
        free(hdr);
        return wx_error_set(WX_ERR_RUN, "%s: cannot build the safetensors header", path);
    }
    wx_atomic_file f;
    wx_status s = wx_atomic_open(&f, path);
    if (s != WX_OK) {
        free(hdr);
        return s;
    }
    uint64_t n64 = hlen;
    int ok = fwrite(&n64, 8, 1, f.fp) == 1 && fwrite(hdr, 1, hlen, f.fp) == hlen;
    free(hdr);
    for (int i = 0; ok && i < n; i++) {
        int64_t numel = 1;
        for (int d = 0; d < e[i].ndim; d++) numel *= e[i].dims[d];
        ok = numel == 0 || fwrite(e[i].data, sizeof(float), (size_t)numel, f.fp) == (size_t)numel;
    }
    if (!ok) {
        wx_atomic_abort(&f);
        return wx_error_set(WX_ERR_RUN, "%s: write failed (disk full?)", path);
    }
    return wx_atomic_commit(&f);
}
