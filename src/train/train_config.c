#include "train/train_config.h"
#include "train/train_config_priv.h"

#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "meteo/wx_time.h"
#include "models/graphcast_config.h"
#include "ops/wx_ctx.h"
#include "train/model_config_file.h"

static const char *const stage_choices[] = {"pretrain", "finetune", "precip", NULL};
static const char *const loss_choices[] = {"auto", "relative_l2", "lat_weighted_mse", "graphcast",
                                           NULL};

static const char *const device_choices[] = {"cpu", "cuda", NULL};
static const char *const precision_choices[] = {"fp32", "bf16", NULL};

static const wx_cfg_field root_fields[] = {
    {"model", WX_CFG_ANY, 1, WX_CFG_NO_RANGE, NULL,
     "model config file (relative to this file) or an inline model mapping", NULL},
    {"data", WX_CFG_MAP, 1, WX_CFG_NO_RANGE, NULL, "training archive, channels and year splits", NULL},
    {"seed", WX_CFG_INT, 0, 0, 9.0e15, "0", "seeds weights (stream 0) and data order (stream 1)", NULL},
    {"threads", WX_CFG_INT, 0, 0, WX_CTX_THREADS_MAX, "0", "compute threads (0 = all cores)", NULL},
    {"checkpoint_dir", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "checkpoints",
     "checkpoints go to <checkpoint_dir>/<stage>/{last,best}.ckpt", NULL},
    {"log_every", WX_CFG_INT, 0, 1, 1e12, "1", "write a metrics line every N steps", NULL},
    {"activation_checkpointing", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "false",
     "recompute activations in backward to save memory (GraphCast: processor steps; same results)",
     NULL},
    {"stage", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "pretrain", "stage run when --stage is not given",
     stage_choices},
    {"device", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "cpu", "backend: cpu or cuda (a CUDA build and a GPU)",
     device_choices},
    {"precision", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "fp32",
     "GEMM inputs: fp32, or bf16 with fp32 accumulation and fp32 master weights (cuda only)",
     precision_choices},
    {"validation", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL, "validation after every epoch", NULL},
    {"pretrain", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL, "one-step training (NVlabs afno_backbone)",
     NULL},
    {"finetune", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL,
     "two-step autoregressive fine-tune (NVlabs afno_backbone_finetune)", NULL},
    {"precip", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL,
     "precipitation model on the frozen wind model's next state (NVlabs precip)", NULL},
    WX_CFG_END};

