/* Scores forecast product files against a training archive, per model, channel and lead, with
 * the persistence and climatology baselines of WeatherBench2 (metrics.h has the formulas).
 *
 * A forecast file is one initial time (forecast_reference_time; without it, the earliest valid
 * time, i.e. lead 0) as src/io/netcdf_write.c writes it; its fields are matched to archive
 * channels by catalogue shortName, level kind and level, and must be on the archive's grid.
 * Truth at valid time v is the archive record v (which must lie on the archive's time axis).
 * Baselines are scored once per (initial time, channel, lead) present in any forecast file:
 * persistence = the truth at the initial time; climatology = the climatology at the valid time
 * (when one is open). ACC is scored for every model when a climatology is open.
 * An ensemble file (a realization/number axis: fields with member >= 0) is scored as WB2 scores
 * probabilistic forecasts: the deterministic scores (RMSE, bias, MAE, ACC) of its ensemble mean,
 * plus fair CRPS and the spread-skill ratio over its members (metrics.h). */
#ifndef WX_EVAL_H
#define WX_EVAL_H

#include <stdint.h>

#include "core/wx_error.h"
#include "infer/metrics.h"

#define WX_EVAL_PERSISTENCE "persistence"
#define WX_EVAL_CLIMATOLOGY "climatology"

typedef struct {
    int model;      /* index into models */
    int chan;       /* archive channel */
    int64_t lead_s; /* seconds */
    wx_score_sums sums;
} wx_eval_cell;

typedef struct {
    int nmodels;
    char (*models)[64];
    int nchan;
    char (*chan_names)[64]; /* archive channel names ("z500") */
    char (*chan_units)[32];
    int ncells;
    wx_eval_cell *cells;    /* sorted by model, channel, lead after wx_eval_run */
    int64_t ninit;          /* distinct initial times scored */
    int has_climatology;
} wx_eval_result;

typedef struct {
    int nfiles;
    const char *const *files;  /* [nfiles] forecast NetCDF files */
    const char *const *models; /* [nfiles] model name of each file */
    const char *truth;         /* archive folder */
    const char *climatology;   /* archive folder whose climatology to use; NULL: the truth's if it
                                  has one, "" : none */
    int baselines;             /* 1: persistence and (with a climatology) climatology */
} wx_eval_opts;

wx_status wx_eval_run(const wx_eval_opts *o, wx_eval_result *out);
void wx_eval_result_free(wx_eval_result *r);
/* The cell of (model, channel, lead), or NULL. */
const wx_eval_cell *wx_eval_find(const wx_eval_result *r, const char *model, const char *chan,
                                 int64_t lead_s);

/* scores.csv: model,variable,units,lead_hours,n,rmse,bias,mae,acc,n_ens,crps,spread,
 * spread_skill,spread_skill_fair (NaN written as empty; the ensemble columns are empty and n_ens 0
 * for deterministic forecasts). */
wx_status wx_eval_write_csv(const wx_eval_result *r, const char *path);
/* scores.json: {"models": [...], "variables": [...], "scores": [{model, variable, lead_hours,
 * n, rmse, bias, mae, acc[, n_ens, crps, spread, spread_skill, spread_skill_fair]}, ...]} with
 * NaN as null; the ensemble keys only for ensemble forecasts. */
wx_status wx_eval_write_json(const wx_eval_result *r, const char *path);
/* rmse_<var>.png and (with a climatology) acc_<var>.png per channel: every model on one plot. */
wx_status wx_eval_write_plots(const wx_eval_result *r, const char *dir);

/* Index of a model (or baseline) by name, or -1. */
int wx_eval_model_index(const wx_eval_result *r, const char *name);
/* Relative RMSE in percent, 100·(RMSE_model − RMSE_base)/RMSE_base, of one channel and lead;
 * NaN when either score is missing or the baseline's RMSE is 0 (persistence at lead 0). */
double wx_eval_relative_rmse(const wx_eval_result *r, int model, int base, int chan, int64_t lead_s);
/* scorecard_<model>_vs_<baseline>.png for every other model (io/png_scorecard.h: rows = its
 * channels, columns = its leads with at least one value, RdBu_r over ±100 %, blue = lower RMSE).
 * A baseline that was not scored is a usage error listing the models. *written: cards made. */
wx_status wx_eval_write_scorecards(const wx_eval_result *r, const char *baseline, const char *dir,
                                   int *written);

#endif
