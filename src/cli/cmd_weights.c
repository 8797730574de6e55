/* wxcast export-weights / import-weights: model weights between wxcast checkpoints and
 * safetensors files with the published PyTorch parameter names (NVlabs FourCastNet for the AFNO
 * model), so published weights run in wxcast and wxcast-trained weights load in PyTorch; and
 * DeepMind's GraphCast checkpoints (.npz, models/weights_gc.c) into a GraphCast checkpoint. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "cli/weights_gc_data.h"
#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "core/wx_config.h"
#include "core/wx_yaml.h"
#include "infer/forecast_init.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "io/npz.h"
#include "models/fourcastnet.h"
#include "models/graphcast.h"
#include "models/weights.h"
#include "train/checkpoint.h"
#include "train/model_config_file.h"

/* ---- export ---------------------------------------------------------------------------------- */

static wx_status export_weights(const char *ckpt, const char *out, int *count) {
    wx_checkpoint c;
    WX_TRY(wx_checkpoint_read(ckpt, &c));
    int n = 0;
    for (int i = 0; i < c.ntensors; i++) n += c.t[i].kind == WX_CKPT_PARAM;
    wx_st_entry *e = wx_calloc((size_t)(n ? n : 1), sizeof *e);
    float **bufs = wx_calloc((size_t)(n ? n : 1), sizeof *bufs);
    int k = 0;
    for (int i = 0; i < c.ntensors; i++) {
        const wx_ckpt_tensor *t = &c.t[i];
        if (t->kind != WX_CKPT_PARAM) continue;
        /* The checkpoint's values sit unaligned in its file buffer: copy them out. */
        bufs[k] = wx_malloc(sizeof(float) * (size_t)(t->size ? t->size : 1));
        memcpy(bufs[k], t->data, sizeof(float) * (size_t)t->size);
        e[k] = (wx_st_entry){t->name, t->ndim, t->dims, bufs[k]};
        k++;
    }
    wx_status s = WX_OK;
    if (n == 0) s = wx_error_set(WX_ERR_RUN, "%s: the checkpoint holds no model parameters", ckpt);
    const char *meta[6] = {"format", "pt", "producer", "wxcast", "wxcast_model", c.model_text};
    if (s == WX_OK) s = wx_safetensors_write_f32(out, e, n, meta, 3);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(e);
    wx_checkpoint_free(&c);
    *count = n;
    return s;
}

int wx_cmd_export_weights(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"output", 1, "safetensors file to write (required)", "W.safetensors"},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "export-weights", "CKPT --output W.safetensors",
        "Writes the model parameters of a wxcast checkpoint as a safetensors file with the\n"
        "published PyTorch names (NVlabs FourCastNet: pos_embed, patch_embed.proj.weight,\n"
        "blocks.0.filter.w1, ..., head.weight), float32, loadable with safetensors.torch.load_file\n"
        "and load_state_dict. The effective model config goes into the metadata (wxcast_model).\n"
        "A GraphCast checkpoint has no published PyTorch names: its parameters are written under\n"
        "wxcast's names (DeepMind's Haiku module paths with dots, e.g.\n"
        "grid2mesh_gnn.encoder_edges_grid2mesh_mlp.linear_0.weight), for reading in Python only;\n"
        "import-weights takes GraphCast weights as DeepMind's .npz.",
        opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    const char *out = wx_args_get(&a, "output");
    if (!out) return wx_cli_error(wx_error_set(WX_ERR_USAGE, "export-weights: --output is required"));
    if (wx_output_path_check(out, "--output") != WX_OK) return wx_cli_error(WX_ERR_USAGE);
    if (wx_output_not_input(out, a.positionals[0], "--output") != WX_OK) return wx_cli_error(WX_ERR_USAGE);
    int n = 0;
    wx_status s = export_weights(a.positionals[0], out, &n);
    if (s) return wx_cli_error(s);
    printf("%s: %d tensors from %s\n", out, n, a.positionals[0]); /* the result: stdout */
    return 0;
}

/* ---- import ---------------------------------------------------------------------------------- */

/* --data: what a forecast needs besides the weights (the DATA section a training run writes):
 * the channels in model order, their normalisation, the time step and the grid. */
