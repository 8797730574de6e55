#include "core/wx_json.h"

#include <inttypes.h>
#include <math.h>

#include "core/wx_error.h"

void wx_json_init(wx_json *j, FILE *out) {
    j->out = out;
    j->depth = 0;
    j->count[0] = 0;
    j->after_key = 0;
}

/* Separator before a value or key at the current level. */
static void before_item(wx_json *j) {
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->count[j->depth]) fputc(',', j->out);
    if (j->count[j->depth] < 255) j->count[j->depth]++;
}

static void begin_container(wx_json *j, char c) {
    before_item(j);
    fputc(c, j->out);
    WX_ASSERT(j->depth + 1 < WX_JSON_MAX_DEPTH);
    j->count[++j->depth] = 0;
}

static void end_container(wx_json *j, char c) {
    WX_ASSERT(j->depth > 0 && !j->after_key);
    j->depth--;
    fputc(c, j->out);
}

void wx_json_object_begin(wx_json *j) { begin_container(j, '{'); }
void wx_json_object_end(wx_json *j) { end_container(j, '}'); }
void wx_json_array_begin(wx_json *j) { begin_container(j, '['); }
void wx_json_array_end(wx_json *j) { end_container(j, ']'); }

void wx_json_write_escaped(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\b': fputs("\\b", out); break;
        case '\f': fputs("\\f", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out); /* UTF-8 bytes pass through */
        }
    }
    fputc('"', out);
}

void wx_json_key(wx_json *j, const char *key) {
    WX_ASSERT(!j->after_key);
    before_item(j);
    wx_json_write_escaped(j->out, key);
    fputc(':', j->out);
    j->after_key = 1;
}

void wx_json_string(wx_json *j, const char *s) {
    if (!s) { wx_json_null(j); return; }
    before_item(j);
    wx_json_write_escaped(j->out, s);
}

void wx_json_number(wx_json *j, double v) {
    if (!isfinite(v)) { wx_json_null(j); return; }
    before_item(j);
    fprintf(j->out, "%.9g", v);
}

void wx_json_number_exact(wx_json *j, double v) {
    if (!isfinite(v)) { wx_json_null(j); return; }
    before_item(j);
    fprintf(j->out, "%.17g", v);
}

void wx_json_int(wx_json *j, int64_t v) {
    before_item(j);
    fprintf(j->out, "%" PRId64, v);
}

void wx_json_bool(wx_json *j, int v) {
    before_item(j);
    fputs(v ? "true" : "false", j->out);
}

void wx_json_null(wx_json *j) {
    before_item(j);
    fputs("null", j->out);
}

void wx_json_kv_string(wx_json *j, const char *key, const char *s) { wx_json_key(j, key); wx_json_string(j, s); }
void wx_json_kv_number(wx_json *j, const char *key, double v) { wx_json_key(j, key); wx_json_number(j, v); }
void wx_json_kv_number_exact(wx_json *j, const char *key, double v) {
    wx_json_key(j, key);
    wx_json_number_exact(j, v);
}
void wx_json_kv_int(wx_json *j, const char *key, int64_t v) { wx_json_key(j, key); wx_json_int(j, v); }
void wx_json_kv_bool(wx_json *j, const char *key, int v) { wx_json_key(j, key); wx_json_bool(j, v); }
