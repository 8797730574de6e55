/* CPU time of GraphCast's ops path (graphcast_ops*.c, the device path run on the CPU backend):
 * predict and one training step (forward + backward) at batch 1, 1 thread, averaged over REPS
 * after one warm-up predict; getrusage CPU time next to wall time (the machine is shared).
 * Also prints the graph sizes, the arena and the ops path's own buffers (wx_gc_ops_bytes).
 * Build (after building the library in BUILD), as tests/bench/gc_memory.c:
 *   gcc -O2 -fopenmp -I src -I BUILD/generated tests/bench/gc_ops_time.c BUILD/libwxcore.a \
 *       $(pkg-config --libs openblas fftw3f fftw3 netcdf yaml-0.1 libpng zlib) \
 *       -lfftw3f_threads -lfftw3_threads -leccodes -lm -o gc_ops_time
 *   (a CUDA-enabled BUILD also needs the link line of BUILD/tests/bench_cuda)
 * Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 ./gc_ops_time RES LEVEL LATENT STEPS REPS */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "core/wx_yaml.h"
#include "models/graphcast.h"
#include "models/graphcast_ops.h"

static double cpu_s(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           1e-6 * (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

static double wall_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(void) { return fprintf(stderr, "gc_ops_time: %s\n", wx_error_message()), 1; }

int main(int argc, char **argv) {
    if (argc != 6) return fprintf(stderr, "usage: gc_ops_time RES LEVEL LATENT STEPS REPS\n"), 2;
    char yaml[512];
    snprintf(yaml, sizeof yaml, "type: graphcast\nresolution: %s\nmesh_max_level: %s\n"
             "latent_size: %s\ngnn_msg_steps: %s\n", argv[1], argv[2], argv[3], argv[4]);
    const int reps = atoi(argv[5]);
    wx_yaml *root;
    wx_gc_config c;
    if (reps < 1 || wx_yaml_load_string(yaml, "args", &root) || wx_gc_config_parse(root, "", &c))
        return fprintf(stderr, "gc_ops_time: bad arguments %s\n", wx_error_message()), 2;
    wx_yaml_free(root);
    wx_ctx *ctx = wx_ctx_create(1);
    wx_gc *m = wx_gc_create_path(ctx, wx_backend_cpu(), &c, 1, 1, 1, 0, 1);
    if (!m) return fail();
    const int64_t hw = c.nlat * c.nlon, nin = c.in_channels * hw, nout = c.out_channels * hw;
    float *x = malloc(sizeof(float) * (size_t)nin), *y = malloc(sizeof(float) * (size_t)nout);
    float *dx = malloc(sizeof(float) * (size_t)nin);
    for (int64_t i = 0; i < nin; i++) x[i] = (float)((uint32_t)(i * 2654435761u) % 1000) / 1000.f - 0.5f;
    if (wx_gc_run_predict(m, y, x, 1) != WX_OK) return fail();
    double c0 = cpu_s(), w0 = wall_s();
    for (int r = 0; r < reps; r++)
        if (wx_gc_run_predict(m, y, x, 1) != WX_OK) return fail();
    const double cp = (cpu_s() - c0) / reps, wp = (wall_s() - w0) / reps;
    for (int64_t i = 0; i < nout; i++) y[i] = 0.01f; /* dy */
    c0 = cpu_s(), w0 = wall_s();
    for (int r = 0; r < reps; r++)
        if (wx_gc_run_forward(m, dx, x, 1) != WX_OK || wx_gc_run_backward(m, dx, y) != WX_OK)
            return fail();
    const double ct = (cpu_s() - c0) / reps, wt = (wall_s() - w0) / reps;
    int64_t tb, ob;
    wx_gc_arena_bytes(m, &tb, &ob);
    printf("grid %lld mesh %lld nodes, g2m %lld mesh %lld m2g %lld edges, D %lld, steps %lld | "
           "predict cpu %.3f s wall %.3f s | forward+backward cpu %.3f s wall %.3f s | arena tape "
           "%.1f MiB other %.1f MiB, ops buffers %.1f MiB\n",
           (long long)m->ng, (long long)m->nm, (long long)m->eg, (long long)m->em,
           (long long)m->ed, (long long)m->D, (long long)m->S, cp, wp, ct, wt, tb / 1048576.0,
           ob / 1048576.0, wx_gc_ops_bytes(m) / 1048576.0);
    free(x), free(y), free(dx);
    wx_gc_destroy(m);
    wx_ctx_destroy(ctx);
    return 0;
}
