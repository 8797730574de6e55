#include "infer/demo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ingest.h"
#include "synth/synth_run.h"
#include "core/wx_config.h"
#include "core/wx_fs.h"
#include "core/wx_timer.h"
#include "infer/forecast.h"
#include "infer/rollout.h"
#include "io/archive.h"
#include "io/png_map.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "backend/wx_backend.h"

static const char *const config_files[] = {"synth.yaml", "recipe.yaml", "model.yaml", "train.yaml",
                                           "demo.yaml", "recipe_graphcast.yaml",
                                           "model_graphcast.yaml", "train_graphcast.yaml"};
#define NCONFIG_FCN 5 /* the first five: FourCastNet's chain; the last three: GraphCast's */
#define NCONFIG 8

/* One model's chain: its ingest recipe (and the archive folder that recipe writes), its training
 * config and its fine-tune switch. */
typedef struct {
    const char *name, *label, *recipe, *archive, *train;
    int finetune;
} demo_model;

static const wx_cfg_field demo_fields[] = {
    {"init_every", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "72h", "spacing of the scored initial times", NULL},
    {"lead_steps", WX_CFG_INT, 0, 1, 10000, "40", "model steps per rollout (40 = 10 days of 6 h)", NULL},
    {"max_inits", WX_CFG_INT, 0, 0, 1e9, "0", "at most this many initial times (0: all)", NULL},
    {"batch", WX_CFG_INT, 0, 1, 1024, "8", "initial times rolled out together", NULL},
    {"map_channel", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "z500", "channel of the forecast-vs-truth map", NULL},
    {"map_lead_hours", WX_CFG_INT, 0, 1, 1e6, "72", "lead of the forecast-vs-truth map", NULL},
    {"finetune", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "false", "run train.yaml's finetune stage after pretrain", NULL},
    {"graphcast_finetune", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "false",
     "run train_graphcast.yaml's finetune stage (rollout curriculum) after pretrain", NULL},
    WX_CFG_END,
};

typedef struct {
    int64_t init_every_s, lead_steps, max_inits, batch, map_lead_h;
    const char *map_channel;
    int finetune, gc_finetune;
    wx_yaml *root;
} demo_config;

static wx_status load_demo_config(const char *path, demo_config *d) {
    memset(d, 0, sizeof *d);
    WX_TRY(wx_yaml_load_file(path, &d->root));
    const char *every = NULL;
    WX_TRY(wx_cfg_validate(d->root, "", demo_fields));
    WX_TRY(wx_cfg_str(d->root, demo_fields, "init_every", &every));
    WX_TRY(wx_time_parse_duration(every, "init_every", &d->init_every_s));
    WX_TRY(wx_cfg_int(d->root, demo_fields, "lead_steps", &d->lead_steps));
    WX_TRY(wx_cfg_int(d->root, demo_fields, "max_inits", &d->max_inits));
    WX_TRY(wx_cfg_int(d->root, demo_fields, "batch", &d->batch));
    WX_TRY(wx_cfg_str(d->root, demo_fields, "map_channel", &d->map_channel));
    WX_TRY(wx_cfg_int(d->root, demo_fields, "map_lead_hours", &d->map_lead_h));
    WX_TRY(wx_cfg_bool(d->root, demo_fields, "finetune", &d->finetune));
    WX_TRY(wx_cfg_bool(d->root, demo_fields, "graphcast_finetune", &d->gc_finetune));
    return WX_OK;
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static wx_status copy_file(const char *from, const char *to) {
    char *text = NULL;
    size_t len = 0;
    WX_TRY(wx_read_file(from, &text, &len));
    wx_atomic_file f;
    wx_status st = wx_atomic_open(&f, to);
    if (st == WX_OK) {
        if (fwrite(text, 1, len, f.fp) != len) {
            wx_atomic_abort(&f);
            st = wx_error_set(WX_ERR_RUN, "%s: cannot write", to);
        } else {
            st = wx_atomic_commit(&f);
        }
    }
    free(text);
    return st;
}

static void header(wx_demo_opts *o, int k, const char *what) {
    if (!o->report) return;
    fprintf(o->report, "\n[%d/5] %s\n", k, what);
    fflush(o->report);
}

static wx_status stage_world(wx_demo_opts *o) {
    char cfg[4200], world[4200], done[4300];
    snprintf(cfg, sizeof cfg, "%s/synth.yaml", o->output);
    snprintf(world, sizeof world, "%s/world", o->output);
    snprintf(done, sizeof done, "%s/.complete", world);
    if (exists(done)) {
        if (o->report) fprintf(o->report, "reusing %s\n", world);
        return WX_OK;
    }
    wx_synth_opts so = {.output = world};
    WX_TRY(wx_synth_run(cfg, &so));
    if (o->report)
        fprintf(o->report, "%s: %lld times in %d files\n", world, (long long)so.times_written,
                so.files_written);
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, done));
    fprintf(f.fp, "%lld\n", (long long)so.times_written);
    return wx_atomic_commit(&f);
}

