/* Peak RSS of one GraphCast training step (forward + backward) with and without activation
 * checkpointing, in a fresh process each (ru_maxrss), plus the activation arena sizes.
 * Build (after building the library in BUILD):
 *   gcc -O2 -fopenmp -I src -I BUILD/generated tests/bench/gc_memory.c BUILD/libwxcore.a \
 *       $(pkg-config --libs openblas fftw3f fftw3 netcdf yaml-0.1 libpng zlib) \
 *       -lfftw3f_threads -lfftw3_threads -leccodes -lm -o gc_memory
 * Run: ./gc_memory RES MESH_LEVEL LATENT STEPS CHECKPOINT(0|1) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "core/wx_yaml.h"
#include "models/graphcast.h"

int main(int argc, char **argv) {
    if (argc != 6) return fprintf(stderr, "usage: gc_memory RES LEVEL LATENT STEPS CKPT\n"), 2;
    char yaml[512];
    snprintf(yaml, sizeof yaml, "type: graphcast\nresolution: %s\nmesh_max_level: %s\n"
             "latent_size: %s\ngnn_msg_steps: %s\n", argv[1], argv[2], argv[3], argv[4]);
    wx_yaml *root;
    wx_gc_config c;
    if (wx_yaml_load_string(yaml, "args", &root) || wx_gc_config_parse(root, "", &c))
        return fprintf(stderr, "%s\n", wx_error_message()), 2;
    wx_ctx *ctx = wx_ctx_create(1);
    wx_gc *m = wx_gc_create(ctx, wx_backend_cpu(), &c, 1, 1, 1, atoi(argv[5]));
    if (!m) return fprintf(stderr, "%s\n", wx_error_message()), 1;
    int64_t n_in = c.in_channels * c.nlat * c.nlon, n_out = c.out_channels * c.nlat * c.nlon;
    float *x = calloc((size_t)n_in, 4), *y = calloc((size_t)n_out, 4), *dy = calloc((size_t)n_out, 4);
    for (int64_t i = 0; i < n_in; i++) x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (int64_t i = 0; i < n_out; i++) dy[i] = 1e-3f;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (wx_gc_forward(m, y, x, 1) || wx_gc_backward(m, NULL, dy))
        return fprintf(stderr, "%s\n", wx_error_message()), 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t tape, other;
    wx_gc_arena_bytes(m, &tape, &other);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("res %s mesh %s latent %s steps %s ckpt %s: Ng %lld Nm %lld E g2m/mesh/m2g %lld/%lld/%lld "
           "params %lld; tape %.1f MiB, other arena %.1f MiB, peak RSS %.1f MiB, step %.2f s\n",
           argv[1], argv[2], argv[3], argv[4], argv[5], (long long)m->ng, (long long)m->nm,
           (long long)m->eg, (long long)m->em, (long long)m->ed,
           (long long)wx_params_total(&m->params), tape / 1048576.0, other / 1048576.0,
           ru.ru_maxrss / 1024.0, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return 0;
}