static const wx_cfg_field data_fields[] = {
    {"archive", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "training archive folder (wxcast ingest)", NULL},
    {"channels_in", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[]", "input channel names ([] = all)", NULL},
    {"channels_out", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[]",
     "output channel names ([] = channels_in)", NULL},
    {"time_step", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "6h", "model time step (a multiple of the archive's)",
     NULL},
    {"train_years", WX_CFG_LIST, 1, WX_CFG_NO_RANGE, NULL, "[first, last] years for training", NULL},
    {"valid_years", WX_CFG_LIST, 1, WX_CFG_NO_RANGE, NULL, "[first, last] years for validation", NULL},
    {"test_years", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[]", "[first, last] held-out years (not read)",
     NULL},
    {"read_threads", WX_CFG_INT, 0, 1, 256, "4", "archive reader threads", NULL},
    WX_CFG_END};

static const wx_cfg_field valid_fields[] = {
    {"leads", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[1, 4]", "lead times in model steps (1 = 6 h)", NULL},
    {"max_samples", WX_CFG_INT, 0, 0, 1e12, "0", "initial times used (evenly spaced; 0 = all)", NULL},
    {"batch_size", WX_CFG_INT, 0, 0, 1e6, "0", "0 = the training batch size", NULL},
    WX_CFG_END};

#define OPT_FIELDS(lr)                                                                            \
    {"lr", WX_CFG_FLOAT, 0, 0, 10, lr, "peak learning rate", NULL},                              \
    {"betas", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[0.9, 0.999]", "AdamW betas", NULL},             \
    {"weight_decay", WX_CFG_FLOAT, 0, 0, 10, "0", "AdamW decoupled weight decay (not on biases, " \
     "norms, pos_embed)", NULL},                                                                  \
    {"eps", WX_CFG_FLOAT, 0, 0, 1, "1e-8", "AdamW epsilon", NULL},                                \
    {"warmup", WX_CFG_INT, 0, 0, 1e12, "0", "linear warmup steps", NULL},                         \
    {"lr_min", WX_CFG_FLOAT, 0, 0, 10, "0", "cosine floor at the last step", NULL},               \
    {"grad_clip", WX_CFG_FLOAT, 0, 0, 1e12, "0", "global gradient-norm clip (0 = off)", NULL},    \
    WX_CFG_END

static const wx_cfg_field opt_pre_fields[] = {OPT_FIELDS("5e-4")};
static const wx_cfg_field opt_fine_fields[] = {OPT_FIELDS("1e-4")};
static const wx_cfg_field opt_precip_fields[] = {OPT_FIELDS("2.5e-4")};

static const wx_cfg_field loss_fields[] = {
    {"type", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "auto",
     "auto (the model family's: relative_l2 for FourCastNet, graphcast for GraphCast), relative_l2 "
     "(NVlabs), lat_weighted_mse, graphcast (GraphCast's weighted MSE of normalised residuals)",
     loss_choices},
    {"channel_weights", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[]",
     "lat_weighted_mse only: one weight per output channel ([] = all 1)", NULL},
    WX_CFG_END};

#define STAGE_FIELDS(epochs, rollout)                                                             \
    {"epochs", WX_CFG_INT, 0, 1, 1e9, epochs, "passes over the training years", NULL},            \
    {"steps", WX_CFG_INT, 0, 0, 1e15, "0", "total optimizer steps (0 = epochs x batches)", NULL}, \
    {"batch_size", WX_CFG_INT, 0, 1, 1e6, "64", "global batch", NULL},                           \
    {"rollout_steps", WX_CFG_INT, 0, 1, 64, rollout, "autoregressive steps in the loss (the "      \
     "maximum when rollout_every > 0)", NULL},                                                    \
    {"rollout_start", WX_CFG_INT, 0, 1, 64, "1", "steps at the stage's first optimizer step when " \
     "rollout_every > 0", NULL},                                                                  \
    {"rollout_every", WX_CFG_INT, 0, 0, 1e15, "0", "optimizer steps per added rollout step "      \
     "(GraphCast curriculum 2..12: 1000; 0 = always rollout_steps)", NULL},                      \
    {"init_from", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "\"\"",                                         \
     "checkpoint whose weights start the stage (optimizer state not loaded)", NULL},              \
    {"checkpoint_every", WX_CFG_INT, 0, 0, 1e15, "0", "also write last.ckpt every N steps", NULL}, \
    {"optimizer", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL, "AdamW, warmup + cosine", NULL},          \
    {"loss", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL, "training loss", NULL},                        \
    WX_CFG_END

static const wx_cfg_field pre_fields[] = {STAGE_FIELDS("150", "1")};
static const wx_cfg_field fine_fields[] = {STAGE_FIELDS("50", "2")};
static const wx_cfg_field precip_fields[] = {
    {"wind_checkpoint", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL,
     "checkpoint of the trained wind model (pretrain/finetune), frozen during this stage", NULL},
    {"channel", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "tp",
     "archive channel of the 6-h accumulated precipitation (m) at t + time_step", NULL},
    {"eps", WX_CFG_FLOAT, 0, 1e-30, 1e6, "1e-5", "target transform log1p(tp / eps) (NVlabs precip_eps)",
     NULL},
    {"model", WX_CFG_ANY, 0, WX_CFG_NO_RANGE, NULL,
     "PrecipNet backbone config (file or mapping; default: `model` with out_channels 1)", NULL},
    STAGE_FIELDS("25", "1")};

const char *wx_train_stage_name(wx_train_stage s) {
    return s == WX_STAGE_FINETUNE ? "finetune" : s == WX_STAGE_PRECIP ? "precip" : "pretrain";
}

static const wx_cfg_field *stage_fields(wx_train_stage s) {
    return s == WX_STAGE_FINETUNE ? fine_fields : s == WX_STAGE_PRECIP ? precip_fields : pre_fields;
}

static const wx_cfg_field *stage_opt_fields(wx_train_stage s) {
    return s == WX_STAGE_FINETUNE ? opt_fine_fields
           : s == WX_STAGE_PRECIP ? opt_precip_fields
                                  : opt_pre_fields;
}

static const char *file_of(const wx_yaml *n, const wx_train_config *c) {
    return n && n->file ? n->file : c->path;
}

static void join(const char *dir, const char *p, char *out, size_t cap) {
    if (p[0] == '/' || !dir[0]) snprintf(out, cap, "%s", p);
    else snprintf(out, cap, "%.2000s/%.2000s", dir, p);
}

/* A list of strings (channel names). */
static wx_status str_list(const wx_yaml *map, const char *key, const char *full, int *n, char ***out) {
    const wx_yaml *l = wx_yaml_get(map, key);
    *n = 0;
    *out = NULL;
    if (!l) return WX_OK;
    *out = wx_calloc((size_t)l->count + 1, sizeof(char *));
    for (int i = 0; i < l->count; i++) {
        const char *s;
        char item[128];
        snprintf(item, sizeof item, "%s[%d]", full, i);
        WX_TRY(wx_yaml_as_string(l->items[i], item, &s));
        for (int j = 0; j < i; j++)
            if (!strcmp((*out)[j], s))
                return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': channel '%s' is listed twice",
                                    l->file, l->items[i]->line, full, s);
        (*out)[i] = wx_strdup(s);
        (*n)++;
    }
    return WX_OK;
}

/* [first, last] years; an absent optional key leaves {0, -1}. */
static wx_status years(const wx_yaml *map, const char *key, const char *full, int64_t y[2]) {
    const wx_yaml *l = wx_yaml_get(map, key);
    y[0] = 0, y[1] = -1;
    if (l && l->kind == WX_YAML_SEQ && l->count == 0 && strcmp(key, "test_years"))
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': an empty list, expected [first, "
                            "last] years", l->file, l->line, full);
    if (!l || l->count == 0) return WX_OK;
    if (l->count != 2)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': expected [first, last] years, got "
                            "%d items", l->file, l->line, full, l->count);
    for (int i = 0; i < 2; i++) {
        char item[128];
        snprintf(item, sizeof item, "%s[%d]", full, i);
        WX_TRY(wx_yaml_as_int(l->items[i], item, &y[i]));
    }
    if (y[0] > y[1] || y[0] < 1 || y[1] > 9999)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': [%lld, %lld] is not a year range "
                            "(first <= last, 1..9999)", l->file, l->line, full, (long long)y[0],
                            (long long)y[1]);
    return WX_OK;
}

