/* Config schema validation (core/wx_config.h): every rejection names the key path and line, and
 * wx_cfg_print's output re-parses to the same values. */
#include <stdlib.h>
#include <string.h>

#include "core/wx_config.h"
#include "wx_test.h"

static const char *const losses[] = {"relative_l2", "mse", NULL};

static const wx_cfg_field model_fields[] = {
    {"embed_dim", WX_CFG_INT, 1, 1, 65536, NULL, "token width", NULL},
    {"depth", WX_CFG_INT, 0, 1, 1000, "12", "number of blocks", NULL},
    {"mlp_ratio", WX_CFG_FLOAT, 0, 0.5, 64, "4.0", "hidden width / embed_dim", NULL},
    {"img_size", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[720, 1440]", "grid [H, W]", NULL},
    {"double_skip", WX_CFG_BOOL, 0, WX_CFG_NO_RANGE, "true", "add the block input twice", NULL},
    {"loss", WX_CFG_STR, 0, WX_CFG_NO_RANGE, "relative_l2", "training loss", losses},
    {"name", WX_CFG_STR, 0, WX_CFG_NO_RANGE, NULL, "free text", NULL},
    WX_CFG_END,
};

static const wx_cfg_field root_fields[] = {
    {"model", WX_CFG_MAP, 1, WX_CFG_NO_RANGE, NULL, "the network", NULL},
    {"seed", WX_CFG_INT, 0, 0, 1e18, "42", "random seed", NULL},
    WX_CFG_END,
};

/* Loads text and validates root + model; returns the status and leaves the tree in *out. */
static wx_status load_validate(const char *text, wx_yaml **out) {
    wx_error_clear();
    wx_status s = wx_yaml_load_string(text, "t.yaml", out);
    if (s) return s;
    WX_TRY(wx_cfg_validate(*out, "", root_fields));
    return wx_cfg_validate(wx_yaml_get(*out, "model"), "model", model_fields);
}

static void expect_error(const char *text, const char *what, const char *const *parts) {
    wx_yaml *y = NULL;
    wx_status s = load_validate(text, &y);
    WX_CHECK(s == WX_ERR_USAGE, "%s: status %d, want usage error", what, s);
    const char *msg = wx_error_message();
    for (const char *const *p = parts; *p; p++)
        WX_CHECK(strstr(msg, *p) != NULL, "%s: message '%s' lacks '%s'", what, msg, *p);
    WX_CHECK(!strchr(msg, '\n'), "%s: message is one line", what);
    wx_yaml_free(y);
}

static void test_errors(void) {
    { /* 50 000 nested brackets overflowed the stack of the recursive parser (SIGSEGV) */
        size_t n = 50000;
        char *deep = malloc(2 * n + 8);
        memcpy(deep, "x: ", 3);
        memset(deep + 3, '[', n);
        memset(deep + 3 + n, ']', n);
        deep[3 + 2 * n] = 0;
        expect_error(deep, "deep nesting", (const char *const[]){"t.yaml: line 1: nested more than 64 levels", NULL});
        free(deep);
    }
    expect_error("seed: 1\nmodel:\n  embed_dim: 64\n  embd_dim: 3\n", "unknown key",
                 (const char *const[]){"t.yaml: line 4:", "unknown key 'model.embd_dim'",
                                       "did you mean 'embed_dim'?", "allowed: embed_dim, depth",
                                       NULL});
    expect_error("model:\n  embed_dim: 64\n  zzzzzz: 3\n", "unknown key, no suggestion",
                 (const char *const[]){"line 3:", "unknown key 'model.zzzzzz' (allowed:", NULL});
    {
        wx_yaml *y = NULL;
        load_validate("model:\n  embed_dim: 64\n  zzzzzz: 3\n", &y);
        WX_CHECK(!strstr(wx_error_message(), "did you mean"), "no suggestion beyond distance 2");
        wx_yaml_free(y);
    }
    expect_error("model:\n  embed_dim: 64\n  depth: twelve\n", "wrong type int",
                 (const char *const[]){"line 3:", "'model.depth'", "integer", "twelve", NULL});
    expect_error("model:\n  embed_dim: 64\n  mlp_ratio: [1, 2]\n", "wrong type float",
                 (const char *const[]){"line 3:", "'model.mlp_ratio'", "number", "list", NULL});
    expect_error("model:\n  embed_dim: 64\n  img_size: 720\n", "wrong type list",
                 (const char *const[]){"line 3:", "'model.img_size'", "expected a list", "'720'",
                                       NULL});
    expect_error("model:\n  embed_dim: 64\n  double_skip: maybe\n", "wrong type bool",
                 (const char *const[]){"line 3:", "'model.double_skip'", "true or false", NULL});
    expect_error("model: 3\n", "section not a mapping",
                 (const char *const[]){"line 1:", "'model'", "mapping", NULL});
    expect_error("model:\n  embed_dim: 64\n  depth: 0\n", "int below range",
                 (const char *const[]){"line 3:", "'model.depth'", "value 0", "[1, 1000]", NULL});
    expect_error("model:\n  embed_dim: 64\n  mlp_ratio: 100.5\n", "float above range",
                 (const char *const[]){"line 3:", "'model.mlp_ratio'", "100.5", "[0.5, 64]", NULL});
    expect_error("model:\n  embed_dim: 64\n  loss: l1\n", "choice",
                 (const char *const[]){"line 3:", "'model.loss'", "relative_l2, mse", "'l1'", NULL});
    expect_error("seed: 3\n\nmodel:\n  depth: 2\n", "missing required",
                 (const char *const[]){"line 4:", "missing required key 'model.embed_dim'", NULL});
    expect_error("seed: 3\n", "missing required section",
                 (const char *const[]){"t.yaml: line 1:", "missing required key 'model'", NULL});
    /* A quoted number is a string, never an integer. */
    expect_error("model:\n  embed_dim: \"64\"\n", "quoted int",
                 (const char *const[]){"line 2:", "'model.embed_dim'", "integer", NULL});
}

static void test_defaults(void) {
    wx_yaml *y = NULL;
    WX_CHECK(load_validate("model:\n  embed_dim: 64\n  mlp_ratio: 2\n", &y) == WX_OK, "valid: %s",
             wx_error_message());
    const wx_yaml *m = wx_yaml_get(y, "model");
    int64_t e = 0, d = 0, seed = 0;
    double r = 0;
    int b = 0;
    const char *loss = NULL, *name = NULL;
    WX_CHECK(wx_cfg_int(m, model_fields, "embed_dim", &e) == WX_OK && e == 64, "embed_dim %lld",
             (long long)e);
    WX_CHECK(wx_cfg_int(m, model_fields, "depth", &d) == WX_OK && d == 12, "depth default %lld",
             (long long)d);
    WX_CHECK(wx_cfg_double(m, model_fields, "mlp_ratio", &r) == WX_OK && r == 2.0,
             "int accepted as float: %g", r);
    WX_CHECK(wx_cfg_bool(m, model_fields, "double_skip", &b) == WX_OK && b == 1, "bool default");
    WX_CHECK(wx_cfg_str(m, model_fields, "loss", &loss) == WX_OK && !strcmp(loss, "relative_l2"),
             "str default");
    WX_CHECK(wx_cfg_int(y, root_fields, "seed", &seed) == WX_OK && seed == 42, "root default");
    WX_CHECK(wx_cfg_str(m, model_fields, "name", &name) == WX_ERR_USAGE, "no default → error");
    /* NULL map = all defaults. */
    WX_CHECK(wx_cfg_int(NULL, model_fields, "depth", &d) == WX_OK && d == 12, "NULL map default");
    wx_yaml_free(y);
}

/* Prints the effective model section, re-parses and re-validates it, and compares values. */
static void test_print_round_trip(void) {
    wx_yaml *y = NULL;
    const char *text = "model:\n  embed_dim: 96\n  mlp_ratio: 1.5e0\n  img_size: [32, 64]\n"
                       "  loss: mse\n  name: \"a: b # c\"\n  double_skip: false\n";
    WX_CHECK(load_validate(text, &y) == WX_OK, "valid: %s", wx_error_message());
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    fprintf(mem, "model:\n");
    wx_cfg_print(mem, wx_yaml_get(y, "model"), model_fields, 2);
    fclose(mem);
    WX_CHECK(strstr(buf, "  # number of blocks\n  depth: 12\n") != NULL,
             "default filled in with help comment:\n%s", buf);
    wx_yaml *z = NULL;
    WX_CHECK(load_validate(buf, &z) == WX_OK, "printed config re-validates: %s\n%s",
             wx_error_message(), buf);
    const wx_yaml *m = wx_yaml_get(z, "model");
    int64_t e = 0, d = 0;
    double r = 0;
    int b = 1;
    const char *loss = "", *name = "";
    wx_cfg_int(m, model_fields, "embed_dim", &e);
    wx_cfg_int(m, model_fields, "depth", &d);
    wx_cfg_double(m, model_fields, "mlp_ratio", &r);
    wx_cfg_bool(m, model_fields, "double_skip", &b);
    wx_cfg_str(m, model_fields, "loss", &loss);
    wx_cfg_str(m, model_fields, "name", &name);
    WX_CHECK(e == 96 && d == 12 && r == 1.5 && b == 0, "values after round trip: %lld %lld %g %d",
             (long long)e, (long long)d, r, b);
    WX_CHECK(!strcmp(loss, "mse") && !strcmp(name, "a: b # c"), "strings after round trip: %s|%s",
             loss, name);
    const wx_yaml *img = wx_yaml_get(m, "img_size");
    WX_CHECK(img && img->kind == WX_YAML_SEQ && img->count == 2 &&
                 !strcmp(img->items[0]->scalar, "32") && !strcmp(img->items[1]->scalar, "64"),
             "list after round trip");
    /* Printing the re-parsed tree gives identical text (a fixed point). */
    char *buf2 = NULL;
    size_t len2 = 0;
    mem = open_memstream(&buf2, &len2);
    fprintf(mem, "model:\n");
    wx_cfg_print(mem, m, model_fields, 2);
    fclose(mem);
    WX_CHECK(!strcmp(buf, buf2), "print is a fixed point");
    free(buf);
    free(buf2);
    wx_yaml_free(y);
    wx_yaml_free(z);
}

int main(void) {
    test_errors();
    test_defaults();
    test_print_round_trip();
    return wx_test_summary();
}