static const wx_cfg_field grid_fields[] = {
    {"lat0", WX_CFG_FLOAT, 0, -90, 90, "90", "latitude of the first row (degrees)", NULL},
    {"dlat", WX_CFG_FLOAT, 0, 0, 180, "0", "row spacing southward (0: 180/(rows - 1), counting a dropped south-pole row when img_size's rows are even)", NULL},
    {"lon0", WX_CFG_FLOAT, 0, 0, 360, "0", "longitude of the first column (degrees east)", NULL},
    {"dlon", WX_CFG_FLOAT, 0, 0, 360, "0", "column spacing eastward (0: 360/columns)", NULL},
    WX_CFG_END,
};
static const wx_cfg_field data_fields[] = {
    {"channels", WX_CFG_LIST, 1, WX_CFG_NO_RANGE, NULL, "channel names in model order (u10, t2m, z500, r850, ...)", NULL},
    {"means", WX_CFG_ANY, 1, WX_CFG_NO_RANGE, NULL, "per-channel means: a list, or a .npy file (relative to this file)", NULL},
    {"stds", WX_CFG_ANY, 1, WX_CFG_NO_RANGE, NULL, "per-channel standard deviations: a list, or a .npy file", NULL},
    {"stats_index", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[]", "position of each channel in means/stds ([]: 0, 1, ...)", NULL},
    {"time_step", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "6h", "the model's time step", NULL},
    {"grid", WX_CFG_MAP, 0, WX_CFG_NO_RANGE, NULL, "model grid: lat0, dlat, lon0, dlon (rows and columns: img_size)", NULL},
    WX_CFG_END,
};

/* means or stds: an inline list or a .npy file (NVlabs: global_means.npy, (1, 21, 1, 1)). */
static wx_status stats_values(const wx_yaml *node, const char *key, const char *dir,
                              const char *cfg_path, wx_npy *out) {
    memset(out, 0, sizeof *out);
    if (node->kind == WX_YAML_SEQ) {
        out->count = node->count;
        out->values = wx_calloc((size_t)(node->count ? node->count : 1), sizeof(double));
        for (int i = 0; i < node->count; i++) {
            wx_status s = wx_yaml_as_double(node->items[i], key, &out->values[i]);
            if (s != WX_OK) {
                wx_npy_free(out);
                return wx_error_wrap(WX_ERR_USAGE, "%s: ", cfg_path);
            }
        }
        return WX_OK;
    }
    const char *file = NULL;
    if (node->kind != WX_YAML_SCALAR || wx_yaml_as_string(node, key, &file) != WX_OK)
        return wx_error_set(WX_ERR_USAGE, "%s: key '%s': expected a list of numbers or a .npy "
                            "file name", cfg_path, key);
    char path[4096];
    if (wx_path_join(dir, file, path, sizeof path) != WX_OK)
        return wx_error_wrap(WX_ERR_USAGE, "%s: key '%s': ", cfg_path, key);
    return wx_npy_read(path, out);
}

/* The DATA section text for the weights' model (in = out channels, img_size h x w). */
static wx_status import_data_text(const char *path, const wx_fcn_config *d, char **text) {
    wx_yaml *root = NULL;
    WX_TRY(wx_yaml_load_file(path, &root));
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    const char *dir = dirname(tmp);
    const wx_yaml *ch = wx_yaml_get(root, "channels"), *ix = wx_yaml_get(root, "stats_index");
    const wx_yaml *gr = wx_yaml_get(root, "grid");
    wx_npy mean = {0}, sd = {0};
    wx_ckpt_channel *c = NULL;
    wx_archive_channel *ac = NULL;
    const char *step_text = NULL;
    int64_t step_s = 0;
    int nch = 0;
    wx_status s = wx_cfg_validate(root, "", data_fields);
    if (s == WX_OK) s = wx_cfg_validate(gr, "grid", grid_fields);
    if (s == WX_OK) s = wx_cfg_str(root, data_fields, "time_step", &step_text);
    /* the schema's messages name the file and line already; the duration's does not */
    if (s == WX_OK && (s = wx_time_parse_duration(step_text, "time_step", &step_s)) != WX_OK)
        s = wx_error_wrap(WX_ERR_USAGE, "%s: ", path);
    if (s == WX_OK) {
        nch = ch->count;
        if (d->n_extra)
            s = wx_error_set(WX_ERR_USAGE, "%s: --data describes plain FourCastNet state channels; "
                             "the model has %lld FourCastNet+ extra inputs", path,
                             (long long)d->n_extra);
        else if (nch != d->out_channels)
            s = wx_error_set(WX_ERR_USAGE, "%s: key 'channels': %d names, the model has %lld "
                             "channels", path, nch, (long long)d->out_channels);
        else if (ix && ix->count && ix->count != nch)
            s = wx_error_set(WX_ERR_USAGE, "%s: key 'stats_index': %d entries for %d channels",
                             path, ix->count, nch);
    }
    if (s == WX_OK) s = stats_values(wx_yaml_get(root, "means"), "means", dir, path, &mean);
    if (s == WX_OK) s = stats_values(wx_yaml_get(root, "stds"), "stds", dir, path, &sd);
    if (s == WX_OK) {
        c = wx_calloc((size_t)nch, sizeof *c);
        ac = wx_calloc((size_t)nch, sizeof *ac);
    }
    for (int i = 0; s == WX_OK && i < nch; i++) {
        const char *name = NULL;
        int64_t k = i;
        s = wx_yaml_as_string(ch->items[i], "channels", &name);
        if (s == WX_OK && ix && ix->count) s = wx_yaml_as_int(ix->items[i], "stats_index", &k);
        if (s != WX_OK) {
            s = wx_error_wrap(WX_ERR_USAGE, "%s: ", path);
            break;
        }
        s = wx_forecast_channel_from_name(name, step_s, &ac[i]);
        if (s != WX_OK) {
            s = wx_error_wrap(WX_ERR_USAGE, "%s: ", path);
            break;
        }
        for (int j = 0; j < i && s == WX_OK; j++) /* a model has each input channel once */
            if (!strcmp(ac[j].name, ac[i].name))
                s = wx_error_set(WX_ERR_USAGE, "%s: line %d: channels[%d]: %s is listed twice (also "
                                 "channels[%d])", path, ch->items[i]->line, i, name, j);
        if (s != WX_OK) break;
        if (k < 0 || k >= mean.count || k >= sd.count) {
            s = wx_error_set(WX_ERR_USAGE, "%s: channel %s: statistics index %lld, but means has "
                             "%lld and stds %lld values", path, name, (long long)k,
                             (long long)mean.count, (long long)sd.count);
            break;
        }
        c[i] = (wx_ckpt_channel){ac[i].name, ac[i].units, mean.values[k], sd.values[k], 0.0, 0};
        if (!isfinite(c[i].mean) || !(c[i].std > 0) || !isfinite(c[i].std))
            s = wx_error_set(WX_ERR_USAGE, "%s: channel %s: mean %g, std %g (expected finite, std "
                             "> 0)", path, name, c[i].mean, c[i].std);
    }
    double lat0 = 90, dlat = 0, lon0 = 0, dlon = 0;
    if (s == WX_OK) s = wx_cfg_double(gr, grid_fields, "lat0", &lat0);
    if (s == WX_OK) s = wx_cfg_double(gr, grid_fields, "dlat", &dlat);
    if (s == WX_OK) s = wx_cfg_double(gr, grid_fields, "lon0", &lon0);
    if (s == WX_OK) s = wx_cfg_double(gr, grid_fields, "dlon", &dlon);
    /* ERA5's rows include both poles; an even row count (FourCastNet's 720 of 721) has dropped
     * the south pole. */
    int64_t h = d->img_h, w = d->img_w, rows = h % 2 ? h : h + 1;
    if (dlat == 0) dlat = 180.0 / (double)(rows - 1);
    if (dlon == 0) dlon = 360.0 / (double)w;
    wx_grid g;
    if (s == WX_OK) s = wx_grid_make((int)h, (int)w, lat0, dlat, lon0, dlon, &g);
    if (s == WX_OK) {
        size_t len = 0;
        FILE *f = open_memstream(text, &len);
        if (!f) {
            s = wx_error_set(WX_ERR_RUN, "import-weights: out of memory");
        } else {
            wx_ckpt_data_channels(f, "channels_in", c, nch);
            wx_ckpt_data_channels(f, "channels_out", c, nch);
            fprintf(f, "time_step_s: %lld\nwindow: 1\n", (long long)step_s);
            wx_ckpt_data_grid(f, &g);
            wx_ckpt_data_string(f, "imported_from", path);
            fclose(f);
        }
    }
    free(c);
    free(ac);
    wx_npy_free(&mean);
    wx_npy_free(&sd);
    wx_yaml_free(root);
    return s;
}

/* A step-0 checkpoint (stage `import`): usable as `init_from` for training and by forecast. */
static wx_status write_import_ckpt(const char *out, char *model_text, char *data_text,
                                   wx_params *p, int nfields, int64_t fh, int64_t fw,
                                   const float *fields) {
    wx_ckpt_state cs;
    memset(&cs, 0, sizeof cs);
    snprintf(cs.stage, sizeof cs.stage, "import");
    cs.best_loss = INFINITY;
    cs.best_step = -1;
    wx_rng_init(&cs.order, 0, 1);
    wx_rng_init(&cs.noise, 0, 2);
    wx_ckpt_out co = {.model_text = model_text, .data_text = data_text, .st = &cs, .params = p};
    if (fields) co.nfields = nfields, co.field_h = fh, co.field_w = fw, co.fields = fields;
    return wx_checkpoint_write(out, &co);
}

/* DeepMind's GraphCast checkpoints (.npz): config check first (exit 2 on a disagreement), then
 * the parameters (models/weights_gc.c). */
static wx_status import_graphcast(const wx_yaml *root, const char *wpath, const char *cfg_path,
                                  const char *data_path, const char *out, int64_t *total) {
    wx_gc_config c;
    WX_TRY(wx_gc_config_parse(root, "", &c));
    /* --data before the weights: its errors come first, as for FourCastNet */
    char *data_text = NULL;
    float *fields = NULL;
    if (data_path) WX_TRY(wx_weights_gc_data(data_path, &c, &data_text, &fields));
    if (access(wpath, R_OK) == 0 && !wx_npz_is_zip(wpath)) { /* e.g. export-weights' safetensors */
        free(data_text), free(fields);
        return wx_error_set(WX_ERR_RUN, "%s: not a .npz (zip) file; a 'type: graphcast' config "
                            "(%s) imports DeepMind's GraphCast checkpoints (.npz, "
                            "graphcast.checkpoint.dump). A wxcast GraphCast checkpoint needs no "
                            "import: give it to forecast --model or a stage's init_from", wpath,
                            cfg_path);
    }
    wx_npz z;
    wx_status zs = wx_npz_open(wpath, &z);
    if (zs != WX_OK) {
        free(data_text), free(fields);
        return zs;
    }
    wx_params p;
    wx_params_init(&p);
    wx_gc_param_table(&p, &c, NULL);
    char *model_text = NULL;
    size_t len = 0;
    wx_status s = wx_weights_check_graphcast(&z, &c, cfg_path);
    if (s == WX_OK) s = wx_params_alloc(&p);
    if (s == WX_OK) s = wx_weights_import_graphcast(&p, &c, &z);
    if (s == WX_OK) {
        FILE *mem = open_memstream(&model_text, &len);
        if (!mem) s = wx_error_set(WX_ERR_RUN, "import-weights: out of memory");
        else {
            wx_gc_config_print(mem, root, 0);
            fclose(mem);
        }
    }
    if (s == WX_OK) s = write_import_ckpt(out, model_text, data_text, &p, c.n_static, c.nlat,
                                          c.nlon, fields);
    *total = wx_params_total(&p);
    free(model_text);
    free(data_text), free(fields);
    wx_params_free(&p);
    wx_npz_free(&z);
    return s;
}

static wx_status import_weights(const char *wpath, const char *cfg_path, const char *data_path,
                                const char *out, int64_t *total) {
    wx_yaml *root = NULL;
    wx_status s = wx_model_config_load(cfg_path, &root);
    if (s != WX_OK) return wx_error_wrap(WX_ERR_USAGE, "import-weights: --config: ");
    const wx_yaml *t = root && root->kind == WX_YAML_MAP ? wx_yaml_get(root, "type") : NULL;
    const char *type = NULL;
    if (t && wx_yaml_as_string(t, "type", &type) == WX_OK && !strcmp(type, "graphcast")) {
        s = import_graphcast(root, wpath, cfg_path, data_path, out, total);
        wx_yaml_free(root);
        return s;
    }
    if (!t) {
        wx_yaml_free(root);
        return wx_error_set(WX_ERR_USAGE, "%s: no 'type' key: the model config of published weights "
                            "says its family, 'type: fourcastnet' or 'type: graphcast'", cfg_path);
    }
    if (!type || strcmp(type, "fourcastnet")) {
        wx_yaml_free(root);
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'type': expected 'fourcastnet' or "
                            "'graphcast' (the model families with published weights)", cfg_path,
                            t->line);
    }
    if (wx_npz_is_zip(wpath)) {
        wx_yaml_free(root);
        return wx_error_set(WX_ERR_RUN, "%s: a .npz (zip) file; FourCastNet weights are read from "
                            "safetensors (GraphCast .npz checkpoints need a 'type: graphcast' "
                            "config)", wpath);
    }
    wx_fcn_config d;
    char *model_text = NULL, *data_text = NULL;
    s = wx_fcn_config_parse(root, "", &d);
    if (s == WX_OK) s = wx_fcn_check(&d);
    /* --data before the weights: a config error stops at once, not after a 300 MB read */
    if (s == WX_OK && data_path) s = import_data_text(data_path, &d, &data_text);
    if (s != WX_OK) {
        wx_yaml_free(root);
        return s;
    }
    wx_params p;
    wx_params_init(&p);
    wx_fcn_param_table(&p, &d);
    s = wx_params_alloc(&p);
    /* Absent unused tensors (the NVlabs norm) keep LayerNorm's identity init. */
    for (int i = 0; s == WX_OK && i < p.count; i++)
        if ((p.t[i].flags & WX_PARAM_UNUSED) && strstr(p.t[i].name, ".weight"))
            for (int64_t k = 0; k < p.t[i].size; k++) wx_params_tensor(&p, i)[k] = 1.0f;
    wx_safetensors st;
    memset(&st, 0, sizeof st);
    if (s == WX_OK) s = wx_safetensors_read(wpath, &st);
    if (s == WX_OK) s = wx_weights_import(&p, &st);
    size_t len = 0;
    if (s == WX_OK) {
        FILE *mem = open_memstream(&model_text, &len);
        if (!mem) s = wx_error_set(WX_ERR_RUN, "import-weights: out of memory");
        else {
            wx_fcn_config_print(mem, root, 0);
            fclose(mem);
        }
    }
    if (s == WX_OK) s = write_import_ckpt(out, model_text, data_text, &p, 0, 0, 0, NULL);
    *total = wx_params_total(&p);
    free(model_text);
    free(data_text);
    wx_safetensors_free(&st);
    wx_params_free(&p);
    wx_yaml_free(root);
    return s;
}