static int overlap(const int64_t a[2], const int64_t b[2]) {
    return a[0] <= a[1] && b[0] <= b[1] && a[0] <= b[1] && b[0] <= a[1];
}

static wx_status parse_data(wx_train_config *c, const wx_yaml *d) {
    const wx_cfg_field *f = data_fields;
    WX_TRY(wx_cfg_validate(d, "data", f));
    const char *s;
    WX_TRY(wx_cfg_str(d, f, "archive", &s));
    join(c->dir, s, c->archive, sizeof c->archive);
    WX_TRY(str_list(d, "channels_in", "data.channels_in", &c->nin, &c->chan_in));
    WX_TRY(str_list(d, "channels_out", "data.channels_out", &c->nout, &c->chan_out));
    WX_TRY(wx_cfg_str(d, f, "time_step", &s));
    {
        const wx_yaml *ts = wx_yaml_get(d, "time_step");
        char what[WX_TRAIN_PATH_MAX + 64] = "key 'data.time_step'"; /* absent: the default */
        if (ts) snprintf(what, sizeof what, "%s: line %d: key 'data.time_step'", ts->file, ts->line);
        WX_TRY(wx_time_parse_duration(s, what, &c->time_step_s));
    }
    WX_TRY(years(d, "train_years", "data.train_years", c->train_years));
    WX_TRY(years(d, "valid_years", "data.valid_years", c->valid_years));
    WX_TRY(years(d, "test_years", "data.test_years", c->test_years));
    if (overlap(c->train_years, c->valid_years) || overlap(c->train_years, c->test_years) ||
        overlap(c->valid_years, c->test_years))
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'data': train_years, valid_years and "
                            "test_years overlap; the splits must be disjoint", d->file, d->line);
    int64_t rt;
    WX_TRY(wx_cfg_int(d, f, "read_threads", &rt));
    c->read_threads = (int)rt;
    return WX_OK;
}