static wx_status stage_archive(wx_demo_opts *o, const demo_model *dm) {
    char recipe[4200];
    snprintf(recipe, sizeof recipe, "%s/%s", o->output, dm->recipe);
    char manifest[4300];
    snprintf(manifest, sizeof manifest, "%s/%s/manifest.json", o->output, dm->archive);
    if (exists(manifest)) { /* complete: the manifest is written last */
        if (o->report) fprintf(o->report, "reusing %s/%s\n", o->output, dm->archive);
        return WX_OK;
    }
    wx_ingest_opts io;
    memset(&io, 0, sizeof io);
    WX_TRY(wx_ingest_run(recipe, &io));
    if (o->report)
        fprintf(o->report, "%s: %lld records (%lld decoded now, %d shards kept)\n", io.archive_dir,
                (long long)io.records_total, (long long)io.records_written, io.shards_skipped);
    return WX_OK;
}

/* Runs one training stage unless its last checkpoint says it is finished; resumes a stopped one.
 * ckpt: the checkpoint the stage leaves for scoring (best.ckpt, else last.ckpt). */
static wx_status train_stage(wx_demo_opts *o, const demo_model *dm, const char *stage, char *ckpt,
                             size_t cap) {
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/%s", o->output, dm->train);
    wx_train_config c;
    wx_status st = wx_train_config_load(cfg, stage, &c);
    char last[WX_TRAIN_PATH_MAX + 32], best[WX_TRAIN_PATH_MAX + 32];
    snprintf(last, sizeof last, "%s/last.ckpt", c.checkpoint_dir);
    snprintf(best, sizeof best, "%s/best.ckpt", c.checkpoint_dir);
    int finished = 0, resume = 0;
    if (st == WX_OK && exists(last)) {
        wx_checkpoint ck;
        if (wx_checkpoint_read(last, &ck) == WX_OK && ck.has_state) {
            finished = ck.st.step >= ck.st.total_steps;
            resume = !finished;
        }
        wx_checkpoint_free(&ck);
    }
    if (st == WX_OK && finished) {
        if (o->report) fprintf(o->report, "reusing the finished %s stage in %s\n", stage, c.checkpoint_dir);
    } else if (st == WX_OK) {
        /* overwrite: the demo owns its folder (a damaged last.ckpt is trained again) */
        wx_train_opts to = {.resume = resume ? last : NULL, .threads = o->threads, .overwrite = 1};
        wx_train_summary sum;
        st = wx_train_run(&c, &to, &sum);
        if (st == WX_OK && o->report)
            fprintf(o->report, "%s %s: steps %lld..%lld, last loss %.4g, best validation loss %.4g at "
                    "step %lld\n", dm->label, stage, (long long)sum.first_step, (long long)sum.step,
                    sum.last_loss, sum.best_loss, (long long)sum.best_step);
    }
    wx_train_config_free(&c);
    snprintf(ckpt, cap, "%s", exists(best) ? best : last);
    return st;
}

