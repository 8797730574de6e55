/* Weights interchange (src/io/safetensors.c, src/models/weights.c) against PyTorch.
 *
 * tests/ref/ref_weights.py wrote, by hand (struct + json), the safetensors file of a randomised
 * NVlabs-named tiny AFNONet with every key under "module." and the unused norm.*, plus an input
 * and the float64 torch forward. Import into wxcast → forward equals torch within 1e-4 of max|y|
 * (the bound; float32 vs float64 gives ~1e-6). Export → read back: same names, shapes and
 * bits. Errors: missing tensor, wrong shape, unknown tensor, duplicate, and malformed files
 * (header length, JSON, offsets, gaps, dtype) each fail with WX_ERR_RUN naming the file and the
 * tensor. dtype conversion (F64, F16 incl. subnormal and max, BF16) against exact values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "io/safetensors.h"
#include "models/fourcastnet.h"
#include "models/weights.h"
#include "wx_fixture.h"
#include "wx_test.h"

static char tmpdir[64];

static const char *tmp_path(const char *name) {
    static char buf[4][128];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static wx_fcn *tiny_model(wx_ctx *ctx, int count_norm) {
    wx_yaml *y = NULL;
    if (!WX_CHECK(wx_yaml_load_file(WX_FIXTURE_DIR "/weights_tiny.yaml", &y) == WX_OK, "yaml: %s",
                  wx_error_message()))
        return NULL;
    wx_fcn_config c;
    WX_CHECK(wx_fcn_config_parse(y, "", &c) == WX_OK, "config: %s", wx_error_message());
    wx_yaml_free(y);
    c.count_unused_norm = count_norm;
    wx_fcn *m = wx_fcn_create(ctx, wx_backend_cpu(), &c, 3, 2, 0);
    WX_CHECK(m != NULL, "create: %s", wx_error_message());
    return m;
}

static void test_import_forward(wx_ctx *ctx) {
    wx_fcn *m = tiny_model(ctx, 1);
    wx_fixture *f = wx_fixture_load("weights_tiny");
    if (!m || !WX_CHECK(f != NULL, "fixture weights_tiny")) return;
    wx_safetensors st;
    wx_status s = wx_safetensors_read(WX_FIXTURE_DIR "/weights_tiny.safetensors", &st);
    if (!WX_CHECK(s == WX_OK, "read: %s", wx_error_message())) return;
    WX_CHECK(st.count == m->params.count && !strncmp(st.t[0].name, "module.", 7),
             "file: %d tensors under module. (model %d)", st.count, m->params.count);
    WX_CHECK(wx_safetensors_meta(&st, "format") && !strcmp(wx_safetensors_meta(&st, "format"), "pt"),
             "metadata format=pt");
    WX_CHECK(wx_weights_import(&m->params, &st) == WX_OK, "import: %s", wx_error_message());
    const wx_fixture_tensor *xr = wx_fixture_get(f, "x"), *yr = wx_fixture_get(f, "y");
    float *x = wx_fixture_f32(f, "x"), *y = malloc(sizeof(float) * (size_t)yr->size);
    WX_CHECK(wx_fcn_predict(m, y, x, xr->dims[0]) == WX_OK, "predict: %s", wx_error_message());
    WX_CHECK_CLOSE_F32("forward of imported torch weights", y, yr->data, yr->size, 1e-4, 0);
    double e = 0, mx = 0;
    for (int64_t i = 0; i < yr->size; i++) {
        e = fmax(e, fabs(y[i] - yr->data[i]));
        mx = fmax(mx, fabs(yr->data[i]));
    }
    printf("  import: wxcast forward vs torch float64: %.2e relative to max|y| = %.3f\n", e / mx, mx);

    /* Export, read back: plain NVlabs names, table order, identical bits, model in metadata. */
    const char *out = tmp_path("export.safetensors");
    WX_CHECK(wx_weights_export(out, &m->params, "type: fourcastnet\n") == WX_OK, "export: %s",
             wx_error_message());
    wx_safetensors back;
    if (WX_CHECK(wx_safetensors_read(out, &back) == WX_OK, "read export: %s", wx_error_message())) {
        int same = back.count == m->params.count;
        for (int i = 0; same && i < back.count; i++) {
            const wx_param_info *t = &m->params.t[i];
            float *v = malloc(sizeof(float) * (size_t)t->size);
            same = !strcmp(back.t[i].name, t->name) && back.t[i].ndim == t->ndim &&
                   !strcmp(back.t[i].dtype, "F32") && wx_safetensors_to_f32(&back, i, v) == WX_OK &&
                   !memcmp(v, wx_params_tensor(&m->params, i), sizeof(float) * (size_t)t->size);
            free(v);
        }
        WX_CHECK(same, "export reads back with the same names, shapes and bits");
        WX_CHECK((8 + (back.data - back.buf - 8)) % 8 == 0, "data 8-byte aligned");
        const char *mm = wx_safetensors_meta(&back, "wxcast_model");
        WX_CHECK(mm && !strcmp(mm, "type: fourcastnet\n"), "model config in the metadata");
        wx_safetensors_free(&back);
    }
    free(x), free(y);
    wx_safetensors_free(&st);
    wx_fixture_free(f);
    wx_fcn_destroy(m);
}

