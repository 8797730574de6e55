/* GraphCast checkpoints of google-deepmind/graphcast (.npz) into wxcast (models/weights_gc.c,
 * io/npz.c). The reference is DeepMind's own code: tests/ref/ref_graphcast_npz.py builds the
 * tiny GraphCast of configs/model/graphcast_tiny.yaml as graphcast.GraphCast, writes random
 * float32 parameters with graphcast.checkpoint.dump (gc_import.npz) and GraphCast's one-step
 * network output in float64 JAX (gc_import.wxfx: x, y, its mesh->grid senders).
 *
 * Checks: the import fills every parameter (counts equal), wxcast's prediction from the imported
 * weights equals GraphCast's within 1e-5 of max|y| (fp32 against float64) at every grid point
 * with GraphCast's mesh->grid triangle; every triangle is the one DeepMind's code picked, except
 * at the 3 of 144 points where trimesh's closest-face query is decided by numpy's sort order of
 * bit-equal distances (gc_m2g_22p5deg from tests/ref/ref_mesh_m2g.py), where it is one trimesh
 * can return (docs/weights.md); the config disagreements exit-2 errors
 * naming the key; damaged files (a renamed key, a key missing, a truncated file, a deflated
 * member, a crc mismatch) one error naming the file and the key. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/wx_backend.h"
#include "core/wx_yaml.h"
#include "io/npz.h"
#include "models/graphcast.h"
#include "models/weights.h"
#include "wx_fixture.h"
#include "wx_test.h"

#define NPZ WX_FIXTURE_DIR "/gc_import.npz"
#define TINY_YAML WX_FIXTURE_DIR "/../../../configs/model/graphcast_tiny.yaml"

static char tmpdir[64];

static int tiny_config(wx_gc_config *c) {
    wx_yaml *y = NULL;
    if (!WX_CHECK(wx_yaml_load_file(TINY_YAML, &y) == WX_OK, "yaml: %s", wx_error_message()))
        return 0;
    int ok = WX_CHECK(wx_gc_config_parse(y, "", c) == WX_OK, "config: %s", wx_error_message());
    wx_yaml_free(y);
    return ok;
}

static void test_forward(wx_ctx *ctx) {
    wx_gc_config c;
    wx_fixture *f = wx_fixture_load("gc_import");
    if (!tiny_config(&c) || !WX_CHECK(f != NULL, "fixture gc_import")) return;
    wx_npz z;
    if (!WX_CHECK(wx_npz_open(NPZ, &z) == WX_OK, "open: %s", wx_error_message())) return;
    WX_CHECK(wx_weights_check_graphcast(&z, &c, "graphcast_tiny.yaml") == WX_OK, "config check: %s",
             wx_error_message());
    wx_gc *m = wx_gc_create(ctx, wx_backend_cpu(), &c, 5, 1, 0, 0);
    if (!WX_CHECK(m != NULL, "create: %s", wx_error_message())) return;
    int64_t np = wx_params_total(&m->params);
    WX_CHECK(np == (int64_t)wx_fixture_scalar(f, "params"), "parameters %lld, GraphCast's %g",
             (long long)np, wx_fixture_scalar(f, "params"));
    WX_CHECK(m->eg == (int64_t)wx_fixture_scalar(f, "g2m_edges"), "grid->mesh edges %lld, "
             "GraphCast's %g", (long long)m->eg, wx_fixture_scalar(f, "g2m_edges"));
    /* every value replaced: fill with NaN first */
    for (int64_t i = 0; i < m->params.len; i++) m->params.data[i] = NAN;
    WX_CHECK(wx_weights_import_graphcast(&m->params, &c, &z) == WX_OK, "import: %s",
             wx_error_message());
    int nan = 0;
    for (int i = 0; i < m->params.count; i++)
        for (int64_t k = 0; k < m->params.t[i].size; k++)
            nan += isnan(wx_params_tensor(&m->params, i)[k]);
    WX_CHECK(nan == 0, "%d parameter values not filled by the import", nan);

    const wx_fixture_tensor *yr = wx_fixture_get(f, "y"), *sr = wx_fixture_get(f, "m2g_senders");
    float *x = wx_fixture_f32(f, "x");
    float *y = calloc((size_t)yr->size, sizeof(float));
    WX_CHECK(wx_gc_predict(m, y, x, 1) == WX_OK, "predict: %s", wx_error_message());
    const int64_t hw = c.nlat * c.nlon;
    /* Where trimesh's face is decided only by numpy's sort order of bit-equal distances
     * (tests/ref/ref_mesh_m2g.py: 3 points here) any face it can return is GraphCast's rule;
     * everywhere else the senders must be the ones DeepMind's code gave, in order. */
    wx_fixture *ft = wx_fixture_load("gc_m2g_22p5deg");
    if (!WX_CHECK(ft != NULL, "fixture gc_m2g_22p5deg: %s", wx_error_message())) return;
    const wx_fixture_tensor *tp = wx_fixture_get(ft, "points"), *tt = wx_fixture_get(ft, "tied");
    int differ = 0, tie_other = 0, tie_bad = 0, n_tie = (int)wx_fixture_scalar(ft, "n_tie");
    double emax = 0, ymax = 0;
    for (int64_t g = 0; g < hw; g++) {
        const int32_t *s = m->g.m2g.senders + 3 * g;
        int same = 1, tie = -1;
        for (int k = 0; k < 3; k++) same &= s[k] == (int32_t)sr->data[3 * g + k];
        for (int64_t k = 0; k < tp->size; k++)
            if ((int64_t)tp->data[k] == g && tt->data[3 * tt->dims[1] * k] >= 0) tie = (int)k;
        if (tie >= 0 && !same) {
            const double *opt = tt->data + 3 * tt->dims[1] * tie;
            int any = 0;
            for (int64_t j = 0; j < tt->dims[1] && opt[3 * j] >= 0; j++)
                any |= s[0] == opt[3 * j] && s[1] == opt[3 * j + 1] && s[2] == opt[3 * j + 2];
            tie_other++;
            tie_bad += !any;
        } else {
            differ += !same;
        }
        for (int64_t o = 0; o < c.out_channels; o++) {
            ymax = fmax(ymax, fabs(yr->data[o * hw + g]));
            if (same) emax = fmax(emax, fabs(y[o * hw + g] - yr->data[o * hw + g]));
        }
    }
    printf("  one step vs graphcast.GraphCast: max |err| %.3e (max |y| %.3f, %.2e relative) at "
           "the %lld of %lld grid points with GraphCast's triangle; %d of the %d points decided "
           "by trimesh's sort order alone take the other possible triangle\n", emax, ymax,
           emax / ymax, (long long)(hw - differ - tie_other), (long long)hw, tie_other, n_tie);
    WX_CHECK(differ == 0, "%d of %lld decided grid points with another mesh->grid triangle than "
             "GraphCast's", differ, (long long)(hw - n_tie));
    WX_CHECK(tie_bad == 0 && tie_other <= n_tie, "order-decided points: a triangle trimesh can "
             "return (%d not)", tie_bad);
    WX_CHECK(emax <= 1e-5 * ymax, "prediction within 1e-5 of max|y| (%.2e)", emax / ymax);
    wx_fixture_free(ft);
    free(x);
    free(y);
    wx_gc_destroy(m);
    wx_npz_free(&z);
    wx_fixture_free(f);
}

