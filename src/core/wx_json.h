/* A tiny streaming JSON writer for --json outputs and metrics lines. Compact output (no
 * newlines; the caller ends the line), strings escaped per RFC 8259, numbers as %.9g (float
 * precision, what metrics need; use wx_json_int for exact integers), NaN and ±Inf as null since
 * JSON has no spelling for them. Commas are placed automatically from a small nesting stack. */
#ifndef WX_JSON_H
#define WX_JSON_H

#include <stdint.h>
#include <stdio.h>

#define WX_JSON_MAX_DEPTH 32

typedef struct {
    FILE *out;
    int depth;
    unsigned char count[WX_JSON_MAX_DEPTH]; /* items written at each level (saturating) */
    int after_key;                          /* a key was written; its value comes next */
} wx_json;

void wx_json_init(wx_json *j, FILE *out);
void wx_json_object_begin(wx_json *j);
void wx_json_object_end(wx_json *j);
void wx_json_array_begin(wx_json *j);
void wx_json_array_end(wx_json *j);
void wx_json_key(wx_json *j, const char *key);
void wx_json_string(wx_json *j, const char *s); /* NULL writes null */
void wx_json_number(wx_json *j, double v);
void wx_json_int(wx_json *j, int64_t v);
void wx_json_bool(wx_json *j, int v);
void wx_json_null(wx_json *j);

/* key + value in one call, inside an object. */
void wx_json_kv_string(wx_json *j, const char *key, const char *s);
/* %.17g: a double that must read back exactly (grid spacings such as 180/31: at %.9g the
 * last row of a pole-to-pole grid came back at -89.99999991) */
void wx_json_number_exact(wx_json *j, double v);
void wx_json_kv_number_exact(wx_json *j, const char *key, double v);
void wx_json_kv_number(wx_json *j, const char *key, double v);
void wx_json_kv_int(wx_json *j, const char *key, int64_t v);
void wx_json_kv_bool(wx_json *j, const char *key, int v);

/* Writes `s` as a quoted, escaped JSON string to `out` (no comma handling). */
void wx_json_write_escaped(FILE *out, const char *s);

#endif
