/* GraphCast benchmark (issue 6), wxcast side; the PyTorch peer is tests/bench/graphcast_torch_step.py
 * and tests/bench/bench_graphcast.sh runs both and prints the table.
 *
 *   bench_graphcast train RES LEVEL LATENT STEPS CIN COUT [n]
 *        one training step at batch 1 = zero grad, forward (tape), latitude-weighted MSE and its
 *        backward, model backward, AdamW (β 0.9/0.95, wd 0.1) on the whole parameter buffer;
 *        median of n (default 5) after 2 warm-up steps. Model: RES-degree grid (poles included),
 *        multi-mesh M0..M_LEVEL, latent LATENT, STEPS processor steps, CIN/COUT channels.
 *   bench_graphcast rollout MODEL.yaml [steps]
 *        a forecast of `steps` (default 40 = 10 days) 6-hour steps of the model through the
 *        trainer's model interface (train_model.h: make_input once, then predict + next_input,
 *        which computes the ERA5-style TISR and the other forcings of every new target time),
 *        batch 1, no tapes; normalisation statistics are stand-ins (mean 0, std 1, diff_std 1):
 *        the arithmetic is that of a real forecast. Reports the model build (graphs + weights)
 *        and the per-step time.
 * One mode per process, so its peak RSS (getrusage ru_maxrss) is its own. Output: one JSON object.
 * Threads: OMP_NUM_THREADS (OpenBLAS gets the same count). Not a test: nothing asserts a time. */
#include <cblas.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <omp.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "models/graphcast.h"
#include "train/train_model.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* 1-minute load average (/proc/loadavg), -1 when unreadable: timings on a shared machine mean
 * little without it. */