static wx_status parse_validation(wx_train_config *c, const wx_yaml *v) {
    const wx_cfg_field *f = valid_fields;
    WX_TRY(wx_cfg_validate(v, "validation", f));
    const wx_yaml *l = v && v->kind == WX_YAML_MAP ? wx_yaml_get(v, "leads") : NULL;
    if (l) {
        if (l->count < 1 || l->count > WX_TRAIN_MAX_LEADS)
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'validation.leads': expected 1 to %d "
                                "lead steps, got %d", l->file, l->line, WX_TRAIN_MAX_LEADS, l->count);
        c->nleads = l->count;
        for (int i = 0; i < l->count; i++) {
            char item[64];
            snprintf(item, sizeof item, "validation.leads[%d]", i);
            WX_TRY(wx_yaml_as_int(l->items[i], item, &c->leads[i]));
            if (c->leads[i] < 1 || c->leads[i] > 10000 || (i && c->leads[i] <= c->leads[i - 1]))
                return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': %lld: leads are model steps "
                                    ">= 1 in increasing order", l->file, l->items[i]->line, item,
                                    (long long)c->leads[i]);
        }
    } else {
        c->nleads = 2, c->leads[0] = 1, c->leads[1] = 4;
    }
    WX_TRY(wx_cfg_int(v, f, "max_samples", &c->valid_max_samples));
    WX_TRY(wx_cfg_int(v, f, "batch_size", &c->valid_batch));
    return WX_OK;
}

/* The precip stage's own keys; the stage map is validated. */
static wx_status parse_precip(wx_train_config *c, const wx_yaml *st) {
    if (!st)
        return wx_error_set(WX_ERR_USAGE, "%s: --stage precip needs a 'precip:' section with at least "
                            "wind_checkpoint (the trained wind model)", c->path);
    const wx_cfg_field *f = precip_fields;
    const char *s;
    WX_TRY(wx_cfg_str(st, f, "wind_checkpoint", &s));
    join(c->dir, s, c->wind_ckpt, sizeof c->wind_ckpt);
    WX_TRY(wx_cfg_str(st, f, "channel", &s));
    snprintf(c->precip_channel, sizeof c->precip_channel, "%s", s);
    WX_TRY(wx_cfg_double(st, f, "eps", &c->precip_eps));
    const wx_yaml *m = wx_yaml_get(st, "model");
    if (m && m->kind == WX_YAML_SCALAR) {
        char p[WX_TRAIN_PATH_MAX];
        WX_TRY(wx_yaml_as_string(m, "precip.model", &s));
        join(c->dir, s, p, sizeof p);
        if (wx_yaml_load_file(p, &c->precip_model_root) != WX_OK)
            return wx_error_wrap(WX_ERR_USAGE, "%s: line %d: key 'precip.model': ", m->file, m->line);
        c->precip_model = c->precip_model_root;
    } else if (m && m->kind == WX_YAML_MAP) {
        c->precip_model = m;
    } else if (m) {
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'precip.model': expected a model config "
                            "path or a mapping, got a list", m->file, m->line);
    }
    const wx_yaml *r = wx_yaml_get(st, "rollout_steps");
    int64_t k = 1;
    if (r) WX_TRY(wx_yaml_as_int(r, "precip.rollout_steps", &k));
    if (k != 1)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'precip.rollout_steps': %lld; the precip "
                            "stage trains one step (tp at t + time_step from the wind model's "
                            "prediction)", r->file, r->line, (long long)k);
    return WX_OK;
}

