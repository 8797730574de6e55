/* Data-parallel training under `mpirun -np N` (OMP_NUM_THREADS=1) on the toy archive, against
 * the one-process run of the same config (global batch 4, 14 steps, an epoch of 11 batches):
 *  - equivalence: 2 ranks × 2 samples give the gradient of the first step and the parameters after
 *    5 steps of 1 rank × 4 samples within 1e-6 relative (L2 over the whole buffer), with the
 *    gradients all-reduced in several buckets; the per-step losses agree within 1e-6;
 *  - every rank holds bitwise the same gradient and parameters (raw dumps of each rank,
 *    WXCAST_DEBUG_DUMP), with and without ZeRO-1;
 *  - ZeRO-1 (reduce-scatter, sharded AdamW, all-gather) matches plain data parallel within 1e-6,
 *    parameters and the AdamW m and v gathered into its checkpoint;
 *  - the checkpoint saved at N = 2 holds the same state as the one saved at N = 1 (step, epoch,
 *    batches done, data-order RNG) and resumes at N = 1 and N = 4 on the loss trajectory of the
 *    one-process run (9 more steps across an epoch end, within 1e-5) to the same parameters.
 * Exits 77 when built without MPI. */
#include "mpi_run.h"

#define STEPS 14
#define HALF 5

static double worst_grad = 0, worst_param = 0, worst_zero = 0, worst_loss = 0, worst_resume = 0;

static wx_status read_ckpt(const char *dir, wx_checkpoint *ck) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/ckpt/pretrain/last.ckpt", mpi_tmp, dir);
    return wx_checkpoint_read(path, ck);
}

/* The tensors of `kind` of two checkpoints, as flat buffers in file order: relative L2. */
static double ckpt_diff(const wx_checkpoint *a, const wx_checkpoint *b, wx_ckpt_kind kind) {
    double d = 0, r = 0;
    int n = 0;
    for (int i = 0; i < a->ntensors; i++) {
        if (a->t[i].kind != kind) continue;
        const wx_ckpt_tensor *x = &a->t[i], *y = NULL;
        for (int j = 0; j < b->ntensors && !y; j++)
            if (b->t[j].kind == kind && !strcmp(b->t[j].name, x->name)) y = &b->t[j];
        if (!y || y->size != x->size) return INFINITY;
        for (int64_t k = 0; k < x->size; k++) {
            float u, v;
            memcpy(&u, x->data + 4 * k, 4);
            memcpy(&v, y->data + 4 * k, 4);
            d += ((double)u - v) * ((double)u - v);
            r += (double)v * v;
        }
        n++;
    }
    return n ? sqrt(d / (r > 0 ? r : 1)) : INFINITY;
}