/* Writes p's tensors with one changed: drop (skip it), reshape (first dim + 1 and fake data),
 * or add extra names; then imports and returns the status. */
static wx_status import_variant(wx_params *p, const char *drop, const char *reshape,
                                const char *extra, const char *file) {
    wx_st_entry *e = calloc((size_t)p->count + 1, sizeof *e);
    int64_t dims[WX_PARAM_MAX_DIMS];
    float *big = NULL;
    int n = 0;
    for (int i = 0; i < p->count; i++) {
        const wx_param_info *t = &p->t[i];
        if (drop && !strcmp(t->name, drop)) continue;
        e[n] = (wx_st_entry){t->name, t->ndim, t->dims, wx_params_tensor(p, i)};
        if (reshape && !strcmp(t->name, reshape)) {
            memcpy(dims, t->dims, sizeof dims);
            dims[0] += 1;
            big = calloc((size_t)(t->size / t->dims[0] * dims[0]), sizeof(float));
            e[n].dims = dims, e[n].data = big;
        }
        n++;
    }
    if (extra) e[n++] = (wx_st_entry){extra, 1, p->t[p->count - 1].dims, wx_params_tensor(p, 0)};
    const char *path = tmp_path(file);
    wx_status s = wx_safetensors_write_f32(path, e, n, NULL, 0);
    WX_CHECK(s == WX_OK, "write %s: %s", file, wx_error_message());
    wx_safetensors st;
    s = wx_safetensors_read(path, &st);
    WX_CHECK(s == WX_OK, "read %s: %s", file, wx_error_message());
    if (s == WX_OK) s = wx_weights_import(p, &st);
    wx_safetensors_free(&st);
    free(big);
    free(e);
    return s;
}

static int msg_has(const char *a, const char *b) {
    const char *m = wx_error_message();
    return strstr(m, a) && (!b || strstr(m, b));
}

static void test_import_errors(wx_ctx *ctx) {
    wx_fcn *m = tiny_model(ctx, 1), *m0 = tiny_model(ctx, 0);
    if (!m || !m0) return;
    wx_status s = import_variant(&m->params, "blocks.1.mlp.fc2.bias", NULL, NULL, "missing.safetensors");
    WX_CHECK(s == WX_ERR_RUN && msg_has("missing.safetensors", "missing tensor 'blocks.1.mlp.fc2.bias'"),
             "missing tensor named: %s", wx_error_message());
    s = import_variant(&m->params, NULL, "head.weight", NULL, "shape.safetensors");
    WX_CHECK(s == WX_ERR_RUN && msg_has("'head.weight' has shape (49, 32)", "expects (48, 32)"),
             "wrong shape named: %s", wx_error_message());
    s = import_variant(&m->params, NULL, NULL, "blocks.7.filter.w1", "extra.safetensors");
    WX_CHECK(s == WX_ERR_RUN && msg_has("'blocks.7.filter.w1' is not a parameter", NULL),
             "unknown tensor named: %s", wx_error_message());
    s = import_variant(&m->params, NULL, NULL, "module.head.weight", "dup.safetensors");
    WX_CHECK(s == WX_ERR_RUN && msg_has("appears twice", "head.weight"), "duplicate: %s",
             wx_error_message());
    /* The unused norm: absent from the file is fine; present for a table without it too. */
    s = import_variant(&m->params, "norm.weight", NULL, NULL, "nonorm.safetensors");
    WX_CHECK(s == WX_OK, "file without norm.weight imports: %s", wx_error_message());
    s = import_variant(&m->params, NULL, NULL, NULL, "full.safetensors");
    wx_safetensors st;
    if (WX_CHECK(wx_safetensors_read(tmp_path("full.safetensors"), &st) == WX_OK, "read full")) {
        WX_CHECK(wx_weights_import(&m0->params, &st) == WX_OK,
                 "norm.* keys accepted by a model without norm: %s", wx_error_message());
        wx_safetensors_free(&st);
    }
    wx_fcn_destroy(m);
    wx_fcn_destroy(m0);
}

/* A file from raw pieces: header text (length prefix added) and data bytes. */
static const char *raw_file(const char *name, const char *header, const void *data, size_t n,
                            int64_t claim) {
    const char *path = tmp_path(name);
    FILE *fp = fopen(path, "wb");
    uint64_t len = claim >= 0 ? (uint64_t)claim : strlen(header);
    fwrite(&len, 8, 1, fp);
    fwrite(header, 1, strlen(header), fp);
    if (n) fwrite(data, 1, n, fp);
    fclose(fp);
    return path;
}

