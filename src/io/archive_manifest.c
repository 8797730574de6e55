/* manifest.json: written with core/wx_json, read back with the YAML parser (JSON is YAML). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/wx_fs.h"
#include "core/wx_json.h"
#include "core/wx_yaml.h"
#include "io/archive.h"
#include "io/climatology.h"

static void stats_array(wx_json *j, const char *key, const double *v, int n) {
    wx_json_key(j, key);
    wx_json_array_begin(j);
    for (int c = 0; c < n; c++) wx_json_number(j, v[c]);
    wx_json_array_end(j);
}

/* Accumulation period as readers see it: archives from before the sources' period was recorded
 * hold 0 for an accumulation, read as a sum over the archive step. */
static int64_t accum_read_as(const wx_archive_meta *m, const wx_archive_channel *ch) {
    const wx_catalogue_entry *e = wx_catalogue_find_kind(ch->param, ch->kind);
    return e && e->accumulated && ch->accum_s == 0 ? m->step : ch->accum_s;
}

uint32_t wx_archive_meta_crc(const wx_archive_meta *m) {
    /* A canonical text of the parsed values; grid numbers at 9 digits, as the reader snaps older
     * manifests' 9-digit grids to exact spacings. */
    char line[512];
    uint32_t crc = 0;
    int n = snprintf(line, sizeof line, "%016" PRIx64 " %d %d %d %.9g %.9g %.9g %.9g %" PRId64
                     " %" PRId64 " %" PRId64 " %" PRId64 " %d %" PRId64 " %" PRId64 " %s %08x\n",
                     m->key, (int)m->dtype, m->grid.nlat, m->grid.nlon, m->grid.lat0, m->grid.dlat,
                     m->grid.lon0, m->grid.dlon, (int64_t)m->start, m->step, m->count,
                     m->records_per_shard, m->has_stats, m->has_stats ? (int64_t)m->stats_start : 0,
                     m->has_stats ? (int64_t)m->stats_end : 0, m->climatology, m->clim_crc);
    crc = wx_archive_crc32(crc, line, (size_t)n);
    for (int c = 0; c < m->nchan; c++) {
        const wx_archive_channel *ch = &m->chan[c];
        n = snprintf(line, sizeof line, "%s|%s|%d|%.9g|%s|%" PRId64 "\n", ch->name, ch->param,
                     (int)ch->kind, ch->level, ch->units, accum_read_as(m, ch));
        crc = wx_archive_crc32(crc, line, (size_t)n);
    }
    return crc;
}

/* The header checksum of the climatology file `name` beside the manifest (0 if unreadable: the
 * climatology reader reports that file itself). */
static uint32_t clim_header_crc(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unsigned char b[WX_CLIM_HEADER_BYTES];
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    if (got != sizeof b) return 0;
    wx_clim_header h;
    wx_clim_header_unpack(b, &h);
    return h.header_crc;
}