static void check_equivalence(void) {
    WX_CHECK(mpi_run_dumped("A1", 0, "train.yaml --metrics m.jsonl --max-steps 5", "run") == 0, "1 process");
    WX_CHECK(mpi_run_dumped_env("A2", 2, "WXCAST_ALLREDUCE=ring", "train.yaml --metrics m.jsonl --max-steps 5 "
                                "--bucket-mb 0.02", "run") == 0, "2 ranks, ring all-reduce, small buckets");
    WX_CHECK(mpi_run_dumped("S2", 2, "train.yaml --metrics m.jsonl --max-steps 5", "run") == 0,
             "2 ranks, default all-reduce (node shared memory)");
    /* No room for the shared window where Open MPI would back it (here: a directory that does
     * not exist; a full /dev/shm hangs Open MPI 4.1): the ring instead, with a warning. */
    WX_CHECK(mpi_run_dumped_env("SN", 2, "OMPI_MCA_osc_sm_backing_directory=/nonexistent/wx_shm",
                                "train.yaml --metrics m.jsonl --max-steps 5", "run") == 0,
             "2 ranks, shared window impossible");
    WX_CHECK(mpi_run_dumped("Z2", 2, "train.yaml --metrics m.jsonl --max-steps 5 --zero1", "run") == 0,
             "2 ranks, ZeRO-1 (node shared memory)");
    WX_CHECK(mpi_run_dumped_env("ZR", 2, "WXCAST_ALLREDUCE=ring", "train.yaml --metrics m.jsonl --max-steps 5 "
                                "--zero1", "run") == 0, "2 ranks, ZeRO-1 through MPI collectives");
    char *log = mpi_slurp("A2", "run.err");
    WX_CHECK(strstr(log, "over 2 ranks") && strstr(log, WX_GRAD_SYNC_RING) && !strstr(log, " in 1 bucket(s)"),
             "the ring run reports several gradient buckets");
    /* The backward hands finished buckets to MPI: with 0.02 MB buckets all but the ones holding
     * the embedding (finished last) start before the final wait. */
    const char *ov = strstr(log, "gradient all-reduce: ");
    double early = 0;
    int nb = 0;
    WX_CHECK(ov && sscanf(ov, "gradient all-reduce: %lf of %d", &early, &nb) == 2, "overlap reported");
    WX_CHECK(nb > 2 && early >= 0.5 * nb, "%.1f of %d buckets started during the backward", early, nb);
    free(log);

    log = mpi_slurp("SN", "run.err");
    WX_CHECK(strstr(log, WX_GRAD_SYNC_RING) && strstr(log, "not enough room") &&
                 strstr(log, "/nonexistent/wx_shm"), "no room for the window: the ring, with a warning naming the directory");
    free(log);
    WX_CHECK(mpi_dump_diff("SN", "S2", "params.last") == 0, "no room for the window: the same parameter bits");
    log = mpi_slurp("S2", "run.err");
    WX_CHECK(strstr(log, "over 2 ranks") && strstr(log, WX_GRAD_SYNC_SHM), "one node: the default all-reduce "
             "is node shared memory");
    free(log);
    /* On 2 ranks both methods compute (g0 + g1) · 1/2 for every element (addition commutes), so
     * the shared-memory run must reproduce the ring run bit for bit. */
    int64_t ns = 0, na = 0;
    float *ps = mpi_floats("S2", "dump/params.last.rank0", &ns), *pa = mpi_floats("A2", "dump/params.last.rank0", &na);
    WX_CHECK(ps && pa && ns == na && ns > 0 && !memcmp(ps, pa, sizeof(float) * (size_t)ns),
             "parameters after 5 steps: shared memory and ring bitwise equal (%lld floats)", (long long)ns);
    free(ps);
    free(pa);
    WX_CHECK(mpi_same_bits("S2", "grad.first", 2) && mpi_same_bits("S2", "params.last", 2),
             "shared memory: the same gradient and parameter bits on both ranks");
    WX_CHECK(mpi_dump_diff("S2", "A1", "grad.first") <= 1e-6, "shared memory: first-step gradient vs 1 rank <= 1e-6");
    /* The clipping norm comes from the shared-memory reduction itself (per-chunk partial sums),
     * the ring run's from a separate pass over the whole mean gradient: same value to rounding. */
    double ns2[HALF + 1], na2[HALF + 1], worst_norm = 0;
    mpi_metric("S2", "m.jsonl", "\"grad_norm\":", ns2, HALF);
    mpi_metric("A2", "m.jsonl", "\"grad_norm\":", na2, HALF);
    for (int s = 1; s <= HALF; s++) {
        double e = fabs(ns2[s] - na2[s]) / fabs(na2[s]);
        worst_norm = isnan(e) || !(na2[s] > 0) ? INFINITY : fmax(worst_norm, e);
    }
    WX_CHECK(worst_norm <= 1e-9, "gradient norms, shared memory vs ring, steps 1..5: within %.3g (<= 1e-9)", worst_norm);

    worst_grad = mpi_dump_diff("A2", "A1", "grad.first");
    WX_CHECK(worst_grad <= 1e-6, "first-step gradient, 2 ranks vs 1: rel L2 %.3g <= 1e-6", worst_grad);
    worst_param = mpi_dump_diff("A2", "A1", "params.last");
    WX_CHECK(worst_param <= 1e-6, "parameters after 5 steps, 2 ranks vs 1: rel L2 %.3g <= 1e-6", worst_param);
    /* ZeRO-1's shard sums are (g0 + g1) · 1/2 over shared memory and in MPI_Reduce_scatter alike. */
    WX_CHECK(mpi_dump_diff("Z2", "ZR", "params.last") == 0 && mpi_same_bits("ZR", "params.last", 2),
             "ZeRO-1: shared memory and MPI collectives give the same parameter bits");
    worst_zero = mpi_dump_diff("Z2", "A2", "params.last");
    WX_CHECK(worst_zero <= 1e-6, "parameters after 5 steps, ZeRO-1 vs plain: rel L2 %.3g <= 1e-6", worst_zero);
    WX_CHECK(mpi_dump_diff("Z2", "A1", "params.last") <= 1e-6, "ZeRO-1 vs 1 process <= 1e-6");
    WX_CHECK(mpi_same_bits("A2", "grad.first", 2), "2 ranks: the same gradient bits on both ranks");
    WX_CHECK(mpi_same_bits("A2", "params.last", 2), "2 ranks: the same parameter bits on both ranks");
    WX_CHECK(mpi_same_bits("Z2", "params.last", 2), "ZeRO-1: the same parameter bits on both ranks");

    double l1[STEPS + 1], l2[STEPS + 1], lz[STEPS + 1];
    mpi_losses("A1", "m.jsonl", l1, STEPS);
    mpi_losses("A2", "m.jsonl", l2, STEPS);
    mpi_losses("Z2", "m.jsonl", lz, STEPS);
    int ok = 0;
    for (int s = 1; s <= HALF; s++) {
        double e = fmax(fabs(l2[s] - l1[s]), fabs(lz[s] - l1[s])) / fabs(l1[s]);
        if (e > worst_loss || isnan(e)) worst_loss = e;
        ok += e <= 1e-6;
    }
    WX_CHECK(ok == HALF, "losses of steps 1..5 agree within 1e-6 (%d of 5, worst %.3g)", ok, worst_loss);

    wx_checkpoint a, b, z;
    int ra = read_ckpt("A1", &a) == WX_OK, rb = read_ckpt("A2", &b) == WX_OK, rz = read_ckpt("Z2", &z) == WX_OK;
    if (WX_CHECK(ra && rb && rz, "checkpoints readable: %s", wx_error_message())) {
        uint8_t pa[WX_RNG_PACKED_BYTES], pb[WX_RNG_PACKED_BYTES];
        wx_rng_pack(&a.st.order, pa);
        wx_rng_pack(&b.st.order, pb);
        WX_CHECK(a.st.step == HALF && b.st.step == HALF && a.st.epoch == b.st.epoch &&
                     a.st.epoch_pos == b.st.epoch_pos && b.st.epoch_pos == HALF && !memcmp(pa, pb, sizeof pa),
                 "N = 2 checkpoint: step %lld, epoch %lld, %lld batches done, same data-order state as N = 1",
                 (long long)b.st.step, (long long)b.st.epoch, (long long)b.st.epoch_pos);
        double dm = ckpt_diff(&z, &b, WX_CKPT_ADAM_M), dv = ckpt_diff(&z, &b, WX_CKPT_ADAM_V);
        WX_CHECK(dm <= 1e-6 && dv <= 1e-6, "ZeRO-1 checkpoint AdamW m, v vs plain: %.3g, %.3g <= 1e-6", dm, dv);
        double d1 = ckpt_diff(&b, &a, WX_CKPT_ADAM_V);
        WX_CHECK(d1 <= 1e-5, "N = 2 vs N = 1 AdamW v: %.3g <= 1e-5", d1);
    }
    if (ra) wx_checkpoint_free(&a);
    if (rb) wx_checkpoint_free(&b);
    if (rz) wx_checkpoint_free(&z);
}