static wx_status parse_stage(wx_train_config *c, const wx_yaml *st) {
    const char *name = wx_train_stage_name(c->stage);
    const wx_cfg_field *f = stage_fields(c->stage);
    const wx_cfg_field *of = stage_opt_fields(c->stage);
    char path[64];
    if (c->stage == WX_STAGE_PRECIP && !st) return parse_precip(c, st); /* names the file */
    WX_TRY(wx_cfg_validate(st, name, f));
    if (c->stage == WX_STAGE_PRECIP) WX_TRY(parse_precip(c, st));
    WX_TRY(wx_cfg_int(st, f, "epochs", &c->epochs));
    WX_TRY(wx_cfg_int(st, f, "steps", &c->steps));
    WX_TRY(wx_cfg_int(st, f, "batch_size", &c->batch_size));
    WX_TRY(wx_cfg_int(st, f, "rollout_steps", &c->rollout_steps));
    WX_TRY(wx_cfg_int(st, f, "rollout_start", &c->rollout_start));
    WX_TRY(wx_cfg_int(st, f, "rollout_every", &c->rollout_every));
    if (c->rollout_every > 0 && c->rollout_start > c->rollout_steps)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s.rollout_start': %lld is above "
                            "rollout_steps %lld", file_of(st, c), st ? wx_yaml_key_line(st, "rollout_start") : 0,
                            name, (long long)c->rollout_start, (long long)c->rollout_steps);
    WX_TRY(wx_cfg_int(st, f, "checkpoint_every", &c->checkpoint_every));
    const char *s;
    WX_TRY(wx_cfg_str(st, f, "init_from", &s));
    if (!strcmp(s, "\"\"")) s = ""; /* the schema default as YAML text */
    if (s[0]) join(c->dir, s, c->init_from, sizeof c->init_from);
    const wx_yaml *stm = st && st->kind == WX_YAML_MAP ? st : NULL;

    const wx_yaml *o = stm ? wx_yaml_get(stm, "optimizer") : NULL;
    snprintf(path, sizeof path, "%s.optimizer", name);
    WX_TRY(wx_cfg_validate(o, path, of));
    wx_optim_config *op = &c->opt;
    WX_TRY(wx_cfg_double(o, of, "lr", &op->lr));
    WX_TRY(wx_cfg_double(o, of, "weight_decay", &op->weight_decay));
    WX_TRY(wx_cfg_double(o, of, "eps", &op->eps));
    if (!(op->eps > 0)) /* AdamW divides by sqrt(v) + eps: 0 makes an unused weight's update 0/0 */
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s.eps': expected > 0 (got %g; "
                            "AdamW's default is 1e-8)", file_of(o, c), wx_yaml_key_line(o, "eps"),
                            path, op->eps);
    WX_TRY(wx_cfg_int(o, of, "warmup", &op->warmup));
    WX_TRY(wx_cfg_double(o, of, "lr_min", &op->lr_min));
    WX_TRY(wx_cfg_double(o, of, "grad_clip", &op->grad_clip));
    op->beta1 = 0.9, op->beta2 = 0.999;
    const wx_yaml *b = o && o->kind == WX_YAML_MAP ? wx_yaml_get(o, "betas") : NULL;
    if (b) {
        if (b->count != 2)
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s.betas': expected [beta1, beta2], "
                                "got %d items", b->file, b->line, path, b->count);
        double bb[2];
        for (int i = 0; i < 2; i++) {
            char item[96];
            snprintf(item, sizeof item, "%s.betas[%d]", path, i);
            WX_TRY(wx_yaml_as_double(b->items[i], item, &bb[i]));
            if (!(bb[i] >= 0 && bb[i] < 1))
                return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': %g is out of range [0, 1)",
                                    b->file, b->items[i]->line, item, bb[i]);
        }
        op->beta1 = bb[0], op->beta2 = bb[1];
    }
    if (op->lr_min > op->lr)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s.lr_min': %g is above lr %g",
                            file_of(o, c), o ? wx_yaml_key_line(o, "lr_min") : 0, path, op->lr_min, op->lr);

    const wx_yaml *l = stm ? wx_yaml_get(stm, "loss") : NULL;
    snprintf(path, sizeof path, "%s.loss", name);
    WX_TRY(wx_cfg_validate(l, path, loss_fields));
    WX_TRY(wx_cfg_str(l, loss_fields, "type", &s));
    c->loss_line = l && wx_yaml_get(l, "type") ? wx_yaml_key_line(l, "type") : 0;
    c->loss = !strcmp(s, "lat_weighted_mse") ? WX_LOSS_LATW_MSE
              : !strcmp(s, "graphcast")      ? WX_LOSS_GRAPHCAST
              : !strcmp(s, "relative_l2")    ? WX_LOSS_REL_L2
                                             : WX_LOSS_AUTO;
    { /* at load, not at the first step (the model's own check), and naming the key */
        const wx_yaml *ty = c->model ? wx_yaml_get(c->model, "type") : NULL;
        if (c->loss == WX_LOSS_REL_L2 && c->stage != WX_STAGE_PRECIP && ty &&
            ty->kind == WX_YAML_SCALAR && !strcmp(ty->scalar, "graphcast"))
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s.type': relative_l2: graphcast "
                                "trains with loss.type graphcast (or lat_weighted_mse), not "
                                "relative_l2", file_of(l, c), c->loss_line, path);
    }
    const wx_yaml *w = l && l->kind == WX_YAML_MAP ? wx_yaml_get(l, "channel_weights") : NULL;
    if (w && w->count) {
        if (c->loss != WX_LOSS_LATW_MSE)
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s.channel_weights': only "
                                "lat_weighted_mse takes channel weights (type is relative_l2)",
                                w->file, w->line, path);
        c->nweights = w->count;
        c->channel_weights = wx_calloc((size_t)w->count, sizeof(double));
        for (int i = 0; i < w->count; i++) {
            char item[96];
            snprintf(item, sizeof item, "%s.channel_weights[%d]", path, i);
            WX_TRY(wx_yaml_as_double(w->items[i], item, &c->channel_weights[i]));
            if (!(c->channel_weights[i] >= 0))
                return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': %g: weights must be >= 0",
                                    w->file, w->items[i]->line, item, c->channel_weights[i]);
        }
    }
    return WX_OK;
}

