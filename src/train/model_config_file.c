#include "train/model_config_file.h"

#include <stdio.h>
#include <string.h>

#include "core/wx_fs.h"

/* A wxcast YAML of another kind, told by a key only it has; its line in *line. */
static const char *other_yaml_kind(const wx_yaml *root, const char **key, int *line) {
    static const struct { const char *key, *what; } kinds[] = {
        {"data", "a training config (`wxcast train`)"},
        {"analysis", "a daily config (`wxcast daily`)"},
        {"sources", "an ingest recipe (`wxcast ingest`)"},
        {"truncation", "a synthetic-world config (`wxcast synth`)"},
    };
    if (!root || root->kind != WX_YAML_MAP || wx_yaml_get(root, "type")) return NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (wx_yaml_get(root, kinds[i].key)) {
            *key = kinds[i].key;
            *line = wx_yaml_key_line(root, kinds[i].key);
            return kinds[i].what;
        }
    return NULL;
}

static const char *const expected =
    "expected a model config (`type: fourcastnet` or `type: graphcast` and the architecture's keys, "
    "as in configs/model/)";

wx_status wx_model_config_load(const char *path, wx_yaml **root) {
    *root = NULL;
    const char *bin = wx_yaml_binary_kind(path);
    if (bin) return wx_error_set(WX_ERR_USAGE, "%s: %s, %s", path, bin, expected);
    WX_TRY(wx_yaml_load_file(path, root));
    const char *key = NULL;
    int line = 0;
    const char *other = other_yaml_kind(*root, &key, &line);
    if (!other) return WX_OK;
    wx_status st;
    const wx_yaml *m = wx_yaml_get(*root, "model");
    const int mline = wx_yaml_key_line(*root, "model");
    if (!strcmp(key, "data") && m && m->kind == WX_YAML_SCALAR) {
        char dir[4096], file[4096];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
        if (wx_path_join(dir, m->scalar, file, sizeof file) != WX_OK)
            snprintf(file, sizeof file, "%s", m->scalar);
        st = wx_error_set(WX_ERR_USAGE, "%s: %s (key 'data' at line %d), %s: its model config is "
                          "the file its `model:` names (line %d): %s", path, other, line, expected,
                          mline, file);
    } else if (!strcmp(key, "data") && m && m->kind == WX_YAML_MAP) {
        st = wx_error_set(WX_ERR_USAGE, "%s: %s (key 'data' at line %d), %s: its model config is "
                          "its `model:` section (line %d); copy that section into a file of its "
                          "own and give that file", path, other, line, expected, mline);
    } else {
        st = wx_error_set(WX_ERR_USAGE, "%s: %s (key '%s' at line %d), %s", path, other, key, line,
                          expected);
    }
    wx_yaml_free(*root);
    *root = NULL;
    return st;
}
