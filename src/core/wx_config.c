#include "core/wx_config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Key paths in messages: "model.embed_dim" for a section, "embed_dim" at the root. */
static void key_path(char *buf, size_t len, const char *path, const char *key) {
    if (path && path[0])
        snprintf(buf, len, "%s.%s", path, key);
    else
        snprintf(buf, len, "%s", key);
}

static const wx_cfg_field *field_find(const wx_cfg_field *fields, const char *key) {
    for (const wx_cfg_field *f = fields; f->key; f++)
        if (!strcmp(f->key, key)) return f;
    return NULL;
}

/* Optimal-string-alignment distance (a transposition counts as one edit): enough to catch the
 * usual typos ("embd_dim", "deapth", "mlp_raito"). Keys are short; longer ones are not compared. */
static int edit_distance(const char *a, const char *b) {
    enum { N = 64 };
    size_t na = strlen(a), nb = strlen(b);
    if (na >= N || nb >= N) return 1000;
    int d[N][N];
    for (size_t i = 0; i <= na; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[na][nb];
}

static wx_status unknown_key(const wx_yaml *map, int i, const char *path,
                             const wx_cfg_field *fields) {
    char full[256], allowed[1024] = "";
    key_path(full, sizeof full, path, map->keys[i]);
    size_t used = 0;
    const char *best = NULL;
    int best_d = 3; /* suggest only within distance 2 */
    for (const wx_cfg_field *f = fields; f->key; f++) {
        int n = snprintf(allowed + used, sizeof allowed - used, "%s%s", used ? ", " : "", f->key);
        if (n > 0 && used + (size_t)n < sizeof allowed) used += (size_t)n;
        int dist = edit_distance(map->keys[i], f->key);
        if (dist < best_d) { best_d = dist; best = f->key; }
    }
    if (!fields->key) snprintf(allowed, sizeof allowed, "none");
    if (best)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: unknown key '%s', did you mean '%s'? "
                            "(allowed: %s)", map->file, map->key_lines[i], full, best, allowed);
    return wx_error_set(WX_ERR_USAGE, "%s: line %d: unknown key '%s' (allowed: %s)", map->file,
                        map->key_lines[i], full, allowed);
}

static const char *node_desc(const wx_yaml *n, char *buf, size_t len) {
    if (n->kind == WX_YAML_MAP) return "a mapping";
    if (n->kind == WX_YAML_SEQ) return "a list";
    snprintf(buf, len, "'%s'", n->scalar);
    return buf;
}

static int has_range(const wx_cfg_field *f) { return !(f->min > f->max); }

static wx_status range_error(const wx_yaml *n, const char *full, const wx_cfg_field *f) {
    return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': value %s is out of range [%.17g, %.17g]",
                        n->file, n->line, full, n->scalar, f->min, f->max);
}

static wx_status check_value(const wx_yaml *n, const char *full, const wx_cfg_field *f) {
    char got[128];
    switch (f->type) {
    case WX_CFG_STR: {
        const char *s;
        WX_TRY(wx_yaml_as_string(n, full, &s));
        if (f->choices) {
            for (const char *const *c = f->choices; *c; c++)
                if (!strcmp(*c, s)) return WX_OK;
            char list[512] = "";
            size_t used = 0;
            for (const char *const *c = f->choices; *c; c++) {
                int k = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", *c);
                if (k > 0 && used + (size_t)k < sizeof list) used += (size_t)k;
            }
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': expected one of %s, got '%s'",
                                n->file, n->line, full, list, s);
        }
        return WX_OK;
    }
    case WX_CFG_INT: {
        int64_t v;
        WX_TRY(wx_yaml_as_int(n, full, &v));
        if (has_range(f) && ((double)v < f->min || (double)v > f->max))
            return range_error(n, full, f);
        return WX_OK;
    }
    case WX_CFG_FLOAT: {
        double v;
        WX_TRY(wx_yaml_as_double(n, full, &v));
        if (has_range(f) && (v < f->min || v > f->max)) return range_error(n, full, f);
        return WX_OK;
    }
    case WX_CFG_BOOL: {
        int v;
        return wx_yaml_as_bool(n, full, &v);
    }
    case WX_CFG_LIST:
        if (n->kind != WX_YAML_SEQ)
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': expected a list, got %s",
                                n->file, n->line, full, node_desc(n, got, sizeof got));
        return WX_OK;
    case WX_CFG_MAP:
        if (n->kind != WX_YAML_MAP)
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': expected a mapping, got %s",
                                n->file, n->line, full, node_desc(n, got, sizeof got));
        return WX_OK;
    case WX_CFG_ANY:
        return WX_OK;
    }
    return WX_OK;
}

