#include "core/wx_yaml.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "core/wx_fs.h"

static wx_yaml *node_new(wx_yaml_kind kind, int line, const char *file) {
    wx_yaml *n = wx_calloc(1, sizeof *n);
    n->kind = kind;
    n->line = line;
    n->file = file;
    return n;
}

static void node_push(wx_yaml *parent, char *key, int key_line, wx_yaml *child) {
    parent->items = realloc(parent->items, sizeof *parent->items * (parent->count + 1));
    WX_ASSERT(parent->items);
    parent->items[parent->count] = child;
    if (parent->kind == WX_YAML_MAP) {
        parent->keys = realloc(parent->keys, sizeof *parent->keys * (parent->count + 1));
        parent->key_lines = realloc(parent->key_lines, sizeof(int) * (parent->count + 1));
        WX_ASSERT(parent->keys && parent->key_lines);
        parent->keys[parent->count] = key;
        parent->key_lines[parent->count] = key_line;
    }
    parent->count++;
}

static void node_free(wx_yaml *n) {
    if (!n) return;
    for (int i = 0; i < n->count; i++) {
        node_free(n->items[i]);
        if (n->keys) free(n->keys[i]);
    }
    free(n->items);
    free(n->keys);
    free(n->key_lines);
    free(n->scalar);
    free(n);
}

/* Recursive-descent over libyaml events. `ev` holds the event that starts this node. */
static wx_status parse_node(yaml_parser_t *p, yaml_event_t *ev, const char *file, int depth, wx_yaml **out);

static wx_status next_event(yaml_parser_t *p, yaml_event_t *ev, const char *file) {
    if (!yaml_parser_parse(p, ev))
        return wx_error_set(WX_ERR_USAGE, "%s: line %zu: YAML syntax error: %s", file,
                            p->problem_mark.line + 1, p->problem ? p->problem : "unknown");
    return WX_OK;
}

/* No config nests deeper than a few levels; 50 000 `[` recursed until the stack overflowed. */
#define YAML_MAX_DEPTH 64

static wx_status parse_node(yaml_parser_t *p, yaml_event_t *ev, const char *file, int depth, wx_yaml **out) {
    int line = (int)ev->start_mark.line + 1;
    if (depth > YAML_MAX_DEPTH)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: nested more than %d levels deep", file, line,
                            YAML_MAX_DEPTH);
    if (ev->type == YAML_SCALAR_EVENT) {
        wx_yaml *n = node_new(WX_YAML_SCALAR, line, file);
        n->scalar = wx_strdup((const char *)ev->data.scalar.value);
        n->quoted = ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                    ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        *out = n;
        return WX_OK;
    }
    if (ev->type == YAML_ALIAS_EVENT)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: YAML aliases are not supported", file, line);
    int is_map = ev->type == YAML_MAPPING_START_EVENT;
    if (!is_map && ev->type != YAML_SEQUENCE_START_EVENT)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: unexpected YAML event", file, line);
    wx_yaml *n = node_new(is_map ? WX_YAML_MAP : WX_YAML_SEQ, line, file);
    for (;;) {
        yaml_event_t e;
        wx_status s = next_event(p, &e, file);
        if (s) { node_free(n); return s; }
        if (e.type == YAML_MAPPING_END_EVENT || e.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&e);
            break;
        }
        char *key = NULL;
        int key_line = (int)e.start_mark.line + 1;
        if (is_map) {
            if (e.type != YAML_SCALAR_EVENT) {
                yaml_event_delete(&e);
                node_free(n);
                return wx_error_set(WX_ERR_USAGE, "%s: line %d: mapping keys must be plain scalars",
                                    file, key_line);
            }
            key = wx_strdup((const char *)e.data.scalar.value);
            yaml_event_delete(&e);
            for (int i = 0; i < n->count; i++)
                if (!strcmp(n->keys[i], key)) {
                    wx_status d = wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s' appears twice "
                                               "(first on line %d)", file, key_line, key,
                                               n->key_lines[i]);
                    free(key);
                    node_free(n);
                    return d;
                }
            s = next_event(p, &e, file);
            if (s) { free(key); node_free(n); return s; }
        }
        wx_yaml *child = NULL;
        s = parse_node(p, &e, file, depth + 1, &child);
        yaml_event_delete(&e);
        if (s) { free(key); node_free(n); return s; }
        node_push(n, key, key_line, child);
    }
    *out = n;
    return WX_OK;
}

