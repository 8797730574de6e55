/* Archive metadata, float16 conversion and shard headers (see io/archive.h,
 * docs/archive-format.md); the shard writer is in archive_write.c. */
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
