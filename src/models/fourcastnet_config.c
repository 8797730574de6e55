#include "models/fourcastnet_config.h"

#include <string.h>

static const char *const model_types[] = {"fourcastnet", NULL};

const wx_cfg_field wx_fcn_config_fields[] = {
    {"type", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "model family", model_types},
    {"img_size", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[720, 1440]",
     "model grid [H, W]; both divisible by patch_size (ERA5 0.25 deg without the south-pole row)",
     NULL},
    {"patch_size", WX_CFG_INT, 0, 1, 1024, "8", "square patch edge in grid points (tokens = H/p x W/p)",
     NULL},
    {"in_channels", WX_CFG_INT, 0, 1, 100000, "20",
     "input channels (with extra_inputs: out_channels + the extras, computed when absent)", NULL},
    {"out_channels", WX_CFG_INT, 0, 1, 100000, "20", "output channels", NULL},
    {"embed_dim", WX_CFG_INT, 0, 1, 1 << 20, "768", "token width; divisible by num_blocks", NULL},
    {"depth", WX_CFG_INT, 0, 1, 10000, "12", "number of AFNO blocks", NULL},
    {"mlp_ratio", WX_CFG_FLOAT, 0, 0.01, 1024, "4.0", "channel-MLP hidden width / embed_dim", NULL},
    {"num_blocks", WX_CFG_INT, 0, 1, 1 << 20, "8",
     "block-diagonal blocks of the spectral MLP (block size embed_dim / num_blocks)", NULL},
    {"sparsity_threshold", WX_CFG_FLOAT, 0, 0, 1e6, "0.01", "softshrink lambda in the spectral filter",
     NULL},
    {"hard_thresholding_fraction", WX_CFG_FLOAT, 0, 0, 1, "1.0",
     "fraction of the H//2+1 modes kept (applied to the longitude axis as in NVlabs)", NULL},
    {"hidden_size_factor", WX_CFG_INT, 0, 1, 1024, "1", "spectral-MLP hidden width / block size", NULL},
    {"two_sided_modes", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "false",
     "false: NVlabs v1 mode truncation (kx < H//2+1); true: two-sided on both axes (makani v2)",
     NULL},
    {"count_unused_norm", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "true",
     "keep the final LayerNorm that NVlabs builds but never applies (its weights are in checkpoints)",
     NULL},
    {"extra_inputs", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[]",
     "FourCastNet+ inputs after the state: time (sin/cos of local day and year progress, 4), "
     "location (sin lat, cos/sin lon, 3), static (surface geopotential, land-sea mask, 2)", NULL},
    WX_CFG_END,
};

static void key_path(char *buf, size_t len, const char *path, const char *key) {
    if (path && path[0])
        snprintf(buf, len, "%s.%s", path, key);
    else
        snprintf(buf, len, "%s", key);
}

/* extra_inputs: a list of distinct names (time, location, static); in_channels follows from them. */
static wx_status parse_extras(const wx_yaml *map, const char *path, const char *file,
                              wx_fcn_config *cfg) {
    char full[256];
    cfg->extra_time = cfg->extra_location = cfg->extra_static = 0;
    cfg->n_extra = 0;
    const wx_yaml *l = map && map->kind == WX_YAML_MAP ? wx_yaml_get(map, "extra_inputs") : NULL;
    key_path(full, sizeof full, path, "extra_inputs");
    for (int i = 0; l && i < l->count; i++) {
        char item[280];
        const char *s;
        snprintf(item, sizeof item, "%s[%d]", full, i);
        WX_TRY(wx_yaml_as_string(l->items[i], item, &s));
        int *flag = !strcmp(s, "time")       ? &cfg->extra_time
                    : !strcmp(s, "location") ? &cfg->extra_location
                    : !strcmp(s, "static")   ? &cfg->extra_static
                                             : NULL;
        if (!flag || *flag)
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': '%s' %s (expected some of "
                                "time, location, static, each once)", file, l->items[i]->line, item,
                                s, flag ? "is listed twice" : "is not an extra input");
        *flag = 1;
    }
    cfg->n_extra = 4 * cfg->extra_time + 3 * cfg->extra_location + 2 * cfg->extra_static;
    if (!cfg->n_extra) return WX_OK;
    int64_t want = cfg->out_channels + cfg->n_extra;
    const wx_yaml *ic = wx_yaml_get(map, "in_channels");
    if (ic && cfg->in_channels != want) {
        key_path(full, sizeof full, path, "in_channels");
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': %lld, but extra_inputs make it "
                            "out_channels %lld + %lld extra (time 4, location 3, static 2) = %lld; "
                            "set it to %lld or leave it out", file, ic->line, full,
                            (long long)cfg->in_channels, (long long)cfg->out_channels,
                            (long long)cfg->n_extra, (long long)want, (long long)want);
    }
    cfg->in_channels = want;
    return WX_OK;
}

