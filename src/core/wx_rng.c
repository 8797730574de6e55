#include "core/wx_rng.h"

#include <math.h>
#include <string.h>

#include "core/wx_error.h"

/* Constants from Random123 philox.h. */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void wx_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        if (round) { k0 += PHILOX_W0; k1 += PHILOX_W1; }
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

static void block(const wx_rng *r, uint64_t counter, uint32_t out[4]) {
    uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), (uint32_t)r->stream,
                       (uint32_t)(r->stream >> 32)};
    uint32_t key[2] = {(uint32_t)r->seed, (uint32_t)(r->seed >> 32)};
    wx_philox4x32_10(ctr, key, out);
}

void wx_rng_init(wx_rng *r, uint64_t seed, uint64_t stream) {
    memset(r, 0, sizeof *r);
    r->seed = seed;
    r->stream = stream;
    r->counter = 0;
    r->index = 4;
}

uint32_t wx_rng_u32(wx_rng *r) {
    if (r->index >= 4) {
        block(r, r->counter++, r->buf);
        r->index = 0;
    }
    return r->buf[r->index++];
}

uint64_t wx_rng_u64(wx_rng *r) {
    uint64_t lo = wx_rng_u32(r);
    return lo | (uint64_t)wx_rng_u32(r) << 32;
}

double wx_rng_uniform(wx_rng *r) { return (double)(wx_rng_u64(r) >> 11) * 0x1.0p-53; }

float wx_rng_uniform_f(wx_rng *r) { return (float)(wx_rng_u32(r) >> 8) * 0x1.0p-24f; }

uint64_t wx_rng_below(wx_rng *r, uint64_t n) {
    WX_ASSERT(n > 0);
    /* Reject the top partial copy of [0, n) so every residue is equally likely. */
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t x = wx_rng_u64(r);
        if (x >= threshold) return x % n;
    }
}

double wx_rng_normal(wx_rng *r) {
    double u1 = ((double)(wx_rng_u64(r) >> 11) + 1.0) * 0x1.0p-53; /* (0, 1]: log is finite */
    double u2 = wx_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double wx_rng_trunc_normal(wx_rng *r, double mean, double std, double a, double b) {
    WX_ASSERT(a < b);
    /* Rejection keeps the shape exactly; it only loops long for intervals far in the tails,
     * which no initialiser uses. */
    for (;;) {
        double z = wx_rng_normal(r);
        if (z >= a && z <= b) return mean + std * z;
    }
}

void wx_rng_fill_uniform_f32(wx_rng *r, float *x, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)wx_rng_uniform(r);
}

void wx_rng_fill_normal_f32(wx_rng *r, float *x, int64_t n, float mean, float std) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(mean + std * wx_rng_normal(r));
}

void wx_rng_fill_trunc_normal_f32(wx_rng *r, float *x, int64_t n, float mean, float std, float a,
                                  float b) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)wx_rng_trunc_normal(r, mean, std, a, b);
}

void wx_rng_permutation(wx_rng *r, int64_t *perm, int64_t n) {
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)wx_rng_below(r, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void wx_rng_pack(const wx_rng *r, uint8_t out[WX_RNG_PACKED_BYTES]) {
    memset(out, 0, WX_RNG_PACKED_BYTES);
    put_u64(out, r->seed);
    put_u64(out + 8, r->stream);
    put_u64(out + 16, r->counter);
    put_u64(out + 24, r->index); /* u32 LE followed by 4 zero bytes */
}

int wx_rng_unpack(wx_rng *r, const uint8_t in[WX_RNG_PACKED_BYTES]) {
    uint64_t index = get_u64(in + 24);
    if (index > 4) return -1;
    wx_rng_init(r, get_u64(in), get_u64(in + 8));
    r->counter = get_u64(in + 16);
    r->index = (uint32_t)index;
    /* buf holds the block before `counter`; an index < 4 with counter 0 cannot occur. */
    if (r->index < 4) {
        if (r->counter == 0) return -1;
        block(r, r->counter - 1, r->buf);
    }
    return 0;
}
