/* Ingest end to end: archive values equal eccodes' own decoding (geo-iterator) of the selected
 * member at every point; statistics equal a double-precision computation from eccodes' values;
 * the same field in several GRIB scanning modes / longitude conventions and as NetCDF in the
 * new/old CDS layouts (with expver, ascending latitude, -180..180) gives identical records;
 * coarsening and drop_south_pole give the documented shapes and conserve the area mean; the
 * climatology written beside the archive equals the weighted mean of the window records; ERA5-style
 * hourly tp GRIB1 messages sum exactly into `accumulate: 6h` channels, a missing hour is named. */
#include <eccodes.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "era5_testdata.h"
#include "ingest.h"
#include "io/archive.h"
#include "io/climatology.h"
#include "wx_test.h"

static char tmp[] = "/tmp/wx_ingest_XXXXXX";

static int ingest(const char *name, const char *body, wx_archive **a) {
    char path[1200], out[1200];
    snprintf(path, sizeof path, "%s/%s.yaml", tmp, name);
    snprintf(out, sizeof out, "%s/%s", tmp, name);
    FILE *f = fopen(path, "w");
    fputs(body, f);
    fclose(f);
    wx_ingest_opts o = {0};
    o.output = out;
    wx_status st = wx_ingest_run(path, &o); /* before wx_error_message(): argument order */
    if (!WX_CHECK(st == WX_OK, "%s: ingest: %s", name, wx_error_message())) return 0;
    wx_archive_opts ao = {2, 1, 0};
    st = wx_archive_open(out, &ao, a);
    return WX_CHECK(st == WX_OK, "%s: open: %s", name, wx_error_message());
}

static float *read_all(wx_archive *a) {
    const wx_archive_meta *m = wx_archive_meta_of(a);
    int64_t vals = m->nchan * wx_archive_points(m);
    float *all = wx_malloc(sizeof(float) * (size_t)(vals * m->count));
    int64_t *t = wx_malloc(sizeof(int64_t) * (size_t)m->count);
    for (int64_t k = 0; k < m->count; k++) t[k] = k;
    WX_CHECK(wx_archive_read(a, t, (int)m->count, all) == WX_OK, "read all");
    free(t);
    return all;
}

