/* Deterministic random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3", SC11; the generator of Random123 and of cuRAND's Philox4_32_10).
 *
 * Counter-based: block i of stream s under seed k is philox(ctr = {i lo, i hi, s lo, s hi},
 * key = {k lo, k hi}), four 32-bit words per block, consumed in order. So the state is four
 * numbers (seed, stream, block counter, word index), any block can be computed directly (a CUDA
 * kernel or an OpenMP loop can generate element j without touching the others), and streams with
 * different ids never overlap. The stream convention: 0 = weights init, 1 = data order,
 * 2 = noise/ensembles, others free.
 *
 * The state is a plain struct; wx_rng_pack/unpack give a fixed 32-byte little-endian record for
 * checkpoints, so a resumed run continues the exact same sequence. */
#ifndef WX_RNG_H
#define WX_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t seed;    /* the Philox key */
    uint64_t stream;  /* high half of the counter */
    uint64_t counter; /* next block to generate (low half of the counter) */
    uint32_t index;   /* next word in buf; 4 = buf used up */
    uint32_t buf[4];  /* block counter-1 (recomputable from the four fields above) */
} wx_rng;

#define WX_RNG_PACKED_BYTES 32

/* One Philox4x32-10 block (the Random123 reference function). */
void wx_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

void wx_rng_init(wx_rng *r, uint64_t seed, uint64_t stream);
uint32_t wx_rng_u32(wx_rng *r);
uint64_t wx_rng_u64(wx_rng *r); /* two words, first is the low half */
/* Uniform in [0, 1): 53 random bits (double) / 24 random bits (float). */
double wx_rng_uniform(wx_rng *r);
float wx_rng_uniform_f(wx_rng *r);
/* Unbiased integer in [0, n), n > 0 (rejection sampling). */
uint64_t wx_rng_below(wx_rng *r, uint64_t n);
/* Standard normal by Box-Muller (cosine branch; uses two uniforms, u1 in (0, 1]). */
double wx_rng_normal(wx_rng *r);
/* Normal(mean, std) truncated to [mean + a·std, mean + b·std] by rejection (a < b).
 * Note: torch.nn.init.trunc_normal_(t, std=s, a=-2, b=2) takes a and b as ABSOLUTE bounds, so
 * with s = 0.02 it is practically untruncated; to reproduce that distribution pass a = -2/s,
 * b = 2/s. a = -2, b = 2 gives the usual "within two standard deviations". */
double wx_rng_trunc_normal(wx_rng *r, double mean, double std, double a, double b);

/* Tensor fills (x: (n,)), consuming the stream in element order. */
void wx_rng_fill_uniform_f32(wx_rng *r, float *x, int64_t n, float lo, float hi);
void wx_rng_fill_normal_f32(wx_rng *r, float *x, int64_t n, float mean, float std);
void wx_rng_fill_trunc_normal_f32(wx_rng *r, float *x, int64_t n, float mean, float std,
                                  float a, float b);

/* Fisher-Yates: perm (n,) becomes a uniformly random permutation of 0..n-1. */
void wx_rng_permutation(wx_rng *r, int64_t *perm, int64_t n);

/* Checkpoint record: seed, stream, counter (u64 LE each), index (u32 LE), 4 zero bytes. */
void wx_rng_pack(const wx_rng *r, uint8_t out[WX_RNG_PACKED_BYTES]);
/* Returns 0 on success, -1 when the record is not a valid state (index > 4). */
int wx_rng_unpack(wx_rng *r, const uint8_t in[WX_RNG_PACKED_BYTES]);

#endif
