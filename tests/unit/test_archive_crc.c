/* wx_archive_crc32 equals zlib's crc32 (the independent reference; archives store zlib values)
 * for every length 0..1100 at every start offset 0..15, for chained calls split anywhere, for
 * all-zero and all-one bytes, and for a 4 MB record-sized buffer. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/archive.h"
#include "wx_test.h"

static uint32_t ref(uint32_t c, const unsigned char *p, size_t n) { return (uint32_t)crc32(c, p, (uInt)n); }

int main(void) {
    size_t big = 721 * 1440 * 4 + 20;
    unsigned char *b = malloc(big);
    uint64_t s = 88172645463325252ULL;
    for (size_t i = 0; i < big; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        b[i] = (unsigned char)(s >> 24);
    }
    long bad = 0;
    for (size_t off = 0; off < 16; off++)
        for (size_t n = 0; n <= 1100; n++) bad += wx_archive_crc32(0, b + off, n) != ref(0, b + off, n);
    WX_CHECK(bad == 0, "lengths 0..1100 x offsets 0..15: %ld differ from zlib", bad);
    bad = 0;
    for (size_t cut = 0; cut <= 700; cut += 7) {
        uint32_t c = wx_archive_crc32(0, b, cut);
        c = wx_archive_crc32(c, b + cut, 1500 - cut);
        bad += c != ref(0, b, 1500);
    }
    WX_CHECK(bad == 0, "chained at 101 split points: %ld differ", bad);
    unsigned char z[4096];
    memset(z, 0, sizeof z);
    WX_CHECK(wx_archive_crc32(0, z, sizeof z) == ref(0, z, sizeof z), "zeros");
    memset(z, 0xff, sizeof z);
    WX_CHECK(wx_archive_crc32(0, z, sizeof z) == ref(0, z, sizeof z), "0xff bytes");
    WX_CHECK(wx_archive_crc32(0, "123456789", 9) == 0xCBF43926u, "check value of CRC-32");
    for (size_t off = 0; off < 3; off++)
        WX_CHECK(wx_archive_crc32(0, b + off, big - 20) == ref(0, b + off, big - 20),
                 "a 721x1440 float32 channel at offset %zu", off);
    WX_CHECK(wx_archive_crc32(0x12345678u, b, 4096) == ref(0x12345678u, b, 4096), "nonzero start");
    free(b);
    return wx_test_summary();
}
