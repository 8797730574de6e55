/* The .npy/.npz parsers (io/npy.h, io/npz.h) on hand-built files: a one-member stored zip whose
 * central record may carry a ZIP64 extra field, and .npy headers cut short. The GraphCast import
 * tests (test_weights_gc) cover numpy's own files; these cover the branches numpy only writes for
 * members past 4 GiB, and headers a damaged or hostile file can hold. Under CI's ASan run an
 * out-of-bounds read in the header parser fails this test. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/archive.h"
#include "io/npy.h"
#include "io/npz.h"
#include "wx_test.h"

static char tmp[64];

static void le16(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void le32(unsigned char *p, uint32_t v) { le16(p, v), le16(p + 2, v >> 16); }
static void le64(unsigned char *p, uint64_t v) { le32(p, (uint32_t)v), le32(p + 4, (uint32_t)(v >> 32)); }

/* A version-1 .npy of one float32 2.5, shape (1,): its 128 + 4 bytes into out. */
static size_t npy_one(unsigned char *out) {
    const char *h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    le16(out + 8, 118);
    memset(out + 10, ' ', 118);
    memcpy(out + 10, h, strlen(h));
    out[127] = '\n';
    float v = 2.5f;
    memcpy(out + 128, &v, 4);
    return 132;
}

/* Writes a zip with the member "a.npy" (stored). zip64: the central record's sizes are
 * 0xffffffff and its ZIP64 extra field (id 1) holds `extra_values` of the two 64-bit sizes
 * (2: complete; 1: one missing). Returns the path. */
static const char *write_zip(const char *name, int zip64, int extra_values) {
    static char path[128];
    unsigned char buf[512] = {0}, data[132];
    size_t dlen = npy_one(data), p = 0;
    uint32_t crc = wx_archive_crc32(0, data, dlen);
    const char *mname = "a.npy";
    size_t nl = strlen(mname);
    /* local header */
    le32(buf, 0x04034b50u), le16(buf + 4, 20), le32(buf + 14, crc);
    le32(buf + 18, (uint32_t)dlen), le32(buf + 22, (uint32_t)dlen), le16(buf + 26, (uint32_t)nl);
    memcpy(buf + 30, mname, nl);
    memcpy(buf + 30 + nl, data, dlen);
    p = 30 + nl + dlen;
    size_t cd = p, xl = zip64 ? 4 + 8 * (size_t)extra_values : 0;
    le32(buf + p, 0x02014b50u), le16(buf + p + 4, 45), le16(buf + p + 6, 45);
    le32(buf + p + 16, crc);
    le32(buf + p + 20, zip64 ? 0xffffffffu : (uint32_t)dlen);
    le32(buf + p + 24, zip64 ? 0xffffffffu : (uint32_t)dlen);
    le16(buf + p + 28, (uint32_t)nl), le16(buf + p + 30, (uint32_t)xl);
    memcpy(buf + p + 46, mname, nl);
    if (zip64) {
        unsigned char *x = buf + p + 46 + nl;
        le16(x, 1), le16(x + 2, (uint32_t)(8 * extra_values));
        for (int i = 0; i < extra_values; i++) le64(x + 4 + 8 * i, dlen);
    }
    p += 46 + nl + xl;
    /* end of central directory */
    le32(buf + p, 0x06054b50u), le16(buf + p + 8, 1), le16(buf + p + 10, 1);
    le32(buf + p + 12, (uint32_t)(p - cd)), le32(buf + p + 16, (uint32_t)cd);
    p += 22;
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    FILE *f = fopen(path, "wb");
    if (f) fwrite(buf, 1, p, f), fclose(f);
    return path;
}

/* Opens path and reads its member: WX_OK and the value 2.5, or the open's status. */
static wx_status open_read(const char *path, double *v) {
    wx_npz z;
    wx_status s = wx_npz_open(path, &z);
    if (s != WX_OK) return s;
    wx_npy a;
    s = z.count == 1 && !strcmp(z.m[0].key, "a") ? wx_npz_array(&z, 0, 0, &a) : WX_ERR_RUN;
    if (s == WX_OK) *v = a.values[0], wx_npy_free(&a);
    wx_npz_free(&z);
    return s;
}

static void test_zip(void) {
    double v = 0;
    WX_CHECK(open_read(write_zip("plain.npz", 0, 0), &v) == WX_OK && v == 2.5,
             "plain stored member read (%s), value %g", wx_error_message(), v);
    v = 0;
    WX_CHECK(open_read(write_zip("zip64.npz", 1, 2), &v) == WX_OK && v == 2.5,
             "ZIP64 sizes from the extra field (%s), value %g", wx_error_message(), v);
    const char *p = write_zip("short64.npz", 1, 1);
    wx_status s = open_read(p, &v);
    const char *m = wx_error_message();
    WX_CHECK(s == WX_ERR_RUN && strstr(m, p) && strstr(m, "member 'a'") &&
                 strstr(m, "ZIP64 sizes without their extra field"),
             "an extra field one size short is named as such (status %d): %s", (int)s, m);
}

/* A .npy header exactly as long as its allocation, ending inside the dtype. */
static void header_fails(const char *dict, int flags, const char *want) {
    size_t hl = strlen(dict), len = 10 + hl;
    unsigned char *b = malloc(len); /* no slack: a read past the header is past the buffer */
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    le16(b + 8, (uint32_t)hl);
    memcpy(b + 10, dict, hl);
    wx_npy a;
    wx_status s = wx_npy_parse("h.npy", b, len, flags, &a);
    const char *m = wx_error_message();
    WX_CHECK(s == WX_ERR_RUN && strstr(m, "h.npy") && strstr(m, want),
             "header %s: refused naming '%s' (status %d): %s", dict, want, (int)s, m);
    if (s == WX_OK) wx_npy_free(&a);
    free(b);
}

static void test_headers(void) {
    header_fails("{'fortran_order': False, 'shape': (0,), 'descr': '<i", WX_NPY_INT, "dtype");
    header_fails("{'fortran_order': False, 'shape': (0,), 'descr': '<i3'}", WX_NPY_INT, "dtype");
    header_fails("{'fortran_order': False, 'shape': (0,), 'descr': '<U", WX_NPY_STR, "dtype");
    header_fails("{'fortran_order': False, 'shape': (2,), 'descr': '<f4'}", 0, "data has");
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/wx_npz_XXXXXX");
    if (!WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp")) return wx_test_summary();
    test_zip();
    test_headers();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", tmp);
    return wx_test_summary();
}
