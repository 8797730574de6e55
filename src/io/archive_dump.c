/* wxcast dump: archive records → CF NetCDF, a few records at a time, the next batch prefetched
 * while the current one is written. */
#include "io/archive_dump.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/archive.h"
#include "io/netcdf_write.h"
#include "meteo/wx_catalogue.h"

#define DUMP_BATCH 4

typedef struct {
    char long_name[160];
    const char *units, *standard_name;
} dump_attrs;

static void channel_list(const wx_archive_meta *m, char *buf, size_t cap) {
    buf[0] = 0;
    for (int c = 0; c < m->nchan; c++) {
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, "%s%s", c ? ", " : "", m->chan[c].name);
    }
}

/* Channel indices for o->vars (or all); returns the count. sel: [nchan] */
static wx_status select_vars(const wx_archive_meta *m, const char *dir, const char *vars, int *sel,
                             int *nsel) {
    *nsel = 0;
    if (!vars) {
        for (int c = 0; c < m->nchan; c++) sel[(*nsel)++] = c;
        return WX_OK;
    }
    char *copy = wx_strdup(vars), *save = NULL, all[2048];
    channel_list(m, all, sizeof all);
    wx_status st = WX_OK;
    for (char *tok = strtok_r(copy, ",", &save); tok && st == WX_OK; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        int found = -1;
        for (int c = 0; c < m->nchan; c++)
            if (!strcmp(m->chan[c].name, tok)) found = c;
        for (int k = 0; k < *nsel && found >= 0; k++)
            if (sel[k] == found) st = wx_error_set(WX_ERR_USAGE, "--vars: '%s' is named twice", tok);
        if (found < 0)
            st = wx_error_set(WX_ERR_USAGE, "--vars: no channel '%s' in %s (channels: %s)", tok, dir, all);
        else if (st == WX_OK && *nsel < m->nchan)
            sel[(*nsel)++] = found;
    }
    free(copy);
    if (st == WX_OK && *nsel == 0) st = wx_error_set(WX_ERR_USAGE, "--vars: no channel named");
    return st;
}

static wx_status time_window(const wx_archive_meta *m, const wx_dump_opts *o, int64_t *t0, int64_t *t1) {
    char a[32], b[32], s[32], e[32];
    wx_time_format(m->start, a);
    wx_time_format(m->start + (m->count - 1) * m->step, b);
    if (o->has_start && o->has_end && o->end < o->start)
        return wx_error_set(WX_ERR_USAGE, "--end is before --start");
    *t0 = 0;
    *t1 = m->count - 1;
    if (o->has_start && o->start > m->start) *t0 = (o->start - m->start + m->step - 1) / m->step;
    if (o->has_end) *t1 = o->end < m->start ? -1 : (o->end - m->start) / m->step;
    if (*t1 > m->count - 1) *t1 = m->count - 1;
    if (*t0 > *t1) {
        wx_time_format(o->has_start ? o->start : m->start, s);
        wx_time_format(o->has_end ? o->end : m->start + (m->count - 1) * m->step, e);
        char st[32];
        wx_time_format_duration(m->step, st);
        return wx_error_set(WX_ERR_USAGE, "no record between %s and %s: the archive holds %s .. %s "
                            "every %s", s, e, a, b, st);
    }
    return WX_OK;
}

static void attrs_of(const wx_archive_channel *ch, dump_attrs *d) {
    const wx_catalogue_entry *e = wx_catalogue_find_kind(ch->param, ch->kind);
    const char *ln = e ? e->long_name : ch->name;
    d->units = e && e->cf_units[0] ? e->cf_units : ch->units;
    d->standard_name = e ? e->standard_name : "";
    char extra[96] = "";
    if (ch->kind == WX_LEVEL_PRESSURE) snprintf(extra, sizeof extra, " at %g hPa", ch->level);
    if (ch->accum_s > 0) {
        char dur[32];
        wx_time_format_duration(ch->accum_s, dur);
        size_t n = strlen(extra);
        snprintf(extra + n, sizeof extra - n, ", accumulated over the %s ending at time", dur);
    }
    snprintf(d->long_name, sizeof d->long_name, "%s%s", ln, extra);
}