static void members_vs_eccodes(void) {
    char body[2048];
    snprintf(body, sizeof body,
             "sources: [\"%s/era5/era5-levels-members.grib\"]\n"
             "variables:\n  - {name: z500, param: z, level: 500}\n  - {name: t850, param: t, level: 850}\n"
             "dates: {start: \"2017-01-01T00:00\", end: \"2017-01-02T12:00\", step: \"12h\"}\n"
             "member: 3\nstatistics: {start: \"2017-01-01T12:00\", end: \"2017-01-02T12:00\"}\n",
             WX_DATA_DIR);
    wx_archive *a;
    if (!ingest("members", body, &a)) return;
    const wx_archive_meta *m = wx_archive_meta_of(a);
    WX_CHECK(m->count == 4 && m->nchan == 2 && m->grid.nlat == 61 && m->grid.nlon == 120, "shape");
    float *all = read_all(a);
    int64_t P = wx_archive_points(m);
    char path[1024];
    snprintf(path, sizeof path, "%s/era5/era5-levels-members.grib", WX_DATA_DIR);
    FILE *fp = fopen(path, "rb");
    codes_handle *h;
    int err, used = 0;
    long bad = 0;
    double sum[2] = {0}, sq[2] = {0}, n[2] = {0}, mn[2] = {1e30, 1e30}, mx[2] = {-1e30, -1e30};
    while ((h = codes_handle_new_from_file(NULL, fp, PRODUCT_GRIB, &err)) != NULL) {
        long number, level, vd, vt;
        char sn[16];
        size_t len = sizeof sn;
        codes_get_long(h, "number", &number);
        codes_get_long(h, "level", &level);
        codes_get_long(h, "validityDate", &vd);
        codes_get_long(h, "validityTime", &vt);
        codes_get_string(h, "shortName", sn, &len);
        int ch = (!strcmp(sn, "z") && level == 500) ? 0 : (!strcmp(sn, "t") && level == 850) ? 1 : -1;
        if (number == 3 && ch >= 0) {
            used++;
            int64_t t = ((vd % 100) - 1) * 2 + vt / 1200;
            codes_iterator *it = codes_grib_iterator_new(h, 0, &err);
            double lat, lon, v;
            while (codes_grib_iterator_next(it, &lat, &lon, &v)) {
                int j = (int)lround((90 - lat) / 3), i = (int)lround(fmod(lon + 360, 360) / 3) % 120;
                if (all[(t * 2 + ch) * P + j * 120 + i] != (float)v) bad++;
                if (t >= 1) {
                    sum[ch] += (float)v, sq[ch] += (double)(float)v * (float)v, n[ch]++;
                    mn[ch] = fmin(mn[ch], (float)v), mx[ch] = fmax(mx[ch], (float)v);
                }
            }
            codes_grib_iterator_delete(it);
        }
        codes_handle_delete(h);
    }
    fclose(fp);
    WX_CHECK(used == 8 && bad == 0, "member 3: %d messages, %ld points differ from eccodes", used, bad);
    for (int c = 0; c < 2; c++) {
        double mean = sum[c] / n[c], sd = sqrt(sq[c] / n[c] - mean * mean);
        WX_CHECK(fabs(m->mean[c] - mean) <= 1e-8 * fabs(mean), "ch %d mean %.10g vs %.10g", c, m->mean[c], mean);
        WX_CHECK(fabs(m->std[c] - sd) <= 1e-6 * sd, "ch %d std %.10g vs %.10g", c, m->std[c], sd);
        WX_CHECK((float)m->min[c] == (float)mn[c] && (float)m->max[c] == (float)mx[c], "ch %d min/max", c);
        /* 12 h step: differences over one record (12 h), the pairs whose earlier record lies in
         * the window (records 1-2 and 2-3), from the archive's values (checked above) */
        double ds = 0, dq = 0, dn = 0;
        for (int k = 2; k <= 3; k++)
            for (int64_t p = 0; p < P; p++) {
                double d = (double)all[(k * 2 + c) * P + p] - all[((k - 1) * 2 + c) * P + p];
                ds += d, dq += d * d, dn++;
            }
        double dsd = sqrt(dq / dn - (ds / dn) * (ds / dn));
        WX_CHECK(m->diff_step == 43200 && fabs(m->diff_std[c] - dsd) <= 1e-6 * dsd,
                 "12 h step: diff_std over 12 h %.10g vs %.10g (diff_step %lld)", m->diff_std[c], dsd,
                 (long long)m->diff_step);
    }
    /* Climatology beside the archive: window records t=1 (Jan 1 12h), 2 (Jan 2 00h), 3 (Jan 2
     * 12h); WeatherBench2 weights 30-|days apart|. */
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/members", tmp);
    wx_climatology *cl;
    WX_CHECK(!strcmp(m->climatology, "climatology.wxc"), "manifest names the climatology");
    if (WX_CHECK(wx_climatology_open(dir, &cl) == WX_OK, "climatology: %s", wx_error_message())) {
        const wx_clim_header *ch = wx_climatology_header(cl);
        WX_CHECK(ch->nhours == 2 && ch->hours[0] == 0 && ch->hours[1] == 12, "hours 0 and 12");
        float *f = wx_malloc(sizeof(float) * 2 * (size_t)P);
        double e1 = 0, e2 = 0, e3 = 0;
        int ok = wx_climatology_get(cl, 1, 12, f) == WX_OK;
        for (int64_t q = 0; q < 2 * P; q++) {
            double r = (30.0 * all[2 * P + q] + 29.0 * all[6 * P + q]) / 59;
            e1 = fmax(e1, fabs(f[q] - r) / fabs(r));
        }
        ok = ok && wx_climatology_get(cl, 2, 0, f) == WX_OK;
        for (int64_t q = 0; q < 2 * P; q++) e2 = fmax(e2, fabs(f[q] - all[4 * P + q]));
        ok = ok && wx_climatology_get(cl, 100, 0, f) == WX_OK;
        for (int64_t q = 0; q < 2 * P; q++) e3 += !isnan(f[q]);
        WX_CHECK(ok && e1 <= 1.2e-7 && e2 == 0 && e3 == 0,
                 "climatology values: day 1 12h rel err %g, day 2 00h err %g, day 100 non-NaN %g",
                 e1, e2, e3);
        free(f);
        wx_climatology_close(cl);
    }
    free(all);
    wx_archive_close(a);
}

