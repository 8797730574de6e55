/* GraphCast memory by dry count (wx_gc_count_bytes: what wx_gc_create would allocate, without
 * allocating; tests/unit/test_graphcast_predict.c checks it against the device simulator's
 * allocations): a model created for prediction only (no tapes: forecasts, rollouts) and one
 * made for training with one tape, on the ops path (the device path) and the fused CPU path.
 * Config: a model YAML (e.g. configs/model/graphcast_small.yaml), optionally with another
 * resolution and mesh level (0.25 6 for the 0.25° grid on M6).
 * Build (after building the library in BUILD), as tests/bench/gc_ops_time.c:
 *   gcc -O2 -fopenmp -I src -I BUILD/generated tests/bench/gc_bytes.c BUILD/libwxcore.a \
 *       $(pkg-config --libs openblas fftw3f fftw3 netcdf yaml-0.1 libpng zlib) \
 *       -lfftw3f_threads -lfftw3_threads -leccodes -lm -o gc_bytes
 *   (a CUDA-enabled BUILD: compile with -c to gc_bytes.o, then link as bench_cuda is linked:
 *    cd BUILD/tests && g++ gc_bytes.o -o gc_bytes @CMakeFiles/bench_cuda.dir/linkLibs.rsp \
 *        -L/usr/local/cuda/targets/x86_64-linux/lib/stubs -L/usr/local/cuda/targets/x86_64-linux/lib)
 * Run: ./gc_bytes MODEL.yaml [RES LEVEL] [BATCH] */
#include <stdio.h>
#include <stdlib.h>

#include "core/wx_yaml.h"
#include "models/graphcast.h"

static double gib(int64_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

static int row(const wx_gc_config *c, int64_t batch, int tapes, int ckpt, int ops,
               const char *what) {
    wx_gc_bytes n;
    if (wx_gc_count_bytes(c, batch, tapes, ckpt, ops, 0, &n) != WX_OK)
        return fprintf(stderr, "gc_bytes: %s\n", wx_error_message()), 1;
    printf("%-38s arena %9.3f GiB  ops %7.3f GiB  params %6.3f GiB  total %9.3f GiB "
           "(%lld bytes)\n", what, gib(n.arena), gib(n.ops), gib(n.params), gib(n.total),
           (long long)n.total);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 4 && argc != 5)
        return fprintf(stderr, "usage: gc_bytes MODEL.yaml [RES LEVEL] [BATCH]\n"), 2;
    wx_yaml *root;
    wx_gc_config c;
    if (wx_yaml_load_file(argv[1], &root) != WX_OK)
        return fprintf(stderr, "gc_bytes: %s\n", wx_error_message()), 2;
    if (wx_gc_config_parse(root, "", &c) != WX_OK)
        return fprintf(stderr, "gc_bytes: %s\n", wx_error_message()), 2;
    wx_yaml_free(root);
    if (argc >= 4) { /* another grid and mesh, the rest of the model as configured */
        c.resolution = atof(argv[2]), c.mesh_max_level = atoll(argv[3]);
        if (wx_gc_config_derive(&c) != WX_OK)
            return fprintf(stderr, "gc_bytes: %s\n", wx_error_message()), 2;
    }
    const int64_t batch = argc == 5 ? atoll(argv[4]) : 1;
    printf("resolution %g, mesh M%lld..M%lld, latent %lld, %lld steps, batch %lld\n", c.resolution,
           (long long)c.mesh_min_level, (long long)c.mesh_max_level, (long long)c.latent_size,
           (long long)c.gnn_msg_steps, (long long)batch);
    return row(&c, batch, 0, 0, 1, "ops path, predict-only") ||
           row(&c, batch, 1, 1, 1, "ops path, 1 tape, checkpointing") ||
           row(&c, batch, 0, 0, 0, "fused CPU path, predict-only") ||
           row(&c, batch, 1, 1, 0, "fused CPU path, 1 tape, checkpointing");
}