/* Forecast over truth, one map each, in one PNG. */
static wx_status write_map(const char *png, const char *label, const wx_grid *g, const char *chan,
                           const float *fc, const float *truth, wx_time valid, int64_t lead_s) {
    /* z500 → shortName z at 500 hPa for the style; other names keep their single-level style. */
    char param[64];
    double level = 0;
    size_t n = strcspn(chan, "0123456789");
    snprintf(param, sizeof param, "%s", chan);
    if (n > 0 && chan[n] && strspn(chan + n, "0123456789") == strlen(chan + n) &&
        strchr("ztuvqr", chan[0]) && n == 1) {
        snprintf(param, sizeof param, "%.*s", (int)n, chan);
        level = atof(chan + n);
    }
    wx_map_style s;
    wx_map_style_for(param, level, NULL, 1, &s);
    /* One colour range for both maps, so equal colours mean equal values. */
    if (s.vmin >= s.vmax) {
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t p = 0; p < (int64_t)g->nlat * g->nlon; p++) {
            lo = fmin(lo, fmin(fc[p], truth[p]) * s.scale + s.offset);
            hi = fmax(hi, fmax(fc[p], truth[p]) * s.scale + s.offset);
        }
        s.vmin = lo, s.vmax = hi;
    }
    wx_canvas cv[2];
    const float *f[2] = {fc, truth};
    wx_status st = WX_OK;
    int made = 0;
    for (int k = 0; k < 2 && st == WX_OK; k++) {
        char t1[256], t2[256], title[320];
        wx_map_titles(param, level, 0, &s, valid, k ? -1 : lead_s, t1, sizeof t1, t2, sizeof t2);
        snprintf(title, sizeof title, "%s: %s", k ? "truth" : label, t1);
        wx_map_opts mo;
        wx_map_opts_default(&mo);
        mo.title = title, mo.subtitle = t2;
        /* The synthetic world has its own continents: Earth's coastlines would mislead. */
        mo.coast = NULL;
        st = wx_map_render(g, f[k], &s, &mo, &cv[k], NULL);
        if (st == WX_OK) made++;
    }
    if (st == WX_OK) {
        wx_canvas all;
        int w = cv[0].w > cv[1].w ? cv[0].w : cv[1].w;
        wx_canvas_init(&all, w, cv[0].h + cv[1].h, (wx_rgb){255, 255, 255});
        for (int k = 0, y0 = 0; k < 2; y0 += cv[k].h, k++)
            for (int y = 0; y < cv[k].h; y++)
                memcpy(all.rgb + ((size_t)(y0 + y) * (size_t)w) * 3, cv[k].rgb + (size_t)y * (size_t)cv[k].w * 3,
                       (size_t)cv[k].w * 3);
        st = wx_canvas_write_png(&all, png);
        wx_canvas_free(&all);
    }
    for (int k = 0; k < made; k++) wx_canvas_free(&cv[k]);
    return st;
}

/* Scores one model's checkpoint on its archive's held-out years and writes its forecast NetCDF
 * and forecast-vs-truth map (file names suffixed with the model name unless it is the first). */
static wx_status score_model(wx_demo_opts *o, demo_config *d, const demo_model *dm, const char *ckpt,
                             int first, int64_t score_nlat, wx_demo_scores *sc, wx_time *init_out) {
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/%s", o->output, dm->train);
    wx_train_config c;
    wx_status st = wx_train_config_load(cfg, "pretrain", &c);
    if (st != WX_OK) return st;
    int64_t years[2] = {c.test_years[0], c.test_years[1]};
    char archive[WX_TRAIN_PATH_MAX];
    snprintf(archive, sizeof archive, "%s", c.archive);
    int64_t step_s = c.time_step_s;
    /* Without --threads, rollouts use the training config's thread count, as training did. */
    int threads = o->threads > 0 ? o->threads : c.threads;
    wx_train_config_free(&c);
    if (years[0] <= 0 || years[1] < years[0])
        return wx_error_set(WX_ERR_USAGE, "%s: data.test_years must name the held-out years the demo "
                            "scores", cfg);
    wx_archive_meta m;
    WX_TRY(wx_archive_read_manifest(archive, &m));
    size_t np = (size_t)m.grid.nlat * (size_t)m.grid.nlon;
    wx_archive_meta_free(&m);
    float *mf = wx_malloc(sizeof(float) * np), *mt = wx_malloc(sizeof(float) * np);
    if (o->report) fprintf(o->report, "%s:\n", dm->label);
    wx_demo_score_opts so = {ckpt, archive, {years[0], years[1]}, d->init_every_s, d->lead_steps,
                             d->max_inits, d->batch, threads, d->map_channel,
                             d->map_lead_h * 3600 / step_s, mf, mt, 0, dm->name, score_nlat};
    st = wx_demo_score(&so, sc);
    *init_out = so.first_init;
    char init[32], fc[4200], png[4200];
    wx_time_format(so.first_init, init);
    for (char *p = init; *p; p++)
        if (*p == ':') *p = '-';
    snprintf(fc, sizeof fc, "%s/forecast_%s%s%s.nc", o->output, init, first ? "" : "_", first ? "" : dm->name);
    snprintf(png, sizeof png, "%s/%s_forecast_vs_truth%s%s.png", o->output, d->map_channel,
             first ? "" : "_", first ? "" : dm->name);
    if (st == WX_OK) {
        wx_forecast_opts fo = {.model = ckpt, .init = archive, .time = so.first_init,
                               .steps = d->lead_steps, .output = fc, .threads = threads};
        st = wx_forecast_run(&fo);
    }
    if (st == WX_OK) {
        /* The model grid: the archive's rows, less the south pole row when the model drops it. */
        wx_rollout *r = NULL;
        st = wx_rollout_open(ckpt, 1, 1, &r);
        if (st == WX_OK)
            st = write_map(png, dm->label, &r->grid, d->map_channel, mf, mt,
                           so.first_init + d->map_lead_h * 3600, d->map_lead_h * 3600);
        wx_rollout_close(r);
    }
    if (st == WX_OK && o->report) fprintf(o->report, "wrote %s and %s\n", fc, png);
    if (st == WX_OK && first) {
        snprintf(o->forecast_nc, sizeof o->forecast_nc, "%s", fc);
        snprintf(o->map_png, sizeof o->map_png, "%s", png);
    }
    free(mf), free(mt);
    return st;
}