int wx_cmd_import_weights(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"config", 1, "model config the weights belong to (required)", "MODEL.yaml"},
        {"data", 1, "channels, normalisation statistics (lists or .npy), time step and grid: makes the checkpoint usable by `wxcast forecast` (docs/weights.md)", "DATA.yaml"},
        {"output", 1, "checkpoint to write (required)", "CKPT"},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "import-weights", "W.safetensors|W.npz --config MODEL.yaml --output CKPT",
        "Reads PyTorch weights with the published names (NVlabs FourCastNet; the DDP 'module.'\n"
        "prefix and the unused 'norm.*' keys are accepted) into a wxcast checkpoint for the model\n"
        "of MODEL.yaml. Every parameter must be present with the model's shape; F32, F64, F16\n"
        "and BF16 are accepted. With --data (channels, statistics such as NVlabs'\n"
        "global_means.npy/global_stds.npy, time step, grid) the checkpoint also runs\n"
        "`wxcast forecast`; without it, it serves as a training init_from.\n"
        "With a 'type: graphcast' MODEL.yaml, W.npz is a DeepMind GraphCast checkpoint\n"
        "(graphcast.checkpoint.dump): its model_config and task_config must agree with MODEL.yaml\n"
        "(exit 2 naming the key otherwise); its --data names DeepMind's three stats/*.nc\n"
        "files and a GRIB/NetCDF file with the static fields (configs/weights/\n"
        "graphcast_small_data.yaml) and makes the checkpoint forecast as DeepMind's code.",
        opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    const char *cfg = wx_args_get(&a, "config"), *out = wx_args_get(&a, "output");
    if (!cfg || !out)
        return wx_cli_error(wx_error_set(WX_ERR_USAGE, "import-weights: --%s is required",
                                         cfg ? "output" : "config"));
    if (wx_output_path_check(out, "--output") != WX_OK) return wx_cli_error(WX_ERR_USAGE);
    const char *ins[] = {a.positionals[0], cfg, wx_args_get(&a, "data")};
    for (int i = 0; i < 3; i++)
        if (wx_output_not_input(out, ins[i], "--output") != WX_OK) return wx_cli_error(WX_ERR_USAGE);
    int64_t total = 0;
    wx_status s = import_weights(a.positionals[0], cfg, wx_args_get(&a, "data"), out, &total);
    if (s) return wx_cli_error(s);
    printf("%s: %lld parameters from %s\n", out, (long long)total, a.positionals[0]);
    return 0;
}
