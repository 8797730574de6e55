/* Data-parallel training on a device backend without a GPU: 2 MPI ranks, each training the tiny
 * FourCastNet on the device simulator (tests/support/wx_devsim.h), against 2 ranks on the CPU
 * backend. On a device backend without NCCL the trainer all-reduces a host copy of the gradient
 * through the same MPI path, and decides and broadcasts the starting point in host copies before
 * uploading it, so everything must be bitwise the CPU run's:
 *  - 6 steps (global batch 4, 2 per rank, clipping on, validation split over the ranks):
 *    last.ckpt and best.ckpt byte-identical, the same metrics (loss, grad_norm, rmse);
 *  - 3 steps + --resume for 3 more on the simulator: the same bytes again;
 *  - --zero1 on the simulator (shards through host copies), 3 steps + --resume for 3: the same
 *    bytes as 2 CPU ranks with --zero1, and as plain data parallel on the CPU;
 *  - --zero1 through device collectives (the trainer's NCCL path, wx_train_opts.dev_coll; here
 *    the simulator's stand-in: shard reduce and all-gather on host copies inside the hook, which
 *    checks that it gets device buffers of the parameter length and that train/zero1_shard.h cuts
 *    wx_dist_split's shards), 6 steps: the same bytes again, one reduce-scatter and one
 *    all-gather per step on each rank;
 *  - no simulator violation on any rank (a rank with one fails its run).
 * The binary is its own MPI program: `test_mpi_train_devsim worker CONFIG BACKEND MAX_STEPS RESUME
 * ZERO1` is what mpirun starts. Exits 77 when built without MPI or mpirun is missing. */
#include "mpi_run.h"

#include "cli_check.h"
#include "train/distributed.h"
#include "train/trainer.h"
#include "train/zero1_shard.h"
#include "wx_devsim.h"

static char self[1024];

/* ZeRO-1's device collectives as the NCCL path defines them (wx_cuda_nccl.h), on the simulator:
 * the host path's sums (so the bits must match) reached from device buffers. */
typedef struct {
    const wx_backend *be;
    wx_ctx *ctx;
    long reduce_scatters, allgathers;
} sim_coll;

/* This rank's shard by zero1_shard.h, which must be wx_dist_split's. */
static wx_status sim_shard(int64_t len, int64_t *off, int64_t *cnt) {
    int n = wx_dist_size(), r = wx_dist_rank();
    int64_t o[64], c[64];
    if (n > 64) return wx_error_set(WX_ERR_USAGE, "sim_coll: %d ranks", n);
    wx_dist_split(len, n, o, c);
    wx_zero1_shard(len, n, r, off, cnt);
    if (*off != o[r] || *cnt != c[r])
        return wx_error_set(WX_ERR_RUN, "zero1_shard(%lld, %d, %d) = [%lld, +%lld), wx_dist_split: "
                            "[%lld, +%lld)", (long long)len, n, r, (long long)*off, (long long)*cnt,
                            (long long)o[r], (long long)c[r]);
    return WX_OK;
}

static wx_status sim_reduce_scatter(void *state, float *grad, int64_t len) {
    sim_coll *sc = state;
    int64_t off, cnt;
    WX_TRY(sim_shard(len, &off, &cnt));
    float *h = malloc(sizeof(float) * (size_t)len);
    /* a host pointer here would be a devsim violation: the copy checks its direction */
    wx_status s = sc->be->copy_d2h(sc->ctx, h, grad, sizeof(float) * (size_t)len);
    if (s == WX_OK) s = wx_dist_reduce_scatter_avg(h, len);
    if (s == WX_OK) s = sc->be->copy_h2d(sc->ctx, grad + off, h + off, sizeof(float) * (size_t)cnt);
    free(h);
    sc->reduce_scatters++;
    return s;
}