wx_status wx_cfg_validate(const wx_yaml *map, const char *path, const wx_cfg_field *fields) {
    char full[256], got[128];
    if (map && map->kind != WX_YAML_MAP) {
        /* An empty section ("model:") parses as an empty scalar: treat it as an empty mapping. */
        if (!(map->kind == WX_YAML_SCALAR && !map->quoted && map->scalar[0] == 0)) {
            if (path && path[0])
                return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': expected a mapping, got %s",
                                    map->file, map->line, path, node_desc(map, got, sizeof got));
            return wx_error_set(WX_ERR_USAGE, "%s: line %d: expected a mapping at the top level, got %s",
                                map->file, map->line, node_desc(map, got, sizeof got));
        }
    }
    int is_map = map && map->kind == WX_YAML_MAP;
    if (is_map)
        for (int i = 0; i < map->count; i++)
            if (!field_find(fields, map->keys[i])) return unknown_key(map, i, path, fields);
    for (const wx_cfg_field *f = fields; f->key; f++) {
        key_path(full, sizeof full, path, f->key);
        const wx_yaml *n = is_map ? wx_yaml_get(map, f->key) : NULL;
        if (n) {
            WX_TRY(check_value(n, full, f));
        } else if (f->required) {
            if (map)
                return wx_error_set(WX_ERR_USAGE, "%s: line %d: missing required key '%s'%s%s%s",
                                    map->file, map->line, full, path && path[0] ? " in '" : "",
                                    path && path[0] ? path : "", path && path[0] ? "'" : "");
            return wx_error_set(WX_ERR_USAGE, "missing required key '%s'", full);
        }
    }
    return WX_OK;
}

/* Getters ------------------------------------------------------------------------------------- */

/* The node for `key`, or NULL when the default applies. */
static const wx_cfg_field *getter_field(const wx_cfg_field *fields, const char *key) {
    const wx_cfg_field *f = field_find(fields, key);
    WX_ASSERT(f != NULL); /* the key must be in the schema */
    return f;
}

static const wx_yaml *getter_node(const wx_yaml *map, const char *key) {
    return map && map->kind == WX_YAML_MAP ? wx_yaml_get(map, key) : NULL;
}

static wx_status no_value(const wx_yaml *map, const char *key) {
    if (map && map->file)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s' is not set and has no default",
                            map->file, map->line, key);
    return wx_error_set(WX_ERR_USAGE, "key '%s' is not set and has no default", key);
}

wx_status wx_cfg_int(const wx_yaml *map, const wx_cfg_field *fields, const char *key, int64_t *out) {
    const wx_cfg_field *f = getter_field(fields, key);
    const wx_yaml *n = getter_node(map, key);
    if (n) return wx_yaml_as_int(n, key, out);
    if (!f->def) return no_value(map, key);
    char *end;
    errno = 0;
    long long v = strtoll(f->def, &end, 10);
    WX_ASSERT(!errno && end != f->def && !*end); /* schema defaults are programmer-written */
    *out = v;
    return WX_OK;
}

wx_status wx_cfg_double(const wx_yaml *map, const wx_cfg_field *fields, const char *key,
                        double *out) {
    const wx_cfg_field *f = getter_field(fields, key);
    const wx_yaml *n = getter_node(map, key);
    if (n) return wx_yaml_as_double(n, key, out);
    if (!f->def) return no_value(map, key);
    char *end;
    double v = strtod(f->def, &end);
    WX_ASSERT(end != f->def && !*end);
    *out = v;
    return WX_OK;
}

