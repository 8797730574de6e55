/* Scores forecast product files against a training archive, per model, channel and lead, with
 * the persistence and climatology baselines of WeatherBench2 (metrics.h has the formulas).
 *
 * A forecast file is one initial time (forecast_reference_time; without it, the earliest valid
 * time, i.e. lead 0) as src/io/netcdf_write.c writes it; its fields are matched to archive
 * channels by catalogue shortName, level kind and level, and must be on the archive's grid.
 * Truth at valid time v is the archive record v (which must lie on the archive's time axis).
 * Baselines (persistence = the truth at the initial time; climatology = the climatology at the
 * valid time, when one is open) are scored on the same initial times as the model they are
 * compared with, as WB2 compares models over one set of initial times: when every model has the
 * same initial times, once per (initial time, channel, lead) as rows "persistence" and
 * "climatology"; otherwise per model, as rows "persistence@MODEL" and "climatology@MODEL" over
 * that model's initial times (a pooled baseline would mix in initial times the model was not
 * run from). A scorecard against a baseline then uses the model's own rows. ACC is scored for
 * every model when a climatology is open, and SEEPS for the precipitation channel when that
 * climatology holds SEEPS fields (eval_seeps.h).
 * Every option is checked before anything is read (wx_eval_check_opts); a file listed twice, or
 * two files of one model with the same initial time, is a usage error (it would be counted twice).
 * Wind vectors: for every u/v pair of truth channels (u/v at a level, 10u/10v, 100u/100v) a
 * derived channel "wv<level>" / "wv10" / "wv100" (WB2's WV, WV10) gets WB2's wind-vector RMSE,
 * sqrt(mean_t ⟨(Δu)² + (Δv)²⟩) (no bias, MAE or ACC).
 * Conventions: WX_EVAL_WB2 (default) as above; WX_EVAL_FOURCASTNET reproduces NVlabs FourCastNet's
 * published scores (inference/inference.py): its cos-latitude weights
 * (wx_metrics_fourcastnet_weights), RMSE as the mean over initial times of each one's RMSE, and
 * ACC uncentred against the time-mean climatology (the mean of every stored day-of-year × hour
 * field of the climatology, day 366 weighted 1/4, standing for NVlabs' time_means.npy) instead
 * of the climatology at the valid time. CRPS and spread use the convention's weights.
 * An ensemble file (a realization/number axis: fields with member >= 0) is scored as WB2 scores
 * probabilistic forecasts: the deterministic scores (RMSE, bias, MAE, ACC) of its ensemble mean,
 * plus fair CRPS and the spread-skill ratio over its members (metrics.h). */
#ifndef WX_EVAL_H
#define WX_EVAL_H

#include <stdint.h>

#include "core/wx_error.h"
#include "infer/metrics.h"
#include "io/climatology.h"

#define WX_EVAL_PERSISTENCE "persistence"
#define WX_EVAL_CLIMATOLOGY "climatology"

typedef enum { WX_EVAL_WB2 = 0, WX_EVAL_FOURCASTNET = 1 } wx_eval_convention;

typedef struct {
    int model;      /* index into models */
    int chan;       /* archive channel */
    int64_t lead_s; /* seconds */
    int region;     /* rcells: index into region_names (>= 1); cells: 0 (global) */
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
    int64_t ninit;          /* distinct initial times scored (over all models) */
    int has_climatology;
    int nchan_truth;        /* channels 0..nchan_truth-1 are the archive's; the rest wind vectors */
    int baselines_per_model;/* 1: baseline rows "persistence@MODEL" (models' initial times differ) */
    int convention;         /* wx_eval_convention */
    int *init_set;          /* [nmodels] rows with equal values were scored on the same initial
                               times (a baseline row: those of its model) */
    int64_t *model_ninit;   /* [nmodels] initial times of each row */
    /* --regions (eval_regions.h): cells above are global; rcells hold the same scores over each
     * other region (sorted by region, model, channel, lead). nregions <= 1: global only. */
    int nregions;
    char (*region_names)[32]; /* [nregions] WB2 names, "global" first */
    int nrcells;
    wx_eval_cell *rcells;
    double resolution;        /* degrees of the scoring grid after regridding; 0: the truth's grid */
    /* SEEPS (eval_seeps.h): scored for channel seeps_chan when has_seeps */
    int has_seeps, seeps_chan;
    double seeps_dry;         /* dry threshold in the channel's units */
    int64_t seeps_period_s;
} wx_eval_result;

typedef struct {
    int nfiles;
    const char *const *files;  /* [nfiles] forecast NetCDF files */
    const char *const *models; /* [nfiles] model name of each file */
    const char *truth;         /* archive folder */
    const char *climatology;   /* archive folder whose climatology to use; NULL: the truth's if it
                                  has one, "" : none */
    int baselines;             /* 1: persistence and (with a climatology) climatology */
    const char *baseline;      /* the scorecards' baseline (persistence, climatology or a model),
                                  checked before scoring; NULL: none named */
    int no_climatology;        /* 1: no climatology (climatology must then be NULL or "") */
    int convention;            /* wx_eval_convention */
    const char *regions;       /* --regions: WB2 region names, comma-separated, or "all"; NULL:
                                  global only (eval_regions.h) */
    double resolution;         /* --resolution: score on the global grid of this spacing in
                                  degrees after conservative regridding (eval_grid.h); 0: on the
                                  truth archive's grid */
} wx_eval_opts;

