/* Viewer files: embedded assets, the manifest (JSON and JS) and grib2json wind layers. */
#include "io/viewer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "core/wx_json.h"

void wx_viewer_lead_tag(int64_t lead_s, char *buf, int len) {
    int64_t a = lead_s < 0 ? -lead_s : lead_s;
    const char *sign = lead_s < 0 ? "m" : "";
    if (a % 3600 == 0)
        snprintf(buf, (size_t)len, "f%s%03lld", sign, (long long)(a / 3600));
    else
        snprintf(buf, (size_t)len, "f%s%03lldh%02lldm", sign, (long long)(a / 3600),
                 (long long)(a % 3600 / 60));
}

/* Writes `n` bytes to `path` atomically. */
static wx_status write_bytes(const char *path, const void *data, size_t n) {
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, path));
    if (n && fwrite(data, 1, n, f.fp) != n) {
        wx_atomic_abort(&f);
        return wx_error_set(WX_ERR_RUN, "%s: write failed (disk full?)", path);
    }
    return wx_atomic_commit(&f);
}

wx_status wx_viewer_write_assets(const char *dir) {
    char path[4096];
    for (const wx_viewer_asset *a = wx_viewer_assets; a->name; a++) {
        snprintf(path, sizeof path, "%s/%s", dir, a->name);
        WX_TRY(write_bytes(path, a->data, a->size));
    }
    return WX_OK;
}

static void iso(wx_time t, char *buf) {
    wx_time_format(t, buf);
    strcat(buf, "Z");
}

static void kv_time(wx_json *j, const char *key, wx_time t) {
    char b[40];
    iso(t, b);
    wx_json_kv_string(j, key, b);
}

static void hex_colour(wx_rgb c, char *buf) {
    snprintf(buf, 8, "#%02x%02x%02x", c.r, c.g, c.b);
}

static void box(wx_json *j, const char *key, int x, int y, int w, int h) {
    wx_json_key(j, key);
    wx_json_array_begin(j);
    wx_json_int(j, x), wx_json_int(j, y), wx_json_int(j, w), wx_json_int(j, h);
    wx_json_array_end(j);
}

static void files(wx_json *j, const char *key, char **f, int n) {
    wx_json_key(j, key);
    wx_json_array_begin(j);
    for (int k = 0; k < n; k++) wx_json_string(j, f ? f[k] : NULL);
    wx_json_array_end(j);
}

static void var_json(wx_json *j, const wx_viewer_var *v, int nleads) {
    const wx_map_style *s = &v->style;
    wx_json_object_begin(j);
    wx_json_kv_string(j, "id", v->id);
    wx_json_kv_string(j, "param", v->param);
    wx_json_kv_string(j, "name", v->name);
    wx_json_kv_number(j, "level", v->level);
    wx_json_kv_string(j, "level_type", v->level > 0 ? "pressure" : "single");
    wx_json_kv_string(j, "units", s->units);
    wx_json_kv_string(j, "stored_units", v->stored_units);
    wx_json_kv_number(j, "scale", s->scale);
    wx_json_kv_number(j, "offset", s->offset);
    wx_json_kv_string(j, "colour_map", s->id);
    wx_json_kv_number(j, "vmin", s->vmin);
    wx_json_kv_number(j, "vmax", s->vmax);
    wx_json_kv_bool(j, "stepped", s->stepped);
    wx_json_kv_number(j, "contour_step", s->contour_step);
    wx_json_key(j, "stops");
    wx_json_array_begin(j);
    for (int k = 0; k < s->nstops; k++) {
        char c[8];
        hex_colour(s->stops[k].c, c);
        wx_json_array_begin(j);
        wx_json_number(j, s->stops[k].v);
        wx_json_string(j, c);
        wx_json_array_end(j);
    }
    wx_json_array_end(j);
    const wx_map_layout *l = &v->layout;
    wx_json_key(j, "image");
    wx_json_object_begin(j);
    wx_json_kv_int(j, "width", l->width);
    wx_json_kv_int(j, "height", l->height);
    box(j, "map", l->map_x, l->map_y, l->map_w, l->map_h);
    box(j, "bar", l->bar_x, l->bar_y, l->bar_w, l->bar_h);
    wx_json_object_end(j);
    files(j, "files", v->files, nleads);
    wx_json_object_end(j);
}