wx_status wx_archive_write_manifest(const char *dir, const wx_archive_meta *m_in) {
    wx_archive_meta mc = *m_in, *m = &mc;
    mc.clim_crc = m->has_stats && m->climatology[0] ? clim_header_crc(dir, m->climatology) : 0;
    char path[4096], buf[64];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    wx_atomic_file f;
    WX_TRY(wx_atomic_open(&f, path));
    wx_json j;
    wx_json_init(&j, f.fp);
    wx_json_object_begin(&j);
    wx_json_kv_string(&j, "format", "wxcast-archive");
    wx_json_kv_int(&j, "version", WX_ARCHIVE_VERSION);
    snprintf(buf, sizeof buf, "%016" PRIx64, m->key);
    wx_json_kv_string(&j, "key", buf);
    wx_json_kv_string(&j, "dtype", m->dtype == WX_DTYPE_F16 ? "float16" : "float32");
    wx_json_key(&j, "channels");
    wx_json_array_begin(&j);
    for (int c = 0; c < m->nchan; c++) {
        const wx_archive_channel *ch = &m->chan[c];
        wx_json_object_begin(&j);
        wx_json_kv_string(&j, "name", ch->name);
        wx_json_kv_string(&j, "param", ch->param);
        wx_json_kv_string(&j, "level_type", wx_level_kind_name(ch->kind));
        wx_json_kv_number(&j, "level", ch->level);
        wx_json_kv_string(&j, "units", ch->units);
        wx_json_kv_int(&j, "accumulation_s", ch->accum_s);
        wx_json_object_end(&j);
    }
    wx_json_array_end(&j);
    wx_json_key(&j, "grid");
    wx_json_object_begin(&j);
    wx_json_kv_int(&j, "nlat", m->grid.nlat);
    wx_json_kv_int(&j, "nlon", m->grid.nlon);
    wx_json_kv_number_exact(&j, "lat0", m->grid.lat0);
    wx_json_kv_number_exact(&j, "dlat", m->grid.dlat);
    wx_json_kv_number_exact(&j, "lon0", m->grid.lon0);
    wx_json_kv_number_exact(&j, "dlon", m->grid.dlon);
    wx_json_object_end(&j);
    wx_json_key(&j, "time");
    wx_json_object_begin(&j);
    wx_time_format(m->start, buf);
    wx_json_kv_string(&j, "start", buf);
    wx_json_kv_int(&j, "step_s", m->step);
    wx_json_kv_int(&j, "count", m->count);
    wx_json_object_end(&j);
    wx_json_key(&j, "shards");
    wx_json_object_begin(&j);
    wx_json_kv_int(&j, "count", wx_archive_shard_count(m));
    wx_json_kv_int(&j, "records_per_shard", m->records_per_shard);
    wx_json_kv_int(&j, "record_bytes", wx_archive_record_bytes(m));
    wx_json_kv_int(&j, "record_stride", wx_archive_record_stride(m));
    wx_json_kv_string(&j, "pattern", "shard-%05d.wxr");
    wx_json_object_end(&j);
    if (m->has_stats) {
        wx_json_key(&j, "statistics");
        wx_json_object_begin(&j);
        wx_time_format(m->stats_start, buf);
        wx_json_kv_string(&j, "start", buf);
        wx_time_format(m->stats_end, buf);
        wx_json_kv_string(&j, "end", buf);
        stats_array(&j, "mean", m->mean, m->nchan);
        stats_array(&j, "std", m->std, m->nchan);
        stats_array(&j, "min", m->min, m->nchan);
        stats_array(&j, "max", m->max, m->nchan);
        wx_json_kv_int(&j, "diff_step_s", m->diff_step);
        stats_array(&j, "diff_std", m->diff_std, m->nchan);
        wx_json_kv_string(&j, "climatology", m->climatology);
        if (m->climatology[0]) {
            snprintf(buf, sizeof buf, "%08x", m->clim_crc);
            wx_json_kv_string(&j, "climatology_crc32", buf);
        }
        wx_json_object_end(&j);
    }
    snprintf(buf, sizeof buf, "%08x", wx_archive_meta_crc(m));
    wx_json_kv_string(&j, "metadata_crc32", buf);
    wx_json_object_end(&j);
    fputc('\n', f.fp);
    return wx_atomic_commit(&f);
}

static wx_status get_num(const wx_yaml *map, const char *key, const char *ctx, double *v) {
    const wx_yaml *n = wx_yaml_get(map, key);
    if (!n) return wx_error_set(WX_ERR_RUN, "%s: missing key %s", ctx, key);
    return wx_yaml_as_double(n, key, v);
}

static wx_status get_str(const wx_yaml *map, const char *key, const char *ctx, const char **v) {
    const wx_yaml *n = wx_yaml_get(map, key);
    if (!n) return wx_error_set(WX_ERR_RUN, "%s: missing key %s", ctx, key);
    return wx_yaml_as_string(n, key, v);
}

static wx_status get_arr(const wx_yaml *map, const char *key, const char *ctx, int n, double **out) {
    const wx_yaml *a = wx_yaml_get(map, key);
    if (!a || a->kind != WX_YAML_SEQ || a->count != n)
        return wx_error_set(WX_ERR_RUN, "%s: statistics.%s must be a list of %d numbers", ctx, key, n);
    *out = wx_malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        if (a->items[i]->kind == WX_YAML_SCALAR && !strcmp(a->items[i]->scalar, "null"))
            (*out)[i] = 0.0 / 0.0;
        else
            WX_TRY(wx_yaml_as_double(a->items[i], key, &(*out)[i]));
    }
    return WX_OK;
}

