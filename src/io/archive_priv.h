/* Shard header layout shared by io/archive*.c (docs/archive-format.md). */
#ifndef WX_ARCHIVE_PRIV_H
#define WX_ARCHIVE_PRIV_H

#include <stdint.h>

#include "io/archive.h"

#define WX_SHARD_MAGIC "WXRECRD1"

typedef struct {
    uint32_t version, dtype;
    uint64_t record_count, record_bytes, record_stride, first_record, data_offset, key;
    uint32_t header_crc;
} wx_shard_header;

void wx_shard_header_pack(const wx_shard_header *h, unsigned char *b);
void wx_shard_header_unpack(const unsigned char *b, wx_shard_header *h);
/* crc32 of header bytes 0..63, then the offset table, then the crc table. */
uint32_t wx_shard_header_crc(const unsigned char *hdr, const uint64_t *offsets, const uint32_t *crcs,
                             uint64_t n);
/* The header shard `shard` of archive `m` must have (header_crc left 0). */
void wx_shard_expected(const wx_archive_meta *m, int shard, wx_shard_header *h);

#endif
