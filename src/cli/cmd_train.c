/* wxcast train: train a model from a training config (src/train/), one stage at a time; under
 * mpirun/srun, data parallel over the ranks (docs/distributed.md). */
#include <math.h>
#include <stdio.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "core/wx_fs.h"
#include "train/distributed.h"
#include "train/train_config.h"
#include "train/trainer.h"
#include "train/watchdog.h"

/* One error line for the job: the rank that failed prints it. An error the other ranks do not
 * know about leaves them blocked in a collective, so it ends the whole job (MPI_Abort). */
static int train_error(wx_status s) {
    int rc = wx_dist_failure_is_remote() ? (int)s : wx_cli_error(s);
    if (wx_dist_active() && !wx_dist_failure_is_agreed()) wx_dist_abort(rc);
    return rc;
}

static int train_main(const wx_args *a, wx_train_opts *o) {
    wx_train_config c;
    wx_status s = wx_dist_agree(wx_train_config_load(a->positionals[0], wx_args_get(a, "stage"), &c));
    if (s) {
        wx_train_config_free(&c);
        return train_error(s);
    }
    if (wx_args_flag(a, "print-config")) {
        if (wx_dist_rank() == 0) {
            printf("# effective training config of %s, stage %s (defaults filled in, paths absolute)\n", c.path,
                   wx_train_stage_name(c.stage));
            wx_train_config_print(stdout, &c);
        }
        wx_train_config_free(&c);
        return 0;
    }
    wx_train_summary sum;
    s = wx_train_run(&c, o, &sum);
    if (s == WX_OK && wx_dist_rank() == 0) {
        printf("%s: steps %lld..%lld of %lld", wx_train_stage_name(c.stage),
               (long long)sum.first_step, (long long)sum.step, (long long)sum.total_steps);
        if (!isnan(sum.last_loss)) printf(", last loss %.6g", sum.last_loss);
        printf("\n");
        if (isfinite(sum.best_loss))
            printf("best valid loss %.6g at step %lld: %s\n", sum.best_loss, (long long)sum.best_step,
                   sum.best_path);
        printf("last checkpoint: %s\n", sum.last_path);
    }
    wx_train_config_free(&c);
    if (s) return train_error(s);
    if (fflush(stdout) != 0) return train_error(wx_error_set(WX_ERR_RUN, "train: cannot write output"));
    return 0;
}

int wx_cmd_train(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"stage", 1, "pretrain (one step), finetune (two-step rollout) or precip (precipitation "
                     "model on the frozen wind model); default: the config's `stage:`", "STAGE"},
        {"resume", 1, "continue a run from its checkpoint (bit-identical on the CPU)", "CKPT"},
        {"metrics", 1, "write one JSON object per step and per validation", "FILE"},
        {"max-steps", 1, "stop after this many steps in total (>= 1; checkpoint written; --resume "
                         "continues; with --resume it must be above the checkpoint's step, else "
                         "exit 2; a finished stage continues only once its steps: is raised)", "N"},
        {"threads", 1, "compute threads, 0..1024 (overrides the config's `threads`)", "N"},
        {"zero1", 0, "under MPI: shard the AdamW state over the ranks (ZeRO stage 1)", NULL},
        {"bucket-mb", 1, "under MPI: gradient all-reduce bucket size in MiB (default 25)", "MB"},
        {"collective-timeout", 1, "under MPI: end the job when a rank has waited this long in a "
                                  "collective (a hung rank); 0 = wait for ever (default 600)", "S"},
        {"print-config", 0, "print the effective config (defaults filled in) and exit", NULL},
        {"overwrite", 0, "start afresh even when the stage's folder holds an earlier run's "
                         "checkpoints (they are replaced; without it such a run exits 2)", NULL},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "train", "CONFIG.yaml [--stage pretrain|finetune|precip] [--resume CKPT] [--metrics FILE]",
        "Trains the model of CONFIG.yaml on its archive: AdamW with warmup and cosine decay, "
        "gradient\nclipping, validation (latitude-weighted RMSE per channel at the validation "
        "leads) after every\nepoch, and <checkpoint_dir>/<stage>/{last,best}.ckpt. See "
        "docs/training.md.",
        opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    wx_train_opts o = {.resume = wx_args_get(&a, "resume"), .metrics = wx_args_get(&a, "metrics"),
                       .zero1 = wx_args_flag(&a, "zero1"), .overwrite = wx_args_flag(&a, "overwrite")};
    double bucket_mb, timeout_s;
    wx_status s = wx_args_int(&a, "max-steps", 0, &o.max_steps);
    if (s == WX_OK) s = wx_args_threads(&a, &o.threads);
    if (s == WX_OK) s = wx_args_double(&a, "bucket-mb", 25, &bucket_mb);
    if (s == WX_OK) s = wx_args_double(&a, "collective-timeout", WX_WATCHDOG_DEFAULT_S, &timeout_s);
    if (s == WX_OK && wx_args_get(&a, "max-steps") && o.max_steps < 1)
        s = wx_error_set(WX_ERR_USAGE, "train: --max-steps %lld: expected >= 1 (leave it out to train "
                         "every step)", (long long)o.max_steps);
    if (s == WX_OK && !(bucket_mb >= 0.001 && bucket_mb <= 2048))
        s = wx_error_set(WX_ERR_USAGE, "train: --bucket-mb %s: expected 0.001..2048",
                         wx_args_get(&a, "bucket-mb"));
    if (s == WX_OK && !(timeout_s >= 0 && timeout_s <= 1e7))
        s = wx_error_set(WX_ERR_USAGE, "train: --collective-timeout %s: expected seconds, 0..1e7 "
                         "(0 = no timeout)", wx_args_get(&a, "collective-timeout"));
    if (s == WX_OK && o.metrics) s = wx_output_path_check(o.metrics, "--metrics");
    if (s) return wx_cli_error(s);
    o.bucket_bytes = (int64_t)(bucket_mb * 1048576.0);
    s = wx_dist_init(NULL, NULL);
    if (s) return wx_cli_error(s);
    if (wx_dist_active() && timeout_s > 0)
        wx_watchdog_start(timeout_s, wx_dist_rank(), "--collective-timeout");
    rc = train_main(&a, &o);
    wx_watchdog_stop();
    wx_dist_finalize();
    return rc;
}