static wx_status parse(const wx_yaml *r, const char *ctx, wx_archive_meta *m) {
    const char *s;
    double v;
    WX_TRY(get_str(r, "format", ctx, &s));
    if (strcmp(s, "wxcast-archive"))
        return wx_error_set(WX_ERR_RUN, "%s: format '%s', expected wxcast-archive", ctx, s);
    WX_TRY(get_num(r, "version", ctx, &v));
    if ((int)v != WX_ARCHIVE_VERSION)
        return wx_error_set(WX_ERR_RUN, "%s: archive version %g, this wxcast reads version %d", ctx,
                            v, WX_ARCHIVE_VERSION);
    WX_TRY(get_str(r, "key", ctx, &s));
    m->key = strtoull(s, NULL, 16);
    WX_TRY(get_str(r, "dtype", ctx, &s));
    m->dtype = !strcmp(s, "float16") ? WX_DTYPE_F16 : WX_DTYPE_F32;
    const wx_yaml *ch = wx_yaml_get(r, "channels");
    if (!ch || ch->kind != WX_YAML_SEQ || ch->count < 1)
        return wx_error_set(WX_ERR_RUN, "%s: channels must be a non-empty list", ctx);
    m->nchan = ch->count;
    m->chan = wx_calloc((size_t)ch->count, sizeof *m->chan);
    for (int c = 0; c < ch->count; c++) {
        const wx_yaml *e = ch->items[c];
        wx_archive_channel *o = &m->chan[c];
        WX_TRY(get_str(e, "name", ctx, &s));
        snprintf(o->name, sizeof o->name, "%s", s);
        WX_TRY(get_str(e, "param", ctx, &s));
        snprintf(o->param, sizeof o->param, "%s", s);
        WX_TRY(get_str(e, "level_type", ctx, &s));
        o->kind = !strcmp(s, "pressure") ? WX_LEVEL_PRESSURE
                  : !strcmp(s, "static") ? WX_LEVEL_STATIC : WX_LEVEL_SINGLE;
        WX_TRY(get_num(e, "level", ctx, &o->level));
        WX_TRY(get_str(e, "units", ctx, &s));
        snprintf(o->units, sizeof o->units, "%s", s);
        WX_TRY(get_num(e, "accumulation_s", ctx, &v));
        o->accum_s = (int64_t)v;
    }
    const wx_yaml *g = wx_yaml_get(r, "grid");
    double nlat, nlon, lat0, dlat, lon0, dlon;
    WX_TRY(get_num(g, "nlat", ctx, &nlat));
    WX_TRY(get_num(g, "nlon", ctx, &nlon));
    WX_TRY(get_num(g, "lat0", ctx, &lat0));
    WX_TRY(get_num(g, "dlat", ctx, &dlat));
    WX_TRY(get_num(g, "lon0", ctx, &lon0));
    WX_TRY(get_num(g, "dlon", ctx, &dlon));
    if (!(nlat >= 1 && nlat <= 1e6 && nlon >= 1 && nlon <= 1e6) || nlat != floor(nlat) ||
        nlon != floor(nlon)) /* cast to int below: 3200000000 became -2147483648 */
        return wx_error_set(WX_ERR_RUN, "%s: grid %gx%g: expected whole numbers of rows and columns "
                            "in 1..1000000", ctx, nlat, nlon);
    /* Archives written before the grid was stored at full precision hold 9 digits (180/31 as
     * 5.80645161): a grid that ends within 1e-6° of a pole, or spans 360° to within 1e-6°, gets
     * its exact spacing back. */
    double end = lat0 - (nlat - 1) * dlat;
    if (nlat > 1 && fabs(fabs(end) - 90) < 1e-6) dlat = (lat0 - copysign(90, end)) / (nlat - 1);
    if (nlon > 0 && fabs(nlon * dlon - 360) < 1e-6) dlon = 360 / nlon;
    if (wx_grid_make((int)nlat, (int)nlon, lat0, dlat, lon0, dlon, &m->grid) != WX_OK)
        return wx_error_wrap(WX_ERR_RUN, "%s: ", ctx);
    const wx_yaml *t = wx_yaml_get(r, "time");
    WX_TRY(get_str(t, "start", ctx, &s));
    WX_TRY(wx_time_parse(s, "time.start", &m->start));
    WX_TRY(get_num(t, "step_s", ctx, &v));
    m->step = (int64_t)v;
    WX_TRY(get_num(t, "count", ctx, &v));
    m->count = (int64_t)v;
    const wx_yaml *sh = wx_yaml_get(r, "shards");
    WX_TRY(get_num(sh, "records_per_shard", ctx, &v));
    m->records_per_shard = (int64_t)v;
    if (m->records_per_shard < 1 || m->count < 1)
        return wx_error_set(WX_ERR_RUN, "%s: empty archive or bad shard table", ctx);
    /* Archives from before the sources' period was recorded: an accumulation with period 0 was
     * read as a sum over the archive step; say so once here for every reader (dump, forecast,
     * eval's SEEPS, the checkpoint's DATA) */
    for (int c = 0; c < m->nchan; c++) m->chan[c].accum_s = accum_read_as(m, &m->chan[c]);
    const wx_yaml *st = wx_yaml_get(r, "statistics");
    if (st) {
        m->has_stats = 1;
        WX_TRY(get_str(st, "start", ctx, &s));
        WX_TRY(wx_time_parse(s, "statistics.start", &m->stats_start));
        WX_TRY(get_str(st, "end", ctx, &s));
        WX_TRY(wx_time_parse(s, "statistics.end", &m->stats_end));
        WX_TRY(get_arr(st, "mean", ctx, m->nchan, &m->mean));
        WX_TRY(get_arr(st, "std", ctx, m->nchan, &m->std));
        WX_TRY(get_arr(st, "min", ctx, m->nchan, &m->min));
        WX_TRY(get_arr(st, "max", ctx, m->nchan, &m->max));
        WX_TRY(get_arr(st, "diff_std", ctx, m->nchan, &m->diff_std));
        WX_TRY(get_num(st, "diff_step_s", ctx, &v));
        m->diff_step = (int64_t)v;
        WX_TRY(get_str(st, "climatology", ctx, &s));
        if (strchr(s, '/') || !strcmp(s, "..") || !strcmp(s, ".") || strlen(s) >= sizeof m->climatology)
            return wx_error_set(WX_ERR_RUN, "%s: statistics.climatology '%s': expected the name of "
                                "a file beside the manifest", ctx, s);
        snprintf(m->climatology, sizeof m->climatology, "%s", s);
        const wx_yaml *cc = wx_yaml_get(st, "climatology_crc32");
        if (cc && cc->kind == WX_YAML_SCALAR) m->clim_crc = (uint32_t)strtoul(cc->scalar, NULL, 16);
    }
    const wx_yaml *mc = wx_yaml_get(r, "metadata_crc32");
    if (mc && mc->kind == WX_YAML_SCALAR) {
        uint32_t want = (uint32_t)strtoul(mc->scalar, NULL, 16), got = wx_archive_meta_crc(m);
        if (got != want)
            return wx_error_set(WX_ERR_RUN, "%s: the description of the data (channels, levels, "
                                "units, grid, times) is not what ingest wrote (metadata_crc32 %08x, "
                                "computed %08x): edited by hand? rerun `wxcast ingest` to rewrite "
                                "it", ctx, want, got);
    }
    return WX_OK;
}

