/* Archive metadata, shard writer and manifest (see io/archive.h, docs/archive-format.md). */
#define _GNU_SOURCE /* sync_file_range */
#include "io/archive.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/wx_fs.h"
#include "core/wx_json.h"
#include "core/wx_yaml.h"
#include "io/archive_priv.h"

int64_t wx_archive_points(const wx_archive_meta *m) { return (int64_t)m->grid.nlat * m->grid.nlon; }
int64_t wx_archive_record_bytes(const wx_archive_meta *m) {
    return (int64_t)m->nchan * wx_archive_points(m) * (m->dtype == WX_DTYPE_F16 ? 2 : 4);
}
int64_t wx_archive_record_stride(const wx_archive_meta *m) {
    int64_t b = wx_archive_record_bytes(m);
    return (b + WX_ARCHIVE_ALIGN - 1) / WX_ARCHIVE_ALIGN * WX_ARCHIVE_ALIGN;
}
int wx_archive_shard_count(const wx_archive_meta *m) {
    return (int)((m->count + m->records_per_shard - 1) / m->records_per_shard);
}
int64_t wx_archive_records_for_size(const wx_archive_meta *m, double shard_bytes) {
    int64_t r = (int64_t)(shard_bytes / (double)wx_archive_record_stride(m));
    return r < 1 ? 1 : r;
}
void wx_archive_shard_name(int shard, char *buf, int len) {
    snprintf(buf, (size_t)len, "shard-%05d.wxr", shard);
}

void wx_archive_meta_free(wx_archive_meta *m) {
    free(m->chan);
    free(m->mean);
    free(m->std);
    free(m->min);
    free(m->max);
    free(m->diff_std);
    memset(m, 0, sizeof *m);
}

uint16_t wx_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
    int exp = (int)((x >> 23) & 0xff);
    if (exp == 255) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    int e = exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000;
        int shift = 14 - e;
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* may carry into the exponent: correct */
    return (uint16_t)(sign | h);
}

float wx_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
    if (exp == 0) {
        if (!mant) x = sign;
        else {
            int e = -1;
            do { mant <<= 1; e++; } while (!(mant & 0x400));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) x = sign | 0x7f800000 | (mant << 13);
    else x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

void wx_shard_header_pack(const wx_shard_header *h, unsigned char *b) {
    memset(b, 0, WX_SHARD_HEADER_BYTES);
    memcpy(b, WX_SHARD_MAGIC, 8);
    memcpy(b + 8, &h->version, 4);
    memcpy(b + 12, &h->dtype, 4);
    memcpy(b + 16, &h->record_count, 8);
    memcpy(b + 24, &h->record_bytes, 8);
    memcpy(b + 32, &h->record_stride, 8);
    memcpy(b + 40, &h->first_record, 8);
    memcpy(b + 48, &h->data_offset, 8);
    memcpy(b + 56, &h->key, 8);
    memcpy(b + 64, &h->header_crc, 4);
}

void wx_shard_header_unpack(const unsigned char *b, wx_shard_header *h) {
    memcpy(&h->version, b + 8, 4);
    memcpy(&h->dtype, b + 12, 4);
    memcpy(&h->record_count, b + 16, 8);
    memcpy(&h->record_bytes, b + 24, 8);
    memcpy(&h->record_stride, b + 32, 8);
    memcpy(&h->first_record, b + 40, 8);
    memcpy(&h->data_offset, b + 48, 8);
    memcpy(&h->key, b + 56, 8);
    memcpy(&h->header_crc, b + 64, 4);
}

uint32_t wx_shard_header_crc(const unsigned char *hdr, const uint64_t *offsets, const uint32_t *crcs,
                             uint64_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, hdr, 64);
    for (uint64_t i = 0; i < n; i++) c = crc32(c, (const Bytef *)&offsets[i], 8);
    for (uint64_t i = 0; i < n; i++) c = crc32(c, (const Bytef *)&crcs[i], 4);
    return (uint32_t)c;
}