/* Checks the options on their own, before anything is opened: file list (no file twice, model
 * names that are not baseline names and have no '@'), --baseline against the models and the
 * baselines that will be scored, --climatology against --no-climatology, the convention, the
 * region names. Usage errors (WX_ERR_USAGE). wx_eval_run calls it first; a land region without a
 * land-sea mask in the truth is a usage error of wx_eval_run, before any scoring. */
wx_status wx_eval_check_opts(const wx_eval_opts *o);
/* Parses "wb2" / "fourcastnet" (a usage error naming both otherwise). */
wx_status wx_eval_convention_parse(const char *s, int *out);
wx_status wx_eval_run(const wx_eval_opts *o, wx_eval_result *out);
/* The FourCastNet convention's climatology: the mean of every stored day-of-year × hour field
 * (day 366 weighted 1/4), per point over the finite ones. out: [nchan, nlat, nlon] */
wx_status wx_eval_clim_time_mean(wx_climatology *clim, float *out);
void wx_eval_result_free(wx_eval_result *r);
/* The cell of (model, channel, lead), or NULL. */
const wx_eval_cell *wx_eval_find(const wx_eval_result *r, const char *model, const char *chan,
                                 int64_t lead_s);

/* The cell of (region name, model, channel, lead), "global" included, or NULL. */
const wx_eval_cell *wx_eval_find_region(const wx_eval_result *r, const char *region,
                                        const char *model, const char *chan, int64_t lead_s);

/* One warning per model and variable whose forecasts were NaN or infinite where the truth was
 * finite (metrics.h: those scores are NaN); wx_eval_run calls it. */
void wx_eval_warn_non_finite(const wx_eval_result *r);

/* scores.csv: model,variable,units,lead_hours,n,rmse,bias,mae,acc,n_ens,crps,spread,
 * spread_skill,spread_skill_fair (NaN written as empty; the ensemble columns are empty and n_ens 0
 * for deterministic forecasts; bias, MAE and ACC are empty for wind vectors "wv..."), then, only
 * when SEEPS is scored (has_seeps), a column seeps (empty for the other variables). With regions
 * besides global, a last column "region": the global rows first, as without regions (plus
 * ",global"), then each other region's rows in the order asked for. */
wx_status wx_eval_write_csv(const wx_eval_result *r, const char *path);
/* scores.json: {"initial_times": N, "climatology": bool, "convention": "wb2"|"fourcastnet",
 * "resolution": degrees of the scoring grid (null: the truth archive's grid), "seeps": {variable,
 * accumulation_hours, dry_threshold, units, min_p1, max_p1} or null when SEEPS is not scored,
 * "baselines": "shared"|"per_model"|"none", "models": [...], "scores": [{model, variable, lead_hours,
 * n, rmse, bias, mae, acc[, n_ens, crps, spread, spread_skill, spread_skill_fair][, seeps]}, ...]} with
 * NaN as null; the ensemble keys only for ensemble forecasts. "scores" is always global; with
 * regions besides global, then "regions": [names, "global" first] and "region_scores": [{region,
 * model, variable, ...as in scores}, ...] for the other regions. */
wx_status wx_eval_write_json(const wx_eval_result *r, const char *path);
/* Removes what an earlier eval wrote into dir (scores.csv, scores.json, rmse_*.png, acc_*.png,
 * scorecard_*_vs_*.png), so a rerun with fewer models or variables leaves no stale plot beside
 * the new tables; other files are left alone. Returns the number removed. */
int wx_eval_remove_old_products(const char *dir);
/* rmse_<var>.png and (with a climatology) acc_<var>.png per channel: every model on one plot. */
wx_status wx_eval_write_plots(const wx_eval_result *r, const char *dir);

/* Index of a model (or baseline) by name, or -1. With per-model baseline rows, "persistence" and
 * "climatology" give their first row ("persistence@MODEL"): the baseline was scored. */
int wx_eval_model_index(const wx_eval_result *r, const char *name);
/* Relative RMSE in percent, 100·(RMSE_model − RMSE_base)/RMSE_base, of one channel and lead;
 * NaN when either score is missing or the baseline's RMSE is 0 (persistence at lead 0). */
double wx_eval_relative_rmse(const wx_eval_result *r, int model, int base, int chan, int64_t lead_s);
/* scorecard_<model>_vs_<baseline>.png for every other model (io/png_scorecard.h: rows = its
 * channels, columns = its leads with at least one value, RdBu_r over ±100 %, blue = lower RMSE).
 * With per-model baseline rows, a model is compared with the baseline's row on its own initial
 * times ("persistence@MODEL"; file scorecard_MODEL_vs_persistence.png), and baseline rows only
 * with rows of their own model; two models scored on different initial times say so in the
 * title. A baseline that was not scored is a usage error listing the models. *written: cards
 * made. */
wx_status wx_eval_write_scorecards(const wx_eval_result *r, const char *baseline, const char *dir,
                                   int *written);

#endif