static void diff_std_uk(void) {
    char body[2048];
    snprintf(body, sizeof body,
             "sources: [\"%s/era5/era5-2mt-2019-03-uk.grib\"]\nvariables: [{name: t2m, param: t2m}]\n"
             "dates: {start: \"2019-03-01T00:00\", end: \"2019-03-01T12:00\", step: \"1h\"}\n"
             "statistics: {start: \"2019-03-01T00:00\", end: \"2019-03-01T12:00\"}\n", WX_DATA_DIR);
    wx_archive *a;
    if (!ingest("uk", body, &a)) return;
    const wx_archive_meta *m = wx_archive_meta_of(a);
    float *all = read_all(a);
    int64_t P = wx_archive_points(m);
    /* Independent: population std over all (t, t-6h) pairs of x_t - x_{t-6}. */
    double s = 0, q = 0, n = 0;
    for (int t = 6; t < 13; t++)
        for (int64_t p = 0; p < P; p++) {
            double d = (double)all[t * P + p] - all[(t - 6) * P + p];
            s += d, q += d * d, n++;
        }
    double sd = sqrt(q / n - (s / n) * (s / n));
    WX_CHECK(m->count == 13 && fabs(m->diff_std[0] - sd) <= 1e-6 * sd, "diff std %.9g vs %.9g",
             m->diff_std[0], sd);
    WX_CHECK(m->grid.lon0 == 350 && m->grid.nlon == 49, "regional grid kept");
    free(all);
    wx_archive_close(a);
}

static float *layout_records(const char *name, const char *file) {
    char body[2048];
    snprintf(body, sizeof body,
             "sources: [\"%s\"]\nvariables: [{name: t850, param: t, level: 850}, {name: t500, param: t, level: 500}]\n"
             "dates: {start: \"2017-01-01T00:00\", end: \"2017-01-01T12:00\", step: \"6h\"}\n", file);
    wx_archive *a;
    if (!ingest(name, body, &a)) return NULL;
    float *all = read_all(a);
    wx_archive_close(a);
    return all;
}

