/* wxcast export-weights / import-weights: model weights between wxcast checkpoints and
 * safetensors files with the published PyTorch parameter names (NVlabs FourCastNet for the AFNO
 * model), so published weights run in wxcast and wxcast-trained weights load in PyTorch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "core/wx_log.h"
#include "core/wx_yaml.h"
#include "io/safetensors.h"
#include "models/fourcastnet.h"
#include "models/weights.h"
#include "train/checkpoint.h"

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
        "and load_state_dict. The effective model config goes into the metadata (wxcast_model).",
        opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    const char *out = wx_args_get(&a, "output");
    if (!out) return wx_cli_error(wx_error_set(WX_ERR_USAGE, "export-weights: --output is required"));
    int n = 0;
    wx_status s = export_weights(a.positionals[0], out, &n);
    if (s) return wx_cli_error(s);
    wx_log_info("%s: %d tensors from %s", out, n, a.positionals[0]);
    return 0;
}

/* ---- import ---------------------------------------------------------------------------------- */

static wx_status import_weights(const char *wpath, const char *cfg_path, const char *out,
                                int64_t *total) {
    wx_yaml *root = NULL;
    wx_status s = wx_yaml_load_file(cfg_path, &root);
    if (s != WX_OK) return wx_error_wrap(WX_ERR_USAGE, "import-weights: --config: ");
    const wx_yaml *t = root && root->kind == WX_YAML_MAP ? wx_yaml_get(root, "type") : NULL;
    const char *type = NULL;
    if (!t || wx_yaml_as_string(t, "type", &type) != WX_OK || strcmp(type, "fourcastnet")) {
        wx_yaml_free(root);
        return wx_error_set(WX_ERR_USAGE, "%s: key 'type': expected 'fourcastnet' (the model "
                            "families with published weights)", cfg_path);
    }
    wx_fcn_config d;
    s = wx_fcn_config_parse(root, "", &d);
    if (s == WX_OK) s = wx_fcn_check(&d);
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
    char *model_text = NULL;
    size_t len = 0;
    if (s == WX_OK) {
        FILE *mem = open_memstream(&model_text, &len);
        if (!mem) s = wx_error_set(WX_ERR_RUN, "import-weights: out of memory");
        else {
            wx_fcn_config_print(mem, root, 0);
            fclose(mem);
        }
    }
    if (s == WX_OK) {
        /* A checkpoint at step 0: usable as `init_from` for training and by forecast. */
        wx_ckpt_state cs;
        memset(&cs, 0, sizeof cs);
        snprintf(cs.stage, sizeof cs.stage, "import");
        cs.best_loss = INFINITY;
        cs.best_step = -1;
        wx_rng_init(&cs.order, 0, 1);
        wx_rng_init(&cs.noise, 0, 2);
        wx_ckpt_out co = {.model_text = model_text, .st = &cs, .params = &p};
        s = wx_checkpoint_write(out, &co);
    }
    *total = wx_params_total(&p);
    free(model_text);
    wx_safetensors_free(&st);
    wx_params_free(&p);
    wx_yaml_free(root);
    return s;
}

int wx_cmd_import_weights(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"config", 1, "model config the weights belong to (required)", "MODEL.yaml"},
        {"output", 1, "checkpoint to write (required)", "CKPT"},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "import-weights", "W.safetensors --config MODEL.yaml --output CKPT",
        "Reads PyTorch weights with the published names (NVlabs FourCastNet; the DDP 'module.'\n"
        "prefix and the unused 'norm.*' keys are accepted) into a wxcast checkpoint for the model\n"
        "of MODEL.yaml. Every parameter must be present with the model's shape; F32, F64, F16\n"
        "and BF16 are accepted.",
        opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    const char *cfg = wx_args_get(&a, "config"), *out = wx_args_get(&a, "output");
    if (!cfg || !out)
        return wx_cli_error(wx_error_set(WX_ERR_USAGE, "import-weights: --%s is required",
                                         cfg ? "output" : "config"));
    int64_t total = 0;
    wx_status s = import_weights(a.positionals[0], cfg, out, &total);
    if (s) return wx_cli_error(s);
    wx_log_info("%s: %lld parameters from %s", out, (long long)total, a.positionals[0]);
    return 0;
}
