/* YAML documents (libyaml) as a small tree with line numbers, and typed getters whose errors name
 * the file, key, line and what was expected. Config schemas (core/wx_config.h) sit on top. */
#ifndef WX_YAML_H
#define WX_YAML_H

#include <stdint.h>

#include "core/wx_error.h"

typedef enum { WX_YAML_SCALAR, WX_YAML_SEQ, WX_YAML_MAP } wx_yaml_kind;

typedef struct wx_yaml {
    wx_yaml_kind kind;
    int line;              /* 1-based line in the source */
    const char *file;      /* source path (shared, owned by the root) */
    char *scalar;          /* WX_YAML_SCALAR: the text */
    int quoted;            /* scalar was quoted: never a number/bool/null */
    int count;             /* SEQ: items; MAP: pairs */
    struct wx_yaml **items;/* SEQ: items; MAP: values */
    char **keys;           /* MAP: keys */
    int *key_lines;        /* MAP: line of each key */
} wx_yaml;

/* Parses a whole file (first document). Syntax errors name the file, line and libyaml's reason;
 * a binary file (a checkpoint, an .npz, NetCDF/HDF5, GRIB) is a usage error saying what it is
 * rather than the parser's complaint about its bytes. */
wx_status wx_yaml_load_file(const char *path, wx_yaml **out);
/* What a binary file is, from its first bytes ("a wxcast checkpoint (...)"); NULL when it may be
 * text (or cannot be read: the loader reports that). */
const char *wx_yaml_binary_kind(const char *path);
wx_status wx_yaml_load_string(const char *text, const char *name, wx_yaml **out);
void wx_yaml_free(wx_yaml *root);

/* Map lookup; NULL when absent (or when node is not a map). */
const wx_yaml *wx_yaml_get(const wx_yaml *map, const char *key);
/* Line of `key` in map, or the map's own line when absent. */
int wx_yaml_key_line(const wx_yaml *map, const char *key);

/* Typed conversion of a node; `key` names it in errors ("model.embed_dim"). */
wx_status wx_yaml_as_string(const wx_yaml *node, const char *key, const char **out);
wx_status wx_yaml_as_int(const wx_yaml *node, const char *key, int64_t *out);
wx_status wx_yaml_as_double(const wx_yaml *node, const char *key, double *out);
wx_status wx_yaml_as_bool(const wx_yaml *node, const char *key, int *out);

#endif