wx_status wx_cfg_bool(const wx_yaml *map, const wx_cfg_field *fields, const char *key, int *out) {
    const wx_cfg_field *f = getter_field(fields, key);
    const wx_yaml *n = getter_node(map, key);
    if (n) return wx_yaml_as_bool(n, key, out);
    if (!f->def) return no_value(map, key);
    const char *s = f->def;
    if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
        *out = 1;
    else if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
        *out = 0;
    else
        WX_ASSERT(!"bool default must be true or false");
    return WX_OK;
}

wx_status wx_cfg_str(const wx_yaml *map, const wx_cfg_field *fields, const char *key,
                     const char **out) {
    const wx_cfg_field *f = getter_field(fields, key);
    const wx_yaml *n = getter_node(map, key);
    if (n) return wx_yaml_as_string(n, key, out);
    if (!f->def) return no_value(map, key);
    *out = f->def;
    return WX_OK;
}

/* Printing ------------------------------------------------------------------------------------ */

/* Plain scalars are printed as-is when they re-read as the same text; anything else is
 * double-quoted. A scalar that was quoted stays quoted so it keeps its string type. */
static int plain_ok(const char *s) {
    if (!s[0]) return 0;
    if (strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]) && !(s[0] == '-' && s[1] && s[1] != ' ')) return 0;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f) return 0;
        if (c == '#' && p > s && p[-1] == ' ') return 0;
        if (c == ':' && (p[1] == ' ' || p[1] == 0)) return 0;
        if (strchr(",[]{}", c)) return 0; /* would break flow lists */
    }
    size_t n = strlen(s);
    return s[n - 1] != ' ';
}

static void print_scalar(FILE *out, const wx_yaml *n) {
    if (!n->quoted && plain_ok(n->scalar)) {
        fputs(n->scalar, out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)n->scalar; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", out);
        else if (*p == '\t') fputs("\\t", out);
        else if (*p < 0x20) fprintf(out, "\\x%02x", *p);
        else fputc(*p, out);
    }
    fputc('"', out);
}

static int all_scalars(const wx_yaml *n) {
    for (int i = 0; i < n->count; i++)
        if (n->items[i]->kind != WX_YAML_SCALAR) return 0;
    return 1;
}

static void print_node(FILE *out, const wx_yaml *n, int indent);

/* The value after "key:" (or "-"): inline when it is a scalar, a flat list or empty, else on
 * the following lines, indented. */
static void print_value(FILE *out, const wx_yaml *n, int indent) {
    if (n->kind == WX_YAML_SCALAR) {
        fputc(' ', out);
        print_scalar(out, n);
    } else if (n->kind == WX_YAML_SEQ && all_scalars(n)) {
        fputs(" [", out);
        for (int i = 0; i < n->count; i++) {
            if (i) fputs(", ", out);
            print_scalar(out, n->items[i]);
        }
        fputc(']', out);
    } else if (n->count == 0) {
        fputs(n->kind == WX_YAML_MAP ? " {}" : " []", out);
    } else {
        fputc('\n', out);
        print_node(out, n, indent + 2);
        return;
    }
    fputc('\n', out);
}

static void print_node(FILE *out, const wx_yaml *n, int indent) {
    for (int i = 0; i < n->count; i++) {
        fprintf(out, "%*s", indent, "");
        if (n->kind == WX_YAML_MAP) {
            wx_yaml key = {.kind = WX_YAML_SCALAR, .scalar = n->keys[i]};
            print_scalar(out, &key);
            fputc(':', out);
        } else {
            fputc('-', out);
        }
        print_value(out, n->items[i], indent);
    }
}

void wx_cfg_print(FILE *out, const wx_yaml *map, const wx_cfg_field *fields, int indent) {
    for (const wx_cfg_field *f = fields; f->key; f++) {
        const wx_yaml *n = getter_node(map, f->key);
        if (f->help) fprintf(out, "%*s# %s\n", indent, "", f->help);
        if (n) {
            fprintf(out, "%*s%s:", indent, "", f->key);
            print_value(out, n, indent);
        } else if (f->def) {
            /* Defaults are YAML text already ("1e-3", "[720, 1440]", "relative_l2"). */
            fprintf(out, "%*s%s: %s\n", indent, "", f->key, f->def);
        } else {
            fprintf(out, "%*s# %s: (not set)\n", indent, "", f->key);
        }
    }
}