static void layouts(void) {
    td_grib_opts g[] = {{0, 0, 0, 0, 0, 2}, {1, 0, 0, 0, 0, 2}, {0, 1, 0, 1, 0, 2}, {1, 1, 1, 1, 0, 2}};
    size_t n = 3 * 2 * 37 * 72;
    float *ref = NULL;
    for (int k = 0; k < 4; k++) {
        char p[1200], name[16];
        snprintf(p, sizeof p, "%s/g%d.grib", tmp, k);
        FILE *fp = fopen(p, "wb");
        for (int t = 0; t < 3; t++)
            for (int l = 0; l < 2; l++) td_grib_write(fp, "t", l ? 500 : 850, t, 5.0, &g[k]);
        fclose(fp);
        snprintf(name, sizeof name, "g%d", k);
        float *r = layout_records(name, p);
        if (!r) continue;
        if (!ref) ref = r;
        else {
            WX_CHECK(!memcmp(ref, r, n * 4), "GRIB layout %d gives the same records", k);
            free(r);
        }
    }
    if (!ref) return;
    /* NetCDF files holding the GRIB-decoded values: [t][lev 850,500][row][col]. */
    double levels[2] = {850, 500};
    td_nc_opts nco[] = {{1, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {1, 0, 1, 1, 0}, {0, 0, 1, 0, 1}, {1, 1, 0, 0, 0}};
    for (int k = 0; k < 5; k++) {
        char p[1200], name[16];
        snprintf(p, sizeof p, "%s/n%d.nc", tmp, k);
        WX_CHECK(td_nc_write(p, "t", levels, 2, 3, 5.0, &nco[k], ref) == 0, "write nc %d", k);
        snprintf(name, sizeof name, "n%d", k);
        float *r = layout_records(name, p);
        if (!r) continue;
        if (nco[k].packed) {
            double md = 0;
            for (size_t q = 0; q < n; q++) md = fmax(md, fabs(r[q] - ref[q]));
            WX_CHECK(md <= 0.0011, "packed NetCDF within half a packing step: %g", md);
        } else {
            WX_CHECK(!memcmp(ref, r, n * 4), "NetCDF layout %d gives the GRIB records", k);
        }
        free(r);
    }
    free(ref);
}

static void coarsen(void) {
    char body[2048];
    snprintf(body, sizeof body,
             "sources: [\"%s/era5/regular_ll_msl.grib\"]\nvariables: [{name: msl, param: prmsl}]\n"
             "dates: {start: \"2006-10-07T00:00\", end: \"2006-10-07T00:00\", step: \"6h\"}\nmember: 5\n"
             "grid: {resolution: 2.0}\ndrop_south_pole: true\n", WX_DATA_DIR);
    wx_archive *a;
    if (!ingest("coarse", body, &a)) return;
    const wx_archive_meta *m = wx_archive_meta_of(a);
    WX_CHECK(m->grid.nlat == 90 && m->grid.nlon == 180 && m->grid.dlat == 2 && m->grid.lat0 == 90,
             "2 degree grid without the south pole: %dx%d", m->grid.nlat, m->grid.nlon);
    float *c = read_all(a);
    wx_archive_close(a);
    snprintf(body, sizeof body,
             "sources: [\"%s/era5/regular_ll_msl.grib\"]\nvariables: [{name: msl, param: prmsl}]\n"
             "dates: {start: \"2006-10-07T00:00\", end: \"2006-10-07T00:00\", step: \"6h\"}\nmember: 5\n", WX_DATA_DIR);
    if (!ingest("fine", body, &a)) return;
    float *f = read_all(a);
    wx_archive_close(a);
    /* Area means (cell-area weights) over 90N..~1S agree: the coarse cells cover the fine ones. */
    wx_grid fg, cg;
    wx_grid_global(1.0, &fg);
    wx_grid_global(2.0, &cg);
    double wf[181], wc[91], sf = 0, nf = 0, sc = 0, ncw = 0;
    wx_grid_area_weights(&fg, wf);
    wx_grid_area_weights(&cg, wc);
    for (int j = 0; j < 181; j++)
        for (int i = 0; i < 360; i++) sf += wf[j] * f[j * 360 + i], nf += wf[j];
    for (int j = 0; j < 90; j++)
        for (int i = 0; i < 180; i++) sc += wc[j] * c[j * 180 + i], ncw += wc[j];
    /* Fine mean over the full globe vs coarse mean without its pole row: differ by < 50 Pa. */
    WX_CHECK(fabs(sf / nf - sc / ncw) < 50, "area means %.2f vs %.2f", sf / nf, sc / ncw);
    WX_CHECK(fabs(c[0] - f[0]) < 150, "north pole row %.1f vs %.1f", c[0], f[0]);
    free(c);
    free(f);
}

/* Hourly tp as ERA5 delivers it in GRIB1: forecasts from 06 and 18 UTC, steps k-1..k hours
 * (stepType accum), so hour i (1..24 after 2017-01-01T00) has base 2016-12-31T18 step 6+i for
 * i <= 6, 2017-01-01T06 step i-6 for i <= 18, 2017-01-01T18 step i-18 after. Values are
 * n * 2^-12 m with a 0 in every field, so 16-bit packing keeps them exactly. */
static double tp_value(int i, int p) { return ((i * 37 + p) % 200) / 4096.0; }

static int tp_write(const char *path, int skip_hour) {
    FILE *fp = fopen(path, "wb"), *sf = fopen("/usr/share/eccodes/samples/GRIB1.tmpl", "rb");
    if (!fp || !sf) return 1;
    int err = 0;
    codes_handle *s = codes_handle_new_from_file(NULL, sf, PRODUCT_GRIB, &err);
    fclose(sf);
    double v[19 * 36];
    for (int i = 1; i <= 24 && s; i++) {
        if (i == skip_hour) continue;
        codes_handle *h = codes_handle_clone(s);
        long date = i <= 6 ? 20161231 : 20170101, time = i <= 6 || i > 18 ? 1800 : 600;
        long step = i <= 6 ? i + 6 : i <= 18 ? i - 6 : i - 18;
        size_t len = 7; /* the sample is on 500 hPa */
        err |= codes_set_string(h, "typeOfLevel", "surface", &len);
        len = 2;
        err |= codes_set_string(h, "shortName", "tp", &len);
        len = 5;
        err |= codes_set_string(h, "stepType", "accum", &len);
        err |= codes_set_long(h, "dataDate", date);
        err |= codes_set_long(h, "dataTime", time);
        err |= codes_set_long(h, "startStep", step - 1);
        err |= codes_set_long(h, "endStep", step);
        err |= codes_set_long(h, "Ni", 36);
        err |= codes_set_long(h, "Nj", 19);
        err |= codes_set_double(h, "latitudeOfFirstGridPointInDegrees", 90);
        err |= codes_set_double(h, "latitudeOfLastGridPointInDegrees", -90);
        err |= codes_set_double(h, "longitudeOfFirstGridPointInDegrees", 0);
        err |= codes_set_double(h, "longitudeOfLastGridPointInDegrees", 350);
        err |= codes_set_double(h, "iDirectionIncrementInDegrees", 10);
        err |= codes_set_double(h, "jDirectionIncrementInDegrees", 10);
        for (int p = 0; p < 19 * 36; p++) v[p] = tp_value(i, p);
        err |= codes_set_double_array(h, "values", v, 19 * 36);
        const void *msg;
        size_t n;
        err |= codes_get_message(h, &msg, &n);
        if (!err && fwrite(msg, 1, n, fp) != n) err = 1;
        codes_handle_delete(h);
    }
    if (s) codes_handle_delete(s);
    fclose(fp);
    return err || !s;
}

static void tp_accumulate(void) {
    char path[1200], body[2048];
    snprintf(path, sizeof path, "%s/tp_hourly.grib", tmp);
    if (!WX_CHECK(tp_write(path, 0) == 0, "write hourly tp")) return;
    /* The file holds what we meant (eccodes' own decoding, validity and step range). */
    FILE *fp = fopen(path, "rb");
    codes_handle *h;
    int err, msgs = 0;
    long badv = 0;
    double v[19 * 36];
    while ((h = codes_handle_new_from_file(NULL, fp, PRODUCT_GRIB, &err)) != NULL) {
        long vd, vt;
        char sr[32];
        size_t len = sizeof sr, n = 19 * 36;
        codes_get_long(h, "validityDate", &vd);
        codes_get_long(h, "validityTime", &vt);
        codes_get_string(h, "stepRange", sr, &len);
        char tol[32];
        len = sizeof tol;
        codes_get_string(h, "typeOfLevel", tol, &len);
        badv += strcmp(tol, "surface") != 0;
        codes_get_double_array(h, "values", v, &n);
        int i = (vd == 20170102 ? 24 : (int)(vt / 100)); /* hour after 2017-01-01T00 */
        msgs++;
        for (int p = 0; p < 19 * 36; p++) badv += v[p] != tp_value(i, p);
        if (msgs == 1) WX_CHECK(!strcmp(sr, "6-7") && vd == 20170101 && vt == 100, "first: %s", sr);
        codes_handle_delete(h);
    }
    fclose(fp);
    WX_CHECK(msgs == 24 && badv == 0, "24 hourly messages decode exactly (%ld differ)", badv);
    snprintf(body, sizeof body,
             "sources: [\"%s\"]\nvariables: [{name: tp6, param: tp, accumulate: 6h}]\n"
             "dates: {start: \"2017-01-01T06:00\", end: \"2017-01-02T00:00\", step: \"6h\"}\n", path);
    wx_archive *a;
    if (!ingest("tp6", body, &a)) return;
    const wx_archive_meta *m = wx_archive_meta_of(a);
    WX_CHECK(m->count == 4 && m->chan[0].accum_s == 21600 && !strcmp(m->chan[0].units, "m"),
             "tp6 channel: accumulation 21600 s, units m");
    float *all = read_all(a);
    long bad = 0;
    for (int t = 0; t < 4; t++)
        for (int p = 0; p < 19 * 36; p++) {
            double want = 0; /* sums of n * 2^-12 below 2^12: exact in float */
            for (int i = 6 * t + 1; i <= 6 * t + 6; i++) want += tp_value(i, p);
            bad += all[t * 19 * 36 + p] != (float)want;
        }
    WX_CHECK(bad == 0, "tp6 = sum of the six hourly accumulations ending at t: %ld differ", bad);
    free(all);
    wx_archive_close(a);
    /* Hour 15 absent: the 18 UTC sum names the missing hourly field. */
    snprintf(path, sizeof path, "%s/tp_gap.grib", tmp);
    WX_CHECK(tp_write(path, 15) == 0, "write gappy tp");
    snprintf(body, sizeof body,
             "sources: [\"%s\"]\nvariables: [{name: tp6, param: tp, accumulate: 6h}]\n"
             "dates: {start: \"2017-01-01T06:00\", end: \"2017-01-02T00:00\", step: \"6h\"}\n", path);
    char rp[1200], out[1200];
    snprintf(rp, sizeof rp, "%s/gap.yaml", tmp);
    snprintf(out, sizeof out, "%s/gap", tmp);
    FILE *f = fopen(rp, "w");
    fputs(body, f);
    fclose(f);
    wx_ingest_opts o = {0};
    o.output = out;
    WX_CHECK(wx_ingest_run(rp, &o) == WX_ERR_RUN && strstr(wx_error_message(), "tp6") &&
                 strstr(wx_error_message(), "2017-01-01T15:00"),
             "missing hour named: %s", wx_error_message());
}

int main(void) {
    WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    members_vs_eccodes();
    diff_std_uk();
    layouts();
    coarsen();
    tp_accumulate();
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    WX_CHECK(system(cmd) == 0, "cleanup");
    return wx_test_summary();
}