/* Error line and status of a config that differs in one field. */
static void config_error(const wx_npz *z, wx_gc_config c, const char *key) {
    wx_status s = wx_weights_check_graphcast(z, &c, "cfg.yaml");
    const char *msg = wx_error_message();
    WX_CHECK(s == WX_ERR_USAGE && strstr(msg, key) && strstr(msg, "gc_import.npz"),
             "config disagreement names %s (status %d): %s", key, (int)s, msg);
}

static void test_config_checks(void) {
    wx_gc_config c;
    wx_npz z;
    if (!tiny_config(&c) || !WX_CHECK(wx_npz_open(NPZ, &z) == WX_OK, "open")) return;
    wx_gc_config d = c;
    d.latent_size = 32;
    config_error(&z, d, "model_config:latent_size");
    d = c, d.mesh_max_level = 2;
    config_error(&z, d, "model_config:mesh_size");
    d = c, d.gnn_msg_steps = 3;
    config_error(&z, d, "model_config:gnn_msg_steps");
    d = c, d.hidden_layers = 2;
    config_error(&z, d, "model_config:hidden_layers");
    d = c, d.radius_fraction = 0.5999912857713345;
    config_error(&z, d, "model_config:radius_query_fraction_edge_length");
    d = c, d.m2g_norm = 0;
    config_error(&z, d, "model_config:mesh2grid_edge_normalization_factor");
    d = c, d.resolution = 11.25;
    config_error(&z, d, "model_config:resolution");
    d = c, snprintf(d.surface[0], WX_GC_VAR_NAME, "2t"); /* an alias sorts elsewhere */
    config_error(&z, d, "task_config:target_variables");
    d = c, d.n_forcings = 2;
    config_error(&z, d, "task_config:forcing_variables");
    d = c, d.n_static = 0;
    config_error(&z, d, "task_config:input_variables");
    d = c, d.levels[0] = 850, d.levels[1] = 500;
    config_error(&z, d, "task_config:pressure_levels");
    d = c, d.input_steps = 3;
    config_error(&z, d, "task_config:input_duration");
    d = c, d.mesh_min_level = 1;
    config_error(&z, d, "mesh_min_level");
    wx_npz_free(&z);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*len);
    if (fread(b, 1, *len, f) != *len) *len = 0;
    fclose(f);
    return b;
}