wx_status wx_archive_dump(const char *dir, const char *out_path, wx_dump_opts *o) {
    o->times_written = 0;
    o->vars_written = 0;
    wx_archive_opts ao = {o->threads > 0 ? o->threads : 4, 1, 0};
    wx_archive *a;
    WX_TRY(wx_archive_open(dir, &ao, &a));
    const wx_archive_meta *m = wx_archive_meta_of(a);
    int *sel = wx_calloc((size_t)m->nchan, sizeof(int)), nsel = 0;
    int64_t t0 = 0, t1 = -1;
    wx_status st = select_vars(m, dir, o->vars, sel, &nsel);
    if (st == WX_OK) st = time_window(m, o, &t0, &t1);
    dump_attrs *at = wx_calloc((size_t)m->nchan, sizeof *at);
    wx_nc_var *vars = wx_calloc((size_t)m->nchan, sizeof *vars);
    for (int k = 0; k < nsel; k++) {
        const wx_archive_channel *ch = &m->chan[sel[k]];
        attrs_of(ch, &at[k]);
        vars[k] = (wx_nc_var){ch->name, at[k].units, at[k].standard_name, at[k].long_name, 0};
    }
    char title[4200];
    snprintf(title, sizeof title, "wxcast archive %s", dir);
    wx_nc_layout L = {m->grid, 0, NULL, nsel, vars, o->as_forecast, m->start + t0 * m->step, title,
                      "wxcast dump", o->deflate};
    wx_nc_writer w;
    int open_w = 0;
    if (st == WX_OK) st = wx_nc_writer_open_time(&w, out_path, &L, "time");
    open_w = st == WX_OK;
    for (int k = 0; st == WX_OK && k < nsel; k++) /* accumulations: a sum over time (CF 7.3) */
        if (m->chan[sel[k]].accum_s > 0) st = wx_nc_writer_var_text(&w, k, "cell_methods", "time: sum");
    size_t P = (size_t)wx_archive_points(m), rec = P * (size_t)m->nchan;
    float *buf[2] = {wx_malloc(sizeof(float) * rec * DUMP_BATCH), wx_malloc(sizeof(float) * rec * DUMP_BATCH)};
    int64_t ts[2][DUMP_BATCH];
    int nb[2] = {0, 0}, cur = 0;
    /* Batch k covers t0 + k*DUMP_BATCH ...; batch k+1 is prefetched while batch k is written. */
    for (int64_t b0 = t0; st == WX_OK && b0 <= t1; b0 += DUMP_BATCH) {
        if (b0 == t0) {
            nb[cur] = (int)(t1 - b0 + 1 < DUMP_BATCH ? t1 - b0 + 1 : DUMP_BATCH);
            for (int i = 0; i < nb[cur]; i++) ts[cur][i] = b0 + i;
            st = wx_archive_read(a, ts[cur], nb[cur], buf[cur]);
        } else {
            st = wx_archive_wait(a);
        }
        int64_t n0 = b0 + DUMP_BATCH, nxt = 1 - cur;
        nb[nxt] = n0 > t1 ? 0 : (int)(t1 - n0 + 1 < DUMP_BATCH ? t1 - n0 + 1 : DUMP_BATCH);
        for (int i = 0; i < nb[nxt]; i++) ts[nxt][i] = n0 + i;
        if (st == WX_OK && nb[nxt]) st = wx_archive_prefetch(a, ts[nxt], nb[nxt], buf[nxt]);
        for (int i = 0; st == WX_OK && i < nb[cur]; i++) {
            int64_t t = ts[cur][i];
            for (int k = 0; st == WX_OK && k < nsel; k++)
                st = wx_nc_writer_put(&w, t - t0, m->start + t * m->step, k, 0,
                                      buf[cur] + (size_t)i * rec + (size_t)sel[k] * P);
            if (st == WX_OK) o->times_written++;
        }
        cur = (int)nxt;
    }
    if (st != WX_OK) { /* a failed write may leave a prefetch in flight: keep the first error */
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", wx_error_message());
        wx_archive_wait(a);
        wx_error_set(st, "%s", msg);
    }
    if (open_w) {
        if (st == WX_OK) st = wx_nc_writer_close(&w);
        else wx_nc_writer_abort(&w);
    }
    if (st == WX_OK) o->vars_written = nsel;
    free(buf[0]);
    free(buf[1]);
    free(at);
    free(vars);
    free(sel);
    wx_archive_close(a);
    return st;
}