static wx_status run(wx_demo_opts *o, demo_config *d, const demo_model *dms, int nm) {
    double t = wx_time_now();
    header(o, 1, "synthetic world (wxcast synth synth.yaml)");
    WX_TRY(stage_world(o));
    o->stage_s[0] = wx_time_since(t), t = wx_time_now();

    header(o, 2, nm > 1 ? "training archives through the NetCDF reader (wxcast ingest recipe.yaml, "
                          "recipe_graphcast.yaml)"
                        : "training archive through the NetCDF reader (wxcast ingest RECIPE)");
    for (int i = 0; i < nm; i++) WX_TRY(stage_archive(o, &dms[i]));
    o->stage_s[1] = wx_time_since(t), t = wx_time_now();

    char what[160], ckpt[2][WX_TRAIN_PATH_MAX + 64];
    snprintf(what, sizeof what, "%s%s%s training (wxcast train %s%s%s)", dms[0].label,
             nm > 1 ? " and " : "", nm > 1 ? dms[1].label : "", dms[0].train, nm > 1 ? ", " : "",
             nm > 1 ? dms[1].train : "");
    header(o, 3, what);
    for (int i = 0; i < nm; i++) {
        WX_TRY(train_stage(o, &dms[i], "pretrain", ckpt[i], sizeof ckpt[i]));
        if (dms[i].finetune) WX_TRY(train_stage(o, &dms[i], "finetune", ckpt[i], sizeof ckpt[i]));
    }
    o->stage_s[2] = wx_time_since(t), t = wx_time_now();

    header(o, 4, "10-day rollouts on the held-out years, scored against persistence and climatology; "
                 "forecast NetCDF and map");
    wx_demo_scores sc[2];
    memset(sc, 0, sizeof sc);
    wx_time first = 0;
    wx_status st = WX_OK;
    for (int i = 0; i < nm && st == WX_OK; i++)
        /* Both: every model scored on the rows of the first one's grid (FourCastNet drops the
         * south pole that GraphCast keeps), so the baselines are the same numbers for both. */
        st = score_model(o, d, &dms[i], ckpt[i], i == 0, i ? sc[0].nlat : 0, &sc[i], &first);
    if (st == WX_OK && nm > 1) {
        double dev = 0;
        st = wx_demo_scores_merge(&sc[0], &sc[1], &o->scores, &dev);
        if (st == WX_OK && o->report)
            fprintf(o->report, "baselines on the two archives differ by at most %.2g (relative RMSE); "
                    "the table shows the first's\n", dev);
    } else if (st == WX_OK) {
        o->scores = sc[0];
        memset(&sc[0], 0, sizeof sc[0]);
    }
    for (int i = 0; i < nm; i++) wx_demo_scores_free(&sc[i]);
    o->ninit = o->scores.res.ninit;
    o->stage_s[3] = wx_time_since(t), t = wx_time_now();

    if (st == WX_OK) {
        header(o, 5, "products: RMSE/ACC plots (every model on one plot), scores.json");
        snprintf(o->scores_json, sizeof o->scores_json, "%s/scores.json", o->output);
        st = wx_eval_write_json(&o->scores.res, o->scores_json);
    }
    if (st == WX_OK) st = wx_eval_write_plots(&o->scores.res, o->output);
    o->stage_s[4] = wx_time_since(t);
    return st;
}