wx_status wx_fcn_config_parse(const wx_yaml *map, const char *path, wx_fcn_config *cfg) {
    const wx_cfg_field *f = wx_fcn_config_fields;
    WX_TRY(wx_cfg_validate(map, path, f));
    WX_TRY(wx_cfg_int(map, f, "patch_size", &cfg->patch));
    WX_TRY(wx_cfg_int(map, f, "in_channels", &cfg->in_channels));
    WX_TRY(wx_cfg_int(map, f, "out_channels", &cfg->out_channels));
    WX_TRY(wx_cfg_int(map, f, "embed_dim", &cfg->embed_dim));
    WX_TRY(wx_cfg_int(map, f, "depth", &cfg->depth));
    WX_TRY(wx_cfg_int(map, f, "num_blocks", &cfg->num_blocks));
    WX_TRY(wx_cfg_int(map, f, "hidden_size_factor", &cfg->hidden_size_factor));
    WX_TRY(wx_cfg_double(map, f, "mlp_ratio", &cfg->mlp_ratio));
    WX_TRY(wx_cfg_double(map, f, "sparsity_threshold", &cfg->sparsity_threshold));
    WX_TRY(wx_cfg_double(map, f, "hard_thresholding_fraction", &cfg->hard_thresholding_fraction));
    WX_TRY(wx_cfg_bool(map, f, "count_unused_norm", &cfg->count_unused_norm));
    WX_TRY(wx_cfg_bool(map, f, "two_sided_modes", &cfg->two_sided_modes));

    char full[256];
    const char *file = map && map->file ? map->file : "<defaults>";
    WX_TRY(parse_extras(map, path, file, cfg));
    const wx_yaml *img = map && map->kind == WX_YAML_MAP ? wx_yaml_get(map, "img_size") : NULL;
    key_path(full, sizeof full, path, "img_size");
    if (img) {
        if (img->count != 2)
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': expected a list of 2 integers "
                                "[H, W], got %d items", file, img->line, full, img->count);
        int64_t hw[2];
        for (int i = 0; i < 2; i++) {
            char item[280];
            snprintf(item, sizeof item, "%s[%d]", full, i);
            WX_TRY(wx_yaml_as_int(img->items[i], item, &hw[i]));
            if (hw[i] < 1 || hw[i] > 1000000)
                return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': value %lld is out of range "
                                    "[1, 1000000]", file, img->items[i]->line, item, (long long)hw[i]);
        }
        cfg->img_h = hw[0];
        cfg->img_w = hw[1];
    } else {
        cfg->img_h = 720;
        cfg->img_w = 1440;
    }
    int line = img ? img->line : map ? wx_yaml_key_line(map, "patch_size") : 0;
    if (cfg->img_h % cfg->patch || cfg->img_w % cfg->patch)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': [%lld, %lld] is not divisible by "
                            "patch_size %lld", file, line, full, (long long)cfg->img_h,
                            (long long)cfg->img_w, (long long)cfg->patch);
    if (cfg->embed_dim % cfg->num_blocks) {
        key_path(full, sizeof full, path, "embed_dim");
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': %lld is not divisible by "
                            "num_blocks %lld", file, map ? wx_yaml_key_line(map, "embed_dim") : 0,
                            full, (long long)cfg->embed_dim, (long long)cfg->num_blocks);
    }
    cfg->h_tokens = cfg->img_h / cfg->patch;
    cfg->w_tokens = cfg->img_w / cfg->patch;
    cfg->block_size = cfg->embed_dim / cfg->num_blocks;
    cfg->mlp_hidden = (int64_t)((double)cfg->embed_dim * cfg->mlp_ratio);
    if (cfg->mlp_hidden < 1) {
        key_path(full, sizeof full, path, "mlp_ratio");
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': embed_dim x mlp_ratio must be at "
                            "least 1", file, map ? wx_yaml_key_line(map, "mlp_ratio") : 0, full);
    }
    return WX_OK;
}

/* Tensors of NVlabs AFNONet (networks/afnonet.py), reference §1.6. */
void wx_fcn_param_count(const wx_fcn_config *c, wx_fcn_param_counts *n) {
    int64_t e = c->embed_dim, p = c->patch, nb = c->num_blocks, bs = c->block_size;
    int64_t bh = bs * c->hidden_size_factor;
    n->pos_embed = c->h_tokens * c->w_tokens * e;               /* (1, tokens, E) */
    n->patch_embed = e * c->in_channels * p * p + e;            /* conv (E, Cin, p, p) + bias */
    n->block_norms = 2 * (e + e);                               /* norm1, norm2: weight + bias */
    n->block_filter = 2 * nb * bs * bh + 2 * nb * bh            /* w1 (2,nb,bs,bh), b1 (2,nb,bh) */
                      + 2 * nb * bh * bs + 2 * nb * bs;         /* w2 (2,nb,bh,bs), b2 (2,nb,bs) */
    n->block_mlp = e * c->mlp_hidden + c->mlp_hidden + c->mlp_hidden * e + e; /* fc1, fc2 */
    n->per_block = n->block_norms + n->block_filter + n->block_mlp;
    n->blocks = c->depth * n->per_block;
    n->norm = c->count_unused_norm ? 2 * e : 0;
    n->head = c->out_channels * p * p * e;                      /* Linear(E, Cout·p·p), no bias */
    n->total = n->pos_embed + n->patch_embed + n->blocks + n->norm + n->head;
}

void wx_fcn_config_print(FILE *out, const wx_yaml *map, int indent) {
    /* in_channels computed from extra_inputs is printed as the number it is */
    wx_fcn_config c;
    int derived = map && !wx_yaml_get(map, "in_channels") && wx_fcn_config_parse(map, "", &c) == WX_OK &&
                  c.n_extra > 0;
    for (const wx_cfg_field *f = wx_fcn_config_fields; f->key; f++) {
        if (derived && !strcmp(f->key, "in_channels")) {
            fprintf(out, "%*s# %s\n%*sin_channels: %lld\n", indent, "", f->help, indent, "",
                    (long long)c.in_channels);
            continue;
        }
        wx_cfg_field one[2] = {*f, WX_CFG_END};
        wx_cfg_print(out, map, one, indent);
    }
}
