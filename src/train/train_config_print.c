/* `wxcast train --print-config`: the effective config with every stage section, defaults filled in
 * and paths made absolute, so that training with the printed file does what training with the
 * original does (train_config.h wx_train_config_print). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_config.h"
#include "train/train_config_priv.h"

/* A path as the run uses it, made absolute (config-relative paths would otherwise change meaning
 * when the printed config is saved in another folder); "" stays "" (init_from unset). */
static void abs_path(const wx_train_config *c, const char *p, char *out, size_t cap) {
    char base[PATH_MAX];
    if (!p[0] || p[0] == '/') {
        snprintf(out, cap, "%s", p);
        return;
    }
    if (!realpath(c->dir[0] ? c->dir : ".", base)) /* read a moment ago: cannot fail but by a race */
        snprintf(base, sizeof base, "%s", c->dir[0] ? c->dir : ".");
    snprintf(out, cap, "%.2000s/%.2000s", base, p);
}

/* One field of `map` whose scalar value (or default) is a config-relative path. */
static void print_path(FILE *out, const wx_train_config *c, const wx_yaml *map,
                       const wx_cfg_field *f, int indent) {
    const wx_yaml *n = map && map->kind == WX_YAML_MAP ? wx_yaml_get(map, f->key) : NULL;
    wx_cfg_field one[2] = {*f, WX_CFG_END};
    if (n && n->kind != WX_YAML_SCALAR) { /* a model mapping */
        wx_cfg_print(out, map, one, indent);
        return;
    }
    const char *p = n ? n->scalar : f->def;
    if (!p) { /* required and absent: the load has refused it already */
        wx_cfg_print(out, map, one, indent);
        return;
    }
    if (!strcmp(p, "\"\"")) p = "";
    char full[WX_TRAIN_PATH_MAX + 8];
    abs_path(c, p, full, sizeof full);
    char *keys[1] = {(char *)f->key};
    int lines[1] = {0};
    wx_yaml v = {.kind = WX_YAML_SCALAR, .scalar = full, .quoted = 1};
    wx_yaml *items[1] = {&v};
    wx_yaml m = {.kind = WX_YAML_MAP, .count = 1, .items = items, .keys = keys, .key_lines = lines};
    wx_cfg_print(out, &m, one, indent);
}

static int is_path_key(const char *k) {
    return !strcmp(k, "model") || !strcmp(k, "archive") || !strcmp(k, "checkpoint_dir") ||
           !strcmp(k, "init_from") || !strcmp(k, "wind_checkpoint");
}

/* fields of `map` at indent, paths made absolute (nested mappings skipped: the caller's). */
static void print_fields(FILE *out, const wx_train_config *c, const wx_yaml *map,
                         const wx_cfg_field *fields, int indent) {
    for (const wx_cfg_field *g = fields; g->key; g++) {
        if (g->type == WX_CFG_MAP) continue;
        wx_cfg_field one[2] = {*g, WX_CFG_END};
        if (is_path_key(g->key)) print_path(out, c, map, g, indent);
        else wx_cfg_print(out, map, one, indent);
    }
}

/* A stage's section: every key (defaults filled in), the optimizer and the loss. */
static void print_stage(FILE *out, const wx_train_config *c, wx_train_stage stage, const wx_yaml *n) {
    const wx_yaml *m = n && n->kind == WX_YAML_MAP ? n : NULL;
    print_fields(out, c, m, wx_train_stage_fields(stage), 2);
    fprintf(out, "  # AdamW, warmup + cosine\n  optimizer:\n");
    wx_cfg_print(out, m ? wx_yaml_get(m, "optimizer") : NULL, wx_train_stage_opt_fields(stage), 4);
    fprintf(out, "  # training loss\n  loss:\n");
    wx_cfg_print(out, m ? wx_yaml_get(m, "loss") : NULL, wx_train_loss_fields, 4);
}

/* Every section (pretrain and finetune always; precip when the file has it: it needs
 * wind_checkpoint), `stage:` the selected one and paths absolute, so that training with the
 * printed file does what training with this one does. */
void wx_train_config_print(FILE *out, const wx_train_config *c) {
    const wx_yaml *r = c->root;
    for (const wx_cfg_field *f = wx_train_root_fields; f->key; f++) {
        const wx_yaml *n = wx_yaml_get(r, f->key);
        if (!strcmp(f->key, "data") || !strcmp(f->key, "validation")) {
            fprintf(out, "# %s\n%s:\n", f->help, f->key);
            if (!strcmp(f->key, "data")) print_fields(out, c, n, wx_train_data_fields, 2);
            else wx_cfg_print(out, n, wx_train_valid_fields, 2);
        } else if (!strcmp(f->key, "pretrain") || !strcmp(f->key, "finetune") ||
                   !strcmp(f->key, "precip")) {
            wx_train_stage st = !strcmp(f->key, "pretrain")   ? WX_STAGE_PRETRAIN
                                : !strcmp(f->key, "finetune") ? WX_STAGE_FINETUNE
                                                              : WX_STAGE_PRECIP;
            if (st == WX_STAGE_PRECIP && !n) continue;
            fprintf(out, "# %s\n%s:\n", f->help, f->key);
            print_stage(out, c, st, n);
        } else if (!strcmp(f->key, "stage")) {
            fprintf(out, "# %s\nstage: %s\n", f->help, wx_train_stage_name(c->stage));
        } else if (is_path_key(f->key)) {
            print_path(out, c, r, f, 0);
        } else {
            wx_cfg_field one[2] = {*f, WX_CFG_END};
            wx_cfg_print(out, r, one, 0);
        }
    }
}