static const char *put(const char *name, const char *buf, size_t len) {
    static char path[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
    FILE *f = fopen(path[k], "wb");
    if (f) {
        fwrite(buf, 1, len, f);
        fclose(f);
    }
    return path[k];
}

/* The central-directory record of key: its offset in buf, or 0. */
static size_t central(const char *buf, size_t len, const char *key) {
    size_t kl = strlen(key);
    for (size_t p = 0; p + 46 + kl < len; p++)
        if (!memcmp(buf + p, "PK\1\2", 4) && !memcmp(buf + p + 46, key, kl)) return p;
    return 0;
}

/* Imports path into the tiny table; expects WX_ERR_RUN with all of want1/want2 in the message. */
static void import_fails(const char *path, const char *what, const char *want1, const char *want2) {
    wx_gc_config c;
    if (!tiny_config(&c)) return;
    wx_npz z;
    wx_status s = wx_npz_open(path, &z);
    if (s == WX_OK) {
        wx_params p;
        wx_params_init(&p);
        wx_gc_param_table(&p, &c, NULL);
        s = wx_params_alloc(&p);
        if (s == WX_OK) s = wx_weights_check_graphcast(&z, &c, "cfg.yaml");
        if (s == WX_OK) s = wx_weights_import_graphcast(&p, &c, &z);
        wx_params_free(&p);
        wx_npz_free(&z);
    }
    const char *msg = wx_error_message();
    WX_CHECK(s == WX_ERR_RUN && strstr(msg, path) && strstr(msg, want1) &&
                 (!want2 || strstr(msg, want2)) && !strchr(msg, '\n'),
             "%s: one error naming the file and '%s' (status %d): %s", what, want1, (int)s, msg);
}

static void test_damaged(void) {
    size_t len = 0;
    char *good = slurp(NPZ, &len);
    if (!WX_CHECK(good && len > 1000, "read %s", NPZ)) return;
    char *b = malloc(len);
    const char *k0 = "params:grid2mesh_gnn/~_networks_builder/encoder_edges_grid2mesh_mlp/~/linear_0:w";
    size_t c0 = central(good, len, k0);
    if (!WX_CHECK(c0 > 0, "central record of %s", k0)) return;

    /* a renamed key (one letter of its name in the directory) */
    memcpy(b, good, len);
    b[c0 + 46 + strlen(k0) - 1] = 'x';
    import_fails(put("renamed.npz", b, len), "renamed key", "linear_0:x", "not a parameter");
    /* a key that is no parameter key any more: the parameter is missing, named by its key */
    memcpy(b, good, len);
    b[c0 + 46 + 3] = 'X';
    import_fails(put("missing.npz", b, len), "missing key", "missing key", k0);
    /* truncated: the end record is gone */
    import_fails(put("trunc.npz", good, len / 2), "truncated file", "end-of-central-directory",
                 NULL);
    /* truncated inside the last member's data, directory rebuilt elsewhere: a member past the
     * end is named; emulate by pointing the first member's local offset past the file */
    memcpy(b, good, len);
    b[c0 + 42] = (char)0xf0, b[c0 + 43] = (char)0xff, b[c0 + 44] = (char)0x7f, b[c0 + 45] = 0;
    import_fails(put("offset.npz", b, len), "member past the end", k0, "local header");
    /* deflated (np.savez_compressed) */
    memcpy(b, good, len);
    b[c0 + 10] = 8;
    import_fails(put("deflate.npz", b, len), "deflated member", k0, "compressed");
    /* one flipped data byte: crc32 */
    memcpy(b, good, len);
    size_t d0 = 30 + (size_t)(uint8_t)good[26] + 256u * (uint8_t)good[27] + (uint8_t)good[28] +
                256u * (uint8_t)good[29]; /* the first member's data (its local header at 0) */
    b[d0 + 140] ^= 0x10;
    import_fails(put("crc.npz", b, len), "flipped data byte", "crc32", NULL);
    /* not a zip at all */
    import_fails(put("text.npz", "hello", 5), "not a zip", "not a zip archive", NULL);
    free(b);
    free(good);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/wx_weights_gc_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    wx_ctx *ctx = wx_ctx_create(0);
    test_forward(ctx);
    test_config_checks();
    test_damaged();
    wx_ctx_destroy(ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", tmpdir);
    return wx_test_summary();
}
