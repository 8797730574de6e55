/* `wxcast demo`: the whole chain on a synthetic world, in one folder.
 *
 *   1 world     wxcast synth   <dir>/synth.yaml  → <dir>/world/ (monthly ERA5-convention NetCDF)
 *   2 archive   wxcast ingest  <dir>/recipe.yaml → <dir>/archive       (statistics, climatology)
 *   3 model     wxcast train   <dir>/train.yaml  → <dir>/checkpoints/{pretrain,finetune}/
 *   4 scores    rollouts from initial times in the held-out test years (train.yaml
 *               data.test_years), scored per lead with WeatherBench2's latitude-weighted RMSE and
 *               ACC (infer/metrics.h) for the model, persistence and the archive's climatology;
 *               forecast_<init>.nc (first initial time) and z500_forecast_vs_truth.png (the
 *               second model's with a _graphcast suffix)
 *   5 products  rmse_<var>.png / acc_<var>.png (every model and baseline on one plot), scores.json
 *
 * The configs come from a folder (configs/demo/: synth.yaml, recipe.yaml, model.yaml,
 * train.yaml, demo.yaml) and are copied into <dir> first, with paths relative to <dir>, so each
 * step can be rerun by hand there. With --model graphcast the chain is GraphCast's
 * (recipe_graphcast.yaml → <dir>/archive_graphcast with both poles and the static fields,
 * model_graphcast.yaml, train_graphcast.yaml); with both, the two chains share the world and are
 * scored together: one table, one scores.json, one RMSE/ACC plot per channel with both models,
 * persistence and climatology (GraphCast scored on FourCastNet's 32 rows, so the baselines are
 * the same numbers for both). A step whose result is already in <dir> (world/.complete, the
 * final checkpoint) is reused, so an interrupted demo continues where it stopped. */
#ifndef WX_DEMO_H
#define WX_DEMO_H

#include <stdint.h>
#include <stdio.h>

#include "core/wx_error.h"
#include "infer/eval.h"

typedef struct {
    int nleads;
    int64_t *lead_s;           /* [nleads] seconds (model steps 1..lead_steps) */
    int nchan;
    char (*chan)[64];          /* [nchan] scored channels (the model's outputs) */
    char (*units)[32];
    int64_t nlat;              /* rows of the model grid scored (from the north) */
    wx_eval_result res;        /* models: the model(s) ("fourcastnet", "graphcast"), then
                                * "persistence", "climatology"; cells sorted by model, channel,
                                * lead; a model's cells only for the channels it predicts */
} wx_demo_scores;

typedef struct {
    const char *output;        /* demo folder (created) */
    const char *configs;       /* folder with the demo configs */
    const char *model;         /* "fourcastnet" (NULL), "graphcast" or "both" */
    int threads;               /* <= 0: all cores */
    FILE *report;              /* stage headers and the score table (stdout), NULL: none */
    /* results */
    double stage_s[5];         /* wall time of each stage */
    int64_t ninit;
    char forecast_nc[4200], map_png[4200], scores_json[4200];
    wx_demo_scores scores;
} wx_demo_opts;

/* --model: fourcastnet, graphcast or both (NULL: fourcastnet); a usage error otherwise. */
wx_status wx_demo_check_model(const char *which);
wx_status wx_demo_run(wx_demo_opts *o);
void wx_demo_free(wx_demo_opts *o);

/* Scoring (demo_score.c): rollouts of the checkpoint from every `init_every` records of the
 * archive within test years [y0, y1] (whose lead_steps-step targets stay inside them), `batch`
 * initial times at a time. map_*: the first initial time's forecast and truth of channel
 * map_chan at model step map_step ([nlat·nlon] of the model grid; NULL: not kept). */
typedef struct {
    const char *ckpt, *archive;
    int64_t test_years[2];
    int64_t init_every_s, lead_steps, max_inits, batch;
    int threads;
    const char *map_chan;
    int64_t map_step;
    float *map_forecast, *map_truth;
    int64_t first_init;        /* out: unix time of the first initial time */
    const char *model_name;    /* the model's name in the scores (NULL: its family) */
    int64_t score_nlat;        /* > 0: score only the model grid's first rows (a grid shared with
                                * another model: GraphCast's 33 rows on FourCastNet's 32) */
} wx_demo_score_opts;

wx_status wx_demo_score(wx_demo_score_opts *o, wx_demo_scores *out);
void wx_demo_scores_free(wx_demo_scores *s);
/* Both models' scores in one result: a's model, b's model, then a's baselines (a and b scored on
 * the same initial times, leads and rows); channels: a's then b's others. *dev: the largest
 * relative difference between a's and b's baseline RMSEs on their common channels. */
wx_status wx_demo_scores_merge(const wx_demo_scores *a, const wx_demo_scores *b, wx_demo_scores *out,
                               double *dev);
/* The table: per channel and the leads in hours of `hours` (e.g. 24, 72, 120, 240), the RMSE of
 * every model and baseline and the ACC of the models and persistence ("-" where a model does not
 * predict the channel); a "*" after a model's RMSE marks where it beats both baselines. */
void wx_demo_print_table(FILE *out, const wx_demo_scores *s, const int *hours, int nhours);
/* 1 when the model's RMSE is below both baselines' for `chan` at `hours`. */
int wx_demo_model_wins(const wx_demo_scores *s, const char *model, const char *chan, int hours);

#endif