static void check_resume(void) {
    char args[2048];
    /* The one-process trajectory: A1 continues from its own checkpoint (bit-identical to an
     * uninterrupted run, test_train). */
    WX_CHECK(mpi_run_dumped("A1", 0, "train.yaml --metrics m.jsonl --resume ckpt/pretrain/last.ckpt", "resume") == 0,
             "1 process resumes");
    snprintf(args, sizeof args, "train.yaml --metrics m.jsonl --resume %s/A2/ckpt/pretrain/last.ckpt", mpi_tmp);
    WX_CHECK(mpi_run_dumped("B1", 0, args, "run") == 0, "N = 2 checkpoint resumed by 1 process");
    WX_CHECK(mpi_run_dumped("B4", 4, args, "run") == 0, "N = 2 checkpoint resumed by 4 ranks");
    double l1[STEPS + 1], lb1[STEPS + 1], lb4[STEPS + 1];
    mpi_losses("A1", "m.jsonl", l1, STEPS);
    mpi_losses("B1", "m.jsonl", lb1, STEPS);
    mpi_losses("B4", "m.jsonl", lb4, STEPS);
    int ok = 0;
    for (int s = HALF + 1; s <= STEPS; s++) {
        double e = fmax(fabs(lb1[s] - l1[s]), fabs(lb4[s] - l1[s])) / fabs(l1[s]);
        if (e > worst_resume || isnan(e)) worst_resume = e;
        ok += e <= 1e-5;
    }
    WX_CHECK(ok == STEPS - HALF, "resumed at N = 1 and N = 4: losses of steps 6..14 on the 1-process "
             "trajectory within 1e-5 (%d of 9, worst %.3g)", ok, worst_resume);
    double d1 = mpi_dump_diff("B1", "A1", "params.last"), d4 = mpi_dump_diff("B4", "A1", "params.last");
    WX_CHECK(d1 <= 1e-5 && d4 <= 1e-5, "parameters at step 14: N=2->1 %.3g, N=2->4 %.3g <= 1e-5", d1, d4);
    WX_CHECK(mpi_same_bits("B4", "params.last", 4), "4 ranks: the same parameter bits on every rank");
    /* Not trivially equal: the 9 steps moved the parameters well beyond the tolerance. */
    double moved = mpi_dump_diff("A1", "A2", "params.last");
    WX_CHECK(moved > 1e-3 && moved < INFINITY, "steps 6..14 moved the parameters (rel %.3g)", moved);
    wx_checkpoint c;
    char path[1024];
    snprintf(path, sizeof path, "%s/B4/ckpt/pretrain/last.ckpt", mpi_tmp);
    if (WX_CHECK(wx_checkpoint_read(path, &c) == WX_OK, "B4 checkpoint: %s", wx_error_message())) {
        WX_CHECK(c.st.step == STEPS && c.st.epoch == 1 && c.st.epoch_pos == STEPS - 11,
                 "4-rank run ends at step %lld, epoch %lld, %lld batches into it", (long long)c.st.step,
                 (long long)c.st.epoch, (long long)c.st.epoch_pos);
        wx_checkpoint_free(&c);
    }
    char *m = mpi_slurp("B4", "m.jsonl");
    WX_CHECK(strstr(m, "\"phase\":\"valid\"") && strstr(m, "\"ranks\":4"), "4-rank metrics: valid lines, ranks 4");
    free(m);
}

int main(void) {
    int rc = mpi_setup(toy_archive_write);
    if (rc) return rc == 77 ? 77 : (WX_CHECK(0, "setup: %s", wx_error_message()), wx_test_summary());
    const char *dirs[] = {"A1", "A2", "S2", "SN", "Z2", "ZR", "B1", "B4"};
    for (int i = 0; i < 8; i++) mpi_write_run_dir(dirs[i], toy_model_yaml, STEPS, 4, NULL);
    check_equivalence();
    check_resume();
    printf("worst: gradient %.3g, parameters %.3g, ZeRO-1 %.3g, losses %.3g, resumed losses %.3g\n",
           worst_grad, worst_param, worst_zero, worst_loss, worst_resume);
    mpi_cleanup();
    return wx_test_summary();
}
