/* Weights interchange, wxcast → PyTorch: a tiny FourCastNet with weights made in wxcast (NVlabs
 * init, then every tensor randomised so each path carries signal) is exported with
 * wx_weights_export; tests/ref/ref_weights.py --check reads that file BY HAND into its torch
 * AFNONet (load_state_dict strict: every NVlabs name present, none extra) and compares the torch
 * float64 forward of x with wxcast's forward y (written to a second safetensors file) within
 * 1e-4 of max|y|. Needs /usr/bin/python3 with torch; exits 77 (skipped) without it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/wx_backend.h"
#include "core/wx_rng.h"
#include "core/wx_yaml.h"
#include "io/safetensors.h"
#include "models/fourcastnet.h"
#include "models/weights.h"
#include "wx_test.h"

#define PY "/usr/bin/python3"
#define SCRIPT WX_FIXTURE_DIR "/../ref_weights.py"

int main(void) {
    if (access(PY, X_OK) != 0 || system(PY " -c 'import torch' >/dev/null 2>&1") != 0) {
        printf("skipped: %s with torch is not available\n", PY);
        return 77;
    }
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/wx_wtorch_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    wx_yaml *y = NULL;
    WX_ASSERT(wx_yaml_load_file(WX_FIXTURE_DIR "/weights_tiny.yaml", &y) == WX_OK);
    wx_fcn_config c;
    WX_ASSERT(wx_fcn_config_parse(y, "", &c) == WX_OK);
    wx_yaml_free(y);
    wx_ctx *ctx = wx_ctx_create(0);
    wx_fcn *m = wx_fcn_create(ctx, wx_backend_cpu(), &c, 11, 2, 0);
    WX_ASSERT(m != NULL);
    /* Order-one weights: U(±1/√fan_in) for matrices, 1 ± 0.2 for norm scales, ±0.1 biases. */
    wx_rng r;
    wx_rng_init(&r, 99, 0);
    for (int i = 0; i < m->params.count; i++) {
        const wx_param_info *t = &m->params.t[i];
        float *v = wx_params_tensor(&m->params, i);
        float s = 0.1f;
        if (strstr(t->name, "norm") && strstr(t->name, ".weight")) {
            wx_rng_fill_uniform_f32(&r, v, t->size, 0.8f, 1.2f);
            continue;
        }
        if (t->ndim >= 2) s = (float)(1.0 / sqrt((double)(t->size / t->dims[0])));
        if (strstr(t->name, "filter.w")) s = (float)(0.6 / sqrt((double)t->dims[2]));
        if (!strcmp(t->name, "pos_embed")) s = 0.5f;
        wx_rng_fill_uniform_f32(&r, v, t->size, -s, s);
    }
    int64_t nx = 2 * c.in_channels * c.img_h * c.img_w, ny = 2 * c.out_channels * c.img_h * c.img_w;
    float *x = malloc(sizeof(float) * (size_t)nx), *out = malloc(sizeof(float) * (size_t)ny);
    wx_rng_fill_uniform_f32(&r, x, nx, -2.0f, 2.0f);
    WX_CHECK(wx_fcn_predict(m, out, x, 2) == WX_OK, "predict: %s", wx_error_message());

    char wpath[128], iopath[128], cfg[512], cmd[512];
    snprintf(wpath, sizeof wpath, "%s/wxcast.safetensors", dir);
    snprintf(iopath, sizeof iopath, "%s/io.safetensors", dir);
    WX_CHECK(wx_weights_export(wpath, &m->params, "type: fourcastnet\n") == WX_OK, "export: %s",
             wx_error_message());
    snprintf(cfg, sizeof cfg,
             "{\"img_h\": %lld, \"img_w\": %lld, \"in_chans\": %lld, \"out_chans\": %lld, "
             "\"patch_size\": %lld, \"embed_dim\": %lld, \"depth\": %lld, \"mlp_ratio\": %.17g, "
             "\"num_blocks\": %lld, \"sparsity_threshold\": %.17g, "
             "\"hard_thresholding_fraction\": %.17g, \"hidden_size_factor\": %lld, "
             "\"two_sided\": %s}",
             (long long)c.img_h, (long long)c.img_w, (long long)c.in_channels,
             (long long)c.out_channels, (long long)c.patch, (long long)c.embed_dim,
             (long long)c.depth, c.mlp_ratio, (long long)c.num_blocks, c.sparsity_threshold,
             c.hard_thresholding_fraction, (long long)c.hidden_size_factor,
             c.two_sided_modes ? "true" : "false");
    int64_t dx[4] = {2, c.in_channels, c.img_h, c.img_w}, dy[4] = {2, c.out_channels, c.img_h, c.img_w};
    wx_st_entry io[2] = {{"x", 4, dx, x}, {"y", 4, dy, out}};
    const char *meta[2] = {"config", cfg};
    WX_CHECK(wx_safetensors_write_f32(iopath, io, 2, meta, 1) == WX_OK, "write io: %s",
             wx_error_message());
    snprintf(cmd, sizeof cmd, "cd '%s/..' && %s '%s' --check '%s' '%s'", WX_FIXTURE_DIR, PY, SCRIPT,
             wpath, iopath);
    fflush(stdout);
    int rc = system(cmd);
    WX_CHECK(rc == 0, "torch forward of wxcast's export matches wxcast's forward (rc %d)", rc);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
    free(x), free(out);
    wx_fcn_destroy(m);
    wx_ctx_destroy(ctx);
    return wx_test_summary();
}
