/* Config schemas on top of the YAML tree (core/wx_yaml.h).
 *
 * Every config kind (model, training, recipe, synth, daily) declares a table of wx_cfg_field per
 * mapping. wx_cfg_validate() rejects unknown keys (naming key, line and the allowed keys), missing
 * required keys, wrong types and out-of-range values, always as one message naming the file, the
 * key path, the line and what was expected. Defaults live only in the tables; getters fall back
 * to them, and wx_cfg_print() writes the effective config (for --print-config). */
#ifndef WX_CONFIG_H
#define WX_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "core/wx_yaml.h"

typedef enum {
    WX_CFG_STR,
    WX_CFG_INT,
    WX_CFG_FLOAT,
    WX_CFG_BOOL,
    WX_CFG_LIST, /* a YAML sequence; items validated by the caller */
    WX_CFG_MAP,  /* a nested mapping; validated by the caller with its own table */
    WX_CFG_ANY,  /* scalar, list or mapping: the caller interprets it */
} wx_cfg_type;

typedef struct {
    const char *key;
    wx_cfg_type type;
    int required;     /* 1: must be present (then def is ignored) */
    double min, max;  /* inclusive range for INT/FLOAT; min > max means unbounded */
    const char *def;  /* default as YAML text ("1e-3", "true", "relative_l2"); NULL: none */
    const char *help; /* one line, printed by --print-config as a comment */
    const char *const *choices; /* STR only: NULL-terminated allowed values, or NULL for any */
} wx_cfg_field;

#define WX_CFG_END {NULL, 0, 0, 0, 0, NULL, NULL, NULL}
#define WX_CFG_NO_RANGE 1, 0

/* Validates `map` (a mapping node, or NULL = empty) against `fields` (terminated by WX_CFG_END).
 * `path` names the mapping in messages ("" for the root, "model" for a section). */
wx_status wx_cfg_validate(const wx_yaml *map, const char *path, const wx_cfg_field *fields);

/* Typed getters: the value in map, else the field's default. The key must be in `fields`
 * (programmer error otherwise). Call wx_cfg_validate first; these re-check types anyway. */
wx_status wx_cfg_int(const wx_yaml *map, const wx_cfg_field *fields, const char *key, int64_t *out);
wx_status wx_cfg_double(const wx_yaml *map, const wx_cfg_field *fields, const char *key,
                        double *out);
wx_status wx_cfg_bool(const wx_yaml *map, const wx_cfg_field *fields, const char *key, int *out);
/* The string stays owned by the tree or the table. */
wx_status wx_cfg_str(const wx_yaml *map, const wx_cfg_field *fields, const char *key,
                     const char **out);

/* Writes the effective mapping as YAML at `indent` spaces: every field with its value or default
 * and its help as a comment. */
void wx_cfg_print(FILE *out, const wx_yaml *map, const wx_cfg_field *fields, int indent);

#endif