static double load1(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

/* Sums over this process's threads of the time spent running and waiting for a CPU
 * (/proc/self/task/TID/schedstat, ns). Over an interval, (Δrun + Δwait) / Δwall is how many of
 * our threads were runnable on average, whatever the machine's load: 2.0 for a 2-thread team that
 * never sleeps; less means threads sleeping at barriers (serial parts, uneven splits). */
static void sched_totals(double *run, double *wait) {
    *run = *wait = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        unsigned long long r = 0, w = 0;
        if (fscanf(f, "%llu %llu", &r, &w) == 2) *run += r * 1e-9, *wait += w * 1e-9;
        fclose(f);
    }
    closedir(d);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int die(void) {
    fprintf(stderr, "bench_graphcast: %s\n", wx_error_message());
    return 1;
}

static int train(int argc, char **argv) {
    if (argc < 8) return fprintf(stderr, "usage: bench_graphcast train RES LEVEL LATENT STEPS CIN COUT [n]\n"), 2;
    int n = argc > 8 ? atoi(argv[8]) : 5;
    int cin = atoi(argv[6]), cout = atoi(argv[7]);
    /* cin/cout through the variable lists: cout surface targets, forcings/statics padding cin */
    char yaml[4096];
    int used = snprintf(yaml, sizeof yaml, "type: graphcast\nresolution: %s\nmesh_max_level: %s\n"
                        "latent_size: %s\ngnn_msg_steps: %s\ninput_steps: 1\natmospheric_variables: []\n"
                        "forcings: []\nsurface_variables: [", argv[2], argv[3], argv[4], argv[5]);
    for (int i = 0; i < cout; i++) used += snprintf(yaml + used, sizeof yaml - used, "%sv%d", i ? ", " : "", i);
    used += snprintf(yaml + used, sizeof yaml - used, "]\nstatic_variables: [");
    for (int i = 0; i < cin - cout; i++) used += snprintf(yaml + used, sizeof yaml - used, "%ss%d", i ? ", " : "", i);
    snprintf(yaml + used, sizeof yaml - used, "]\n");
    wx_yaml *root;
    wx_gc_config c;
    if (wx_yaml_load_string(yaml, "args", &root) || wx_gc_config_parse(root, "", &c)) return die();
    int threads = omp_get_max_threads();
    wx_ctx *ctx = wx_ctx_create(threads);
    openblas_set_num_threads(threads);
    const wx_backend *be = wx_backend_cpu();
    double t0 = now_s();
    wx_gc *m = wx_gc_create(ctx, be, &c, 1, 1, 1, 0);
    if (!m) return die();
    double build_s = now_s() - t0;
    const int64_t hw = c.nlat * c.nlon, nin = c.in_channels * hw, nout = c.out_channels * hw;
    float *x = malloc(4 * (size_t)nin), *y = malloc(4 * (size_t)nout), *tg = malloc(4 * (size_t)nout);
    float *dy = malloc(4 * (size_t)nout), *wlat = malloc(4 * (size_t)c.nlat), *wch = malloc(4 * (size_t)cout);
    for (int64_t i = 0; i < nin; i++) x[i] = sinf(0.37f * (float)i) * 0.8f;
    for (int64_t i = 0; i < nout; i++) tg[i] = cosf(0.11f * (float)i) * 0.5f;
    for (int64_t j = 0; j < c.nlat; j++) wlat[j] = 1.0f;
    for (int i = 0; i < cout; i++) wch[i] = 1.0f;
    wx_params *p = &m->params;
    float *am = calloc((size_t)p->len, 4), *av = calloc((size_t)p->len, 4);
    double *ts = malloc(sizeof(double) * (size_t)(n + 2)), *cs = malloc(sizeof(double) * (size_t)(n + 2));
    float loss = 0;
    for (int it = 0; it < n + 2; it++) {
        double a = now_s(), ac = cpu_s();
        wx_params_zero_grad(p);
        if (wx_gc_forward(m, y, x, 1) ||
            be->mse_latw_forward(ctx, &loss, y, tg, wlat, wch, 1, cout, c.nlat, c.nlon) ||
            be->mse_latw_backward(ctx, dy, 1.0, y, tg, wlat, wch, 1, cout, c.nlat, c.nlon) ||
            wx_gc_backward(m, NULL, dy) ||
            be->adamw_forward(ctx, p->data, am, av, p->grad, p->len, 1e-4, 0.9, 0.95, 1e-8, 0.1, it + 1))
            return die();
        ts[it] = now_s() - a;
        cs[it] = cpu_s() - ac;
    }
    qsort(ts + 2, (size_t)n, sizeof(double), cmp_d);
    qsort(cs + 2, (size_t)n, sizeof(double), cmp_d);
    int64_t tape, other;
    wx_gc_arena_bytes(m, &tape, &other);
    printf("{\"impl\": \"wxcast\", \"mode\": \"train\", \"threads\": %d, \"grid\": [%lld, %lld], "
           "\"mesh_nodes\": %lld, \"edges\": [%lld, %lld, %lld], \"params\": %lld, "
           "\"build_s\": %.3f, \"step_s\": %.4f, \"step_min_s\": %.4f, \"cpu_s\": %.4f, \"loss\": %.6g, "
           "\"tape_mb\": %.1f, \"peak_rss_mb\": %.1f}\n",
           threads, (long long)c.nlat, (long long)c.nlon, (long long)m->nm, (long long)m->eg,
           (long long)m->em, (long long)m->ed, (long long)wx_params_total(p), build_s, ts[2 + n / 2],
           ts[2], cs[2 + n / 2], loss, tape / 1048576.0, peak_rss_mb());
    wx_gc_destroy(m);
    wx_ctx_destroy(ctx);
    wx_yaml_free(root);
    free(x), free(y), free(tg), free(dy), free(wlat), free(wch), free(am), free(av), free(ts), free(cs);
    return 0;
}

static int rollout(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: bench_graphcast rollout MODEL.yaml [steps]\n"), 2;
    int steps = argc > 3 ? atoi(argv[3]) : 40;
    wx_yaml *root;
    if (wx_yaml_load_file(argv[2], &root)) return die();
    int threads = omp_get_max_threads();
    wx_ctx *ctx = wx_ctx_create(threads);
    openblas_set_num_threads(threads);
    double t0 = now_s();
    wx_train_model *m;
    if (wx_train_model_create_ex(root, "", ctx, wx_backend_cpu(), 1, 1, 0, 0, &m)) return die();
    double build_s = now_s() - t0;
    const int64_t hw = m->h * m->w, cout = m->out_channels, cin = m->in_channels;
    wx_train_data d;
    memset(&d, 0, sizeof d);
    d.nstate = (int)cout, d.nstatic = m->nstatic, d.dt_s = 21600;
    double *one = malloc(sizeof(double) * (size_t)cout), *zero = calloc((size_t)cout, sizeof(double));
    for (int64_t c = 0; c < cout; c++) one[c] = 1.0;
    d.mean = zero, d.std = one, d.diff_std = one;
    if (wx_train_model_attach(m, &d)) return die();
    int64_t W = m->window > 0 ? m->window : 1;
    float *states = malloc(4 * (size_t)(W * cout * hw)), *x[2], *y = malloc(4 * (size_t)(cout * hw));
    for (int i = 0; i < 2; i++) x[i] = malloc(4 * (size_t)(cin * hw));
    for (int64_t i = 0; i < W * cout * hw; i++) states[i] = sinf(0.37f * (float)i) * 0.8f;
    wx_time t = 1704067200 + 21600; /* first target: 2024-01-01T06 */
    double a = now_s();
    if (wx_train_model_make_input(m, x[0], states, &t, 1)) return die();
    double first_input_s = now_s() - a, pred_s = 0, next_s = 0, pred_cpu = 0, load0 = load1();
    double pred_runnable = 0; /* Σ over predicts of (Δrun + Δwait) of all our threads */
    for (int k = 0; k < steps; k++) {
        double b = now_s(), bc = cpu_s(), r0, w0, r1, w1;
        sched_totals(&r0, &w0);
        if (m->ops->predict(m, y, x[k % 2], 1)) return die();
        double c = now_s(), cc = cpu_s();
        sched_totals(&r1, &w1);
        pred_cpu += cc - bc, pred_runnable += (r1 - r0) + (w1 - w0);
        t += 21600;
        if (k + 1 < steps && wx_train_model_next_input(m, x[(k + 1) % 2], x[k % 2], y, &t, 1)) return die();
        pred_s += c - b, next_s += now_s() - c;
        /* progress on stderr, so a run stopped early still leaves its per-step times */
        fprintf(stderr, "rollout step %d/%d: predict %.2f s (CPU %.2f s, runnable threads %.2f), "
                "next_input %.2f s, elapsed %.1f s, process CPU %.1f s, load %.2f\n", k + 1, steps,
                c - b, cc - bc, ((r1 - r0) + (w1 - w0)) / (c - b), now_s() - c, now_s() - a,
                cpu_s(), load1());
    }
    double total = now_s() - a;
    double mx = 0;
    for (int64_t i = 0; i < cout * hw; i++) mx = fmax(mx, fabs(y[i]));
    printf("{\"impl\": \"wxcast\", \"mode\": \"rollout\", \"model\": \"%s\", \"threads\": %d, "
           "\"steps\": %d, \"params\": %lld, \"build_s\": %.2f, \"first_input_s\": %.3f, "
           "\"total_s\": %.2f, \"predict_per_step_s\": %.3f, \"predict_cpu_per_step_s\": %.3f, "
           "\"predict_runnable_threads\": %.2f, "
           "\"next_input_per_step_s\": %.3f, \"load_start\": %.2f, \"load_end\": %.2f, "
           "\"max_abs_last\": %.4g, \"peak_rss_mb\": %.1f}\n",
           argv[2], threads, steps, (long long)wx_params_total(m->params), build_s, first_input_s,
           total, pred_s / steps, pred_cpu / steps, pred_runnable / pred_s, next_s / (steps > 1 ? steps - 1 : 1), load0,
           load1(), mx, peak_rss_mb());
    wx_train_model_destroy(m);
    wx_ctx_destroy(ctx);
    wx_yaml_free(root);
    free(states), free(x[0]), free(x[1]), free(y), free(one), free(zero);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "train")) return train(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "rollout")) return rollout(argc, argv);
    fprintf(stderr, "usage: bench_graphcast train RES LEVEL LATENT STEPS CIN COUT [n] | "
                    "rollout MODEL.yaml [steps]\n");
    return 2;
}