static wx_status sim_allgather(void *state, float *data, int64_t len) {
    sim_coll *sc = state;
    int64_t off, cnt;
    WX_TRY(sim_shard(len, &off, &cnt));
    float *h = calloc((size_t)len, sizeof(float));
    wx_status s = sc->be->copy_d2h(sc->ctx, h + off, data + off, sizeof(float) * (size_t)cnt);
    if (s == WX_OK) s = wx_dist_allgather_shards(h, len);
    if (s == WX_OK) s = sc->be->copy_h2d(sc->ctx, data, h, sizeof(float) * (size_t)len);
    free(h);
    sc->allgathers++;
    return s;
}

static int worker(char **argv) {
    wx_status s = wx_dist_init(NULL, NULL);
    const wx_backend *be = strcmp(argv[3], "devsim") ? wx_backend_cpu() : wx_devsim_backend();
    wx_train_config c;
    memset(&c, 0, sizeof c);
    if (s == WX_OK) s = wx_dist_agree(wx_train_config_load(argv[2], "pretrain", &c));
    wx_train_opts o;
    memset(&o, 0, sizeof o);
    o.metrics = "m.jsonl", o.max_steps = atoll(argv[4]), o.backend = be, o.threads = 1;
    o.resume = strcmp(argv[5], "-") ? argv[5] : NULL;
    o.zero1 = atoi(argv[6]) != 0;
    sim_coll sc = {be, wx_ctx_create(1), 0, 0};
    wx_train_dev_coll coll = {"simulated device collectives", &sc, sim_reduce_scatter, sim_allgather};
    if (atoi(argv[6]) == 2) o.dev_coll = &coll;
    wx_train_summary sum;
    if (s == WX_OK) s = wx_train_run(&c, &o, &sum);
    if (s == WX_OK && wx_devsim_violations())
        s = wx_error_set(WX_ERR_RUN, "devsim violation: %s", wx_devsim_first_violation());
    if (o.dev_coll)
        fprintf(stderr, "dev_coll: %ld reduce_scatter, %ld allgather\n", sc.reduce_scatters,
                sc.allgathers);
    wx_ctx_destroy(sc.ctx);
    s = wx_dist_agree(s);
    wx_train_config_free(&c);
    if (s != WX_OK && !wx_dist_failure_is_remote()) fprintf(stderr, "error: %s\n", wx_error_message());
    wx_dist_finalize();
    return (int)s;
}

/* mpirun -np 2 self worker ... in <tmp>/<dir>; the exit code. */
static int run2(const char *dir, const char *backend, int64_t max_steps, const char *resume,
                int zero1, const char *tag) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s/%s && env OMP_NUM_THREADS=1 timeout -s KILL 120 mpirun "
             "--allow-run-as-root --oversubscribe --bind-to none -np 2 %s worker train.yaml %s "
             "%lld %s %d >%s.out 2>%s.err", mpi_tmp, dir, self, backend, (long long)max_steps,
             resume ? resume : "-", zero1, tag, tag);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Metrics without the timing fields. */
static char *untimed(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/m.jsonl", mpi_tmp, dir);
    return metrics_untimed_text(path);
}

static void same(const char *a, const char *b, const char *what) {
    const char *names[2] = {"last", "best"};
    for (int i = 0; i < 2; i++) {
        char pa[1024], pb[1024];
        snprintf(pa, sizeof pa, "%s/%s/ckpt/pretrain/%s.ckpt", mpi_tmp, a, names[i]);
        snprintf(pb, sizeof pb, "%s/%s/ckpt/pretrain/%s.ckpt", mpi_tmp, b, names[i]);
        WX_CHECK(files_equal(pa, pb), "%s: %s.ckpt byte-identical to 2 CPU ranks'", what, names[i]);
    }
    char *ma = untimed(a), *mb = untimed(b);
    WX_CHECK(strlen(ma) > 200 && !strcmp(ma, mb), "%s: the same metrics", what);
    free(ma), free(mb);
}

