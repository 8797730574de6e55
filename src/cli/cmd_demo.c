/* wxcast demo: synthetic world → archive → FourCastNet and/or GraphCast → scored 10-day forecasts
 * (infer/demo.h). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "core/wx_fs.h"
#include "core/wx_progress.h"
#include "core/wx_timer.h"
#include "infer/demo.h"
#include "wx_build_config.h"

static const char *default_configs(void) {
    struct stat sb;
    if (stat("configs/demo/demo.yaml", &sb) == 0) return "configs/demo";
    return WX_SOURCE_DIR "/configs/demo";
}

int wx_cmd_demo(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"output", 1, "demo folder (default: demo_out)", "DIR"},
        {"model", 1, "fourcastnet (default), graphcast, or both (one table and plot)", "NAME"},
        {"configs", 1, "folder with synth/recipe/model/train/demo.yaml (default: configs/demo)", "DIR"},
        {"threads", 1, "compute threads (default: all cores)", "N"},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "demo", "[--output DIR] [--model fourcastnet|graphcast|both]",
        "Generates the demo synthetic world, ingests it through the NetCDF reader, trains a small\n"
        "FourCastNet (or GraphCast, or both) on the training years, rolls it out 10 days from initial\n"
        "times in the held-out year and scores it (latitude-weighted RMSE and ACC per lead) against\n"
        "persistence and climatology. Writes a forecast NetCDF and a z500 forecast-vs-truth map per\n"
        "model, RMSE/ACC-vs-lead plots (every model on one plot) and scores.json into DIR. A rerun\n"
        "reuses the finished steps.",
        opts, 0, 0};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    int threads = 0;
    wx_status st = wx_args_threads(&a, &threads);
    if (st != WX_OK) return wx_cli_error(st);
    wx_demo_opts o = {0};
    o.output = wx_args_get(&a, "output") ? wx_args_get(&a, "output") : "demo_out";
    o.configs = wx_args_get(&a, "configs") ? wx_args_get(&a, "configs") : default_configs();
    o.threads = threads;
    o.model = wx_args_get(&a, "model") ? wx_args_get(&a, "model") : "fourcastnet";
    o.report = stdout;
    /* usage errors before the banner, so a refused demo prints nothing but its error */
    if ((st = wx_demo_check_model(o.model)) != WX_OK) return wx_cli_error(st);
    if ((st = wx_output_dir_check(o.output, "--output")) != WX_OK) return wx_cli_error(st);
    double t0 = wx_time_now();
    printf("wxcast demo (%s): %s -> %s\n", o.model, o.configs, o.output);
    st = wx_demo_run(&o);
    if (st != WX_OK) {
        wx_demo_free(&o);
        return wx_cli_error(st);
    }
    static const int hours[] = {24, 72, 120, 240};
    printf("\nScores over %lld initial times of the held-out year (%s):\n", (long long)o.ninit,
           o.scores_json);
    wx_demo_print_table(stdout, &o.scores, hours, 4);
    static const char *const names[5] = {"world", "archive", "training", "rollouts", "products"};
    char d[32];
    printf("\ntime:");
    for (int k = 0; k < 5; k++) {
        wx_progress_format_duration(d, sizeof d, o.stage_s[k]);
        printf(" %s %s%s", names[k], d, k < 4 ? "," : "");
    }
    wx_progress_format_duration(d, sizeof d, wx_time_since(t0));
    printf("; total %s\n", d);
    printf("files: %s, %s, %s/rmse_<var>.png, %s/acc_<var>.png\n", o.forecast_nc, o.map_png, o.output,
           o.output);
    static const char *const must[2] = {"z500", "t850"};
    for (int m = 0; m < o.scores.res.nmodels; m++) {
        const char *name = o.scores.res.models[m];
        if (!strcmp(name, WX_EVAL_PERSISTENCE) || !strcmp(name, WX_EVAL_CLIMATOLOGY)) continue;
        /* z500 and t850 when the model predicts them (the demo's GraphCast has no t850) */
        char vars[32] = "";
        int ok = 1;
        for (int v = 0; v < 2; v++) {
            int has = 0;
            for (int c = 0; c < o.scores.nchan; c++)
                if (!strcmp(o.scores.chan[c], must[v]) &&
                    wx_eval_find(&o.scores.res, name, must[v], o.scores.lead_s[0]))
                    has = 1;
            if (!has) continue;
            snprintf(vars + strlen(vars), sizeof vars - strlen(vars), "%s%s", vars[0] ? " and " : "", must[v]);
            for (int h = 0; h < 2; h++) ok &= wx_demo_model_wins(&o.scores, name, must[v], h ? 72 : 24);
        }
        printf("%s%s %s persistence and climatology for %s at 24 h and 72 h.\n", ok ? "" : "NOTE: ",
               name, ok ? "beats" : "does not beat both", vars);
    }
    wx_demo_free(&o);
    if (fflush(stdout) != 0) return wx_cli_error(wx_error_set(WX_ERR_RUN, "demo: cannot write output"));
    return 0;
}