/* The sections of the stages not run now are parsed too, into a scratch copy, so that a typo or
 * a bad value in `finetune:` (an unknown key, lr_min above lr, rollout_start above rollout_steps)
 * is found before a days-long pretrain, not after it. Parsing opens no checkpoint: a precip
 * stage's wind checkpoint, which finetune has not written yet, is only named. */
static wx_status check_other_stages(const wx_train_config *c) {
    const wx_train_stage all[] = {WX_STAGE_PRETRAIN, WX_STAGE_FINETUNE, WX_STAGE_PRECIP};
    for (int k = 0; k < 3; k++) {
        const wx_yaml *st = wx_yaml_get(c->root, wx_train_stage_name(all[k]));
        if (all[k] == c->stage || !st) continue;
        wx_train_config tmp = *c; /* shares the parsed files; owns only what parse_stage makes */
        tmp.stage = all[k];
        tmp.channel_weights = NULL, tmp.nweights = 0;
        tmp.precip_model_root = NULL, tmp.precip_model = NULL;
        wx_status s = parse_stage(&tmp, st);
        free(tmp.channel_weights);
        wx_yaml_free(tmp.precip_model_root);
        WX_TRY(s);
    }
    return WX_OK;
}

static wx_status parse(wx_train_config *c, const char *stage) {
    const wx_yaml *r = c->root;
    WX_TRY(wx_cfg_validate(r, "", root_fields));
    const wx_yaml *m = wx_yaml_get(r, "model");
    if (m->kind == WX_YAML_SCALAR) {
        const char *s;
        WX_TRY(wx_yaml_as_string(m, "model", &s));
        join(c->dir, s, c->model_path, sizeof c->model_path);
        wx_status st = wx_model_config_load(c->model_path, &c->model_root);
        if (st != WX_OK)
            return wx_error_wrap(WX_ERR_USAGE, "%s: line %d: key 'model': ", r->file, m->line);
        c->model = c->model_root;
    } else if (m->kind == WX_YAML_MAP) {
        c->model = m;
    } else {
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'model': expected a model config path or "
                            "a mapping, got a list", r->file, m->line);
    }
    { /* a GraphCast model config is checked here, at load (the model is built after the data's
       * manifest is read): the same check as `info --model` */
        const wx_yaml *ty = wx_yaml_get(c->model, "type");
        if (ty && ty->kind == WX_YAML_SCALAR && !strcmp(ty->scalar, "graphcast")) {
            wx_gc_config gc;
            wx_status st = wx_gc_config_parse(c->model, c->model_path[0] ? "" : "model", &gc);
            if (st != WX_OK && c->model_path[0])
                return wx_error_wrap(st, "%s: line %d: key 'model': ", r->file, m->line);
            WX_TRY(st);
        }
    }
    WX_TRY(parse_data(c, wx_yaml_get(r, "data")));
    const wx_cfg_field *f = root_fields;
    int64_t v;
    WX_TRY(wx_cfg_int(r, f, "seed", &v));
    c->seed = (uint64_t)v;
    WX_TRY(wx_cfg_int(r, f, "threads", &v));
    c->threads = (int)v;
    WX_TRY(wx_cfg_int(r, f, "log_every", &c->log_every));
    {
        int b = 0;
        WX_TRY(wx_cfg_bool(r, f, "activation_checkpointing", &b));
        c->act_checkpoint = b;
    }
    const char *s;
    WX_TRY(wx_cfg_str(r, f, "device", &s));
    snprintf(c->device, sizeof c->device, "%s", s);
    c->device_line = wx_yaml_get(r, "device") ? wx_yaml_get(r, "device")->line : 0;
    WX_TRY(wx_cfg_str(r, f, "precision", &s));
    c->bf16 = !strcmp(s, "bf16");
    if (c->bf16 && strcmp(c->device, "cuda"))
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'precision': bf16 needs device: cuda "
                            "(the CPU backend computes in fp32)", r->file,
                            wx_yaml_get(r, "precision")->line);
    if (!stage) WX_TRY(wx_cfg_str(r, f, "stage", &stage));
    if (!strcmp(stage, "pretrain")) c->stage = WX_STAGE_PRETRAIN;
    else if (!strcmp(stage, "finetune")) c->stage = WX_STAGE_FINETUNE;
    else if (!strcmp(stage, "precip")) c->stage = WX_STAGE_PRECIP;
    else
        return wx_error_set(WX_ERR_USAGE, "--stage '%s': expected pretrain, finetune or precip", stage);
    WX_TRY(wx_cfg_str(r, f, "checkpoint_dir", &s));
    char base[WX_TRAIN_PATH_MAX];
    join(c->dir, s, base, sizeof base);
    snprintf(c->checkpoint_dir, sizeof c->checkpoint_dir, "%.4000s/%s", base,
             wx_train_stage_name(c->stage));
    WX_TRY(parse_validation(c, wx_yaml_get(r, "validation")));
    WX_TRY(parse_stage(c, wx_yaml_get(r, wx_train_stage_name(c->stage))));
    return check_other_stages(c);
}

