#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "infer/eval.h"

/* "--forecast fcn=a.nc,b.nc,gc=c.nc": files, each with the name of the last NAME= before it. */
static wx_status split_forecasts(char *list, int *n, char ***files, char ***models) {
    *n = 0;
    *files = *models = NULL;
    const char *name = "model";
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (eq) {
            *eq = 0;
            if (!t[0] || !eq[1])
                return wx_error_set(WX_ERR_USAGE, "--forecast: '%s=%s': expected NAME=FILE", t, eq + 1);
            name = t;
            t = eq + 1;
        }
        *files = realloc(*files, sizeof(char *) * (size_t)(*n + 1));
        *models = realloc(*models, sizeof(char *) * (size_t)(*n + 1));
        (*files)[*n] = t;
        (*models)[*n] = (char *)name;
        (*n)++;
    }
    if (*n == 0) return wx_error_set(WX_ERR_USAGE, "--forecast: no files given");
    return WX_OK;
}

int wx_cmd_eval(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"forecast", 1, "forecast NetCDF files, comma-separated; NAME= starts a model's files",
         "[NAME=]FILE[,...]"},
        {"truth", 1, "training archive holding the verifying analyses", "ARCHIVE"},
        {"climatology", 1, "archive whose climatology.wxc to use (default: the truth's, if any)",
         "ARCHIVE"},
        {"no-climatology", 0, "score without a climatology (no ACC, no climatology baseline)", NULL},
        {"no-baselines", 0, "skip the persistence and climatology baselines", NULL},
        {"baseline", 1, "scorecards of relative RMSE against this model (default: persistence, "
                        "when scored)", "persistence|climatology|MODEL"},
        {"output", 1, "folder for scores.csv, scores.json, the RMSE/ACC-vs-lead plots and the "
                      "scorecards", "DIR"},
        {"convention", 1, "wb2 (default: cell-area latitude weights, day-of-year x hour "
                          "climatology) or fourcastnet (NVlabs: cos-lat weights over 90..-90 in "
                          "num_lat - 1 steps, ACC against the time-mean climatology), to compare "
                          "with published numbers", "wb2|fourcastnet"},
        {"regions", 1, "also score these WeatherBench2 regions (scores.csv column 'region', "
                       "scores.json 'region_scores'; the plots and scorecards stay global): "
                       "global, tropics, extra-tropics, northern-hemisphere, southern-hemisphere, "
                       "europe, north-america, north-atlantic, north-pacific, east-asia, ausnz, "
                       "arctic, antarctic, global_land, extra-tropics_land, tropics_land (land: "
                       "weighted by the truth's lsm), or all (default: global)", "LIST"},
        {"resolution", 1, "score on the global grid of this spacing with both poles after "
                          "conservative regridding of forecasts, truth and climatology, as "
                          "WeatherBench2's headline scores at 1.5 (240x121) (default: the truth "
                          "archive's grid)", "DEG"},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "eval", "--forecast FILES --truth ARCHIVE --output DIR [options]",
        "Scores forecasts with the WeatherBench2 definitions (area-weighted RMSE with the square "
        "root after the mean over initial times, bias, MAE, uncentred ACC against the "
        "day-of-year x hour climatology at the valid time; SEEPS for 6 h or 24 h total "
        "precipitation when the climatology holds its fields) per variable and lead, for each model "
        "and for the persistence and climatology baselines; writes scores.csv, scores.json, "
        "rmse_<var>.png and acc_<var>.png (every model on one plot), and "
        "scorecard_<model>_vs_<baseline>.png (relative RMSE in %, RdBu_r over +-100 %, blue = "
        "better).",
        opts, 0, 0};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    const char *fc = wx_args_get(&a, "forecast"), *truth = wx_args_get(&a, "truth"),
               *out = wx_args_get(&a, "output");
    if (!fc || !truth || !out)
        return wx_cli_error(wx_error_set(WX_ERR_USAGE, "eval: --forecast, --truth and --output "
                                                       "are required (see 'wxcast eval --help')"));
    char *list = wx_strdup(fc), **files = NULL, **models = NULL;
    int n = 0;
    wx_eval_result r = {0};
    /* the output folder before any scoring: a file there is a usage error (as forecast, export) */
    wx_status st = wx_output_dir_check(out, "--output");
    if (st == WX_OK) st = split_forecasts(list, &n, &files, &models);
    int convention = WX_EVAL_WB2;
    const char *conv = wx_args_get(&a, "convention");
    if (st == WX_OK && conv) st = wx_eval_convention_parse(conv, &convention);
    double res = 0;
    if (st == WX_OK) st = wx_args_double(&a, "resolution", 0, &res);
    if (st == WX_OK && wx_args_get(&a, "resolution") && !(res > 0))
        st = wx_error_set(WX_ERR_USAGE, "--resolution %s: expected a spacing in degrees > 0",
                          wx_args_get(&a, "resolution"));
    if (st == WX_OK) {
        /* every option is checked (wx_eval_check_opts) before anything is read or written */
        wx_eval_opts eo = {.nfiles = n,
                           .files = (const char *const *)files,
                           .models = (const char *const *)models,
                           .truth = truth,
                           .climatology = wx_args_get(&a, "climatology"),
                           .baselines = !wx_args_flag(&a, "no-baselines"),
                           .baseline = wx_args_get(&a, "baseline"),
                           .no_climatology = wx_args_flag(&a, "no-climatology"),
                           .convention = convention,
                           .regions = wx_args_get(&a, "regions"),
                           .resolution = res};
        st = wx_eval_run(&eo, &r);
    }
    char path[4096];
    if (st == WX_OK) st = wx_mkdir_p(out);
    if (st == WX_OK) {
        int old = wx_eval_remove_old_products(out);
        if (old) wx_log_info("eval: removed %d tables and plots of an earlier eval in %s", old, out);
    }
    if (st == WX_OK) snprintf(path, sizeof path, "%s/scores.csv", out), st = wx_eval_write_csv(&r, path);
    if (st == WX_OK) snprintf(path, sizeof path, "%s/scores.json", out), st = wx_eval_write_json(&r, path);
    if (st == WX_OK) st = wx_eval_write_plots(&r, out);
    const char *base = wx_args_get(&a, "baseline");
    int cards = 0;
    if (st == WX_OK && (base || wx_eval_model_index(&r, WX_EVAL_PERSISTENCE) >= 0))
        st = wx_eval_write_scorecards(&r, base ? base : WX_EVAL_PERSISTENCE, out, &cards);
    char more[64] = "";
    int seeps_scored = 0; /* the archive's climatology has SEEPS fields; a forecast with tp, too */
    for (int i = 0; r.has_seeps && i < r.ncells && !seeps_scored; i++)
        seeps_scored = r.cells[i].chan == r.seeps_chan && r.cells[i].sums.n_seeps > 0;
    if (r.nregions > 1)
        snprintf(more, sizeof more, " (+%d in %d other regions)", r.nrcells, r.nregions - 1);
    if (st == WX_OK)
        printf("eval: %lld initial time%s, %d models (incl. baselines), %d scores%s%s%s%s, %d "
               "scorecard%s -> %s\n", (long long)r.ninit, r.ninit == 1 ? "" : "s", r.nmodels,
               r.ncells, more, r.has_climatology ? "" : " (no climatology: no ACC)",
               seeps_scored ? ", SEEPS for " : "", seeps_scored ? r.chan_names[r.seeps_chan] : "",
               cards, cards == 1 ? "" : "s", out);
    wx_eval_result_free(&r);
    free(list), free(files), free(models);
    return st == WX_OK ? 0 : wx_cli_error(st);
}
