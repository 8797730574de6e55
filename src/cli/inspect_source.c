/* `wxcast inspect FILE` for a GRIB or NetCDF file: what the ingestion readers see in it — one row
 * per variable (parameter, level, accumulation, grid) with its source name, its distinct valid
 * times and their range, and its ensemble members — so a recipe or an --init that finds nothing
 * can be checked against it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inspect_source.h"
#include "core/wx_json.h"
#include "io/wx_source.h"

typedef struct {
    int first;          /* field index of the variable's first field */
    int count;          /* its fields */
    int ntime;          /* distinct valid times */
    wx_time t0, t1;     /* first and last valid time */
    int m0, m1, nmem;   /* lowest and highest member, fields with one (-1, -1, 0: none) */
} var_row;

static int same_var(const wx_field_info *a, const wx_field_info *b) {
    return !strcmp(a->name, b->name) && !strcmp(a->param, b->param) && a->kind == b->kind &&
           a->level == b->level && a->accum_s == b->accum_s && wx_grid_same(&a->grid, &b->grid, 1e-9);
}

static int cmp_time(const void *a, const void *b) {
    wx_time x = *(const wx_time *)a, y = *(const wx_time *)b;
    return x < y ? -1 : x > y;
}

/* Rows in the order the variables first appear; each row's distinct times from its fields'
 * sorted valid times. rows: [count of fields] */
static int group(const wx_source *s, var_row *rows) {
    int n = 0, nf = wx_source_count(s);
    int *row_of = wx_malloc(sizeof(int) * (size_t)nf);
    wx_time *t = wx_malloc(sizeof(wx_time) * (size_t)nf);
    for (int i = 0; i < nf; i++) {
        const wx_field_info *f = wx_source_info(s, i);
        int r = 0;
        while (r < n && !same_var(wx_source_info(s, rows[r].first), f)) r++;
        if (r == n) rows[n++] = (var_row){.first = i, .m0 = -1, .m1 = -1};
        var_row *v = &rows[r];
        row_of[i] = r;
        v->count++;
        if (f->member >= 0) {
            if (!v->nmem || f->member < v->m0) v->m0 = f->member;
            if (!v->nmem || f->member > v->m1) v->m1 = f->member;
            v->nmem++;
        }
    }
    for (int r = 0; r < n; r++) {
        int k = 0;
        for (int i = 0; i < nf; i++)
            if (row_of[i] == r && wx_source_info(s, i)->has_time) t[k++] = wx_source_info(s, i)->valid;
        qsort(t, (size_t)k, sizeof *t, cmp_time);
        for (int i = 0; i < k; i++) rows[r].ntime += i == 0 || t[i] != t[i - 1];
        if (k) rows[r].t0 = t[0], rows[r].t1 = t[k - 1];
    }
    free(row_of), free(t);
    return n;
}

static void level_text(const wx_field_info *f, char *buf, size_t cap) {
    if (f->kind == WX_LEVEL_PRESSURE) snprintf(buf, cap, "%g hPa", f->level);
    else snprintf(buf, cap, "%s", wx_level_kind_name(f->kind));
}

static void print_json(const wx_source *s, const var_row *rows, int n) {
    wx_json j;
    wx_json_init(&j, stdout);
    wx_json_object_begin(&j);
    wx_json_kv_string(&j, "file", wx_source_path(s));
    wx_json_kv_string(&j, "format", wx_source_format_of(s) == WX_FORMAT_GRIB ? "grib" : "netcdf");
    wx_json_kv_int(&j, "fields", wx_source_count(s));
    wx_json_key(&j, "variables");
    wx_json_array_begin(&j);
    for (int r = 0; r < n; r++) {
        const wx_field_info *f = wx_source_info(s, rows[r].first);
        char t[32], g[256];
        wx_json_object_begin(&j);
        wx_json_kv_string(&j, "param", f->param);
        wx_json_kv_string(&j, "name", f->name);
        wx_json_kv_string(&j, "level_type", wx_level_kind_name(f->kind));
        wx_json_kv_number(&j, "level", f->level);
        wx_json_kv_int(&j, "accumulation_s", f->accum_s);
        if (rows[r].nmem) {
            wx_json_kv_int(&j, "first_member", rows[r].m0);
            wx_json_kv_int(&j, "last_member", rows[r].m1);
        }
        wx_json_kv_int(&j, "fields", rows[r].count);
        wx_json_kv_int(&j, "times", rows[r].ntime);
        if (rows[r].ntime) {
            wx_time_format(rows[r].t0, t);
            wx_json_kv_string(&j, "first_time", t);
            wx_time_format(rows[r].t1, t);
            wx_json_kv_string(&j, "last_time", t);
        }
        wx_grid_describe(&f->grid, g, sizeof g);
        wx_json_kv_string(&j, "grid", g);
        wx_json_object_end(&j);
    }
    wx_json_array_end(&j);
    wx_json_object_end(&j);
    printf("\n");
}

static void print_text(const wx_source *s, const var_row *rows, int n) {
    const wx_grid *g0 = &wx_source_info(s, 0)->grid;
    int one_grid = 1;
    for (int r = 0; r < n; r++) one_grid &= wx_grid_same(&wx_source_info(s, rows[r].first)->grid, g0, 1e-9);
    char g[256];
    wx_grid_describe(g0, g, sizeof g);
    printf("file      %s (%s)\n", wx_source_path(s),
           wx_source_format_of(s) == WX_FORMAT_GRIB ? "GRIB" : "NetCDF");
    printf("grid      %s\n", one_grid ? g : "(differs between variables: see each row)");
    printf("fields    %d in %d variables\n", wx_source_count(s), n);
    printf("  %-8s %-10s %-26s %6s  %-35s %-6s %s\n", "param", "level", "name in file", "times",
           "valid times", "accum", "members");
    for (int r = 0; r < n; r++) {
        const wx_field_info *f = wx_source_info(s, rows[r].first);
        char lev[32], t0[32], t1[32], span[80] = "-", acc[32] = "-", mem[16] = "-";
        level_text(f, lev, sizeof lev);
        if (rows[r].ntime) {
            wx_time_format(rows[r].t0, t0), wx_time_format(rows[r].t1, t1);
            snprintf(span, sizeof span, "%s .. %s", t0, t1);
        }
        if (f->accum_s > 0) wx_time_format_duration(f->accum_s, acc);
        if (rows[r].nmem) snprintf(mem, sizeof mem, rows[r].m0 == rows[r].m1 ? "%d" : "%d-%d",
                                   rows[r].m0, rows[r].m1);
        printf("  %-8s %-10s %-26s %6d  %-35s %-6s %s", f->param, lev, f->name, rows[r].ntime, span,
               acc, mem);
        if (!one_grid) wx_grid_describe(&f->grid, g, sizeof g), printf("  %s", g);
        printf("%s\n", f->entry ? "" : "  (not in wxcast's catalogue)");
    }
}

int wx_inspect_source(const char *path, int json) {
    wx_source *s;
    wx_status st = wx_source_open(path, &s);
    if (st != WX_OK) {
        fprintf(stderr, "wxcast: error: %s\n", wx_error_message());
        return st;
    }
    int nf = wx_source_count(s);
    if (nf == 0) {
        fprintf(stderr, "wxcast: error: %s: no fields\n", path);
        wx_source_close(s);
        return WX_ERR_RUN;
    }
    var_row *rows = wx_malloc(sizeof(var_row) * (size_t)(nf ? nf : 1));
    int n = group(s, rows);
    if (json) print_json(s, rows, n);
    else print_text(s, rows, n);
    free(rows);
    wx_source_close(s);
    return 0;
}