wx_status wx_archive_read_manifest(const char *dir, wx_archive_meta *m) {
    memset(m, 0, sizeof *m);
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return wx_error_set(WX_ERR_RUN, "%s: %s (expected an archive folder written by `wxcast "
                            "ingest`)", dir, errno == ENOENT ? "does not exist" : strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        const char *kind = wx_fs_known_kind(dir);
        return wx_error_set(WX_ERR_RUN, "%s: is %s, expected an archive folder (written by "
                            "`wxcast ingest`)", dir, kind ? kind : "a file");
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        return wx_error_set(WX_ERR_RUN, "%s: no manifest.json: not a wxcast archive, or an ingest "
                            "that has not finished (rerun `wxcast ingest` to complete it)", dir);
    fclose(f);
    wx_yaml *root = NULL;
    wx_status st = wx_yaml_load_file(path, &root);
    if (st != WX_OK) { /* the parser speaks YAML; the file is JSON that ingest wrote */
        char why[512];
        const char *msg = wx_error_message(), *cut = strstr(msg, "YAML syntax error: ");
        snprintf(why, sizeof why, "%s", cut ? cut + strlen("YAML syntax error: ") : msg);
        const char *line = strstr(msg, ": line ");
        int ln = line ? atoi(line + 7) : 0;
        st = wx_error_set(WX_ERR_RUN, "%s: damaged manifest, not valid JSON (line %d: %s); rerun "
                          "`wxcast ingest` to rewrite it", path, ln, why);
    }
    if (st == WX_OK) st = parse(root, path, m);
    wx_yaml_free(root);
    if (st != WX_OK) wx_archive_meta_free(m);
    return st;
}
