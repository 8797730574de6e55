/* Failures under `mpirun -np 2` end the whole job, non-zero, within 30 s (the bound is asserted on
 * the wall time of mpirun; the guard kills it at 60 s), and the run resumes from its last
 * checkpoint. Faults are injected in step 6 of rank 1 (WXCAST_FAULT, src/train/trainer.c), while
 * rank 0 waits in the gradient all-reduce:
 *  - kill: rank 1 is SIGKILLed (as `kill -9`);
 *  - exit: rank 1 calls _exit(3) without MPI_Finalize;
 *  - error: rank 1 returns an error the other rank does not know of: the CLI calls MPI_Abort;
 *  - batch: rank 1 fails its batch before the step's status agreement: both ranks stop cleanly,
 *    exit 1, with one error line for the job.
 *  - hang: rank 1 stops forever (alive, silent: a stuck read, a stopped process) after the loss
 *    all-reduce; rank 0's collective watchdog (--collective-timeout 3, src/train/watchdog.c) ends
 *    the job from the gradient all-reduce with one error line naming the rank, the collective and
 *    the step. Without the watchdog the job would wait for ever (the guard ends it at 60 s).
 * A global batch that does not divide over the ranks is a usage error (exit 2, one line). */
#include "mpi_run.h"

static int count_lines(const char *s, const char *prefix) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, prefix)); p++) n++;
    return n;
}

static void check_fault(const char *mode, const char *args) {
    char env[256], tag[32];
    snprintf(env, sizeof env, "WXCAST_FAULT=1:6:%s", mode);
    snprintf(tag, sizeof tag, "fault_%s", mode);
    double secs;
    int rc = mpi_train(2, "F", env, args, tag, &secs);
    printf("%s: exit %d after %.1f s\n", mode, rc, secs);
    char f[64];
    snprintf(f, sizeof f, "%s.err", tag);
    char *e = mpi_slurp("F", f);
    if (!strstr(e, "WXCAST_FAULT: ")) {
        /* The job ended before reaching the faulty step: show why, and try once more (seen once
         * in CI right after the `kill` case, when the launcher failed at start-up). */
        printf("%s: the job ended before the fault fired; its stderr:\n%s\n%s: retrying once\n",
               mode, e, mode);
        free(e);
        rc = mpi_train(2, "F", env, args, tag, &secs);
        printf("%s: exit %d after %.1f s\n", mode, rc, secs);
        e = mpi_slurp("F", f);
    }
    WX_CHECK(rc != 0, "%s: the job exits non-zero (%d)", mode, rc);
    WX_CHECK(secs < 30, "%s: the job ends within 30 s (%.1f s)", mode, secs);
    WX_CHECK(strstr(e, "WXCAST_FAULT: ") != NULL, "%s: the fault fired", mode);
    if (!strcmp(mode, "error"))
        WX_CHECK(strstr(e, "wxcast: error: step 6: fault injected by WXCAST_FAULT (error)") != NULL,
                 "error: the failing rank prints its message before the abort");
    if (!strcmp(mode, "batch"))
        WX_CHECK(rc == 1 && count_lines(e, "wxcast: error:") == 1 && strstr(e, "fault injected") &&
                     !strstr(e, "MPI_ABORT") && !strstr(e, "ORTE_ERROR_LOG"),
                 "batch: exit 1 with one error line and no abort (exit %d):\n%s", rc, e);
    if (!strcmp(mode, "hang"))
        WX_CHECK(count_lines(e, "wxcast: error:") == 1 &&
                     strstr(e, "wxcast: error: rank 0: waited ") &&
                     strstr(e, " s in the gradient all-reduce (training step 6) without the other "
                               "ranks arriving (--collective-timeout 3)"),
                 "hang: rank 0's watchdog names the collective, the step and the option:\n%s", e);
    free(e);
}

int main(void) {
    int rc = mpi_setup(toy_archive_write);
    if (rc) return rc == 77 ? 77 : (WX_CHECK(0, "setup: %s", wx_error_message()), wx_test_summary());
    mpi_write_run_dir("F", toy_model_yaml, 40, 4, "  checkpoint_every: 2\n");
    check_fault("kill", "train.yaml --overwrite");
    check_fault("exit", "train.yaml --overwrite");
    check_fault("error", "train.yaml --overwrite");
    check_fault("batch", "train.yaml --overwrite");
    check_fault("hang", "train.yaml --overwrite --collective-timeout 3");

    /* The last checkpoint before the fault (step 4) continues the run. */
    wx_checkpoint ck;
    char path[1024];
    snprintf(path, sizeof path, "%s/F/ckpt/pretrain/last.ckpt", mpi_tmp);
    if (WX_CHECK(wx_checkpoint_read(path, &ck) == WX_OK, "last checkpoint: %s", wx_error_message())) {
        WX_CHECK(ck.st.step == 4, "last checkpoint at step %lld (4)", (long long)ck.st.step);
        wx_checkpoint_free(&ck);
    }
    double secs;
    WX_CHECK(mpi_train(2, "F", NULL, "train.yaml --resume ckpt/pretrain/last.ckpt --max-steps 8", "resume",
                       &secs) == 0, "resumed from the last checkpoint");
    if (WX_CHECK(wx_checkpoint_read(path, &ck) == WX_OK, "resumed checkpoint: %s", wx_error_message())) {
        WX_CHECK(ck.st.step == 8, "resumed run stopped at step %lld (8)", (long long)ck.st.step);
        wx_checkpoint_free(&ck);
    }

    /* 4 samples do not divide over 3 ranks. */
    rc = mpi_train(3, "F", NULL, "train.yaml --overwrite", "div", &secs);
    char *e = mpi_slurp("F", "div.err");
    WX_CHECK(rc == 2 && count_lines(e, "wxcast: error:") == 1 && strstr(e, "pretrain.batch_size") &&
                 strstr(e, "does not divide over 3 ranks"),
             "batch 4 on 3 ranks: exit 2 (%d), one error line naming the key:\n%s", rc, e);
    free(e);
    mpi_cleanup();
    return wx_test_summary();
}