wx_status wx_demo_check_model(const char *which) {
    if (!which || !strcmp(which, "fourcastnet") || !strcmp(which, "graphcast") || !strcmp(which, "both"))
        return WX_OK;
    return wx_error_set(WX_ERR_USAGE, "demo: --model %s: expected fourcastnet, graphcast or both", which);
}

/* A training config's device, checked before the synthetic world is made: `device: cuda` on a
 * machine without a GPU (or a build without CUDA) fails now with train's own message, not after
 * the minutes of synth and ingest. The rest of the config is checked when training loads it
 * (its archive does not exist yet). */
static wx_status check_train_device(const char *path) {
    wx_yaml *root;
    WX_TRY(wx_yaml_load_file(path, &root));
    const wx_yaml *dev = wx_yaml_get(root, "device");
    const char *name = NULL;
    wx_status st = dev ? wx_yaml_as_string(dev, "device", &name) : WX_OK;
    if (st == WX_OK && name && strcmp(name, "cpu") != 0) {
        char what[4400];
        snprintf(what, sizeof what, "%s: line %d: key 'device'", path, dev->line);
        const wx_backend *be;
        st = wx_backend_by_name(name, what, &be);
    }
    wx_yaml_free(root);
    return st;
}

wx_status wx_demo_run(wx_demo_opts *o) {
    memset(o->stage_s, 0, sizeof o->stage_s);
    const char *which = o->model ? o->model : "fourcastnet";
    WX_TRY(wx_demo_check_model(which));
    int fcn = !strcmp(which, "fourcastnet") || !strcmp(which, "both");
    int gc = !strcmp(which, "graphcast") || !strcmp(which, "both");
    WX_TRY(wx_mkdir_p(o->output));
    for (int i = 0; i < NCONFIG; i++) {
        /* recipe/model/train.yaml only for FourCastNet, the *_graphcast.yaml only for GraphCast */
        if ((i >= NCONFIG_FCN && !gc) || (i >= 1 && i <= 3 && !fcn)) continue;
        char from[4200], to[4200];
        snprintf(from, sizeof from, "%s/%s", o->configs, config_files[i]);
        snprintf(to, sizeof to, "%s/%s", o->output, config_files[i]);
        if (!exists(from))
            return wx_error_set(WX_ERR_USAGE, "demo: %s is missing (--configs names the folder with "
                                "synth.yaml, demo.yaml and, per model, recipe.yaml, model.yaml, "
                                "train.yaml (FourCastNet) or recipe_graphcast.yaml, "
                                "model_graphcast.yaml, train_graphcast.yaml (GraphCast))", from);
        WX_TRY(copy_file(from, to));
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/demo.yaml", o->output);
    demo_config d;
    wx_status st = load_demo_config(path, &d);
    demo_model dms[2];
    int nm = 0;
    if (st == WX_OK && fcn)
        dms[nm++] = (demo_model){"fourcastnet", "FourCastNet", "recipe.yaml", "archive", "train.yaml",
                                 d.finetune};
    if (st == WX_OK && gc)
        dms[nm++] = (demo_model){"graphcast", "GraphCast", "recipe_graphcast.yaml",
                                 "archive_graphcast", "train_graphcast.yaml", d.gc_finetune};
    for (int i = 0; i < nm && st == WX_OK; i++) {
        snprintf(path, sizeof path, "%s/%s", o->output, dms[i].train);
        st = check_train_device(path);
    }
    if (st == WX_OK) st = run(o, &d, dms, nm);
    wx_yaml_free(d.root);
    return st;
}

void wx_demo_free(wx_demo_opts *o) { wx_demo_scores_free(&o->scores); }
