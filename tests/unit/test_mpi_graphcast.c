/* Data-parallel GraphCast training under `mpirun -np 2` on the GraphCast toy archive
 * (tests/unit/train_toy_gc.h: 2 surface + 1×2 level states, forcings from each sample's target
 * time, statics), against the one-process run of the same config (global batch 4, 5 steps):
 *  - 2 ranks × 2 samples give the first-step gradient and the parameters after 5 steps of
 *    1 rank × 4 samples within 1e-6 relative (L2), with the gradient in several buckets; each
 *    rank's forcings come from its own samples' times, so a mix-up of samples shows here;
 *  - both ranks hold the same gradient and parameter bits; ZeRO-1 matches plain data parallel;
 *  - the per-step losses agree within 1e-6.
 * Exits 77 when built without MPI. */
#include "mpi_run.h"
#include "train_toy_gc.h"

int main(void) {
    int rc = mpi_setup(gct_archive_write);
    if (rc) return rc == 77 ? 77 : (WX_CHECK(0, "setup: %s", wx_error_message()), wx_test_summary());
    const char *dirs[] = {"G1", "G2", "GZ", "GS"};
    for (int i = 0; i < 4; i++) mpi_write_run_dir_opt(dirs[i], gct_model_yaml, 10, 4, "3.0e-3", "32", NULL);
    WX_CHECK(mpi_run_dumped("G1", 0, "train.yaml --metrics m.jsonl --max-steps 5", "run") == 0, "1 process");
    WX_CHECK(mpi_run_dumped_env("G2", 2, "WXCAST_ALLREDUCE=ring", "train.yaml --metrics m.jsonl --max-steps 5 "
                                "--bucket-mb 0.05", "run") == 0, "2 ranks, ring all-reduce, small buckets");
    WX_CHECK(mpi_run_dumped("GZ", 2, "train.yaml --metrics m.jsonl --max-steps 5 --zero1", "run") == 0,
             "2 ranks, ZeRO-1");
    char *log = mpi_slurp("G2", "run.err");
    WX_CHECK(strstr(log, "over 2 ranks") && strstr(log, WX_GRAD_SYNC_RING) && !strstr(log, " in 1 bucket(s)"),
             "several gradient buckets");
    /* The decoder's and processor's buckets are handed to MPI during the backward (the encoder,
     * laid out first but partly differentiated before the embedders, waits for the end). */
    const char *ov = strstr(log, "gradient all-reduce: ");
    double early = 0;
    int nb = 0;
    WX_CHECK(ov && sscanf(ov, "gradient all-reduce: %lf of %d", &early, &nb) == 2, "overlap reported");
    WX_CHECK(nb >= 2 && early >= 1, "%.1f of %d buckets started during the backward", early, nb);
    free(log);
    /* The default on one node: node shared memory, the same bits as the ring on 2 ranks
     * ((g0 + g1) · 1/2 either way). */
    WX_CHECK(mpi_run_dumped("GS", 2, "train.yaml --metrics m.jsonl --max-steps 5", "run") == 0,
             "2 ranks, shared-memory all-reduce");
    log = mpi_slurp("GS", "run.err");
    WX_CHECK(strstr(log, WX_GRAD_SYNC_SHM) != NULL, "GS: the all-reduce is node shared memory");
    free(log);
    WX_CHECK(mpi_dump_diff("GS", "G2", "params.last") == 0 && mpi_same_bits("GS", "params.last", 2),
             "shared memory vs ring: parameters after 5 steps bitwise equal, the same on both ranks");
    double dg = mpi_dump_diff("G2", "G1", "grad.first"), dp = mpi_dump_diff("G2", "G1", "params.last");
    double dz = mpi_dump_diff("GZ", "G2", "params.last");
    WX_CHECK(dg <= 1e-6, "first-step gradient, 2 ranks vs 1: rel L2 %.3g <= 1e-6", dg);
    WX_CHECK(dp <= 1e-6, "parameters after 5 steps, 2 ranks vs 1: rel L2 %.3g <= 1e-6", dp);
    WX_CHECK(dz <= 1e-6, "ZeRO-1 vs plain: rel L2 %.3g <= 1e-6", dz);
    WX_CHECK(mpi_same_bits("G2", "grad.first", 2) && mpi_same_bits("G2", "params.last", 2) &&
                 mpi_same_bits("GZ", "params.last", 2), "the same gradient and parameter bits on both ranks");
    double l1[11], l2[11];
    mpi_losses("G1", "m.jsonl", l1, 10);
    mpi_losses("G2", "m.jsonl", l2, 10);
    double worst = 0;
    int ok = 0;
    for (int s = 1; s <= 5; s++) {
        double e = fabs(l2[s] - l1[s]) / fabs(l1[s]);
        if (e > worst || isnan(e)) worst = e;
        ok += e <= 1e-6;
    }
    WX_CHECK(ok == 5, "losses of steps 1..5 within 1e-6 (%d of 5, worst %.3g)", ok, worst);
    printf("worst: gradient %.3g, parameters %.3g, ZeRO-1 %.3g, losses %.3g\n", dg, dp, dz, worst);
    mpi_cleanup();
    return wx_test_summary();
}