int main(int argc, char **argv) {
    if (argc == 7 && !strcmp(argv[1], "worker")) return worker(argv);
    int rc = mpi_setup(toy_archive_write);
    if (rc) return rc == 77 ? 77 : wx_test_summary();
    if (!realpath(argv[0], self)) snprintf(self, sizeof self, "%s", argv[0]);
    const char *dirs[6] = {"cpu", "sim", "sim_resume", "zero1", "zero1_cpu", "zero1_dev"};
    for (int i = 0; i < 6; i++)
        mpi_write_run_dir_opt(dirs[i], toy_model_yaml, 6, 4, "2.0e-3", "0.05", NULL);
    WX_CHECK(run2("cpu", "cpu", 0, NULL, 0, "run") == 0, "2 CPU ranks: %s",
             mpi_slurp("cpu", "run.err"));
    WX_CHECK(run2("sim", "devsim", 0, NULL, 0, "run") == 0, "2 simulator ranks: %s",
             mpi_slurp("sim", "run.err"));
    char *log = mpi_slurp("sim", "run.err");
    WX_CHECK(strstr(log, "over 2 ranks on devsim") && strstr(log, "through host copies"),
             "the simulator run all-reduced host copies over 2 ranks");
    free(log);
    same("cpu", "sim", "2 simulator ranks");
    WX_CHECK(run2("sim_resume", "devsim", 3, NULL, 0, "half") == 0, "simulator half: %s",
             mpi_slurp("sim_resume", "half.err"));
    WX_CHECK(run2("sim_resume", "devsim", 0, "ckpt/pretrain/last.ckpt", 0, "rest") == 0,
             "simulator resume: %s", mpi_slurp("sim_resume", "rest.err"));
    same("cpu", "sim_resume", "2 simulator ranks, 3 steps + resume");
    /* ZeRO-1 on the device: shards reduce-scattered and all-gathered through host copies, AdamW
     * moments sharded in device memory and gathered for the checkpoint; 3 steps + resume for 3 */
    WX_CHECK(run2("zero1_cpu", "cpu", 0, NULL, 1, "run") == 0, "2 CPU ranks, ZeRO-1: %s",
             mpi_slurp("zero1_cpu", "run.err"));
    WX_CHECK(run2("zero1", "devsim", 3, NULL, 1, "half") == 0, "2 simulator ranks, ZeRO-1, half: %s",
             mpi_slurp("zero1", "half.err"));
    WX_CHECK(run2("zero1", "devsim", 0, "ckpt/pretrain/last.ckpt", 1, "rest") == 0,
             "2 simulator ranks, ZeRO-1, resumed: %s", mpi_slurp("zero1", "rest.err"));
    log = mpi_slurp("zero1", "half.err");
    WX_CHECK(strstr(log, "ZeRO-1") != NULL, "the simulator run sharded the AdamW state (ZeRO-1)");
    free(log);
    same("zero1_cpu", "zero1", "2 simulator ranks, ZeRO-1, 3 steps + resume");
    same("cpu", "zero1", "ZeRO-1 on the simulator vs plain data parallel on the CPU");
    /* ZeRO-1 through device collectives (the NCCL path's dispatch), no host-copy sync buffers */
    WX_CHECK(run2("zero1_dev", "devsim", 0, NULL, 2, "run") == 0,
             "2 simulator ranks, ZeRO-1 by device collectives: %s", mpi_slurp("zero1_dev", "run.err"));
    log = mpi_slurp("zero1_dev", "run.err");
    WX_CHECK(strstr(log, "(simulated device collectives)") &&
                 strstr(log, "dev_coll: 6 reduce_scatter, 6 allgather"),
             "the trainer used the device collectives, once each per step: %s", log);
    free(log);
    same("zero1_cpu", "zero1_dev", "ZeRO-1 by device collectives");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", mpi_tmp);
    if (!getenv("WX_KEEP") && wx_test_failed == 0 && system(cmd) != 0)
        printf("could not remove %s\n", mpi_tmp);
    return wx_test_summary();
}