static void expect_bad(const char *name, const char *header, const void *data, size_t n,
                       int64_t claim, const char *needle) {
    wx_safetensors st;
    wx_status s = wx_safetensors_read(raw_file(name, header, data, n, claim), &st);
    WX_CHECK(s == WX_ERR_RUN && msg_has(name, needle), "%s rejected naming '%s': %s", name, needle,
             s == WX_OK ? "(accepted)" : wx_error_message());
    if (s == WX_OK) wx_safetensors_free(&st);
}

static void test_bad_files(void) {
    float v[4] = {1, 2, 3, 4};
    expect_bad("short.safetensors", "", NULL, 0, 1000, "runs past the end");
    expect_bad("json.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]",
               v, 16, -1, "bad safetensors header at byte");
    expect_bad("size.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}",
               v, 16, -1, "tensor 'a': 16 bytes for 3 F32 values");
    expect_bad("trunc.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
               v, 12, -1, "outside the 12-byte data buffer");
    expect_bad("gap.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
               v, 16, -1, "tensor 'a' starts at byte 8");
    expect_bad("tail.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
               v, 16, -1, "8 bytes after the last tensor");
    expect_bad("dtype.safetensors", "{\"a\":{\"dtype\":\"F33\",\"shape\":[4],\"data_offsets\":[0,16]}}",
               v, 16, -1, "unknown dtype 'F33'");
    expect_bad("noshape.safetensors", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,16]}}", v, 16,
               -1, "lacks 'shape'");
    expect_bad("meta.safetensors", "{\"__metadata__\":{\"k\":1}}", NULL, 0, -1,
               "values must be strings");
}

static void test_dtypes_and_json(void) {
    /* F64 [1.5, -2.25], F16 [65504, 2^-24 (smallest subnormal), -0.5], BF16 [3.0, -1.0],
     * I64 [7]; the name with escapes decodes to a"é/ (UTF-8). Spaces and newlines between tokens. */
    uint8_t data[16 + 6 + 4 + 8];
    double f64[2] = {1.5, -2.25};
    uint16_t f16[3] = {0x7BFF, 0x0001, 0xB800}, bf16[2] = {0x4040, 0xBF80};
    int64_t i64 = 7;
    memcpy(data, f64, 16);
    memcpy(data + 16, f16, 6);
    memcpy(data + 22, bf16, 4);
    memcpy(data + 26, &i64, 8);
    const char *hdr =
        "{ \"__metadata__\" : {\"note\": \"tab\\there\"},\n"
        "  \"d\": {\"dtype\": \"F64\", \"shape\": [2], \"data_offsets\": [0, 16]},\n"
        "  \"h\": {\"dtype\": \"F16\", \"shape\": [3, 1], \"data_offsets\": [16, 22], \"x\": [1, {\"y\": null}]},\n"
        "  \"a\\\"\\u00e9\\/\": {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [22, 26]},\n"
        "  \"i\": {\"dtype\": \"I64\", \"shape\": [], \"data_offsets\": [26, 34]} }   ";
    wx_safetensors st;
    wx_status s = wx_safetensors_read(raw_file("dtypes.safetensors", hdr, data, sizeof data, -1), &st);
    if (!WX_CHECK(s == WX_OK, "dtypes file: %s", wx_error_message())) return;
    float o[3];
    int i = wx_safetensors_find(&st, "d");
    WX_CHECK(i >= 0 && wx_safetensors_to_f32(&st, i, o) == WX_OK && o[0] == 1.5f && o[1] == -2.25f,
             "F64 converts");
    i = wx_safetensors_find(&st, "h");
    WX_CHECK(i >= 0 && st.t[i].ndim == 2 && wx_safetensors_to_f32(&st, i, o) == WX_OK &&
             o[0] == 65504.0f && o[1] == ldexpf(1.0f, -24) && o[2] == -0.5f, "F16 converts");
    i = wx_safetensors_find(&st, "a\"\xc3\xa9/");
    WX_CHECK(i >= 0 && wx_safetensors_to_f32(&st, i, o) == WX_OK && o[0] == 3.0f && o[1] == -1.0f,
             "BF16 converts; escaped name decoded");
    i = wx_safetensors_find(&st, "i");
    WX_CHECK(i >= 0 && st.t[i].ndim == 0 && st.t[i].numel == 1, "scalar I64 tensor parsed");
    WX_CHECK(wx_safetensors_to_f32(&st, i, o) == WX_ERR_RUN && msg_has("'i' has dtype I64", NULL),
             "integer dtype refused by name: %s", wx_error_message());
    WX_CHECK(!strcmp(wx_safetensors_meta(&st, "note"), "tab\there"), "metadata string unescaped");
    wx_safetensors_free(&st);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/wx_weights_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    wx_ctx *ctx = wx_ctx_create(0);
    test_import_forward(ctx);
    test_import_errors(ctx);
    test_bad_files();
    test_dtypes_and_json();
    wx_ctx_destroy(ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", tmpdir);
    return wx_test_summary();
}