static void manifest_json(FILE *out, const wx_viewer_manifest *m) {
    wx_json j;
    wx_json_init(&j, out);
    wx_json_object_begin(&j);
    wx_json_kv_string(&j, "format", "wxcast-viewer-1");
    wx_json_kv_string(&j, "title", m->title ? m->title : "wxcast forecast");
    wx_json_kv_string(&j, "source", m->source ? m->source : "");
    if (m->has_init) kv_time(&j, "init", m->init), wx_json_kv_int(&j, "init_unix", m->init);
    else wx_json_key(&j, "init"), wx_json_null(&j);
    wx_json_key(&j, "projection");
    wx_json_object_begin(&j);
    wx_json_kv_string(&j, "type", "equirectangular");
    wx_json_kv_number(&j, "west", m->west);
    wx_json_kv_number(&j, "east", m->west + 360);
    wx_json_kv_number(&j, "north", 90);
    wx_json_kv_number(&j, "south", -90);
    wx_json_object_end(&j);
    wx_json_key(&j, "leads");
    wx_json_array_begin(&j);
    for (int k = 0; k < m->nleads; k++) {
        char tag[32];
        wx_viewer_lead_tag(m->lead_s[k], tag, sizeof tag);
        wx_json_object_begin(&j);
        wx_json_kv_int(&j, "lead_s", m->lead_s[k]);
        wx_json_kv_number(&j, "lead_h", m->lead_s[k] / 3600.0);
        wx_json_kv_string(&j, "tag", tag);
        kv_time(&j, "valid", m->valid[k]);
        wx_json_kv_int(&j, "valid_unix", m->valid[k]);
        wx_json_object_end(&j);
    }
    wx_json_array_end(&j);
    wx_json_key(&j, "variables");
    wx_json_array_begin(&j);
    for (int k = 0; k < m->nvars; k++) var_json(&j, &m->vars[k], m->nleads);
    wx_json_array_end(&j);
    wx_json_key(&j, "wind");
    wx_json_array_begin(&j);
    for (int k = 0; k < m->nwinds; k++) {
        const wx_viewer_wind *w = &m->winds[k];
        wx_json_object_begin(&j);
        wx_json_kv_string(&j, "id", w->id);
        wx_json_kv_string(&j, "label", w->label);
        wx_json_kv_number(&j, "level", w->level);
        wx_json_kv_number(&j, "height_m", w->height_m);
        files(&j, "files", w->files, m->nleads);
        wx_json_object_end(&j);
    }
    wx_json_array_end(&j);
    wx_json_object_end(&j);
}

/* Renders `text` to a memory buffer with fn, then writes it atomically with prefix/suffix. */
static wx_status write_wrapped(const char *path, const char *prefix, const char *body,
                               size_t n, const char *suffix) {
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, path));
    size_t a = strlen(prefix), c = strlen(suffix);
    if (fwrite(prefix, 1, a, f.fp) != a || fwrite(body, 1, n, f.fp) != n ||
        fwrite(suffix, 1, c, f.fp) != c) {
        wx_atomic_abort(&f);
        return wx_error_set(WX_ERR_RUN, "%s: write failed (disk full?)", path);
    }
    return wx_atomic_commit(&f);
}

wx_status wx_viewer_write_manifest(const char *dir, const wx_viewer_manifest *m) {
    char *buf = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&buf, &n);
    if (!mem) return wx_error_set(WX_ERR_RUN, "%s/manifest.json: open_memstream failed", dir);
    manifest_json(mem, m);
    fputc('\n', mem);
    fclose(mem);
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    wx_status st = write_wrapped(path, "", buf, n, "");
    snprintf(path, sizeof path, "%s/manifest.js", dir);
    if (st == WX_OK)
        st = write_wrapped(path, "/* written by wxcast export: the viewer's manifest */\n"
                                 "window.WXCAST_MANIFEST = ", buf, n - 1, ";\n");
    free(buf);
    return st;
}

