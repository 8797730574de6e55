/* The machine's float32 FMA peak per core, the ceiling every GEMM rate is read against
 * (docs/benchmarks.md): 10 independent chains of 256-bit FMAs (enough to cover the FMA latency
 * on two pipes) per OpenMP thread, no memory traffic. Prints one JSON line per thread with
 * GFLOP/s (2 FLOP per lane per FMA). Usage: fma_peak [iterations] (default 2e8). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 200000000L;
#pragma omp parallel
    {
        enum { CHAINS = 10 };
        __m256 a[CHAINS], b = _mm256_set1_ps(1.0000001f), c = _mm256_set1_ps(1e-9f);
        for (int i = 0; i < CHAINS; i++) a[i] = _mm256_set1_ps((float)i);
#pragma omp barrier
        double t0 = now();
        for (long i = 0; i < iters; i++)
            for (int j = 0; j < CHAINS; j++) a[j] = _mm256_fmadd_ps(a[j], b, c);
        double t = now() - t0;
        float sink = 0;
        for (int i = 0; i < CHAINS; i++) sink += a[i][0];
#pragma omp critical
        printf("{\"thread\": %d, \"fma_gflops\": %.1f, \"sink\": %g}\n", omp_get_thread_num(),
               (double)iters * CHAINS * 16 / t * 1e-9, sink);
    }
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "fma_peak: built without AVX2/FMA\n");
    return 77;
}
#endif