static wx_status load(yaml_parser_t *p, const char *name, wx_yaml **out) {
    /* The root node owns a copy of the file name; every node points to it. */
    char *file = wx_strdup(name);
    yaml_event_t ev;
    wx_yaml *root = NULL;
    wx_status s = WX_OK;
    for (;;) {
        if ((s = next_event(p, &ev, file))) break;
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) { yaml_event_delete(&ev); break; }
        if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT ||
            t == YAML_SCALAR_EVENT) {
            s = parse_node(p, &ev, file, 0, &root);
            yaml_event_delete(&ev);
            break; /* first document only */
        }
        yaml_event_delete(&ev);
    }
    if (s) { free(file); return s; }
    if (!root) root = node_new(WX_YAML_MAP, 1, file); /* empty file = empty map */
    root->file = file;
    /* Re-point all nodes at the owned name (they already are); remember ownership via root. */
    *out = root;
    return WX_OK;
}

const char *wx_yaml_binary_kind(const char *path) {
    const char *kind = wx_fs_known_kind(path);
    if (kind) return kind;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char b[4096];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (memchr(b, 0, n)) return "a binary file (weights or data?)";
    return NULL;
}

wx_status wx_yaml_load_file(const char *path, wx_yaml **out) {
    struct stat sb; /* libyaml would say "line 1: YAML syntax error: input error" */
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return wx_error_set(WX_ERR_USAGE, "%s: is a folder, expected a YAML config", path);
    const char *bin = wx_yaml_binary_kind(path);
    if (bin) return wx_error_set(WX_ERR_USAGE, "%s: %s, expected a YAML config", path, bin);
    FILE *fp = fopen(path, "rb");
    if (!fp) return wx_error_set(WX_ERR_USAGE, "%s: cannot open config: %s", path, strerror(errno));
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, fp);
    wx_status s = load(&p, path, out);
    yaml_parser_delete(&p);
    fclose(fp);
    return s;
}

wx_status wx_yaml_load_string(const char *text, const char *name, wx_yaml **out) {
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
    wx_status s = load(&p, name, out);
    yaml_parser_delete(&p);
    return s;
}

void wx_yaml_free(wx_yaml *root) {
    if (!root) return;
    char *file = (char *)root->file;
    node_free(root);
    free(file);
}

const wx_yaml *wx_yaml_get(const wx_yaml *map, const char *key) {
    if (!map || map->kind != WX_YAML_MAP) return NULL;
    for (int i = 0; i < map->count; i++)
        if (!strcmp(map->keys[i], key)) return map->items[i];
    return NULL;
}

int wx_yaml_key_line(const wx_yaml *map, const char *key) {
    if (map && map->kind == WX_YAML_MAP)
        for (int i = 0; i < map->count; i++)
            if (!strcmp(map->keys[i], key)) return map->key_lines[i];
    return map ? map->line : 0;
}

static const char *kind_name(const wx_yaml *n) {
    return n->kind == WX_YAML_MAP ? "a mapping" : n->kind == WX_YAML_SEQ ? "a list" : "a scalar";
}

static wx_status type_error(const wx_yaml *n, const char *key, const char *expected) {
    return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': expected %s, got %s%s%s%s",
                        n->file, n->line, key, expected,
                        n->kind == WX_YAML_SCALAR ? "'" : "",
                        n->kind == WX_YAML_SCALAR ? n->scalar : kind_name(n),
                        n->kind == WX_YAML_SCALAR ? "'" : "", "");
}

wx_status wx_yaml_as_string(const wx_yaml *n, const char *key, const char **out) {
    if (n->kind != WX_YAML_SCALAR) return type_error(n, key, "a string");
    *out = n->scalar;
    return WX_OK;
}

wx_status wx_yaml_as_int(const wx_yaml *n, const char *key, int64_t *out) {
    if (n->kind != WX_YAML_SCALAR || n->quoted) return type_error(n, key, "an integer");
    char *end;
    errno = 0;
    long long v = strtoll(n->scalar, &end, 10);
    if (errno || end == n->scalar || *end) return type_error(n, key, "an integer");
    *out = v;
    return WX_OK;
}

wx_status wx_yaml_as_double(const wx_yaml *n, const char *key, double *out) {
    if (n->kind != WX_YAML_SCALAR || n->quoted) return type_error(n, key, "a number");
    char *end;
    errno = 0;
    double v = strtod(n->scalar, &end);
    if (errno || end == n->scalar || *end || !isfinite(v)) return type_error(n, key, "a number");
    *out = v;
    return WX_OK;
}

wx_status wx_yaml_as_bool(const wx_yaml *n, const char *key, int *out) {
    if (n->kind == WX_YAML_SCALAR && !n->quoted) {
        const char *s = n->scalar;
        if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on")) { *out = 1; return WX_OK; }
        if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off")) { *out = 0; return WX_OK; }
    }
    return type_error(n, key, "true or false");
}