wx_status wx_train_config_load(const char *path, const char *stage, wx_train_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    char *tmp = wx_strdup(path);
    snprintf(c->dir, sizeof c->dir, "%s", dirname(tmp));
    free(tmp);
    if (!strcmp(c->dir, ".")) c->dir[0] = 0;
    size_t len;
    const char *bin = wx_yaml_binary_kind(path);
    if (bin) return wx_error_set(WX_ERR_USAGE, "%s: %s, expected a training config (YAML)", path, bin);
    if (wx_read_file(path, &c->text, &len) != WX_OK) return wx_error_wrap(WX_ERR_USAGE, "config: ");
    wx_status s = wx_yaml_load_string(c->text, path, &c->root);
    const wx_yaml *type = wx_yaml_get(c->root, "type");
    const char *tname = "?";
    if (s == WX_OK && type && !wx_yaml_get(c->root, "data")) { /* a model config given to train */
        wx_yaml_as_string(type, "type", &tname);
        s = wx_error_set(WX_ERR_USAGE, "%s: line %d: a model config (`type: %s`), expected a "
                         "training config: name it in a training config's `model:` key (as "
                         "configs/train/*.yaml do)", path, wx_yaml_key_line(c->root, "type"), tname);
    }
    if (s == WX_OK) s = parse(c, stage);
    if (s != WX_OK) wx_train_config_free(c); /* callers free only what loaded */
    return s;
}

void wx_train_config_free(wx_train_config *c) {
    for (int i = 0; i < c->nin; i++) free(c->chan_in[i]);
    for (int i = 0; i < c->nout; i++) free(c->chan_out[i]);
    free(c->chan_in);
    free(c->chan_out);
    free(c->channel_weights);
    wx_yaml_free(c->precip_model_root);
    free(c->text);
    wx_yaml_free(c->model_root);
    wx_yaml_free(c->root);
    memset(c, 0, sizeof *c);
}

/* The tables train_config_print.c prints (train_config_priv.h). */
const wx_cfg_field *const wx_train_root_fields = root_fields;
const wx_cfg_field *const wx_train_data_fields = data_fields;
const wx_cfg_field *const wx_train_valid_fields = valid_fields;
const wx_cfg_field *const wx_train_loss_fields = loss_fields;
const wx_cfg_field *wx_train_stage_fields(wx_train_stage s) { return stage_fields(s); }
const wx_cfg_field *wx_train_stage_opt_fields(wx_train_stage s) { return stage_opt_fields(s); }
