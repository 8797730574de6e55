/* .npz reader (io/npz.h): the zip central directory, stored members, crc32. */
#include "io/npz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "io/archive.h"

static uint32_t u16(const char *p) {
    const uint8_t *b = (const uint8_t *)p;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8;
}
static uint32_t u32(const char *p) {
    const uint8_t *b = (const uint8_t *)p;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t u64(const char *p) { return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32; }

int wx_npz_is_zip(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char b[4] = {0};
    size_t n = fread(b, 1, 4, f);
    fclose(f);
    return n == 4 && !memcmp(b, "PK\3\4", 4);
}

/* The end of central directory: entries, directory offset and size (ZIP64 when numpy's writer
 * needed it). */
static wx_status find_directory(const wx_npz *z, uint64_t *entries, uint64_t *off, uint64_t *size,
                                size_t *end) {
    const char *b = z->buf;
    size_t lo = z->len > 22 + 65535 ? z->len - 22 - 65535 : 0;
    for (size_t p = z->len >= 22 ? z->len - 22 + 1 : 0; p-- > lo;) {
        if (u32(b + p) != 0x06054b50u || p + 22 + u16(b + p + 20) != z->len) continue;
        *entries = u16(b + p + 10), *size = u32(b + p + 12), *off = u32(b + p + 16), *end = p;
        if (*entries != 0xffff && *off != 0xffffffffu && *size != 0xffffffffu) return WX_OK;
        /* ZIP64: the locator sits just before the end record and points at the ZIP64 record */
        if (p < 20 || u32(b + p - 20) != 0x07064b50u) break;
        uint64_t r = u64(b + p - 20 + 8);
        if (r > p - 20 || p - 20 - r < 56 || u32(b + r) != 0x06064b50u) break;
        *entries = u64(b + r + 32), *size = u64(b + r + 40), *off = u64(b + r + 48), *end = r;
        return WX_OK;
    }
    return wx_error_set(WX_ERR_RUN, "%s: not a zip archive (.npz), or truncated: no valid "
                        "end-of-central-directory record", z->path);
}

/* ZIP64 extra field (id 1): the 64-bit values of whichever of usize, csize, offset were
 * 0xffffffff, in that order. */
static wx_status zip64_extra(const wx_npz *z, const char *key, const char *x, size_t xlen,
                             uint64_t *usize, uint64_t *csize, uint64_t *off) {
    uint64_t *want[3] = {usize, csize, off};
    int missing = 0; /* how many of the three still wait for their 64-bit value */
    for (int i = 0; i < 3; i++) missing += *want[i] == 0xffffffffu;
    for (size_t p = 0; missing && p + 4 <= xlen;) {
        size_t id = u16(x + p), n = u16(x + p + 2);
        if (p + 4 + n > xlen) break;
        if (id == 1) {
            size_t q = p + 4;
            for (int i = 0; i < 3; i++) {
                if (*want[i] != 0xffffffffu) continue;
                if (q + 8 > p + 4 + n) break;
                *want[i] = u64(x + q);
                q += 8;
                missing--;
            }
            break; /* a field too short for its sentinels leaves some missing: refused below */
        }
        p += 4 + n;
    }
    if (missing)
        return wx_error_set(WX_ERR_RUN, "%s: member '%s': ZIP64 sizes without their extra field",
                            z->path, key);
    return WX_OK;
}

/* One central-directory record at *p: fills m (key owned by m) and advances *p. */
static wx_status read_member(wx_npz *z, size_t *p, size_t dir_end, wx_npz_member *m) {
    const char *b = z->buf;
    size_t q = *p;
    if (q + 46 > dir_end || u32(b + q) != 0x02014b50u)
        return wx_error_set(WX_ERR_RUN, "%s: damaged zip central directory at byte %zu", z->path, q);
    size_t nlen = u16(b + q + 28), xlen = u16(b + q + 30), clen = u16(b + q + 32);
    if (q + 46 + nlen + xlen + clen > dir_end)
        return wx_error_set(WX_ERR_RUN, "%s: damaged zip central directory at byte %zu", z->path, q);
    size_t klen = nlen >= 4 && !memcmp(b + q + 46 + nlen - 4, ".npy", 4) ? nlen - 4 : nlen;
    char *key = wx_malloc(klen + 1);
    memcpy(key, b + q + 46, klen);
    key[klen] = 0;
    m->key = key;
    uint32_t flags = u16(b + q + 8), method = u16(b + q + 10), crc = u32(b + q + 16);
    uint64_t csize = u32(b + q + 20), usize = u32(b + q + 24), loc = u32(b + q + 42);
    *p = q + 46 + nlen + xlen + clen;
    WX_TRY(zip64_extra(z, key, b + q + 46 + nlen, xlen, &usize, &csize, &loc));
    if (flags & 1)
        return wx_error_set(WX_ERR_RUN, "%s: member '%s' is encrypted", z->path, key);
    if (method != 0)
        return wx_error_set(WX_ERR_RUN, "%s: member '%s' is compressed (zip method %u, e.g. "
                            "numpy.savez_compressed); wxcast reads stored members as "
                            "numpy.savez and graphcast's checkpoint.dump write them", z->path,
                            key, method);
    if (csize != usize)
        return wx_error_set(WX_ERR_RUN, "%s: member '%s': stored size %llu differs from its "
                            "size %llu", z->path, key, (unsigned long long)csize,
                            (unsigned long long)usize);
    if (loc > z->len || z->len - loc < 30 || u32(b + loc) != 0x04034b50u)
        return wx_error_set(WX_ERR_RUN, "%s: member '%s': no local header at byte %llu (damaged "
                            "file)", z->path, key, (unsigned long long)loc);
    size_t data = (size_t)loc + 30 + u16(b + loc + 26) + u16(b + loc + 28);
    if (data > z->len || z->len - data < usize)
        return wx_error_set(WX_ERR_RUN, "%s: member '%s': %llu bytes at byte %zu run past the end "
                            "of the file (%zu bytes; truncated?)", z->path, key,
                            (unsigned long long)usize, data, z->len);
    if (wx_archive_crc32(0, b + data, (size_t)usize) != crc)
        return wx_error_set(WX_ERR_RUN, "%s: member '%s': crc32 mismatch (damaged file)", z->path,
                            key);
    m->off = data, m->len = (size_t)usize;
    return WX_OK;
}

wx_status wx_npz_open(const char *path, wx_npz *z) {
    memset(z, 0, sizeof *z);
    WX_TRY(wx_read_file(path, &z->buf, &z->len));
    z->path = wx_strdup(path);
    uint64_t entries = 0, off = 0, size = 0;
    size_t end = 0;
    wx_status s = find_directory(z, &entries, &off, &size, &end);
    if (s == WX_OK && (off > end || end - off < size || entries > size / 46))
        s = wx_error_set(WX_ERR_RUN, "%s: zip central directory (%llu entries, %llu bytes at byte "
                         "%llu) does not fit before its end record at byte %zu (damaged file)",
                         path, (unsigned long long)entries, (unsigned long long)size,
                         (unsigned long long)off, end);
    if (s == WX_OK) z->m = wx_calloc((size_t)(entries ? entries : 1), sizeof *z->m);
    size_t p = (size_t)off;
    for (uint64_t i = 0; s == WX_OK && i < entries; i++) {
        s = read_member(z, &p, (size_t)(off + size), &z->m[z->count]);
        z->count++; /* the key is owned even on error */
        for (int k = 0; s == WX_OK && k + 1 < z->count; k++)
            if (!strcmp(z->m[k].key, z->m[z->count - 1].key))
                s = wx_error_set(WX_ERR_RUN, "%s: key '%s' appears twice", path, z->m[k].key);
    }
    if (s != WX_OK) wx_npz_free(z);
    return s;
}

int wx_npz_find(const wx_npz *z, const char *key) {
    for (int i = 0; i < z->count; i++)
        if (!strcmp(z->m[i].key, key)) return i;
    return -1;
}

wx_status wx_npz_array(const wx_npz *z, int i, int flags, wx_npy *out) {
    char name[512];
    snprintf(name, sizeof name, "%s: member '%s'", z->path, z->m[i].key);
    return wx_npy_parse(name, z->buf + z->m[i].off, z->m[i].len, flags, out);
}

void wx_npz_free(wx_npz *z) {
    for (int i = 0; i < z->count; i++) free(z->m[i].key);
    free(z->m);
    free(z->buf);
    free(z->path);
    memset(z, 0, sizeof *z);
}