/* Smallest divisor k of n with n / k <= max (k = n when none is smaller). */
static int stride_for(int n, int max) {
    if (max <= 0 || n <= max) return 1;
    for (int k = 2; k < n; k++)
        if (n % k == 0 && n / k <= max) return k;
    return n;
}

static void wind_record(FILE *o, const wx_grid *g, const float *f, int number, int k, int nx,
                        int ny, const wx_viewer_wind_header *h) {
    char ref[40];
    wx_time_format(h->ref_time, ref);
    int isobaric = h->surface_type == 100;
    fprintf(o,
            "{\"header\":{\"discipline\":0,\"disciplineName\":\"Meteorological products\","
            "\"refTime\":\"%s:00.000Z\",\"forecastTime\":%lld,\"parameterCategory\":2,"
            "\"parameterCategoryName\":\"Momentum\",\"parameterNumber\":%d,"
            "\"parameterNumberName\":\"%s\",\"parameterUnit\":\"m.s-1\","
            "\"surface1Type\":%d,\"surface1TypeName\":\"%s\",\"surface1Value\":%.10g,"
            "\"gridDefinitionTemplate\":0,\"numberPoints\":%lld,\"shape\":6,\"scanMode\":0,"
            "\"nx\":%d,\"ny\":%d,\"lo1\":%.10g,\"la1\":%.10g,\"lo2\":%.10g,\"la2\":%.10g,"
            "\"dx\":%.10g,\"dy\":%.10g},\"data\":[",
            strlen(ref) == 16 ? ref : "1970-01-01T00:00", (long long)(h->lead_s / 3600), number,
            number == 2 ? "U-component_of_wind" : "V-component_of_wind", h->surface_type,
            isobaric ? "Isobaric surface" : "Specified height level above ground",
            h->surface_value, (long long)nx * ny, nx, ny, g->lon0, g->lat0,
            g->lon0 + (nx - 1) * k * g->dlon, g->lat0 - (ny - 1) * k * g->dlat, k * g->dlon,
            k * g->dlat);
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) {
            float v = f[(size_t)y * k * g->nlon + (size_t)x * k];
            if (y || x) fputc(',', o);
            if (isfinite(v)) {
                /* 0.01 m/s is far below what particles show; short numbers keep files small. */
                double r = round(v * 100.0) / 100.0;
                fprintf(o, "%.10g", r == 0 ? 0.0 : r);
            } else {
                fputs("null", o);
            }
        }
    fputs("]}", o);
}

wx_status wx_viewer_write_wind(const char *json_path, const char *js_path, const char *key,
                               const wx_grid *g, const float *u, const float *v,
                               const wx_viewer_wind_header *h) {
    int k = stride_for(g->nlon, h->max_nlon);
    int nx = (g->nlon + k - 1) / k, ny = (g->nlat - 1) / k + 1;
    char *buf = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&buf, &n);
    if (!mem) return wx_error_set(WX_ERR_RUN, "%s: open_memstream failed", json_path);
    fputc('[', mem);
    wind_record(mem, g, u, 2, k, nx, ny, h);
    fputc(',', mem);
    wind_record(mem, g, v, 3, k, nx, ny, h);
    fputc(']', mem);
    fclose(mem);
    wx_status st = write_wrapped(json_path, "", buf, n, "\n");
    if (st == WX_OK) {
        char pre[256];
        snprintf(pre, sizeof pre,
                 "(window.WXCAST_WIND = window.WXCAST_WIND || {})[\"%s\"] = ", key);
        st = write_wrapped(js_path, pre, buf, n, ";\n");
    }
    free(buf);
    return st;
}
