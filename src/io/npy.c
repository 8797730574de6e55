#include "io/npy.h"

#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include <stdio.h>

/* The value of 'key' in the header dict: a pointer just past "'key':" and its spaces. */
static const char *dict_value(const char *hdr, const char *key) {
    char k[32];
    snprintf(k, sizeof k, "'%s':", key);
    const char *p = strstr(hdr, k);
    if (!p) return NULL;
    p += strlen(k);
    while (*p == ' ') p++;
    return p;
}

/* dtype kinds: 'f' float, 'i' signed, 'u' unsigned, 'b' bool, 'U' UTF-32 string */
static wx_status parse_header(const char *path, const char *hdr, int flags, int *elem, char *kind,
                              wx_npy *a) {
    const char *d = dict_value(hdr, "descr"), *f = dict_value(hdr, "fortran_order"),
               *s = dict_value(hdr, "shape");
    *kind = 'f';
    if (d && !strncmp(d, "'<f4'", 5)) *elem = 4;
    else if (d && !strncmp(d, "'<f8'", 5)) *elem = 8;
    else if (d && (flags & WX_NPY_INT) && (!strncmp(d, "'<i", 3) || !strncmp(d, "'|i1'", 5)) &&
             d[3] && strchr("1248", d[3]) && d[4] == '\'') /* d[3] != 0: strchr finds the NUL */
        *elem = d[3] - '0', *kind = 'i';
    else if (d && (flags & WX_NPY_INT) && (!strncmp(d, "'|u1'", 5) || !strncmp(d, "'|b1'", 5)))
        *elem = 1, *kind = d[2];
    else if (d && (flags & WX_NPY_STR) && !strncmp(d, "'<U", 3) && atoi(d + 3) > 0 &&
             atoi(d + 3) < (1 << 20))
        *elem = 4 * atoi(d + 3), *kind = 'U';
    else if (d)
        return wx_error_set(WX_ERR_RUN, "%s: .npy dtype %.8s, expected little-endian float32 "
                            "('<f4') or float64 ('<f8')%s", path, d,
                            flags & WX_NPY_STR ? ", an integer or a string"
                            : flags & WX_NPY_INT ? " or an integer" : "");
    if (!d || !f || !s)
        return wx_error_set(WX_ERR_RUN, "%s: .npy header without 'descr', 'fortran_order' or "
                            "'shape': %.200s", path, hdr);
    if (strncmp(f, "False", 5))
        return wx_error_set(WX_ERR_RUN, "%s: .npy array in Fortran order, expected C order", path);
    if (*s != '(') return wx_error_set(WX_ERR_RUN, "%s: .npy shape is not a tuple", path);
    s++;
    a->ndim = 0;
    a->count = 1;
    for (;;) {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || a->ndim == WX_NPY_MAX_DIMS || (v > 0 && a->count > INT64_MAX / v))
            return wx_error_set(WX_ERR_RUN, "%s: .npy shape unreadable at '%.16s' (at most %d "
                                "non-negative dimensions)", path, s, WX_NPY_MAX_DIMS);
        a->dims[a->ndim++] = v;
        a->count *= v;
        s = end;
    }
    return WX_OK;
}

wx_status wx_npy_parse(const char *path, const void *data, size_t len, int flags, wx_npy *out) {
    memset(out, 0, sizeof *out);
    const char *buf = data;
    const uint8_t *b = (const uint8_t *)buf;
    wx_status st = WX_OK;
    size_t hlen = 0, off = 0;
    if (len < 10 || memcmp(b, "\x93NUMPY", 6)) {
        st = wx_error_set(WX_ERR_RUN, "%s: not a .npy file (no \\x93NUMPY magic)", path);
    } else if (b[6] == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8, off = 10;
    } else if ((b[6] == 2 || b[6] == 3) && len >= 12) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    } else {
        st = wx_error_set(WX_ERR_RUN, "%s: .npy format version %d.%d, expected 1.x, 2.x or 3.x",
                          path, b[6], b[7]);
    }
    if (st == WX_OK && off + hlen > len)
        st = wx_error_set(WX_ERR_RUN, "%s: .npy header of %zu bytes runs past the end of the "
                          "file (%zu bytes)", path, hlen, len);
    int elem = 0;
    char kind = 'f';
    if (st == WX_OK) {
        char *hdr = wx_malloc(hlen + 1);
        memcpy(hdr, buf + off, hlen);
        hdr[hlen] = 0;
        st = parse_header(path, hdr, flags, &elem, &kind, out);
        free(hdr);
    }
    /* compare counts, not count × size: a hostile shape must not wrap the product */
    size_t avail = st == WX_OK ? len - off - hlen : 0;
    if (st == WX_OK && ((uint64_t)out->count > avail / (size_t)elem ||
                        (size_t)out->count * (size_t)elem != avail))
        st = wx_error_set(WX_ERR_RUN, "%s: .npy data has %zu bytes, the shape and dtype need %lld "
                          "values of %d bytes (truncated or trailing bytes)", path, avail,
                          (long long)out->count, elem);
    if (st == WX_OK && kind == 'U' && out->count != 1)
        st = wx_error_set(WX_ERR_RUN, "%s: .npy string array of %lld values, expected one",
                          path, (long long)out->count);
    const uint8_t *p = b + off + hlen;
    if (st == WX_OK && kind == 'U') {
        int n = elem / 4;
        out->str = wx_malloc((size_t)n + 1);
        int k = 0;
        for (; k < n; k++) {
            uint32_t c = (uint32_t)p[4 * k] | (uint32_t)p[4 * k + 1] << 8 |
                         (uint32_t)p[4 * k + 2] << 16 | (uint32_t)p[4 * k + 3] << 24;
            if (c == 0) break; /* numpy pads shorter strings with NULs */
            out->str[k] = c < 128 ? (char)c : '?';
        }
        out->str[k] = 0;
    } else if (st == WX_OK) {
        out->values = wx_malloc(sizeof(double) * (size_t)(out->count ? out->count : 1));
        for (int64_t i = 0; i < out->count; i++) {
            const uint8_t *q = p + (size_t)elem * (size_t)i;
            if (kind == 'f' && elem == 4) {
                float v;
                memcpy(&v, q, 4);
                out->values[i] = v;
            } else if (kind == 'f') {
                memcpy(&out->values[i], q, 8);
            } else if (kind == 'i') {
                uint64_t u = 0;
                for (int j = 0; j < elem; j++) u |= (uint64_t)q[j] << (8 * j);
                if (elem < 8 && (u >> (8 * elem - 1)) & 1) u |= ~(uint64_t)0 << (8 * elem);
                int64_t v;
                memcpy(&v, &u, 8);
                out->values[i] = (double)v;
            } else {
                out->values[i] = q[0];
            }
        }
    }
    if (st != WX_OK) wx_npy_free(out);
    return st;
}

wx_status wx_npy_read(const char *path, wx_npy *out) {
    memset(out, 0, sizeof *out);
    char *buf = NULL;
    size_t len = 0;
    WX_TRY(wx_read_file(path, &buf, &len));
    wx_status st = wx_npy_parse(path, buf, len, 0, out);
    free(buf);
    return st;
}

void wx_npy_free(wx_npy *a) {
    free(a->values);
    free(a->str);
    memset(a, 0, sizeof *a);
}