void wx_shard_expected(const wx_archive_meta *m, int shard, wx_shard_header *h) {
    memset(h, 0, sizeof *h);
    h->version = WX_ARCHIVE_VERSION;
    h->dtype = (uint32_t)m->dtype;
    h->first_record = (uint64_t)shard * (uint64_t)m->records_per_shard;
    int64_t left = m->count - (int64_t)h->first_record;
    h->record_count = (uint64_t)(left < m->records_per_shard ? left : m->records_per_shard);
    h->record_bytes = (uint64_t)wx_archive_record_bytes(m);
    h->record_stride = (uint64_t)wx_archive_record_stride(m);
    uint64_t tables = WX_SHARD_HEADER_BYTES + 12 * h->record_count;
    h->data_offset = (tables + WX_ARCHIVE_ALIGN - 1) / WX_ARCHIVE_ALIGN * WX_ARCHIVE_ALIGN;
    h->key = m->key;
}

struct wx_shard_writer {
    wx_atomic_file f;
    wx_shard_header h;
    uint64_t put;
    uint64_t *offsets;
    uint32_t *crcs;
    unsigned char *buf; /* [stride] */
    const wx_archive_meta *m;
};

wx_status wx_shard_writer_open(const char *dir, int shard, const wx_archive_meta *m,
                               wx_shard_writer **out) {
    char name[64], path[4096];
    wx_archive_shard_name(shard, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    wx_shard_writer *w = wx_calloc(1, sizeof *w);
    w->m = m;
    wx_shard_expected(m, shard, &w->h);
    wx_status st = wx_atomic_open(&w->f, path);
    if (st != WX_OK) {
        free(w);
        return st;
    }
    w->offsets = wx_calloc(w->h.record_count + 1, 8);
    w->crcs = wx_calloc(w->h.record_count + 1, 4);
    w->buf = wx_calloc((size_t)w->h.record_stride, 1);
    /* Placeholder header and tables (rewritten at commit), zero padding up to data_offset. */
    unsigned char *zero = wx_calloc((size_t)w->h.data_offset, 1);
    if (fwrite(zero, 1, (size_t)w->h.data_offset, w->f.fp) != w->h.data_offset)
        st = wx_error_set(WX_ERR_RUN, "%s: write failed: %s", path, strerror(errno));
    free(zero);
    if (st != WX_OK) {
        wx_shard_writer_abort(w);
        return st;
    }
    *out = w;
    return WX_OK;
}

wx_status wx_shard_writer_put(wx_shard_writer *w, const float *record) {
    WX_ASSERT(w->put < w->h.record_count);
    size_t nval = (size_t)(w->h.record_bytes / (w->h.dtype == WX_DTYPE_F16 ? 2 : 4));
    size_t bytes = (size_t)w->h.record_bytes, pad = (size_t)(w->h.record_stride - w->h.record_bytes);
    /* float32 records go out as they are (no copy), followed by zero padding from buf, which
     * stays zeroed on this path; float16 ones are converted into buf, padding included. */
    const unsigned char *data = (const unsigned char *)record;
    if (w->h.dtype == WX_DTYPE_F16) {
        uint16_t *d = (uint16_t *)w->buf;
        for (size_t k = 0; k < nval; k++) d[k] = wx_f32_to_f16(record[k]);
        data = w->buf;
        bytes += pad;
        pad = 0;
    }
    w->offsets[w->put] = w->h.data_offset + w->put * w->h.record_stride;
    w->crcs[w->put] = (uint32_t)crc32(crc32(0L, Z_NULL, 0), data, (uInt)w->h.record_bytes);
    if (fwrite(data, 1, bytes, w->f.fp) != bytes ||
        (pad && fwrite(w->buf + w->h.record_bytes, 1, pad, w->f.fp) != pad))
        return wx_error_set(WX_ERR_RUN, "%s: write of record %llu failed: %s", w->f.path,
                            (unsigned long long)w->put, strerror(errno));
    w->put++;
    return WX_OK;
}

wx_status wx_shard_writer_put_raw(wx_shard_writer *w, const void *records, int64_t n,
                                  const uint32_t *crcs) {
    WX_ASSERT(n >= 0 && w->put + (uint64_t)n <= w->h.record_count);
    for (int64_t k = 0; k < n; k++) {
        w->offsets[w->put + (uint64_t)k] = w->h.data_offset + (w->put + (uint64_t)k) * w->h.record_stride;
        w->crcs[w->put + (uint64_t)k] = crcs[k];
    }
    size_t bytes = (size_t)n * (size_t)w->h.record_stride;
    if (n && fwrite(records, 1, bytes, w->f.fp) != bytes)
        return wx_error_set(WX_ERR_RUN, "%s: write of records %llu..%llu failed: %s", w->f.path,
                            (unsigned long long)w->put, (unsigned long long)(w->put + (uint64_t)n - 1),
                            strerror(errno));
    /* Start writing these pages back now, so the fsync at commit finds little left to do and
     * the disk works while the next batch is decoded. Only a hint: errors surface at fsync. */
    if (n && fflush(w->f.fp) == 0)
        sync_file_range(fileno(w->f.fp), (off64_t)(w->h.data_offset + w->put * w->h.record_stride),
                        (off64_t)bytes, SYNC_FILE_RANGE_WRITE);
    w->put += (uint64_t)n;
    return WX_OK;
}

static void writer_free(wx_shard_writer *w) {
    free(w->offsets);
    free(w->crcs);
    free(w->buf);
    free(w);
}

wx_status wx_shard_writer_commit(wx_shard_writer *w) {
    WX_ASSERT(w->put == w->h.record_count);
    unsigned char hdr[WX_SHARD_HEADER_BYTES];
    wx_shard_header_pack(&w->h, hdr);
    w->h.header_crc = wx_shard_header_crc(hdr, w->offsets, w->crcs, w->h.record_count);
    wx_shard_header_pack(&w->h, hdr);
    wx_status st = WX_OK;
    if (fseeko(w->f.fp, 0, SEEK_SET) || fwrite(hdr, 1, sizeof hdr, w->f.fp) != sizeof hdr ||
        fwrite(w->offsets, 8, w->h.record_count, w->f.fp) != w->h.record_count ||
        fwrite(w->crcs, 4, w->h.record_count, w->f.fp) != w->h.record_count) {
        st = wx_error_set(WX_ERR_RUN, "%s: writing the shard tables failed: %s", w->f.path,
                          strerror(errno));
        wx_atomic_abort(&w->f);
    } else {
        st = wx_atomic_commit(&w->f);
    }
    writer_free(w);
    return st;
}

void wx_shard_writer_abort(wx_shard_writer *w) {
    if (!w) return;
    wx_atomic_abort(&w->f);
    writer_free(w);
}

int wx_shard_is_complete(const char *dir, int shard, const wx_archive_meta *m) {
    char name[64], path[4096];
    wx_archive_shard_name(shard, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    wx_shard_header exp, got;
    wx_shard_expected(m, shard, &exp);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char hdr[WX_SHARD_HEADER_BYTES];
    int ok = fread(hdr, 1, sizeof hdr, f) == sizeof hdr && !memcmp(hdr, WX_SHARD_MAGIC, 8);
    if (ok) {
        wx_shard_header_unpack(hdr, &got);
        ok = got.version == exp.version && got.dtype == exp.dtype &&
             got.record_count == exp.record_count && got.record_bytes == exp.record_bytes &&
             got.first_record == exp.first_record && got.key == exp.key &&
             got.data_offset == exp.data_offset;
    }
    if (ok) {
        uint64_t *off = wx_calloc(got.record_count + 1, 8);
        uint32_t *crc = wx_calloc(got.record_count + 1, 4);
        ok = fread(off, 8, got.record_count, f) == got.record_count &&
             fread(crc, 4, got.record_count, f) == got.record_count &&
             wx_shard_header_crc(hdr, off, crc, got.record_count) == got.header_crc;
        free(off);
        free(crc);
        int64_t size = 0;
        ok = ok && !fseeko(f, 0, SEEK_END) &&
             (size = ftello(f)) == (int64_t)(got.data_offset + got.record_count * got.record_stride);
    }
    fclose(f);
    return ok;
}
